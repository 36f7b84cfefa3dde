// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Scatter points stamped from one pixmap on screen: hundreds of antialiased ellipses drawn one by one made
// every replot of the Q/K plane slow.

class QCPGraph;
class QCustomPlot;

namespace qkv::ui {

/// A graph on `plot`'s x and y axes (as QCustomPlot::addGraph) that draws its scatter symbols on screen by
/// stamping one pixmap of the symbol, rendered at the screen's pixel ratio when the style changes, at each
/// point rounded to a device pixel. Figures (painters with QCPPainter::pmNoCaching or pmVectorized) get the
/// shapes drawn one by one, as QCPGraph draws them; so do pixmap and custom symbols.
QCPGraph* addStampedScatterGraph(QCustomPlot* plot);

} // namespace qkv::ui
