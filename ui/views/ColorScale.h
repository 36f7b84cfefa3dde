// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The colours of matrix cells, shared by every view that paints them (the heatmaps and the pipeline canvas):
// the palettes' colour stops, a lookup table over them, the grey of masked cells and readable text on a cell.

#include <QColor>
#include <QGradientStops>
#include <QList>
#include <QRgb>

namespace qkv::ui {

/// Viridis, cividis and greyscale are sequential; Diverging is blue–white–red (white at the middle); Binary
/// has two colours and nothing between (a mask: masked, allowed).
enum class Palette { Viridis, Cividis, Greyscale, Diverging, Binary };

/// The palette's colour stops at positions 0 to 1.
QGradientStops paletteStops(Palette palette);

/// `size` colours evenly spread over the palette, interpolated between its stops (entry 0 at position 0, the
/// last at 1). Computed once per palette and size.
const QList<QRgb>& paletteTable(Palette palette, int size = 256);

/// The entry of a `size`-entry palette table nearest to position `t`, clamped to 0 to 1 (NaN: entry 0).
/// Inline, and no library call: the pipeline canvas looks up millions of cells per edit.
inline int paletteIndex(double t, int size)
{
    const double clamped = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
    return static_cast<int>(clamped * static_cast<double>(size - 1) + 0.5);
}

/// The colour at position `t` (clamped to 0 to 1; ±∞ and NaN: 0) of the palette, from its 256-entry table.
QRgb paletteColor(Palette palette, double t);

/// The grey of masked cells: distinct from every palette's colours.
QColor maskedCellColor();

/// Black or white, whichever contrasts more with `background` (WCAG relative luminance).
QColor textColorOn(QRgb background);

} // namespace qkv::ui
