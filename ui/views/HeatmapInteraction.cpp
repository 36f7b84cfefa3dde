// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapInteraction.h"

#include "Heatmap.h"
#include "HeatmapData.h"
#include "HeatmapLabels.h"
#include "HeatmapSelection.h"

#include <qcustomplot.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QNativeGestureEvent>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr double scrollSteps = 100.0; // scroll-bar steps per cell

} // namespace

// The mouse, the rectangle a paint drag shows, zoom and pan, and the scroll bars.
HeatmapInteraction::HeatmapInteraction(Heatmap* heatmap, QCustomPlot* plot, const HeatmapData& data,
                                       HeatmapLabels& labels, const HeatmapSelection& selection,
                                       QScrollBar* horizontal, QScrollBar* vertical)
    : QObject(heatmap), m_heatmap(heatmap), m_plot(plot), m_data(data), m_labels(labels),
      m_selection(selection), m_horizontalScroll(horizontal), m_verticalScroll(vertical),
      m_paintRect(new QCPItemRect(plot))
{
    connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapInteraction::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &HeatmapInteraction::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &HeatmapInteraction::onMouseRelease);
    // The rectangle a paint drag covers, until release.
    m_paintRect->setPen(QPen(QColor(20, 20, 20), 1.5, Qt::DashLine));
    m_paintRect->setBrush(QColor(255, 255, 255, 90));
    m_paintRect->setVisible(false);
    m_paintRect->setSelectable(false);
    m_paintRect->setLayer(QStringLiteral("overlay"));
    // Zoom (wheel) and pan (drag) within the matrix; the tick labels are planned again for the cells shown.
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->installEventFilter(heatmap); // a touchpad pinch zooms too (Heatmap::eventFilter)
    m_plot->axisRect()->setRangeZoomAxes(m_plot->xAxis, m_plot->yAxis);
    m_plot->axisRect()->setRangeDragAxes(m_plot->xAxis, m_plot->yAxis);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
                [this, axis](const QCPRange& range) { keepInMatrix(axis, range); });
    for (auto [bar, axis] :
         {std::pair{m_horizontalScroll, m_plot->xAxis}, std::pair{m_verticalScroll, m_plot->yAxis}})
        connect(bar, &QScrollBar::valueChanged, this, [this, axis = axis](int value) {
            if (m_updatingScrollBars)
                return;
            const double size = axis->range().size();
            const double lower = value / scrollSteps - 0.5;
            axis->setRange(lower, lower + size);
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        });
}

void HeatmapInteraction::setPaintable(bool paintable)
{
    m_paintable = paintable;
    if (!paintable && m_paintAnchor.first >= 0) {
        m_paintAnchor = m_paintCorner = {-1, -1};
        m_plot->setInteraction(QCP::iRangeDrag, true);
        updatePaintRect();
    }
}

void HeatmapInteraction::updatePaintRect()
{
    const bool shown = m_paintAnchor.first >= 0 && m_paintMoved;
    m_paintRect->setVisible(shown);
    if (shown) {
        const auto [r0, c0] = m_paintAnchor;
        const auto [r1, c1] = m_paintCorner;
        m_paintRect->topLeft->setCoords(std::min(c0, c1) - 0.5, std::min(r0, r1) - 0.5);
        m_paintRect->bottomRight->setCoords(std::max(c0, c1) + 0.5, std::max(r0, r1) + 0.5);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// Arrow keys move the selected cell by one, Page Up/Down by a screenful of rows, Home/End to the first or
// last column (with Ctrl: row); the move is announced as a click, so everything that follows clicks follows.
bool HeatmapInteraction::keyPress(QKeyEvent* event)
{
    const Index rows = m_data.rows(), columns = m_data.columns();
    if (rows == 0 || columns == 0)
        return false;
    const auto [selectedRow, selectedColumn] = m_selection.cell();
    int row = std::max(0, selectedRow);
    int column = std::max(0, selectedColumn);
    const int lastRow = static_cast<int>(rows) - 1, lastColumn = static_cast<int>(columns) - 1;
    const int page = std::max(1, static_cast<int>(std::floor(m_plot->yAxis->range().size())) - 1);
    const bool control = event->modifiers() & Qt::ControlModifier;
    if (control && (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)) {
        zoomBy(0.5);
        return true;
    }
    if (control && event->key() == Qt::Key_Minus) {
        zoomBy(2.0);
        return true;
    }
    if (control && event->key() == Qt::Key_0) {
        fitToView();
        return true;
    }
    if (m_paintable && event->key() == Qt::Key_Space && selectedRow >= 0 && selectedColumn >= 0 &&
        selectedRow <= lastRow && selectedColumn <= lastColumn) {
        emit m_heatmap->rectanglePainted(selectedRow, selectedColumn, selectedRow, selectedColumn);
        event->accept();
        return true;
    }
    switch (event->key()) {
    case Qt::Key_Up:
        --row;
        break;
    case Qt::Key_Down:
        ++row;
        break;
    case Qt::Key_Left:
        --column;
        break;
    case Qt::Key_Right:
        ++column;
        break;
    case Qt::Key_PageUp:
        row -= page;
        break;
    case Qt::Key_PageDown:
        row += page;
        break;
    case Qt::Key_Home:
        (control ? row : column) = 0;
        break;
    case Qt::Key_End:
        (control ? row : column) = control ? lastRow : lastColumn;
        break;
    default:
        return false;
    }
    emit m_heatmap->cellClicked(std::clamp(row, 0, lastRow), std::clamp(column, 0, lastColumn));
    event->accept();
    return true;
}

// A pinch on a touchpad (a native zoom gesture) zooms about its centre, as the wheel does about the pointer.
bool HeatmapInteraction::pinch(QEvent* event)
{
    if (event->type() == QEvent::NativeGesture) {
        const auto* gesture = static_cast<QNativeGestureEvent*>(event);
        if (gesture->gestureType() == Qt::ZoomNativeGesture && !m_data.isEmpty()) {
            const double factor = std::clamp(1.0 - gesture->value(), 0.25, 4.0);
            const QPointF at = gesture->position();
            m_plot->xAxis->scaleRange(factor, m_plot->xAxis->pixelToCoord(at.x()));
            m_plot->yAxis->scaleRange(factor, m_plot->yAxis->pixelToCoord(at.y()));
            m_plot->replot(QCustomPlot::rpQueuedReplot);
            return true;
        }
    }
    return false;
}

void HeatmapInteraction::fitToView()
{
    if (m_data.isEmpty())
        return;
    m_plot->xAxis->setRange(-0.5, static_cast<double>(m_data.columns()) - 0.5);
    m_plot->yAxis->setRange(-0.5, static_cast<double>(m_data.rows()) - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapInteraction::zoomBy(double factor)
{
    if (m_data.isEmpty())
        return;
    const auto [row, column] = m_selection.cell();
    const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
    // About the selected cell when it is in view, else about the centre.
    const double cx = column >= 0 && x.contains(column) ? column : x.center();
    const double cy = row >= 0 && y.contains(row) ? row : y.center();
    m_plot->xAxis->scaleRange(factor, cx);
    m_plot->yAxis->scaleRange(factor, cy);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// Zoom and pan stay within the matrix: at most all of it, at least one cell, never beyond an edge.
void HeatmapInteraction::keepInMatrix(QCPAxis* axis, const QCPRange& range)
{
    const Index count = axis == m_plot->xAxis ? m_data.columns() : m_data.rows();
    if (count == 0)
        return;
    const double lowest = -0.5, highest = static_cast<double>(count) - 0.5;
    const double size = std::clamp(range.size(), std::min(1.0, highest - lowest), highest - lowest);
    const double lower = std::clamp(range.center() - size / 2, lowest, highest - size);
    const QCPRange kept(lower, lower + size);
    if (std::abs(kept.lower - range.lower) > 1e-9 || std::abs(kept.upper - range.upper) > 1e-9) {
        axis->setRange(kept); // emits rangeChanged again, with a range that needs no change
        return;
    }
    m_labels.planAgain(); // the cells shown changed
    updateScrollBar(axis == m_plot->xAxis ? m_horizontalScroll : m_verticalScroll, count, kept);
}

// A scroll bar shows where the cells in view lie in the matrix; hidden when all of it is shown.
void HeatmapInteraction::updateScrollBar(QScrollBar* bar, Index count, const QCPRange& range)
{
    const double hidden = static_cast<double>(count) - range.size();
    m_updatingScrollBars = true;
    bar->setVisible(hidden > 1e-6);
    bar->setRange(0, static_cast<int>(std::lround(std::max(0.0, hidden) * scrollSteps)));
    bar->setPageStep(static_cast<int>(std::lround(range.size() * scrollSteps)));
    bar->setSingleStep(static_cast<int>(scrollSteps));
    bar->setValue(static_cast<int>(std::lround((range.lower + 0.5) * scrollSteps)));
    m_updatingScrollBars = false;
}

bool HeatmapInteraction::cellAt(const QPoint& position, Index* row, Index* column) const
{
    if (m_data.isEmpty() || !m_plot->axisRect()->rect().contains(position))
        return false;
    const double x = m_plot->xAxis->pixelToCoord(position.x());
    const double y = m_plot->yAxis->pixelToCoord(position.y());
    const auto j = static_cast<Index>(std::floor(x + 0.5));
    const auto i = static_cast<Index>(std::floor(y + 0.5));
    if (i < 0 || j < 0 || i >= m_data.rows() || j >= m_data.columns())
        return false;
    *row = i;
    *column = j;
    return true;
}

void HeatmapInteraction::onMouseMove(QMouseEvent* event)
{
    Index row = 0, column = 0;
    const bool onCell = cellAt(event->position().toPoint(), &row, &column);
    if (m_paintAnchor.first >= 0) {
        if (onCell && std::make_pair(static_cast<int>(row), static_cast<int>(column)) != m_paintCorner) {
            m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
            m_paintMoved = m_paintMoved || m_paintCorner != m_paintAnchor;
            updatePaintRect();
        }
        return;
    }
    if (onCell)
        QToolTip::showText(event->globalPosition().toPoint(),
                           m_paintable ? m_heatmap->cellDescription(row, column) + QLatin1Char('\n') +
                                             m_heatmap->toolTip()
                                       : m_heatmap->cellDescription(row, column),
                           m_plot);
    else
        QToolTip::hideText();
}

// A press selects the cell. On a paintable heatmap it also starts a paint drag (Shift: a pan instead), for
// which the plot's own drag-to-pan is off until release.
void HeatmapInteraction::onMousePress(QMouseEvent* event)
{
    Index row = 0, column = 0;
    if (event->button() != Qt::LeftButton || !cellAt(event->position().toPoint(), &row, &column))
        return;
    if (m_paintable && !(event->modifiers() & Qt::ShiftModifier)) {
        m_paintAnchor = m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
        m_paintMoved = false;
        m_plot->setInteraction(QCP::iRangeDrag, false);
    }
    emit m_heatmap->cellClicked(static_cast<int>(row), static_cast<int>(column));
}

void HeatmapInteraction::onMouseRelease(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton || m_paintAnchor.first < 0)
        return;
    Index row = 0, column = 0;
    if (cellAt(event->position().toPoint(), &row, &column)) {
        m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
        m_paintMoved = m_paintMoved || m_paintCorner != m_paintAnchor;
    }
    const auto [anchor, corner] = std::make_pair(m_paintAnchor, m_paintCorner);
    const bool moved = m_paintMoved;
    m_paintAnchor = m_paintCorner = {-1, -1};
    m_paintMoved = false;
    m_plot->setInteraction(QCP::iRangeDrag, true);
    updatePaintRect();
    // A click without a drag only selects; the shape may have changed meanwhile (an undo mid-drag).
    const bool inside = anchor.first < m_data.rows() && anchor.second < m_data.columns() &&
                        corner.first < m_data.rows() && corner.second < m_data.columns();
    if (moved && inside)
        emit m_heatmap->rectanglePainted(anchor.first, anchor.second, corner.first, corner.second);
}

} // namespace qkv::ui
