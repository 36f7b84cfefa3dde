// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers of the experiment views that draw several bar panels in one plot (saturation, scaled vs unscaled):
// a grid of axis rects under the title, bars of one series, key tick labels. Their colours come from
// SeriesPalette.h.

#include "SeriesPalette.h"

#include <QColor>
#include <QStringList>

#include <vector>

class QCPAxis;
class QCPAxisRect;
class QCPBars;
class QCPLayoutGrid;
class QCPMarginGroup;
class QCPTextElement;
class QCustomPlot;

namespace qkv::ui {

/// Removes the plot's default axis rect (the row under the title set up by setUpPlot) and puts an empty grid
/// there, which the view fills with panels.
QCPLayoutGrid* replaceWithPanelGrid(QCustomPlot* plot);

/// A new axis rect at (row, column) of `grid`; its left margin is shared with `group` (the panels of a
/// column) so stacked panels line up.
QCPAxisRect* addPanel(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, QCPMarginGroup* group);

/// A text element (a panel's caption) at (row, column) of `grid`.
QCPTextElement* addCaption(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column);

/// Bars of `values` at x = offset, 1 + offset, … on `rect`'s bottom and left axes, not in the legend.
QCPBars* addBars(QCPAxisRect* rect, const std::vector<double>& values, const QColor& color,
                 double width = 0.8, double offset = 0.0);

/// Tick labels `labels` at 0, 1, …, every k-th when there are more than `maximum`, slanted when long.
void setKeyTicks(QCPAxis* axis, const QStringList& labels, int maximum = 16);

} // namespace qkv::ui
