// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A plot in a low place (a bottom dock at 1280 × 720, one plot to a tab) drops its title row and its x-axis
// label, which its tab or caption says already, so that its data keeps the height; with room they return.

#include <QString>

class QCPTextElement;
class QCustomPlot;

namespace qkv::ui {

/// Whether a plot `height` pixels high, drawn with text `lineHeight` pixels high, is low.
bool isLowPlot(int height, int lineHeight);

/// Shows `title` (the element set up by setUpPlot, in the plot layout's first row) and `xLabel` on the x axis
/// when `low` is false; takes the title's row away and leaves the x axis unlabelled when it is true. Lays
/// the plot out again only when something changed.
void fitPlotToHeight(QCustomPlot* plot, QCPTextElement* title, const QString& xLabel, bool low);

} // namespace qkv::ui
