// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the Q/K and value plane views share: plane controls, the plot, picking, labels, figure rendering. The
// projections come from the engine (SpaceLayout.h); these views only draw them and pass clicks on.

#include "Figure.h"
#include "LatestJob.h"
#include "SpaceLayout.h"

#include <QColor>
#include <QFont>
#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>

class QComboBox;
class QCustomPlot;
class QCPCurve;
class QCPGraph;
class QCPLayoutGrid;
class QCPTextElement;
class QMouseEvent;
class QSpinBox;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// What the two space views share: the plane controls (objectNames "planeMode", "firstDimension",
/// "secondDimension"), the plot (objectName "plot"), equal-aspect ranges padded so that point labels
/// fit, picking a point by clicking within 8 pixels of it, and rendering as a figure.
class SpaceView : public QWidget, public Figure {
    Q_OBJECT
public:
    ~SpaceView() override;

    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {640, 540}; }

    /// How the rows are put in the plane; the controls show it. Dimensions are clamped to the head's width.
    PlaneOptions planeOptions() const { return m_options; }
    void setPlaneOptions(const PlaneOptions& options);

    // What is shown, for tests and export.
    QString title() const { return m_title; }
    /// The axis labels in full; a short axis shows them shortened.
    QString xAxisLabel() const;
    QString yAxisLabel() const;
    /// Why nothing is drawn ("" while the plane shows points).
    QString message() const { return m_message; }
    /// Whether a background job is computing the plane.
    bool isProjecting() const { return m_projecting; }
    /// How long a plane projected in the background may take before the view says "Projecting…"
    /// instead of the previous plane (in milliseconds, 150 by default; 0: at once).
    void setProgressDelay(int milliseconds) { m_progressDelay = milliseconds; }

protected:
    /// `dimension` names the width the plane controls pick from ("d_k", "d_v").
    SpaceView(Document* document, const QString& dimension, QWidget* parent);

    /// Kinds of clickable points, per view.
    struct Pickable {
        QPointF coords;
        int kind = 0;
        Index index = 0;
    };

    Document* document() const { return m_document; }
    QCustomPlot* plot() const { return m_plot; }
    /// The head shown (the document's current head, clamped), or null when there is no result.
    const HeadResult* currentHead() const;
    /// The document's result when it has a head to show, else null.
    std::shared_ptr<const AttentionResult> shownResult() const;
    int currentHeadIndex() const;
    /// Query and key labels of the document's session; indices when they do not match the result's size.
    QStringList queryTokens(Index count) const;
    QStringList keyTokens(Index count) const;
    /// The plane's width for the controls (0 when there is nothing to show).
    virtual Index planeDimension() const = 0;
    /// Recomputes the projection from the document (result, head or options changed), then redraws.
    virtual void recompute() = 0;
    /// Redraws from the last projection (selection changed).
    virtual void redraw() = 0;
    /// Blocks until a projection running in the background is shown (before drawing a figure).
    virtual void finishProjection() const = 0;
    /// Projects the current head with `compute` (which may run on a worker thread when `heavy`: it gets
    /// the head of a result it keeps alive), showing "Projecting…" when it takes longer than the progress
    /// delay; `keep` receives the plane (nothing while computing, or when the rows cannot be projected),
    /// then the view redraws.
    template <typename Plane>
    void project(LatestJob<std::optional<Plane>>& job, bool heavy,
                 std::function<Plane(const HeadResult&)> compute,
                 std::function<void(std::optional<Plane>)> keep);
    /// Whether projecting `rows` points of width `width` is worth a background job (isLargePcaProblem).
    static bool isHeavyProjection(const PlaneOptions& options, Index rows, Index width);
    /// A clickable point was clicked.
    virtual void picked(const Pickable& point) = 0;
    /// The hover text of a point.
    virtual QString describe(const Pickable& point) const = 0;

    /// The plane-mode control, for a view that offers a mode of its own.
    QComboBox* planeModeBox() const { return m_mode; }
    /// Points that are not clickable but must be in view too (from beginDraw to the next one).
    void keepInView(const QList<QPointF>& points) { m_alsoInView += points; }

    /// Starts a redraw: removes the items of the last one and sets the title.
    void beginDraw(const QString& title);
    /// Ends a redraw: the points that must be in view, the clickable ones, the widest label (pixels).
    void endDraw(const QList<QPointF>& extent, const QList<Pickable>& pickables, int widestLabel);
    /// Shows `message` instead of a plot (no result, or the projection failed).
    void showMessage(const QString& title, const QString& message);
    void setAxisLabels(const std::string& x, const std::string& y);
    /// A token's label beside its point, to the right and above (or `below`, for points that may sit on
    /// another labelled point); bold for the selected ones.
    void addLabel(const QPointF& at, const QString& text, const QColor& color, bool bold, bool below);
    /// The label's font and the width `text` takes in it.
    QFont labelFont() const;
    int labelWidth(const QString& text) const;
    /// A point's centre in this widget's coordinates (as of the last replot).
    QPoint positionOf(const QPointF& coords) const;
    /// Hides the graph from the legend.
    void keepOutOfLegend(QCPGraph* graph);

    /// One kind of point of a view (queries, keys, values, outputs) as drawn.
    struct PointSet {
        const QList<QPointF>& points;
        const QStringList& labels;
        QColor labelColor;
        QCPGraph* ring;   ///< drawn around the emphasised point
        Index emphasised; ///< −1: none
        int kind;         ///< the Pickable kind of its points
        bool labelsBelow; ///< for points that may sit on another labelled point
    };
    /// Rings the emphasised points, labels every point when they fit (the emphasised ones in bold), makes
    /// every point clickable and ends the redraw.
    void finishDraw(std::initializer_list<PointSet> sets);

    // Point drawing shared by the views.
    /// The rows of a k × 2 matrix as points.
    static QList<QPointF> pointsOf(const Matrix& rows);
    static void setPoints(QCPGraph* graph, const QList<QPointF>& points);
    /// A legend entry of markers; `shape` is a QCPScatterStyle::ScatterShape.
    static QCPGraph* addScatter(QCustomPlot* plot, const QString& name, int shape, const QColor& color,
                                double size);
    /// The ring drawn around a selected point.
    static QCPGraph* addRing(QCustomPlot* plot, const QColor& color);
    static QString formatWeight(double weight);
    /// The plot layer under the points where the lines from a query go.
    static QString linesLayer();
    /// Whether labels are written next to the points (not for very many points).
    static bool labelsFit(Index points);
    /// Clamps the options to the plane's width and shows them in the controls; the options to project
    /// with.
    PlaneOptions syncControls();

private:
    void onModeChanged();
    void onDimensionChanged();
    void updateControls();
    /// The largest value of the first control: a dimension, or a RoPE pair.
    Index firstLast() const;
    void fitRanges(const QSize& viewport) const;
    /// The legend under the plot, or beside it (one entry a line) when the plot is short and wide.
    void placeLegend(const QSize& viewport) const;
    /// Title, points and legend: the legend below (title above), or beside with the title over it.
    void arrangePlot(bool beside) const;
    /// The axis labels as long as their axes: " of variance" dropped, then elided.
    void fitAxisLabels() const;
    const Pickable* pickableAt(const QPointF& pixel) const;
    void onMousePress(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);

    Document* m_document;
    OnScreenRefresh* m_refresh; // recompute() when the result or head changed, else redraw()
    bool m_projectionStale = false;
    QComboBox* m_mode;
    QSpinBox* m_first;
    QSpinBox* m_second;
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPLayoutGrid* m_legendCell; // the legend (and, beside the points, the title) with a stretching spacer
    mutable bool m_legendBeside = false;
    PlaneOptions m_options;
    QString m_xLabel; // in full (the axes may show them shortened)
    QString m_yLabel;
    QString m_title;
    QString m_message;
    QList<QPointF> m_extent;
    QList<QPointF> m_alsoInView;
    QList<Pickable> m_pickables;
    int m_widestLabel = 0;
    bool m_labelsBelow = false;
    bool m_projecting = false;
    int m_progressDelay = 150;
    // Shows "Projecting…" once the progress delay has passed: a plane that comes sooner replaces the
    // previous one without a message in between (one replot and one repaint per edit, no flicker).
    QTimer* m_progress;
};

template <typename Plane>
void SpaceView::project(LatestJob<std::optional<Plane>>& job, bool heavy,
                        std::function<Plane(const HeadResult&)> compute,
                        std::function<void(std::optional<Plane>)> keep)
{
    keep(std::nullopt);
    const std::shared_ptr<const AttentionResult> result = shownResult();
    m_projecting = result && heavy;
    m_progress->stop();
    if (!result || (m_projecting && m_progressDelay <= 0))
        redraw(); // the message, or "Projecting…" until the plane arrives
    else if (m_projecting)
        m_progress->start(m_progressDelay);
    if (!result)
        return;
    const auto headIndex = static_cast<std::size_t>(currentHeadIndex());
    job.run(
        m_projecting,
        [result, headIndex, compute]() -> std::optional<Plane> {
            try {
                return compute(result->heads[headIndex]);
            } catch (const std::exception&) {
                return std::nullopt; // shown as a message by redraw()
            }
        },
        [this, keep](std::optional<Plane> plane) {
            m_projecting = false;
            m_progress->stop();
            keep(std::move(plane));
            redraw();
        });
}

} // namespace qkv::ui
