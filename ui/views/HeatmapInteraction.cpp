// SPDX-License-Identifier: GPL-3.0-or-later
// Heatmap's input: the mouse (hover text, click, paint drag), the keys, zoom and pan, the scroll bars.

#include "Heatmap.h"

#include "HeatmapMenu.h"

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

// The mouse, the context menu, the rectangle a paint drag shows, zoom and pan, and the scroll bars.
void Heatmap::setUpInteraction()
{
    connect(m_plot, &QCustomPlot::mouseMove, this, &Heatmap::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &Heatmap::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &Heatmap::onMouseRelease);
    m_menu = new HeatmapMenu(this);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& position) {
        m_menu->refresh();
        m_menu->exec(m_plot->mapToGlobal(position));
    });
    // The rectangle a paint drag covers, until release.
    m_paintRect = new QCPItemRect(m_plot);
    m_paintRect->setPen(QPen(QColor(20, 20, 20), 1.5, Qt::DashLine));
    m_paintRect->setBrush(QColor(255, 255, 255, 90));
    m_paintRect->setVisible(false);
    m_paintRect->setSelectable(false);
    m_paintRect->setLayer(QStringLiteral("overlay"));
    // Zoom (wheel) and pan (drag) within the matrix; the tick labels are planned again for the cells shown.
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->installEventFilter(this); // a touchpad pinch zooms too
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

void Heatmap::setPaintable(bool paintable)
{
    m_paintable = paintable;
    if (!paintable && m_paintAnchor.first >= 0) {
        m_paintAnchor = m_paintCorner = {-1, -1};
        m_plot->setInteraction(QCP::iRangeDrag, true);
        updatePaintRect();
    }
}

void Heatmap::updatePaintRect()
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
void Heatmap::keyPressEvent(QKeyEvent* event)
{
    const Index rows = m_values.rows(), columns = m_values.cols();
    if (rows == 0 || columns == 0) {
        QWidget::keyPressEvent(event);
        return;
    }
    int row = std::max(0, m_highlight.first);
    int column = std::max(0, m_highlight.second);
    const int lastRow = static_cast<int>(rows) - 1, lastColumn = static_cast<int>(columns) - 1;
    const int page = std::max(1, static_cast<int>(std::floor(m_plot->yAxis->range().size())) - 1);
    const bool control = event->modifiers() & Qt::ControlModifier;
    if (control && (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)) {
        zoomBy(0.5);
        return;
    }
    if (control && event->key() == Qt::Key_Minus) {
        zoomBy(2.0);
        return;
    }
    if (control && event->key() == Qt::Key_0) {
        fitToView();
        return;
    }
    if (m_paintable && event->key() == Qt::Key_Space && m_highlight.first >= 0 && m_highlight.second >= 0 &&
        m_highlight.first <= lastRow && m_highlight.second <= lastColumn) {
        emit rectanglePainted(m_highlight.first, m_highlight.second, m_highlight.first, m_highlight.second);
        event->accept();
        return;
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
        QWidget::keyPressEvent(event);
        return;
    }
    emit cellClicked(std::clamp(row, 0, lastRow), std::clamp(column, 0, lastColumn));
    event->accept();
}

// A pinch on a touchpad (a native zoom gesture) zooms about its centre, as the wheel does about the pointer.
bool Heatmap::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::NativeGesture) {
        const auto* gesture = static_cast<QNativeGestureEvent*>(event);
        if (gesture->gestureType() == Qt::ZoomNativeGesture && m_values.size() > 0) {
            const double factor = std::clamp(1.0 - gesture->value(), 0.25, 4.0);
            const QPointF at = gesture->position();
            m_plot->xAxis->scaleRange(factor, m_plot->xAxis->pixelToCoord(at.x()));
            m_plot->yAxis->scaleRange(factor, m_plot->yAxis->pixelToCoord(at.y()));
            m_plot->replot(QCustomPlot::rpQueuedReplot);
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void Heatmap::fitToView()
{
    if (m_values.size() == 0)
        return;
    m_plot->xAxis->setRange(-0.5, static_cast<double>(m_values.cols()) - 0.5);
    m_plot->yAxis->setRange(-0.5, static_cast<double>(m_values.rows()) - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::zoomBy(double factor)
{
    if (m_values.size() == 0)
        return;
    const auto [row, column] = m_highlight;
    const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
    // About the selected cell when it is in view, else about the centre.
    const double cx = column >= 0 && x.contains(column) ? column : x.center();
    const double cy = row >= 0 && y.contains(row) ? row : y.center();
    m_plot->xAxis->scaleRange(factor, cx);
    m_plot->yAxis->scaleRange(factor, cy);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// Zoom and pan stay within the matrix: at most all of it, at least one cell, never beyond an edge.
void Heatmap::keepInMatrix(QCPAxis* axis, const QCPRange& range)
{
    const Index count = axis == m_plot->xAxis ? m_values.cols() : m_values.rows();
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
    m_ticksFor = QSize(); // the cells shown changed: plan the labels again
    m_relayouts = 0;
    updateScrollBar(axis == m_plot->xAxis ? m_horizontalScroll : m_verticalScroll, count, kept);
}

// A scroll bar shows where the cells in view lie in the matrix; hidden when all of it is shown.
void Heatmap::updateScrollBar(QScrollBar* bar, Index count, const QCPRange& range)
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

std::pair<double, double> Heatmap::visibleRows() const
{
    return {m_plot->yAxis->range().lower, m_plot->yAxis->range().upper};
}

std::pair<double, double> Heatmap::visibleColumns() const
{
    return {m_plot->xAxis->range().lower, m_plot->xAxis->range().upper};
}

QPoint Heatmap::cellCentre(Index row, Index column) const
{
    const QPointF inPlot(m_plot->xAxis->coordToPixel(static_cast<double>(column)),
                         m_plot->yAxis->coordToPixel(static_cast<double>(row)));
    return m_plot->mapTo(this, inPlot.toPoint());
}

bool Heatmap::cellAt(const QPoint& position, Index* row, Index* column) const
{
    if (m_values.size() == 0 || !m_plot->axisRect()->rect().contains(position))
        return false;
    const double x = m_plot->xAxis->pixelToCoord(position.x());
    const double y = m_plot->yAxis->pixelToCoord(position.y());
    const auto j = static_cast<Index>(std::floor(x + 0.5));
    const auto i = static_cast<Index>(std::floor(y + 0.5));
    if (i < 0 || j < 0 || i >= m_values.rows() || j >= m_values.cols())
        return false;
    *row = i;
    *column = j;
    return true;
}

void Heatmap::onMouseMove(QMouseEvent* event)
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
                           m_paintable ? cellDescription(row, column) + QLatin1Char('\n') + toolTip()
                                       : cellDescription(row, column),
                           m_plot);
    else
        QToolTip::hideText();
}

// A press selects the cell. On a paintable heatmap it also starts a paint drag (Shift: a pan instead), for
// which the plot's own drag-to-pan is off until release.
void Heatmap::onMousePress(QMouseEvent* event)
{
    Index row = 0, column = 0;
    if (event->button() != Qt::LeftButton || !cellAt(event->position().toPoint(), &row, &column))
        return;
    if (m_paintable && !(event->modifiers() & Qt::ShiftModifier)) {
        m_paintAnchor = m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
        m_paintMoved = false;
        m_plot->setInteraction(QCP::iRangeDrag, false);
    }
    emit cellClicked(static_cast<int>(row), static_cast<int>(column));
}

void Heatmap::onMouseRelease(QMouseEvent* event)
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
    const bool inside = anchor.first < m_values.rows() && anchor.second < m_values.cols() &&
                        corner.first < m_values.rows() && corner.second < m_values.cols();
    if (moved && inside)
        emit rectanglePainted(anchor.first, anchor.second, corner.first, corner.second);
}

} // namespace qkv::ui
