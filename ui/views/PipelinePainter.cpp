// SPDX-License-Identifier: GPL-3.0-or-later
#include "PipelinePainter.h"

#include "ColorScale.h"
#include "LabelText.h"
#include "PipelineLayout.h"
#include "PipelineStages.h"

#include <QFontMetrics>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr double minimumMark = 9; // the selected cell's outline is at least this many pixels across

const QColor queryColor(255, 140, 0);
const QColor keyColor(0, 150, 160);
const QColor frameColor(120, 120, 120);

void drawArrowHead(QPainter& painter, QPointF tip, double size)
{
    QPainterPath head;
    head.moveTo(tip);
    head.lineTo(tip + QPointF(-size, -size / 2));
    head.lineTo(tip + QPointF(-size, size / 2));
    head.closeSubpath();
    painter.fillPath(head, painter.pen().color());
}

} // namespace

PipelinePainter::PipelinePainter(const PipelineStages& stages, const PipelineLayout& layout,
                                 Index selectedQuery, Index selectedKey)
    : m_stages(stages), m_layout(layout), m_query(selectedQuery), m_key(selectedKey)
{
}

void PipelinePainter::paint(QPainter& painter, const QString& title) const
{
    const PipelineLayout& layout = m_layout;
    painter.setPen(layout.ink);
    const std::vector<PipelineStage>& stages = m_stages.stages();
    if (stages.empty()) {
        painter.setFont(layout.font);
        const double margin = PipelineLayout::margin;
        const QRectF page(margin, margin, layout.size.width() - 2 * margin,
                          layout.size.height() - 2 * margin);
        painter.drawText(page, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                         m_stages.message().isEmpty() ? tr("Nothing computed yet") : m_stages.message());
        return;
    }
    if (layout.header.height() > 0)
        paintHeader(painter, title);
    for (std::size_t s = 0; s < stages.size() && s < layout.tiles.size(); ++s) {
        paintArrow(painter, stages[s], layout.tiles[s]);
        paintStage(painter, s);
    }
}

// The title line: what is shown, and the selected cell in words.
void PipelinePainter::paintHeader(QPainter& painter, const QString& title) const
{
    const PipelineLayout& layout = m_layout;
    QFont headerFont = layout.font;
    headerFont.setBold(true);
    headerFont.setPixelSize(static_cast<int>(std::lround(layout.font.pixelSize() * 1.2)));
    painter.setFont(headerFont);
    const QString selection = tr("query ‘%1’ (i = %2) → key ‘%3’ (j = %4)")
                                  .arg(elidedLabel(m_stages.queries().value(static_cast<int>(m_query))))
                                  .arg(m_query)
                                  .arg(elidedLabel(m_stages.keys().value(static_cast<int>(m_key))))
                                  .arg(m_key);
    // The title as a text of its own (figures are searched for it), then what is shown and selected.
    painter.drawText(layout.header, Qt::AlignLeft | Qt::AlignVCenter, title);
    const double titleWidth = QFontMetricsF(headerFont).horizontalAdvance(title);
    QFont details = headerFont;
    details.setBold(false);
    painter.setFont(details);
    const QRectF rest = layout.header.adjusted(titleWidth, 0, 0, 0);
    painter.drawText(
        rest, Qt::AlignLeft | Qt::AlignVCenter,
        QFontMetricsF(details).elidedText(m_stages.header() + QStringLiteral("   ·   ") + selection,
                                          Qt::ElideRight, rest.width()));
}

void PipelinePainter::paintArrow(QPainter& painter, const PipelineStage& stage,
                                 const PipelineTile& tile) const
{
    if (!stage.hasArrow() || tile.arrow.width() <= 0)
        return;
    const PipelineLayout& layout = m_layout;
    const double y = tile.matrix.center().y();
    const double left = tile.arrow.left() + 4, right = tile.arrow.right() - 4;
    painter.setPen(QPen(layout.ink, 1.5));
    painter.drawLine(QPointF(left, y), QPointF(right - 6, y));
    drawArrowHead(painter, QPointF(right, y), 8);
    painter.setFont(layout.font);
    painter.setPen(layout.ink);
    const QFontMetricsF metrics(layout.font);
    const double height = metrics.height();
    painter.drawText(QRectF(tile.arrow.left(), y - height - 4, tile.arrow.width(), height),
                     Qt::AlignHCenter | Qt::AlignBottom, stage.operatorTop);
    painter.setPen(layout.muted);
    painter.drawText(QRectF(tile.arrow.left(), y + 5, tile.arrow.width(), height),
                     Qt::AlignHCenter | Qt::AlignTop, stage.operatorBottom);
}

std::pair<QString, QFont> PipelinePainter::fittedTitle(const PipelineStage& stage, const PipelineTile& tile,
                                                       const PipelineLayout& layout)
{
    // A narrow stage (the window at a scale factor of 2) writes its title smaller before it elides it:
    // "weig…" was all a reader got.
    QFont bold = layout.font;
    bold.setBold(true);
    const int pixels = layout.font.pixelSize();
    for (int percent = 90; percent >= 70 && pixels > 0; percent -= 10) {
        if (QFontMetricsF(bold).horizontalAdvance(stage.title) <= tile.caption.width())
            break;
        bold.setPixelSize(std::max(1, pixels * percent / 100));
    }
    return {QFontMetricsF(bold).elidedText(stage.title, Qt::ElideRight, tile.caption.width()), bold};
}

void PipelinePainter::paintStage(QPainter& painter, std::size_t s) const
{
    const PipelineStage& stage = m_stages.stages()[s];
    const PipelineTile& tile = m_layout.tiles[s];
    paintCaption(painter, stage, tile);
    if (stage.values->rows() == 0 || stage.values->cols() == 0)
        return;
    paintCells(painter, stage, tile);
    // The selection under the values: they stay readable on the bands.
    paintHighlight(painter, stage, tile);
    if (tile.cellText)
        paintValues(painter, stage, tile);
    paintLabels(painter, stage, tile);
}

// The caption: the title in bold, the shape beside it when it fits whole, and the operator into a stage that
// starts a line.
void PipelinePainter::paintCaption(QPainter& painter, const PipelineStage& stage,
                                   const PipelineTile& tile) const
{
    const PipelineLayout& layout = m_layout;
    const auto [title, titleFont] = fittedTitle(stage, tile, layout);
    painter.setFont(titleFont);
    painter.setPen(layout.ink);
    painter.drawText(tile.caption, Qt::AlignLeft | Qt::AlignVCenter, title);
    const double titleWidth = QFontMetricsF(titleFont).horizontalAdvance(title);
    painter.setFont(layout.font);
    painter.setPen(layout.muted);
    const QRectF shapeBox = tile.caption.adjusted(titleWidth + 6, 0, 0, 0);
    const QString shape = shapeText(stage.values->rows(), stage.values->cols());
    const double shapeWidth = QFontMetricsF(layout.font).horizontalAdvance(shape);
    const bool shapeFits = shapeWidth <= shapeBox.width(); // "…" alone would say nothing
    if (shapeFits)
        painter.drawText(shapeBox, Qt::AlignLeft | Qt::AlignVCenter, shape);
    if (tile.operatorInCaption) {
        const QRectF operatorBox = shapeBox.adjusted(shapeFits ? shapeWidth : 0.0, 0, 0, 0);
        painter.setPen(layout.ink);
        painter.drawText(operatorBox, Qt::AlignLeft | Qt::AlignVCenter,
                         QFontMetricsF(layout.font)
                             .elidedText(stage.captionOperator(), Qt::ElideRight, operatorBox.width()));
    }
}

// The cells: rectangles while they are a few pixels across (crisp in vector files), else the image.
void PipelinePainter::paintCells(QPainter& painter, const PipelineStage& stage,
                                 const PipelineTile& tile) const
{
    const Index rows = stage.values->rows(), columns = stage.values->cols();
    const double cw = tile.cellWidth, ch = tile.cellHeight;
    const QRectF area = PipelineLayout::cellArea(stage, tile);
    if (cw >= 3 && ch >= 3 && stage.image.width() == columns && stage.image.height() == rows) {
        painter.save();
        painter.setRenderHint(QPainter::Antialiasing, false);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < columns; ++j) {
                const QRectF cell(area.left() + static_cast<double>(j) * cw,
                                  area.top() + static_cast<double>(i) * ch, cw, ch);
                painter.fillRect(
                    cell.adjusted(0, 0, 0.5, 0.5),
                    QColor::fromRgb(stage.image.pixel(static_cast<int>(j), static_cast<int>(i))));
            }
        painter.restore();
    } else {
        painter.save();
        painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
        painter.drawImage(area, stage.image);
        painter.restore();
    }
    painter.setPen(QPen(frameColor, 1));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(area);
}

void PipelinePainter::paintHighlight(QPainter& painter, const PipelineStage& stage,
                                     const PipelineTile& tile) const
{
    const auto [row, column] = stageHighlight(stage.indices, m_query, m_key);
    const Index rows = stage.values->rows(), columns = stage.values->cols();
    const double cw = tile.cellWidth, ch = tile.cellHeight;
    const QRectF area = PipelineLayout::cellArea(stage, tile);
    const auto band = [&](const QRectF& rect, const QColor& colour) {
        QColor fill = colour;
        fill.setAlpha(55);
        QColor line = colour;
        line.setAlpha(200);
        painter.setPen(QPen(line, 1.5));
        painter.setBrush(fill);
        painter.drawRect(rect);
    };
    // A row or column band at least 3 pixels thick, however small the cells.
    const auto rowBand = [&](int i, const QColor& colour) {
        if (i < 0 || i >= rows)
            return;
        const double grow = std::max(0.0, (3 - ch) / 2);
        band(QRectF(area.left(), area.top() + i * ch - grow, area.width(), ch + 2 * grow), colour);
    };
    const auto columnBand = [&](int j, const QColor& colour) {
        if (j < 0 || j >= columns)
            return;
        const double grow = std::max(0.0, (3 - cw) / 2);
        band(QRectF(area.left() + j * cw - grow, area.top(), cw + 2 * grow, area.height()), colour);
    };
    painter.save();
    switch (stage.indices) {
    case StageIndices::Tokens:
        if (m_key != row)
            rowBand(static_cast<int>(m_key), keyColor);
        rowBand(row, queryColor);
        break;
    case StageIndices::QueryRows:
        rowBand(row, queryColor);
        break;
    case StageIndices::KeyRows:
        rowBand(row, keyColor);
        break;
    case StageIndices::QueryKey:
        if (row >= 0 && row < rows && column >= 0 && column < columns) {
            columnBand(column, keyColor);
            rowBand(row, queryColor);
            const double growX = std::max(0.0, (minimumMark - cw) / 2);
            const double growY = std::max(0.0, (minimumMark - ch) / 2);
            painter.setPen(QPen(queryColor.darker(120), 2.5));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(QRectF(area.left() + column * cw - growX, area.top() + row * ch - growY,
                                    cw + 2 * growX, ch + 2 * growY));
        }
        break;
    case StageIndices::Parameters:
        break;
    }
    painter.restore();
}

void PipelinePainter::paintValues(QPainter& painter, const PipelineStage& stage,
                                  const PipelineTile& tile) const
{
    const Index rows = stage.values->rows(), columns = stage.values->cols();
    const double cw = tile.cellWidth, ch = tile.cellHeight;
    const QRectF area = PipelineLayout::cellArea(stage, tile);
    painter.setFont(m_layout.cellFont);
    for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < columns; ++j) {
            const QString text = stage.cellText(i, j);
            if (text.isEmpty())
                continue;
            const QRgb background = stage.image.pixel(static_cast<int>(j), static_cast<int>(i));
            painter.setPen(textColorOn(background));
            painter.drawText(QRectF(area.left() + static_cast<double>(j) * cw,
                                    area.top() + static_cast<double>(i) * ch, cw, ch),
                             Qt::AlignCenter | Qt::TextDontClip, text);
        }
}

// Token labels: every k-th as planned, never overlapping.
void PipelinePainter::paintLabels(QPainter& painter, const PipelineStage& stage,
                                  const PipelineTile& tile) const
{
    const PipelineLayout& layout = m_layout;
    const double ch = tile.cellHeight;
    const QRectF area = PipelineLayout::cellArea(stage, tile);
    painter.setFont(layout.font);
    painter.setPen(layout.ink);
    const QFontMetricsF metrics(layout.font);
    if (tile.rowLabels) {
        const QStringList labels = m_stages.rowLabelsOf(stage);
        for (int i = 0; i < labels.size(); i += std::max(1, tile.ticks.rowStride)) {
            const double centre = area.top() + (i + 0.5) * ch;
            painter.drawText(QRectF(tile.caption.left(), centre - metrics.height() / 2,
                                    area.left() - tickLabelPadding - tile.caption.left(), metrics.height()),
                             Qt::AlignRight | Qt::AlignVCenter, elidedLabel(labels.at(i)));
        }
    }
    if (tile.columnLabels) {
        const QStringList labels = m_stages.columnLabelsOf(stage);
        const QList<QRectF> rects =
            tickLabelRects(tile.ticks, area.adjusted(0, 0, 0, layout.columnLabelOffset),
                           QFontMetrics(layout.font), QStringList{QString()}, labels)
                .mid(1);
        int index = 0;
        for (int j = 0; j < labels.size() && index < rects.size();
             j += std::max(1, tile.ticks.columnStride), ++index) {
            const QRectF box = rects.at(index);
            const QString text = elidedLabel(labels.at(j));
            if (tile.ticks.columnsVertical) {
                painter.save();
                painter.translate(box.center());
                painter.rotate(90);
                painter.drawText(QRectF(-box.height() / 2, -box.width() / 2, box.height(), box.width()),
                                 Qt::AlignLeft | Qt::AlignVCenter, text);
                painter.restore();
            } else {
                painter.drawText(box, Qt::AlignCenter, text);
            }
        }
    }
}

} // namespace qkv::ui
