// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// What changed between two versions of a matrix (a snapshot's and the current one): the cell-by-cell
/// difference and the largest changes, or why the two cannot be compared.

#include "EigenTypes.h"

#include <string>
#include <vector>

namespace qkv {

/// One changed cell: before (the snapshot), after (now) and Δ = after − before.
struct CellChange {
    Index row = 0;
    Index column = 0;
    double before = 0.0;
    double after = 0.0;
    double delta = 0.0;
};

struct MatrixDifference {
    /// "" when the shapes match; else what differs ("3 × 4 now, 3 × 5 in the snapshot").
    std::string shapeProblem;
    Matrix delta;                    ///< after − before (empty when the shapes differ)
    std::vector<CellChange> largest; ///< the largest |Δ| first (only cells with Δ ≠ 0), at most as asked
    Index changedCells = 0;          ///< cells with Δ ≠ 0
    double largestChange = 0.0;      ///< max |Δ| (0 when nothing changed)
};

/// Compares `after` with `before` cell by cell and lists up to `largestCount` of the largest changes (ties in
/// row-major order). Both are finite (a session's inputs and the engine's results always are).
MatrixDifference compareMatrices(const Matrix& before, const Matrix& after, std::size_t largestCount = 20);

} // namespace qkv
