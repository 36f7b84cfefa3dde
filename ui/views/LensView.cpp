// SPDX-License-Identifier: GPL-3.0-or-later
#include "LensView.h"

#include "ColorScale.h"
#include "LabelText.h"

#include <QEvent>
#include <QHelpEvent>
#include <QLinearGradient>
#include <QPaintEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr double margin = 6.0;
constexpr int hoverTop = 5; // the tokens the hover text lists

// A column or row k of `count`, `size` pixels each, lies in view from `offset` over `extent` pixels.
std::pair<int, int> visibleRange(double offset, double extent, double size, int count)
{
    if (count == 0 || size <= 0)
        return {0, -1};
    const int first = std::clamp(int(std::floor(offset / size)), 0, count - 1);
    const int last = std::clamp(int(std::ceil((offset + extent) / size)) - 1, first, count - 1);
    return {first, last};
}

// Every k-th label, so that labels `labelExtent` long never overlap on cells `cellExtent` long.
int labelStride(double labelExtent, double cellExtent)
{
    return cellExtent <= 0 ? 1 : std::max(1, int(std::ceil(labelExtent / cellExtent)));
}

} // namespace

struct LensView::Layout {
    QRectF title;
    QRectF grid; ///< the cells' part on show
    double rowLabelsLeft = 0;
    double columnLabelsTop = 0;
    QRectF colorBar;
    double cellWidth = 0, cellHeight = 0;
    double scrollX = 0, scrollY = 0;
    int rows = 0, columns = 0;
    QFont font;
};

LensView::LensView(QWidget* parent) : QAbstractScrollArea(parent)
{
    setObjectName(QStringLiteral("lensView"));
    setMouseTracking(true);
    viewport()->setMouseTracking(true);
    setFrameShape(QFrame::NoFrame);
    setMinimumSize(240, 160);
}

LensView::~LensView() = default;

void LensView::setDisplay(LensDisplay display)
{
    m_display = std::move(display);
    updateScrollBars();
    viewport()->update();
}

int LensView::layerCount() const
{
    return m_display.lens ? int(m_display.lens->layers.size()) : 0;
}

int LensView::positionCount() const
{
    return layerCount() > 0 ? int(m_display.lens->layers.front().size()) : 0;
}

double LensView::cellValue(int layer, int position) const
{
    if (layer < 0 || layer >= layerCount() || position < 0 || position >= positionCount())
        return std::nan("");
    const LensCell& cell = m_display.lens->layers[std::size_t(layer)][std::size_t(position)];
    if (m_display.lens->hasAnswer)
        return cell.answerProbability;
    return cell.top.empty() ? std::nan("") : cell.top.front().probability;
}

QString LensView::cellToken(int layer, int position) const
{
    if (layer < 0 || layer >= layerCount() || position < 0 || position >= positionCount())
        return {};
    const LensCell& cell = m_display.lens->layers[std::size_t(layer)][std::size_t(position)];
    return cell.top.empty() ? QString() : m_display.labels.value(cell.top.front().id);
}

QString LensView::layerLabel(int layer) const
{
    return layer == layerCount() - 1 ? tr("output") : QStringLiteral("L%1").arg(layer);
}

QString LensView::cellDescription(int layer, int position) const
{
    if (layer < 0 || layer >= layerCount() || position < 0 || position >= positionCount())
        return {};
    const LensCell& cell = m_display.lens->layers[std::size_t(layer)][std::size_t(position)];
    const QString token = position < m_display.tokens.size() ? m_display.tokens.at(position) : QString();
    QStringList lines;
    lines << (layer == layerCount() - 1
                  ? tr("Output (after the last layer), position %1 ‘%2’").arg(position).arg(token)
                  : tr("Entering layer %1, position %2 ‘%3’").arg(layer).arg(position).arg(token));
    const int shown = std::min<int>(hoverTop, int(cell.top.size()));
    for (int k = 0; k < shown; ++k)
        lines << QStringLiteral("%1. ‘%2’  %3")
                     .arg(k + 1)
                     .arg(m_display.labels.value(cell.top[std::size_t(k)].id))
                     .arg(probabilityText(cell.top[std::size_t(k)].probability));
    if (m_display.lens->hasAnswer)
        lines << tr("answer ‘%1’: %2, rank %3")
                     .arg(m_display.answerLabel, probabilityText(cell.answerProbability))
                     .arg(cell.answerRank);
    return lines.join(QLatin1Char('\n'));
}

LensView::Layout LensView::layoutFor(const QSize& size, bool fitted) const
{
    Layout layout;
    layout.font = font();
    const QFontMetricsF metrics(layout.font);
    const double line = metrics.height();
    layout.rows = layerCount();
    layout.columns = positionCount();
    layout.title = QRectF(margin, margin, std::max(0.0, size.width() - 2 * margin), line + 4);
    double rowLabelWidth = metrics.horizontalAdvance(layerLabel(layout.rows - 1));
    if (layout.rows > 1)
        rowLabelWidth = std::max(rowLabelWidth, metrics.horizontalAdvance(layerLabel(layout.rows - 2)));
    const double barWidth = 12 + 6 + metrics.horizontalAdvance(QStringLiteral("0.5")) + 6 + line;
    const double columnLabelHeight = 2 * line + 6;
    const QRectF available(
        margin + rowLabelWidth + 6, layout.title.bottom() + 6,
        std::max(1.0, size.width() - 2 * margin - rowLabelWidth - 6 - barWidth - 8),
        std::max(1.0, size.height() - layout.title.bottom() - 6 - columnLabelHeight - margin));
    if (layout.columns == 0 || layout.rows == 0)
        return layout;
    if (fitted) {
        layout.cellWidth = available.width() / layout.columns;
        layout.cellHeight = available.height() / layout.rows;
    } else {
        // Large enough for a short token on screen; a wide grid scrolls rather than shrinking past that.
        const double minimumWidth = metrics.horizontalAdvance(QStringLiteral("mmmmm")) + 8;
        layout.cellWidth = std::clamp(available.width() / layout.columns, minimumWidth, 3 * minimumWidth);
        layout.cellHeight = std::clamp(available.height() / layout.rows, line + 6, 2.5 * line);
    }
    layout.grid =
        QRectF(available.topLeft(), QSizeF(std::min(available.width(), layout.cellWidth * layout.columns),
                                           std::min(available.height(), layout.cellHeight * layout.rows)));
    layout.rowLabelsLeft = margin;
    layout.columnLabelsTop = layout.grid.bottom() + 3;
    layout.colorBar =
        QRectF(layout.grid.right() + 8, layout.grid.top(), 12, std::max(layout.grid.height(), 3 * line));
    if (!fitted) {
        layout.scrollX = horizontalScrollBar()->value();
        layout.scrollY = verticalScrollBar()->value();
    }
    return layout;
}

void LensView::paint(QPainter& painter, const Layout& layout) const
{
    painter.setFont(layout.font);
    const QColor text = palette().color(QPalette::WindowText);
    painter.setPen(text);
    if (!m_display.lens || !m_display.message.isEmpty() || layout.rows == 0) {
        const QString message =
            m_display.message.isEmpty() ? tr("No logit lens to show.") : m_display.message;
        painter.drawText(QRectF(QPointF(0, 0), QSizeF(painter.device()->width(), painter.device()->height()))
                             .adjusted(12, 12, -12, -12),
                         Qt::AlignCenter | Qt::TextWordWrap, message);
        return;
    }
    QFont bold = layout.font;
    bold.setBold(true);
    painter.setFont(bold);
    painter.drawText(layout.title, Qt::AlignLeft | Qt::AlignVCenter,
                     QFontMetricsF(bold).elidedText(figureTitle(), Qt::ElideRight, layout.title.width()));
    painter.setFont(layout.font);
    paintCells(painter, layout);
    paintColorBar(painter, layout);
}

void LensView::paintCells(QPainter& painter, const Layout& layout) const
{
    const QFontMetricsF metrics(layout.font);
    const double line = metrics.height();
    const QColor text = palette().color(QPalette::WindowText);
    const auto [firstColumn, lastColumn] =
        visibleRange(layout.scrollX, layout.grid.width(), layout.cellWidth, layout.columns);
    const auto [firstRow, lastRow] =
        visibleRange(layout.scrollY, layout.grid.height(), layout.cellHeight, layout.rows);
    const bool cellText =
        layout.cellWidth >= metrics.horizontalAdvance(QStringLiteral("mm")) + 4 && layout.cellHeight >= line;
    const bool gaps = layout.cellWidth >= 6 && layout.cellHeight >= 6;
    painter.save();
    painter.setClipRect(layout.grid);
    for (int row = firstRow; row <= lastRow; ++row) {
        const int layer = layout.rows - 1 - row; // the output at the top
        const double y = layout.grid.top() + row * layout.cellHeight - layout.scrollY;
        for (int position = firstColumn; position <= lastColumn; ++position) {
            const QRectF cell(layout.grid.left() + position * layout.cellWidth - layout.scrollX, y,
                              layout.cellWidth, layout.cellHeight);
            const QRgb color = paletteColor(Palette::Viridis, cellValue(layer, position));
            painter.fillRect(gaps ? cell.adjusted(0.5, 0.5, -0.5, -0.5) : cell, QColor(color));
            if (!cellText)
                continue;
            painter.setPen(textColorOn(color));
            painter.drawText(
                cell.adjusted(3, 0, -3, 0), Qt::AlignCenter,
                metrics.elidedText(cellToken(layer, position), Qt::ElideRight, cell.width() - 6));
        }
    }
    painter.restore();

    // The layers down the left, every one that has room.
    painter.setPen(text);
    const int rowStride = labelStride(line, layout.cellHeight);
    painter.save();
    painter.setClipRect(
        QRectF(0, layout.grid.top() - line / 2, layout.grid.left(), layout.grid.height() + line));
    for (int row = firstRow; row <= lastRow; ++row) {
        const int layer = layout.rows - 1 - row;
        if (layer % rowStride != 0 && row != 0)
            continue;
        const double centre = layout.grid.top() + (row + 0.5) * layout.cellHeight - layout.scrollY;
        if (centre - line / 2 < layout.grid.top() - 0.5 || centre + line / 2 > layout.grid.bottom() + 0.5)
            continue; // a row scrolled partly out of view: no label cut in half
        painter.drawText(QRectF(layout.rowLabelsLeft, centre - line / 2,
                                layout.grid.left() - 6 - layout.rowLabelsLeft, line),
                         Qt::AlignRight | Qt::AlignVCenter, layerLabel(layer));
    }
    painter.restore();

    // The positions under the grid: the index, then the token when the cells are wide enough for it.
    const int columnStride =
        labelStride(metrics.horizontalAdvance(QString::number(layout.columns - 1)) + 6, layout.cellWidth);
    const bool scrolls = layout.cellWidth * layout.columns > layout.grid.width() + 0.5;
    painter.save();
    const double overhang = scrolls ? 0.0 : line; // a label wider than its cell may pass the grid's ends
    painter.setClipRect(QRectF(layout.grid.left() - overhang, layout.columnLabelsTop,
                               layout.grid.width() + 2 * overhang, 2 * line + 4));
    for (int position = firstColumn; position <= lastColumn; ++position) {
        if (position % columnStride != 0)
            continue;
        const double left = layout.grid.left() + position * layout.cellWidth - layout.scrollX;
        const QString token =
            columnStride == 1 && position < m_display.tokens.size()
                ? metrics.elidedText(m_display.tokens.at(position), Qt::ElideRight, layout.cellWidth - 4)
                : QString();
        const QString number = QString::number(position);
        const double centre = left + layout.cellWidth / 2;
        const double half = std::max(metrics.horizontalAdvance(number), metrics.horizontalAdvance(token)) / 2;
        if (scrolls &&
            (centre - half < layout.grid.left() - 0.5 || centre + half > layout.grid.right() + 0.5))
            continue; // a column scrolled partly out of view: no label cut short
        const double width = std::max(layout.cellWidth, columnStride * layout.cellWidth * 0.9);
        const QRectF index(centre - width / 2, layout.columnLabelsTop, width, line);
        painter.drawText(index, Qt::AlignCenter, number);
        if (!token.isEmpty())
            painter.drawText(index.translated(0, line), Qt::AlignCenter, token);
    }
    painter.restore();
}

// The colour bar: probability 0 at the bottom to 1 at the top, what it measures written along it.
void LensView::paintColorBar(QPainter& painter, const Layout& layout) const
{
    const QFontMetricsF metrics(layout.font);
    const QRectF bar = layout.colorBar;
    QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
    gradient.setStops(paletteStops(Palette::Viridis));
    painter.fillRect(bar, gradient);
    painter.setPen(palette().color(QPalette::WindowText));
    const double labelLeft = bar.right() + 4;
    const double line = metrics.height();
    for (const auto& [value, text] :
         {std::pair{1.0, QStringLiteral("1")}, std::pair{0.5, QStringLiteral("0.5")},
          std::pair{0.0, QStringLiteral("0")}}) {
        const double y = bar.bottom() - value * bar.height();
        painter.drawText(
            QRectF(labelLeft, y - line / 2, metrics.horizontalAdvance(QStringLiteral("0.5")) + 2, line),
            Qt::AlignLeft | Qt::AlignVCenter, text);
    }
    const QString caption =
        m_display.lens->hasAnswer ? tr("p(‘%1’)").arg(m_display.answerLabel) : tr("p(top token)");
    painter.save();
    painter.translate(labelLeft + metrics.horizontalAdvance(QStringLiteral("0.5")) + 6 + line / 2,
                      bar.center().y());
    painter.rotate(-90);
    painter.drawText(QRectF(-bar.height() / 2, -line / 2, bar.height(), line), Qt::AlignCenter,
                     metrics.elidedText(caption, Qt::ElideRight, bar.height()));
    painter.restore();
}

QString LensView::figureTitle() const
{
    return m_display.title;
}

void LensView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    QPainter painter(device);
    painter.setRenderHint(QPainter::Antialiasing, false);
    painter.setRenderHint(QPainter::TextAntialiasing);
    painter.fillRect(QRect(QPoint(0, 0), size), palette().color(QPalette::Base));
    painter.setClipRect(QRect(QPoint(0, 0), size));
    const Layout layout = layoutFor(size, true);
    if (!m_display.lens || !m_display.message.isEmpty() || layout.rows == 0) {
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRect(QPoint(0, 0), size).adjusted(12, 12, -12, -12),
                         Qt::AlignCenter | Qt::TextWordWrap,
                         m_display.message.isEmpty() ? tr("No logit lens to show.") : m_display.message);
        return;
    }
    paint(painter, layout);
}

QSize LensView::defaultFigureSize() const
{
    const QFontMetrics metrics(font());
    const int cellWidth = metrics.horizontalAdvance(QStringLiteral("mmmmmm")) + 8;
    const int cellHeight = metrics.height() + 10;
    return {std::clamp(120 + positionCount() * cellWidth, 480, 2400),
            std::clamp(100 + layerCount() * cellHeight, 320, 1600)};
}

void LensView::paintEvent(QPaintEvent* /*event*/)
{
    QPainter painter(viewport());
    painter.fillRect(viewport()->rect(), palette().color(QPalette::Base));
    paint(painter, layoutFor(viewport()->size(), false));
}

void LensView::resizeEvent(QResizeEvent* event)
{
    QAbstractScrollArea::resizeEvent(event);
    updateScrollBars();
}

void LensView::scrollContentsBy(int /*dx*/, int /*dy*/)
{
    viewport()->update();
}

void LensView::updateScrollBars()
{
    // The bars are part of the viewport's size: two passes settle whether each is needed.
    for (int pass = 0; pass < 2; ++pass) {
        const Layout layout = layoutFor(viewport()->size(), false);
        const int hidden = int(std::ceil(layout.cellWidth * layout.columns - layout.grid.width()));
        const int hiddenRows = int(std::ceil(layout.cellHeight * layout.rows - layout.grid.height()));
        horizontalScrollBar()->setRange(0, std::max(0, hidden));
        horizontalScrollBar()->setPageStep(std::max(1, int(layout.grid.width())));
        horizontalScrollBar()->setSingleStep(std::max(1, int(layout.cellWidth)));
        verticalScrollBar()->setRange(0, std::max(0, hiddenRows));
        verticalScrollBar()->setPageStep(std::max(1, int(layout.grid.height())));
        verticalScrollBar()->setSingleStep(std::max(1, int(layout.cellHeight)));
    }
}

std::pair<int, int> LensView::cellAt(const QPoint& point) const
{
    const Layout layout = layoutFor(viewport()->size(), false);
    if (!m_display.lens || layout.rows == 0 || !layout.grid.contains(point))
        return {-1, -1};
    const int position = int((point.x() - layout.grid.left() + layout.scrollX) / layout.cellWidth);
    const int row = int((point.y() - layout.grid.top() + layout.scrollY) / layout.cellHeight);
    if (position < 0 || position >= layout.columns || row < 0 || row >= layout.rows)
        return {-1, -1};
    return {layout.rows - 1 - row, position};
}

QRect LensView::cellRect(int layer, int position) const
{
    const Layout layout = layoutFor(viewport()->size(), false);
    if (layer < 0 || layer >= layout.rows || position < 0 || position >= layout.columns)
        return {};
    const int row = layout.rows - 1 - layer;
    const QRectF cell(layout.grid.left() + position * layout.cellWidth - layout.scrollX,
                      layout.grid.top() + row * layout.cellHeight - layout.scrollY, layout.cellWidth,
                      layout.cellHeight);
    return cell.intersected(layout.grid).toAlignedRect();
}

bool LensView::viewportEvent(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const auto [layer, position] = cellAt(help->pos());
        if (layer >= 0)
            QToolTip::showText(help->globalPos(), cellDescription(layer, position), viewport());
        else
            QToolTip::hideText();
        return true;
    }
    return QAbstractScrollArea::viewportEvent(event);
}

} // namespace qkv::ui
