// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The √d_k variance experiment of Brenndoerfer's article (docs/references.md): empirical Var(q·k) of random
// unit-variance vectors against d_k on
// log axes, with and without ÷√d_k, and the current session's own raw-score variance marked.

#include "EigenTypes.h"
#include "Figure.h"
#include "LatestJob.h"
#include "VarianceExperiment.h"

#include <QString>
#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPTextElement;
class QDoubleSpinBox;
class QSpinBox;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// measureDotProductVariance() over d_k = 1, 2, 4, …, 1024 with the chosen sample count and seed (NumPy's
/// stream: seed 42 and 10 000 samples give the numbers of the article's code), always off the GUI thread.
/// Four series: theoretical d_k, empirical Var(q·k) with its standard error, theoretical 1 and empirical
/// Var(q·k/√d_k); and one point: the variance of the current head's raw scores at the session's d_k. The
/// settings are view state, never session edits.
class VarianceView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit VarianceView(Document* document, QWidget* parent = nullptr);
    ~VarianceView() override;

    void setSamples(int samples);
    void setSeed(std::uint32_t seed);

    /// The experiment's points last shown (waits for the newest run).
    std::vector<VariancePoint> points() const;
    /// The session's point: (d_k, variance of the current head's raw scores); none without a result.
    std::optional<std::pair<Index, double>> sessionPoint() const { return m_sessionPoint; }
    QString title() const;
    QString errorText() const;
    QCustomPlot* plot() const { return m_plot; }
    void waitForResult() const;

    QString figureName() const override { return QStringLiteral("variance"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {800, 560}; }

private:
    struct Outcome {
        VarianceSettings settings;
        std::vector<VariancePoint> points;
        QString error;
    };
    void runExperiment();
    void showExperiment(Outcome outcome);
    void refreshSession();
    void redraw();

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QSpinBox* m_samples;
    QDoubleSpinBox* m_seed;
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPTextElement* m_footnote;
    Outcome m_shown;
    std::optional<VarianceSettings> m_requested; // the settings of the newest run
    std::optional<std::pair<Index, double>> m_sessionPoint;
    QString m_title;
    std::shared_ptr<std::atomic<bool>> m_cancel = std::make_shared<std::atomic<bool>>(false);
    mutable LatestJob<Outcome> m_job{this};
};

} // namespace qkv::ui
