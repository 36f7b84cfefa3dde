// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A heatmap's text over and around the cells: the tick labels planned for the cells shown, the values
// written in large cells, and the row statistics in a column of their own beside the colour bar.

#include "EigenTypes.h"
#include "HeatmapTicks.h"

#include <QList>
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>

#include <utility>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemText;
class QWidget;

namespace qkv::ui {

class HeatmapData;

/// The axis rectangle of `plot` as last laid out (a guess before the first layout).
QSize axisRectSize(const QCustomPlot* plot);

/// The labels of one heatmap's plot, planned again whenever the cells shown or their size change.
class HeatmapLabels {
public:
    /// `map` and `colorBar` are the plot's: the cell values are written in a colour that reads on their cell.
    HeatmapLabels(QCustomPlot* plot, const HeatmapData& data, QCPColorMap* map, QCPColorScale* colorBar);

    /// Plans the tick labels for an axis rectangle of `size`; true when the plan changed. While settling
    /// (the labels changed the margins, which changed the rectangle) strides only grow.
    bool planTicksFor(QSize size, bool settling);
    /// Before a replot: the tick labels that fit the axis rectangle of the last layout.
    void planForLastLayout();
    /// After a layout: plans for `size` when it changed, and asks for one more layout (a few at most) when
    /// the new labels change the margins.
    void settleAfterLayout(QSize size);
    /// New values or labels: the next replot plans afresh.
    void forgetPlan();
    /// Other cells are shown (zoom, pan): the next replot plans again, settling from the current plan.
    void planAgain();
    TickPlan tickPlan() const { return m_ticks; }
    /// The tick labels drawn at the last layout, in `widget`'s coordinates.
    QList<QRectF> drawnTickLabelRects(const QWidget* widget) const;

    /// Writes the values in the cells in view when those are large enough, else hides them.
    void updateCellTexts();
    void removeCellTexts();
    /// Nothing is written (an empty matrix).
    void hideCellTexts() { m_cellTextShown = false; }
    bool showsCellValues() const { return m_cellTextShown; }
    /// The text written in a cell ("" when values are not shown, the cell is out of view or masked).
    QString cellText(Index row, Index column) const;

    void setRowAnnotations(const QStringList& annotations, const QString& title);
    QStringList rowAnnotations() const { return m_rowAnnotations; }
    QString rowAnnotationTitle() const { return m_annotationTitle; }
    /// Shows the row statistics and their header when there is one per row, and makes room for them.
    void updateRowAnnotations();

private:
    QCustomPlot* m_plot;
    const HeatmapData& m_data;
    QCPColorMap* m_map;
    QCPColorScale* m_colorBar;
    QList<QCPItemText*> m_cellTexts;               // row-major, created only while the cells are large enough
    std::pair<Index, Index> m_cellTextFirst{0, 0}; // the first row and column of the cells written
    Index m_cellTextColumns = 0;                   // columns of the window of cells written
    bool m_cellTextShown = false;
    TickPlan m_ticks;            // which tick labels are written
    bool m_ticksPlanned = false; // m_ticks was planned for the current labels
    QSize m_ticksFor;            // the axis rectangle m_ticks was planned for
    int m_relayouts = 0;         // guards the re-layout after a tick-label change
    QStringList m_rowAnnotations;
    QString m_annotationTitle;
    QCPItemText* m_annotationHeader; // the row statistics' column header
};

} // namespace qkv::ui
