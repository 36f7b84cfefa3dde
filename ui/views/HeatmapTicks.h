// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which token labels a heatmap writes along its axes: all of them when they fit, else every k-th, so that no
// two drawn labels ever overlap. The same plan is used on screen and in exported figures.

#include <QList>
#include <QRectF>
#include <QSize>
#include <QStringList>

class QFontMetrics;

namespace qkv::ui {

/// Every how many rows and columns a label is written, and whether the column labels stand upright.
struct TickPlan {
    int rowStride = 1;
    int columnStride = 1;
    bool columnsVertical = false;
    friend bool operator==(const TickPlan& a, const TickPlan& b)
    {
        return a.rowStride == b.rowStride && a.columnStride == b.columnStride &&
               a.columnsVertical == b.columnsVertical;
    }
};

/// Pixels left free between two neighbouring labels.
inline constexpr int tickLabelGap = 4;
/// Pixels between a label and the axis rectangle (QCustomPlot's tick label padding).
inline constexpr int tickLabelPadding = 5;

/// The plan for an axis rectangle of `size` pixels showing every row and column of `rowLabels` ×
/// `columnLabels` (one cell each): the smallest strides at which the labels that will be drawn (as
/// elidedLabel() writes them, in `metrics`' font) are at least tickLabelGap apart. Only drawn labels are
/// measured.
TickPlan planTicks(QSize size, const QFontMetrics& metrics, const QStringList& rowLabels,
                   const QStringList& columnLabels);

/// The rectangles the drawn labels of `plan` take in an axis rectangle `axisRect` (row labels right-aligned
/// left of it, column labels below it, upright ones turned by 90°), in the order row labels then column
/// labels.
QList<QRectF> tickLabelRects(const TickPlan& plan, const QRectF& axisRect, const QFontMetrics& metrics,
                             const QStringList& rowLabels, const QStringList& columnLabels);

} // namespace qkv::ui
