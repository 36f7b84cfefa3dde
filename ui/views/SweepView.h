// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The sweep plots: entropy, support and top weight of the current head's rows as τ (and entmax's α) moves.

#include "Figure.h"
#include "LatestJob.h"
#include "Sweeps.h"

#include <QPoint>
#include <QString>
#include <QWidget>

#include <atomic>
#include <memory>
#include <optional>

class QCustomPlot;
class QCPAxisRect;
class QCPTextElement;
class QMouseEvent;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// For the current head: the selected query row's entropy, support size and top weight against the
/// temperature τ (log axis, 1e-3 to 1e3, one curve per normalizer: sweepTemperature) and against entmax's α
/// (1 to 4, at the session's τ: sweepAlpha); solid for the selected row, dashed for the mean over the rows.
/// The session's τ and α are marked. Clicking in a τ panel sets τ to the nearest swept value, in an α panel
/// sets the normalizer to entmax with that α: one undo step each. Only draws; the sweeps come from core.
class SweepView : public QWidget, public Figure {
    Q_OBJECT
public:
    enum Panel { TauEntropy, TauSupport, TauTop, AlphaEntropy, AlphaSupport, AlphaTop, PanelCount };

    explicit SweepView(Document* document, QWidget* parent = nullptr);
    ~SweepView() override;

    /// The swept values: 61 temperatures from 1e-3 to 1e3, 31 values of α from 1 to 4.
    static std::vector<double> temperatureGrid();
    static std::vector<double> alphaGrid();
    /// Rows beyond which the mean is over this many rows evenly spread.
    static constexpr Index meanRowLimit = 256;

    // What is shown, for tests and export.
    const SweepResult& temperatureSweep() const { return m_tau; }
    const SweepResult& alphaSweep() const { return m_alpha; }
    /// The τ and α marked on the panels (NaN when nothing is shown).
    double markedTemperature() const { return m_markedTemperature; }
    double markedAlpha() const { return m_markedAlpha; }
    QString title() const { return m_title; }
    /// Why nothing is drawn ("" while the plots show curves).
    QString message() const { return m_message; }
    /// Where (x, y) of `panel` is in the plot widget, as of the last layout.
    QPoint positionOf(Panel panel, double x, double y) const;
    /// The plot widget (clicks go there).
    QWidget* plot() const;
    /// Blocks until a sweep running in the background is shown.
    void waitForSweep() const;

    QString figureName() const override { return QStringLiteral("sweep"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1200, 760}; }

private:
    struct Sweeps {
        SweepResult tau;
        SweepResult alpha;
        QString error;
    };
    void refresh();
    void display(Sweeps sweeps);
    void clearCurves();
    void showMessage(const QString& message);
    void draw();
    void onMousePress(QMouseEvent* event);
    void setTemperature(double temperature);
    void setAlpha(double alpha);

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPAxisRect* m_panels[PanelCount] = {};
    mutable LatestJob<Sweeps> m_job{this};
    std::shared_ptr<std::atomic<bool>> m_cancel; // the running job's stop flag
    SweepResult m_tau;
    SweepResult m_alpha;
    double m_markedTemperature;
    double m_markedAlpha;
    QString m_title;
    QString m_message;
};

} // namespace qkv::ui
