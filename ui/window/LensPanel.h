// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Logit Lens panel of the Model workspace: the "lens" figure of ModelFigures for the model and text of
// the Prediction panel (the run ModelRunner holds), computed off the GUI thread with progress and Stop (the
// newest request wins), with an answer token whose probability colours the cells when one is typed.

#include "LatestJob.h"
#include "ModelFigures.h"

#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

class QLabel;
class QLineEdit;
class QProgressBar;
class QToolButton;

namespace qkv::ui {

class LensView;
class ModelLoading;
class ModelRunner;
class OnScreenRefresh;

class LensPanel : public QWidget {
    Q_OBJECT
public:
    LensPanel(ModelRunner* runner, ModelLoading* loading, QWidget* parent = nullptr);
    ~LensPanel() override;

    LensView* view() const { return m_view; }
    /// The answer token, as typed ("␣Paris", "#42"; "" for none).
    void setAnswer(const QString& text);
    /// What is wrong with the answer typed ("" when nothing).
    QString answerError() const { return m_answerError; }
    /// True while the newest lens is being computed.
    bool isBusy() const { return m_job.isBusy(); }
    /// Lenses (or messages) shown since the panel was made (for tests: each newer one counts).
    quint64 displayCount() const { return m_displays; }
    /// Stops the lens being computed (the Stop button).
    void stop();

private:
    struct Outcome {
        ModelFigureContent content;
        QString error;
        bool stopped = false;
    };
    /// What a lens is computed for: the same run and answer give the same lens.
    struct Request {
        const void* run = nullptr;
        std::optional<std::int64_t> answer;
        friend bool operator==(const Request& a, const Request& b)
        {
            return a.run == b.run && a.answer == b.answer;
        }
    };

    void parseAnswer();
    void refresh();
    void showMessage(const QString& message);
    void finish(Outcome outcome);
    void setBusy(bool busy);

    ModelRunner* m_runner;
    ModelLoading* m_loading;
    QLineEdit* m_answer;
    QLabel* m_status;
    QProgressBar* m_progress;
    QToolButton* m_stop;
    LensView* m_view;
    OnScreenRefresh* m_refresh;
    RegisteredModelFigure m_figure;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::optional<Request> m_requested; ///< of the lens shown or being computed
    std::optional<std::int64_t> m_answerId;
    QString m_answerError;
    quint64 m_displays = 0;
    LatestJob<Outcome> m_job; // last: destroyed (waited for) first
};

} // namespace qkv::ui
