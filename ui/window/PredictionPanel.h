// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Prediction tab: the position whose next token is shown (following the document's selected query), a
// pair of tokens for a logit difference, and the PredictionView of the unmodified model beside the model
// with the session's interventions (ModelRunner). What the view shows is the "prediction" figure of
// ModelFigures, computed off the GUI thread.

#include "LatestJob.h"
#include "ModelFigures.h"
#include "PredictionView.h"

#include <QWidget>

#include <cstdint>
#include <optional>

class QLabel;
class QLineEdit;
class QProgressBar;
class QSpinBox;
class QToolButton;

#include "ModelRun.h"

#include <memory>

namespace qkv::ui {

class Document;
class ModelLoading;
class ModelRunner;
class OnScreenRefresh;

/// A token given as its text (tokenized with the model's tokenizer: exactly one token) or as "#id". Empty
/// text gives no token and no error; otherwise the id, or nothing with the problem in `error`.
std::optional<std::int64_t> parseTokenPick(const Model& model, const QString& text, QString* error);

class PredictionPanel : public QWidget {
    Q_OBJECT
public:
    PredictionPanel(ModelRunner* runner, ModelLoading* loading, Document* document,
                    QWidget* parent = nullptr);

    PredictionView* view() const { return m_view; }
    /// The position shown (the spin box's value).
    int position() const;
    void setPosition(int position);
    /// The logit difference's tokens, as typed ("␣Mary", "#42").
    void setTokenPair(const QString& a, const QString& b);
    /// What is wrong with the tokens typed ("" when nothing).
    QString tokenError() const { return m_tokenError; }
    /// The tokens picked for the logit difference (each absent when not typed or not understood).
    std::optional<std::int64_t> tokenA() const { return m_pickA; }
    std::optional<std::int64_t> tokenB() const { return m_pickB; }
    /// True while the newest display is being prepared.
    bool isBusy() const { return m_job.isBusy(); }
    /// Displays prepared since the panel was made (for tests and the benchmark: each newer one counts).
    quint64 displayCount() const { return m_displays; }

signals:
    /// The position or the tokens picked changed.
    void pickChanged();

private:
    void onRunChanged();
    void parsePicks();
    void refresh();
    void updateStatus();

    ModelRunner* m_runner;
    ModelLoading* m_loading;
    Document* m_document;
    QSpinBox* m_position;
    QLineEdit* m_tokenA;
    QLineEdit* m_tokenB;
    QLabel* m_status;
    QProgressBar* m_progress;
    QToolButton* m_stop;
    PredictionView* m_view;
    OnScreenRefresh* m_refresh;
    /// The unmodified run's logits at a position: the same for every edit, so computed once.
    struct CleanRow {
        std::weak_ptr<const ModelRun> run; // not kept alive for its row
        int position = -1;
        std::shared_ptr<const RowVector> logits;
    };
    struct Shown {
        ModelFigureContent content;
        CleanRow cleanRow;
    };

    RegisteredModelFigure m_figure;
    LatestJob<Shown> m_job;
    CleanRow m_cleanRow;
    QString m_tokenError;
    std::optional<std::int64_t> m_pickA, m_pickB;
    quint64 m_displays = 0;
};

} // namespace qkv::ui
