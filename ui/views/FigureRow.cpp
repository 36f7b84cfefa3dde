// SPDX-License-Identifier: GPL-3.0-or-later
#include "FigureRow.h"

#include "Figure.h"
#include "PlotFigure.h"

#include <QFont>
#include <QFontMetrics>
#include <QPainter>
#include <QPicture>

namespace qkv::ui {

namespace {

QFont titleFont()
{
    QFont font;
    font.setBold(true);
    font.setPointSizeF(font.pointSizeF() * 1.15);
    return font;
}

} // namespace

int figureRowTitleHeight(const QString& title)
{
    return title.isEmpty() ? 0 : QFontMetrics(titleFont()).height() + 12;
}

void renderFigureRow(QPaintDevice* device, const QSize& size, const QString& title,
                     const QList<const Figure*>& figures)
{
    // Recorded before the device's painter begins: one painter per device at a time.
    const int top = figureRowTitleHeight(title);
    const int count = static_cast<int>(figures.size());
    QList<QPicture> pictures;
    for (int k = 0; k < count; ++k) {
        const int left = size.width() * k / count;
        const int right = size.width() * (k + 1) / count;
        QPicture picture;
        figures[k]->renderFigure(&picture, QSize(right - left, size.height() - top));
        pictures.append(picture);
    }
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;
    if (top > 0) {
        painter.setFont(titleFont());
        painter.setPen(Qt::black);
        painter.drawText(QRect(0, 0, size.width(), top), Qt::AlignCenter, title);
    }
    for (int k = 0; k < count; ++k)
        painter.drawPicture(size.width() * k / count, top, pictures[k]);
    painter.end();
}

} // namespace qkv::ui
