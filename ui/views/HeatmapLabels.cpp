// SPDX-License-Identifier: GPL-3.0-or-later
// Heatmap's text and marks over the cells: the tick labels planned for the cells shown, the values written
// in large cells, the row statistics beside the colour bar, and the selected cell.

#include "Heatmap.h"

#include "ColorScale.h"
#include "HeatmapTicks.h"
#include "LabelText.h"

#include <qcustomplot.h>

#include <QFontMetrics>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr int minimumCellForText = 28; // pixels: below this the values are not written in the cells

// Token labels are cut short; row statistics (`whole`) are not.
QSharedPointer<QCPAxisTickerText> textTicker(const QStringList& labels, int stride, bool whole = false)
{
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < labels.size(); i += stride)
        ticker->addTick(i, whole ? labels.at(i) : elidedLabel(labels.at(i)));
    return ticker;
}

} // namespace

// Plans the tick labels for an axis rectangle of `size`; true when the plan changed. While settling (the
// labels changed the margins, which changed the rectangle) strides only grow: the plan converges, and it is
// always at least as sparse as the rectangle it is drawn in needs.
bool Heatmap::planTicksFor(QSize size, bool settling)
{
    m_ticksFor = size;
    if (m_values.size() == 0)
        return false;
    // Zoomed in, the cells are larger: plan as if the whole matrix had that cell size.
    const double xZoom = static_cast<double>(m_values.cols()) / std::max(1.0, m_plot->xAxis->range().size());
    const double yZoom = static_cast<double>(m_values.rows()) / std::max(1.0, m_plot->yAxis->range().size());
    const QSize effective(static_cast<int>(std::min(1e6, size.width() * xZoom)),
                          static_cast<int>(std::min(1e6, size.height() * yZoom)));
    TickPlan plan =
        planTicks(effective, QFontMetrics(m_plot->xAxis->tickLabelFont()), m_rowLabels, m_columnLabels);
    if (settling && m_ticksPlanned && plan.columnsVertical == m_ticks.columnsVertical) {
        plan.rowStride = std::max(plan.rowStride, m_ticks.rowStride);
        plan.columnStride = std::max(plan.columnStride, m_ticks.columnStride);
    }
    if (m_ticksPlanned && plan == m_ticks)
        return false;
    m_ticks = plan;
    m_ticksPlanned = true;
    m_plot->yAxis->setTicker(textTicker(m_rowLabels, m_ticks.rowStride));
    if (!m_rowAnnotations.isEmpty())
        m_plot->yAxis2->setTicker(textTicker(m_rowAnnotations, m_ticks.rowStride, true));
    m_plot->xAxis->setTicker(textTicker(m_columnLabels, m_ticks.columnStride));
    m_plot->xAxis->setTickLabelRotation(m_ticks.columnsVertical ? -90 : 0);
    return true;
}

// Before each replot: the tick labels that fit the axis rectangle of the last layout.
void Heatmap::updateTickers()
{
    const QSize size = axisRectSize();
    if (!m_ticksPlanned || size != m_ticksFor)
        planTicksFor(size, m_relayouts > 0);
}

// After the layout of a replot, before drawing: the cell size is known now.
void Heatmap::afterLayout()
{
    if (m_values.size() == 0) {
        m_cellTextShown = false;
        return;
    }
    const QSize size = axisRectSize();
    if (!m_cellsPending)
        fillColorMap(false); // the cells shown, or the pixels they have, changed: sampled again
    // Only a re-layout this plan caused settles (strides that only grow); a new size plans afresh, so a
    // heatmap first laid out tiny (while the window was built) gets its labels back once it is large.
    if (size != m_ticksFor && planTicksFor(size, m_relayouts > 0) && m_relayouts < 6) {
        ++m_relayouts; // the labels changed the margins: lay out once more with the new plan
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else {
        m_relayouts = 0;
    }
    updateHighlight();
    updateCellTexts();
}

QList<QRectF> Heatmap::drawnTickLabelRects() const
{
    QList<QRectF> rects;
    if (m_values.size() == 0)
        return rects;
    const QRect axisRect = m_plot->axisRect()->rect();
    const QPoint origin = m_plot->mapTo(this, QPoint(0, 0));
    const auto addAxis = [&](QCPAxis* axis) {
        const auto ticker = axis->ticker().dynamicCast<QCPAxisTickerText>();
        if (!axis->visible() || !ticker)
            return;
        const QFontMetrics metrics(axis->tickLabelFont());
        const double height = metrics.height();
        const double offset = axis->tickLabelPadding() + axis->offset();
        const QCPRange range = axis->range();
        for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it) {
            if (!range.contains(it.key()))
                continue;
            const double width = metrics.horizontalAdvance(it.value());
            const double centre = axis->coordToPixel(it.key());
            QRectF rect;
            if (axis->axisType() == QCPAxis::atLeft)
                rect = QRectF(axisRect.left() - offset - width, centre - height / 2, width, height);
            else if (axis->axisType() == QCPAxis::atRight)
                rect = QRectF(axisRect.right() + offset, centre - height / 2, width, height);
            else if (std::abs(axis->tickLabelRotation()) > 45)
                rect = QRectF(centre - height / 2, axisRect.bottom() + offset, height, width);
            else
                rect = QRectF(centre - width / 2, axisRect.bottom() + offset, width, height);
            rects.append(rect.translated(origin));
        }
    };
    addAxis(m_plot->yAxis);
    addAxis(m_plot->yAxis2);
    addAxis(m_plot->xAxis);
    return rects;
}

// Values are written in the cells on screen when those cells are large enough for them, whatever the
// matrix's size: zoomed into a corner of 1024 tokens, the numbers there are readable. Only the cells in view
// get a text item (a few hundred at most), reused as the view moves.
void Heatmap::updateCellTexts()
{
    const Index rows = m_values.rows(), columns = m_values.cols();
    const QRect rect = m_plot->axisRect()->rect();
    const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
    const double cellWidth = rows > 0 && columns > 0 ? rect.width() / std::max(1e-9, x.size()) : 0.0;
    const double cellHeight = rows > 0 && columns > 0 ? rect.height() / std::max(1e-9, y.size()) : 0.0;

    bool show = std::min(cellWidth, cellHeight) >= minimumCellForText;
    // The cells in view, partly shown ones included.
    const Index firstRow = std::clamp<Index>(static_cast<Index>(std::floor(y.lower + 0.5)), 0, rows);
    const Index lastRow = std::clamp<Index>(static_cast<Index>(std::ceil(y.upper - 0.5)), -1, rows - 1);
    const Index firstColumn = std::clamp<Index>(static_cast<Index>(std::floor(x.lower + 0.5)), 0, columns);
    const Index lastColumn = std::clamp<Index>(static_cast<Index>(std::ceil(x.upper - 0.5)), -1, columns - 1);
    const Index shownRows = std::max<Index>(0, lastRow - firstRow + 1);
    const Index shownColumns = std::max<Index>(0, lastColumn - firstColumn + 1);
    show = show && shownRows > 0 && shownColumns > 0;
    QFont font = m_plot->xAxis->tickLabelFont();
    if (show) {
        const QFontMetrics metrics(font);
        int widest = 0;
        for (Index i = firstRow; i <= lastRow; ++i)
            for (Index j = firstColumn; j <= lastColumn; ++j)
                widest = std::max(widest, metrics.horizontalAdvance(cellString(m_values(i, j))));
        // Shrinks the font a little (not below 6.5 pt) before giving up on writing the values.
        const double basePoint = font.pointSizeF() > 0 ? font.pointSizeF() : 9.0;
        const double fit = widest > 0 ? (cellWidth - 4) / widest : 1.0;
        const double point = std::floor(basePoint * std::min(1.0, fit) * 2.0) / 2.0;
        font.setPointSizeF(std::max(point, 6.5));
        show = point >= 6.5;
    }
    if (!show) {
        m_cellTextShown = false;
        for (QCPItemText* item : std::as_const(m_cellTexts))
            item->setVisible(false);
        return;
    }

    const qsizetype needed = static_cast<qsizetype>(shownRows * shownColumns);
    while (m_cellTexts.size() < needed) {
        auto* item = new QCPItemText(m_plot);
        item->setClipToAxisRect(true);
        item->setSelectable(false);
        item->position->setType(QCPItemPosition::ptPlotCoords);
        item->position->setAxes(m_plot->xAxis, m_plot->yAxis);
        item->setPositionAlignment(Qt::AlignCenter);
        m_cellTexts.append(item);
    }
    QCPColorGradient gradient = m_map->gradient(); // color() is not const
    const QCPRange range(m_range.first, m_range.second);
    const bool logarithmic = m_scale->dataScaleType() == QCPAxis::stLogarithmic;
    const bool perRow = m_rowFactor.size() == rows;
    qsizetype k = 0;
    for (Index i = firstRow; i <= lastRow; ++i)
        for (Index j = firstColumn; j <= lastColumn; ++j, ++k) {
            QCPItemText* item = m_cellTexts.at(k);
            if (isMasked(i, j)) {
                item->setText(QString());
                item->setVisible(false);
                continue;
            }
            const double value = m_values(i, j);
            item->position->setCoords(static_cast<double>(j), static_cast<double>(i));
            item->setText(cellString(value));
            item->setFont(font);
            item->setColor(
                textColorOn(gradient.color(perRow ? value * m_rowFactor(i) : value, range, logarithmic)));
            item->setVisible(true);
        }
    for (; k < m_cellTexts.size(); ++k)
        m_cellTexts.at(k)->setVisible(false);
    m_cellTextFirst = {firstRow, firstColumn};
    m_cellTextColumns = shownColumns;
    m_cellTextShown = true;
}

void Heatmap::removeCellTexts()
{
    for (QCPItemText* item : std::as_const(m_cellTexts))
        m_plot->removeItem(item);
    m_cellTexts.clear();
    m_cellTextShown = false;
}

void Heatmap::setRowAnnotations(const QStringList& annotations, const QString& title)
{
    m_rowAnnotations = annotations;
    m_annotationTitle = title;
    updateRowAnnotations();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::updateRowAnnotations()
{
    const bool shown = !m_rowAnnotations.isEmpty() && m_rowAnnotations.size() == m_values.rows();
    m_plot->yAxis2->setVisible(shown);
    const bool headed = shown && !m_annotationTitle.isEmpty();
    m_annotationHeader->setVisible(headed);
    m_annotationHeader->setText(m_annotationTitle);
    if (!shown) {
        m_plot->plotLayout()->setColumnSpacing(5);
        m_plot->axisRect()->setMinimumMargins(QMargins());
        return;
    }
    m_plot->yAxis2->setTicker(textTicker(m_rowAnnotations, m_ticks.rowStride, true));
    // A column of its own: room above the axis rectangle for the header, and a clear gap between the
    // wider of header and statistics and the colour bar.
    const QFontMetrics labels(m_plot->yAxis2->tickLabelFont());
    int widest = 0;
    for (int i = 0; i < m_rowAnnotations.size(); i += std::max(1, m_ticks.rowStride))
        widest = std::max(widest, labels.horizontalAdvance(m_rowAnnotations.at(i)));
    const QFontMetrics header(m_annotationHeader->font());
    const QRect headerRect = header.boundingRect(QRect(0, 0, 1000, 1000), Qt::AlignLeft, m_annotationTitle);
    const int column = tickLabelPadding + 3 + widest;
    const int headerWidth = headed ? tickLabelPadding + headerRect.width() : 0;
    m_plot->plotLayout()->setColumnSpacing(std::max(0, headerWidth - column) + 16);
    // The first row's label reaches half a line above the axis rectangle: the header stands above it.
    const int halfLine = labels.height() / 2 + 2;
    m_annotationHeader->setPadding(QMargins(tickLabelPadding, 0, 0, halfLine));
    m_plot->axisRect()->setMinimumMargins(QMargins(0, headed ? headerRect.height() + halfLine + 2 : 0, 0, 0));
}

void Heatmap::setHighlight(int row, int column)
{
    m_highlight = {row, column};
    updateHighlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool Heatmap::showsSelectionBands() const
{
    return m_rowBand->visible() && m_columnBand->visible();
}

void Heatmap::updateHighlight()
{
    const auto [row, column] = m_highlight;
    const Index rows = m_values.rows(), columns = m_values.cols();
    const bool shown = !m_selectionHidden && (row >= 0 || column >= 0) && row < rows && column < columns &&
                       rows > 0 && columns > 0;
    m_highlightRect->setVisible(shown);
    m_rowBand->setVisible(shown && row >= 0 && column >= 0);
    m_columnBand->setVisible(shown && row >= 0 && column >= 0);
    if (!shown)
        return;
    const double lastColumn = static_cast<double>(columns) - 0.5;
    const double lastRow = static_cast<double>(rows) - 0.5;
    // The outline is at least minimumMark pixels across, centred on the cell, however small the cells.
    constexpr double minimumMark = 9.0;
    const QRect rect = m_plot->axisRect()->rect();
    const double cellWidth = rect.width() > 0 ? rect.width() / m_plot->xAxis->range().size() : 1.0;
    const double cellHeight = rect.height() > 0 ? rect.height() / m_plot->yAxis->range().size() : 1.0;
    const double growX = std::max(0.0, (minimumMark / cellWidth - 1.0) / 2.0);
    const double growY = std::max(0.0, (minimumMark / cellHeight - 1.0) / 2.0);
    const double left = column >= 0 ? column - 0.5 - growX : -0.5;
    const double right = column >= 0 ? column + 0.5 + growX : lastColumn;
    const double top = row >= 0 ? row - 0.5 - growY : -0.5;
    const double bottom = row >= 0 ? row + 0.5 + growY : lastRow;
    m_highlightRect->topLeft->setCoords(left, top);
    m_highlightRect->bottomRight->setCoords(right, bottom);
    m_rowBand->topLeft->setCoords(-0.5, row - 0.5);
    m_rowBand->bottomRight->setCoords(lastColumn, row + 0.5);
    m_columnBand->topLeft->setCoords(column - 0.5, -0.5);
    m_columnBand->bottomRight->setCoords(column + 0.5, lastRow);
}

} // namespace qkv::ui
