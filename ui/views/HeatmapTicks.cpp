// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapTicks.h"

#include "LabelText.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

// The smallest stride k with k·cell ≥ extent.
int strideFor(double extent, double cell)
{
    return std::max(1, static_cast<int>(std::ceil(extent / cell - 1e-9)));
}

// The smallest stride at which the widest drawn label (plus the gap) fits in k cells. Widening the stride
// drops labels, so the widest can only shrink: start from the stride the gap alone needs (at 4096 cells that
// measures a few hundred labels, not all of them) and grow until the labels drawn fit.
int strideForWidths(const QStringList& labels, double cell, const QFontMetrics& metrics)
{
    int stride = strideFor(tickLabelGap, cell);
    for (;;) {
        int widest = 0;
        for (int i = 0; i < labels.size(); i += stride)
            widest = std::max(widest, metrics.horizontalAdvance(elidedLabel(labels.at(i))));
        const int needed = strideFor(widest + tickLabelGap, cell);
        if (needed <= stride)
            return stride;
        stride = needed;
    }
}

bool allNumbers(const QStringList& labels)
{
    for (const QString& label : labels) {
        bool isNumber = false;
        label.toInt(&isNumber);
        if (!isNumber)
            return false;
    }
    return true;
}

} // namespace

TickPlan planTicks(QSize size, const QFontMetrics& metrics, const QStringList& rowLabels,
                   const QStringList& columnLabels)
{
    TickPlan plan;
    if (rowLabels.isEmpty() || columnLabels.isEmpty())
        return plan;
    const double cellWidth =
        std::max(1e-3, static_cast<double>(size.width()) / static_cast<double>(columnLabels.size()));
    const double cellHeight =
        std::max(1e-3, static_cast<double>(size.height()) / static_cast<double>(rowLabels.size()));
    const int lineHeight = metrics.height() + tickLabelGap;
    plan.rowStride = strideFor(lineHeight, cellHeight);

    const int horizontalStride = strideForWidths(columnLabels, cellWidth, metrics);
    // Indices read well with gaps; words stand upright rather than lose most of their neighbours.
    if (horizontalStride == 1 || allNumbers(columnLabels)) {
        plan.columnStride = horizontalStride;
    } else {
        plan.columnsVertical = true;
        plan.columnStride = strideFor(lineHeight, cellWidth);
    }
    return plan;
}

QList<QRectF> tickLabelRects(const TickPlan& plan, const QRectF& axisRect, const QFontMetrics& metrics,
                             const QStringList& rowLabels, const QStringList& columnLabels)
{
    QList<QRectF> rects;
    if (rowLabels.isEmpty() || columnLabels.isEmpty())
        return rects;
    const double cellWidth = axisRect.width() / static_cast<double>(columnLabels.size());
    const double cellHeight = axisRect.height() / static_cast<double>(rowLabels.size());
    const double height = metrics.height();
    const double padding = tickLabelPadding;
    for (int i = 0; i < rowLabels.size(); i += plan.rowStride) {
        const double width = metrics.horizontalAdvance(elidedLabel(rowLabels.at(i)));
        const double centre = axisRect.top() + (i + 0.5) * cellHeight;
        rects.append(QRectF(axisRect.left() - padding - width, centre - height / 2, width, height));
    }
    for (int j = 0; j < columnLabels.size(); j += plan.columnStride) {
        const double width = metrics.horizontalAdvance(elidedLabel(columnLabels.at(j)));
        const double centre = axisRect.left() + (j + 0.5) * cellWidth;
        rects.append(plan.columnsVertical
                         ? QRectF(centre - height / 2, axisRect.bottom() + padding, height, width)
                         : QRectF(centre - width / 2, axisRect.bottom() + padding, width, height));
    }
    return rects;
}

} // namespace qkv::ui
