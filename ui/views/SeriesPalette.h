// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The colours of data series, one palette for every plot: the normalizer comparison and the sweeps (one
// colour per normalizer, in the same order), the experiments' bars, the prediction's bars and the training
// curves.

#include <QColor>

namespace qkv::ui {

/// The colour of series `index` (0, 1, …; negative counts as 0): Tableau 10, distinct and safe for the
/// common colour-vision deficiencies in this order, repeating after ten.
QColor seriesColor(int index);

/// How many colours seriesColor() has before it repeats.
int seriesColorCount();

/// Data drawn for context rather than as a series of its own (the probe's positions the task does not
/// determine).
QColor neutralSeriesColor();

} // namespace qkv::ui
