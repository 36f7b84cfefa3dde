// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelView.h"

#include "ColorScale.h"
#include "PlotFigure.h"

#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace qkv::ui {

namespace {

constexpr int margin = 8;
constexpr int screenMinimumCell = 28;
constexpr int screenMaximumCell = 120;
constexpr int naturalFigureCell = 96;
constexpr double titlePoints = 12.0;

/// The image of one head's weights: one pixel a cell, or, beyond maximumImageSide, the mean of a block of
/// cells (a block is masked only when all of its cells are).
QImage weightsImage(const Matrix& weights, bool causal)
{
    const auto rows = static_cast<int>(weights.rows()), cols = static_cast<int>(weights.cols());
    const int height = std::min(rows, ModelView::maximumImageSide),
              width = std::min(cols, ModelView::maximumImageSide);
    QImage image(std::max(1, width), std::max(1, height), QImage::Format_RGB32);
    image.fill(maskedCellColor());
    const QRgb masked = maskedCellColor().rgb();
    for (int y = 0; y < height; ++y) {
        const Index r0 = Index(y) * rows / height, r1 = Index(y + 1) * rows / height;
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        for (int x = 0; x < width; ++x) {
            const Index c0 = Index(x) * cols / width, c1 = Index(x + 1) * cols / width;
            if (causal && c0 > r1 - 1) {
                line[x] = masked;
                continue;
            }
            const double mean = weights.block(r0, c0, r1 - r0, c1 - c0).mean();
            line[x] = paletteColor(Palette::Viridis, mean);
        }
    }
    return image;
}

QFont titleFont(QFont font)
{
    font.setPointSizeF(titlePoints);
    font.setBold(true);
    return font;
}

} // namespace

ModelView::ModelView(QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("modelView"));
    setMouseTracking(true);
    clear(tr("Open a model (File ▸ Open Model…) to see every layer and head of it here."));
}

void ModelView::setAttention(const std::vector<std::vector<Matrix>>& weights, const QString& title,
                             bool causal)
{
    m_images.clear();
    m_layers = static_cast<int>(weights.size());
    m_heads = weights.empty() ? 0 : static_cast<int>(weights.front().size());
    for (const std::vector<Matrix>& layer : weights)
        for (int h = 0; h < m_heads; ++h)
            m_images.append(h < int(layer.size()) ? weightsImage(layer[std::size_t(h)], causal) : QImage());
    m_title = title;
    m_message.clear();
    m_selectedLayer = m_selectedHead = -1;
    updateGeometry();
    update();
}

void ModelView::clear(const QString& message)
{
    m_images.clear();
    m_layers = m_heads = 0;
    m_title.clear();
    m_selectedLayer = m_selectedHead = -1;
    setMessage(message);
    updateGeometry();
}

void ModelView::setMessage(const QString& message)
{
    m_message = message;
    update();
}

QImage ModelView::thumbnail(int layer, int head) const
{
    if (layer < 0 || layer >= m_layers || head < 0 || head >= m_heads)
        return QImage();
    return m_images.at(layer * m_heads + head);
}

void ModelView::setSelected(int layer, int head)
{
    m_selectedLayer = layer;
    m_selectedHead = head;
    update();
}

void ModelView::setArrows(int toLayer, int toHead, const QList<HeadArrow>& arrows)
{
    m_arrowLayer = toLayer;
    m_arrowHead = toHead;
    m_arrows = arrows;
    update();
}

void ModelView::paintArrows(QPainter& painter, const Layout& l, const QColor& color) const
{
    if (m_arrowLayer < 0 || m_arrowLayer >= m_layers || m_arrowHead < 0 || m_arrowHead >= m_heads)
        return;
    const QRectF target = l.cellRect(m_arrowLayer, m_arrowHead);
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing);
    for (const HeadArrow& arrow : m_arrows) {
        if (arrow.fromLayer < 0 || arrow.fromLayer >= m_arrowLayer || arrow.fromHead < 0 ||
            arrow.fromHead >= m_heads)
            continue;
        const QRectF source = l.cellRect(arrow.fromLayer, arrow.fromHead);
        const QLineF centres(source.center(), target.center());
        // From inside the source to just inside the target's edge: short arrows between adjacent layers
        // stay visible, and most of both pictures stays uncovered.
        const double length = centres.length();
        const double inset = std::max(0.0, 0.5 * std::min(target.width(), target.height()) - 6);
        const double start = std::min(0.3, 0.5 * inset / length);
        const QLineF line(centres.pointAt(start), centres.pointAt(std::max(start, 1 - inset / length)));
        if (line.length() < 1)
            continue;
        const double width = 1.5 + 5.0 * std::clamp(arrow.strength, 0.0, 1.0);
        const QPointF direction = (line.p2() - line.p1()) / line.length();
        const QPointF across(-direction.y(), direction.x());
        const QPointF tip = line.p2(), base = tip - direction * (6 + 2 * width);
        painter.setPen(QPen(color, width, Qt::SolidLine, Qt::FlatCap));
        painter.drawLine(line.p1(), base);
        painter.setPen(Qt::NoPen);
        painter.setBrush(color);
        painter.drawPolygon(QPolygonF{tip, base + across * (3 + width), base - across * (3 + width)});
    }
    painter.restore();
}

QString ModelView::figureTitle() const
{
    return m_title.isEmpty() ? QString() : tr("Attention of every layer and head — %1").arg(m_title);
}

QRect ModelView::Layout::cellRect(int layer, int head) const
{
    return {left + head * (cell + spacing), top + layer * (cell + spacing), cell, cell};
}

ModelView::Layout ModelView::layout(const QRect& area, const QFontMetrics& metrics, bool screen) const
{
    Layout l;
    const QFontMetrics titleMetrics(titleFont(font()));
    l.title = QRect(area.left() + margin, area.top() + margin, area.width() - 2 * margin,
                    (screen ? metrics.height() : titleMetrics.height()) + 4);
    const int labelWidth =
        metrics.horizontalAdvance(QStringLiteral("L%1").arg(std::max(0, m_layers - 1))) + 8;
    const int labelHeight = metrics.height() + 2;
    l.spacing = 4;
    l.left = area.left() + margin + labelWidth;
    l.top = l.title.bottom() + 6 + labelHeight;
    const int heads = std::max(1, m_heads), layers = std::max(1, m_layers);
    const int fitWidth = (area.right() - margin - l.left + l.spacing) / heads - l.spacing;
    const int fitHeight = (area.bottom() - margin - l.top + l.spacing) / layers - l.spacing;
    l.cell = std::min(fitWidth, fitHeight);
    l.cell = screen ? std::clamp(l.cell, screenMinimumCell, screenMaximumCell) : std::max(2, l.cell);
    // The grid and its labels centred across the width left over.
    const int gridWidth = labelWidth + heads * (l.cell + l.spacing) - l.spacing;
    l.left += std::max(0, (area.width() - 2 * margin - gridWidth) / 2);
    return l;
}

QRect ModelView::thumbnailRect(int layer, int head) const
{
    if (layer < 0 || layer >= m_layers || head < 0 || head >= m_heads)
        return QRect();
    return layout(rect(), fontMetrics(), true).cellRect(layer, head);
}

std::pair<int, int> ModelView::thumbnailAt(const QPoint& position) const
{
    const Layout l = layout(rect(), fontMetrics(), true);
    for (int layer = 0; layer < m_layers; ++layer)
        for (int head = 0; head < m_heads; ++head)
            if (l.cellRect(layer, head).contains(position))
                return {layer, head};
    return {-1, -1};
}

void ModelView::paint(QPainter& painter, const QRect& area, const QFont& font, const QColor& text,
                      const QColor& outline, bool screen) const
{
    const QFontMetrics metrics(font, painter.device());
    const Layout l = layout(area, metrics, screen);
    const QFont heading = screen ? font : titleFont(font);
    painter.setFont(heading);
    painter.setPen(text);
    const QString caption = !m_message.isEmpty() ? m_message : screen ? m_title : figureTitle();
    if (m_images.isEmpty() && !m_message.isEmpty()) {
        painter.drawText(area.adjusted(margin, margin, -margin, -margin), Qt::AlignCenter | Qt::TextWordWrap,
                         m_message);
        return;
    }
    painter.drawText(
        l.title, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine,
        QFontMetrics(heading, painter.device()).elidedText(caption, Qt::ElideRight, l.title.width()));
    painter.setFont(font);
    for (int head = 0; head < m_heads; ++head) {
        const QRect cell = l.cellRect(0, head);
        painter.drawText(QRect(cell.left() - l.spacing, l.top - metrics.height() - 2,
                               cell.width() + 2 * l.spacing, metrics.height()),
                         Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("H%1").arg(head));
    }
    for (int layer = 0; layer < m_layers; ++layer) {
        const QRect cell = l.cellRect(layer, 0);
        painter.drawText(QRect(area.left(), cell.top(), cell.left() - 6 - area.left(), cell.height()),
                         Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(layer));
        for (int head = 0; head < m_heads; ++head) {
            const QImage& image = m_images.at(layer * m_heads + head);
            if (!image.isNull())
                painter.drawImage(l.cellRect(layer, head), image);
        }
    }
    paintArrows(painter, l, screen ? QColor(255, 140, 0, 190) : QColor(230, 120, 0, 200));
    if (m_selectedLayer >= 0 && m_selectedLayer < m_layers && m_selectedHead >= 0 &&
        m_selectedHead < m_heads) {
        painter.setPen(QPen(outline, 3));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(l.cellRect(m_selectedLayer, m_selectedHead).adjusted(-2, -2, 1, 1));
    }
}

void ModelView::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    paint(painter, rect(), font(), palette().color(QPalette::Text), palette().color(QPalette::Highlight),
          true);
}

void ModelView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;
    paint(painter, QRect(QPoint(0, 0), size), font(), Qt::black, QColor(0xd6, 0x27, 0x28), false);
    painter.end();
}

QSize ModelView::defaultFigureSize() const
{
    const QFontMetrics metrics(font());
    const int labelWidth =
        metrics.horizontalAdvance(QStringLiteral("L%1").arg(std::max(0, m_layers - 1))) + 8;
    const int heads = std::max(1, m_heads), layers = std::max(1, m_layers);
    const int width =
        std::max(2 * margin + labelWidth + heads * (naturalFigureCell + 4),
                 2 * margin + QFontMetrics(titleFont(font())).horizontalAdvance(figureTitle()) + 8);
    const int height = 2 * margin + QFontMetrics(titleFont(font())).height() + 12 + metrics.height() +
                       layers * (naturalFigureCell + 4);
    return {std::clamp(width, 480, 2400), std::clamp(height, 240, 2400)};
}

QSize ModelView::minimumSizeHint() const
{
    const QFontMetrics metrics = fontMetrics();
    if (m_images.isEmpty())
        return {200, 3 * metrics.height()};
    const int labelWidth =
        metrics.horizontalAdvance(QStringLiteral("L%1").arg(std::max(0, m_layers - 1))) + 8;
    return {2 * margin + labelWidth + m_heads * (screenMinimumCell + 4),
            2 * margin + 2 * metrics.height() + 12 + m_layers * (screenMinimumCell + 4)};
}

QSize ModelView::sizeHint() const
{
    const QSize minimum = minimumSizeHint();
    return m_images.isEmpty() ? QSize(400, 200) : minimum + QSize(m_heads * 36, m_layers * 36);
}

void ModelView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton)
        return QWidget::mousePressEvent(event);
    const auto [layer, head] = thumbnailAt(event->position().toPoint());
    if (layer >= 0)
        emit thumbnailClicked(layer, head);
}

void ModelView::contextMenuEvent(QContextMenuEvent* event)
{
    const auto [layer, head] = thumbnailAt(event->pos());
    if (layer >= 0)
        emit thumbnailMenuRequested(layer, head, event->globalPos());
}

bool ModelView::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const auto [layer, head] = thumbnailAt(help->pos());
        if (layer >= 0)
            QToolTip::showText(help->globalPos(),
                               tr("layer %1, head %2: %3").arg(layer).arg(head).arg(m_thumbnailHint), this,
                               thumbnailRect(layer, head));
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

} // namespace qkv::ui
