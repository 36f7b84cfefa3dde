// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapLabels.h"

#include "ColorScale.h"
#include "HeatmapData.h"
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

QSize axisRectSize(const QCustomPlot* plot)
{
    const QRect rect = plot->axisRect()->rect();
    if (rect.width() > 10 && rect.height() > 10)
        return rect.size();
    // Not laid out yet: a guess that the next layout corrects.
    return QSize(std::max(50, plot->width() - 120), std::max(50, plot->height() - 90));
}

HeatmapLabels::HeatmapLabels(QCustomPlot* plot, const HeatmapData& data, QCPColorMap* map,
                             QCPColorScale* colorBar)
    : m_plot(plot), m_data(data), m_map(map), m_colorBar(colorBar), m_annotationHeader(new QCPItemText(plot))
{
    // The row statistics' header stands above their column, apart from the colour bar and its label.
    m_annotationHeader->setClipToAxisRect(false);
    m_annotationHeader->setSelectable(false);
    m_annotationHeader->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_annotationHeader->position->setAxisRect(m_plot->axisRect());
    m_annotationHeader->position->setCoords(1.0, 0.0);
    m_annotationHeader->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_annotationHeader->setTextAlignment(Qt::AlignLeft);
    m_annotationHeader->setPadding(QMargins(tickLabelPadding, 0, 0, 2));
    QFont headerFont = m_plot->yAxis2->labelFont();
    headerFont.setBold(true);
    m_annotationHeader->setFont(headerFont);
    m_annotationHeader->setVisible(false);
}

// Plans the tick labels for an axis rectangle of `size`; true when the plan changed. While settling (the
// labels changed the margins, which changed the rectangle) strides only grow: the plan converges, and it is
// always at least as sparse as the rectangle it is drawn in needs.
bool HeatmapLabels::planTicksFor(QSize size, bool settling)
{
    m_ticksFor = size;
    if (m_data.isEmpty())
        return false;
    // Zoomed in, the cells are larger: plan as if the whole matrix had that cell size.
    const double xZoom = static_cast<double>(m_data.columns()) / std::max(1.0, m_plot->xAxis->range().size());
    const double yZoom = static_cast<double>(m_data.rows()) / std::max(1.0, m_plot->yAxis->range().size());
    const QSize effective(static_cast<int>(std::min(1e6, size.width() * xZoom)),
                          static_cast<int>(std::min(1e6, size.height() * yZoom)));
    TickPlan plan = planTicks(effective, QFontMetrics(m_plot->xAxis->tickLabelFont()), m_data.rowLabels(),
                              m_data.columnLabels());
    if (settling && m_ticksPlanned && plan.columnsVertical == m_ticks.columnsVertical) {
        plan.rowStride = std::max(plan.rowStride, m_ticks.rowStride);
        plan.columnStride = std::max(plan.columnStride, m_ticks.columnStride);
    }
    if (m_ticksPlanned && plan == m_ticks)
        return false;
    m_ticks = plan;
    m_ticksPlanned = true;
    m_plot->yAxis->setTicker(textTicker(m_data.rowLabels(), m_ticks.rowStride));
    if (!m_rowAnnotations.isEmpty())
        m_plot->yAxis2->setTicker(textTicker(m_rowAnnotations, m_ticks.rowStride, true));
    m_plot->xAxis->setTicker(textTicker(m_data.columnLabels(), m_ticks.columnStride));
    m_plot->xAxis->setTickLabelRotation(m_ticks.columnsVertical ? -90 : 0);
    return true;
}

void HeatmapLabels::planForLastLayout()
{
    const QSize size = axisRectSize(m_plot);
    if (!m_ticksPlanned || size != m_ticksFor)
        planTicksFor(size, m_relayouts > 0);
}

void HeatmapLabels::settleAfterLayout(QSize size)
{
    // Only a re-layout this plan caused settles (strides that only grow); a new size plans afresh, so a
    // heatmap first laid out tiny (while the window was built) gets its labels back once it is large.
    if (size != m_ticksFor && planTicksFor(size, m_relayouts > 0) && m_relayouts < 6) {
        ++m_relayouts; // the labels changed the margins: lay out once more with the new plan
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else {
        m_relayouts = 0;
    }
}

void HeatmapLabels::forgetPlan()
{
    m_ticksPlanned = false;
    m_ticksFor = QSize();
    m_relayouts = 0;
}

void HeatmapLabels::planAgain()
{
    m_ticksFor = QSize();
    m_relayouts = 0;
}

QList<QRectF> HeatmapLabels::drawnTickLabelRects(const QWidget* widget) const
{
    QList<QRectF> rects;
    if (m_data.isEmpty())
        return rects;
    const QRect axisRect = m_plot->axisRect()->rect();
    const QPoint origin = m_plot->mapTo(widget, QPoint(0, 0));
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
void HeatmapLabels::updateCellTexts()
{
    const Index rows = m_data.rows(), columns = m_data.columns();
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
                widest =
                    std::max(widest, metrics.horizontalAdvance(m_data.cellString(m_data.values()(i, j))));
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
    const QCPRange range(m_data.range().first, m_data.range().second);
    const bool logarithmic = m_colorBar->dataScaleType() == QCPAxis::stLogarithmic;
    qsizetype k = 0;
    for (Index i = firstRow; i <= lastRow; ++i)
        for (Index j = firstColumn; j <= lastColumn; ++j, ++k) {
            QCPItemText* item = m_cellTexts.at(k);
            if (m_data.isMasked(i, j)) {
                item->setText(QString());
                item->setVisible(false);
                continue;
            }
            const double value = m_data.values()(i, j);
            item->position->setCoords(static_cast<double>(j), static_cast<double>(i));
            item->setText(m_data.cellString(value));
            item->setFont(font);
            item->setColor(textColorOn(gradient.color(value * m_data.rowFactor(i), range, logarithmic)));
            item->setVisible(true);
        }
    for (; k < m_cellTexts.size(); ++k)
        m_cellTexts.at(k)->setVisible(false);
    m_cellTextFirst = {firstRow, firstColumn};
    m_cellTextColumns = shownColumns;
    m_cellTextShown = true;
}

void HeatmapLabels::removeCellTexts()
{
    for (QCPItemText* item : std::as_const(m_cellTexts))
        m_plot->removeItem(item);
    m_cellTexts.clear();
    m_cellTextShown = false;
}

void HeatmapLabels::setRowAnnotations(const QStringList& annotations, const QString& title)
{
    m_rowAnnotations = annotations;
    m_annotationTitle = title;
    updateRowAnnotations();
}

void HeatmapLabels::updateRowAnnotations()
{
    const bool shown = !m_rowAnnotations.isEmpty() && m_rowAnnotations.size() == m_data.rows();
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

QString HeatmapLabels::cellText(Index row, Index column) const
{
    if (!m_cellTextShown || row < 0 || column < 0 || row >= m_data.rows() || column >= m_data.columns())
        return QString();
    const auto [firstRow, firstColumn] = m_cellTextFirst;
    if (row < firstRow || column < firstColumn || column >= firstColumn + m_cellTextColumns)
        return QString();
    const auto index = static_cast<qsizetype>((row - firstRow) * m_cellTextColumns + (column - firstColumn));
    const QCPItemText* item = index < m_cellTexts.size() ? m_cellTexts.at(index) : nullptr;
    return item && item->visible() ? item->text() : QString();
}

} // namespace qkv::ui
