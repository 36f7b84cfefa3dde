// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the Patching panel draws from a grid, prepared without a widget: one layers × columns slice of a
// grid (one position of head_out_pos), which cells are computed, their labels and hover texts, the colour
// range two grids share, and the names and descriptions of the sites.

#include "EigenTypes.h"
#include "Patching.h"

#include <QString>
#include <QStringList>
#include <QVector>

namespace qkv::ui {

/// One slice of a grid as a heatmap shows it.
struct PatchGridSlice {
    Matrix normalized;        ///< rows × cols; 0 where a cell is not computed (masked)
    Matrix raw;               ///< m_patch; 0 where not computed
    MaskMatrix computed;      ///< 1: computed and finite
    QStringList rowLabels;    ///< "L0", "L1", …
    QStringList columnLabels; ///< positions ("3 ␣Mary"), heads ("H0") or key/value heads ("KV0")
    QString columnTitle;      ///< "position", "head", "key/value head"
    Index computedCells = 0;
    Index nonFiniteCells = 0; ///< computed but not finite (left masked)

    bool isComputed(Index row, Index column) const { return computed(row, column) != 0; }
};

/// The cells of `grid` computed so far, in the order PatchingRun computes them: index < done.
bool patchCellComputed(const PatchGrid& grid, Index index);

/// The slice of `grid` at depth index `depth` (head_out_pos: position firstPosition + depth; else 0), its
/// positions labelled with `tokens` (the clean prompt's labels).
PatchGridSlice patchGridSlice(const PatchGrid& grid, Index depth, const QStringList& tokens);

/// The half-width of a colour range centred at 0 that holds every computed value of the slices, and ±1 at
/// least (so 1, fully restored, is the same colour in both grids).
double sharedColorRange(const PatchGridSlice& a, const PatchGridSlice& b);

/// A cell's hover text: where it is, m_patch and the normalized value, or that it is not computed yet.
QString patchCellDescription(const PatchGridSlice& slice, Index row, Index column, const QString& method);

/// The points of the scatter: the cells computed in both slices, with their labels ("L2 H1").
struct PatchScatterPoints {
    QVector<double> exact, attribution;
    QStringList labels;
};
PatchScatterPoints patchScatterPoints(const PatchGridSlice& exact, const PatchGridSlice& attribution);

/// The site's name in the chooser ("resid_pre") and what it replaces, for tooltips.
QString patchSiteTitle(PatchSite site);
QString patchSiteDescription(PatchSite site);

/// A position's label, "3 ␣Mary".
QString positionLabel(Index position, const QStringList& tokens);

} // namespace qkv::ui
