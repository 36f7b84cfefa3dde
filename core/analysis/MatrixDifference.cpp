// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixDifference.h"

#include <algorithm>
#include <cmath>

namespace qkv {

MatrixDifference compareMatrices(const Matrix& before, const Matrix& after, std::size_t largestCount)
{
    MatrixDifference difference;
    if (before.rows() != after.rows() || before.cols() != after.cols()) {
        difference.shapeProblem = std::to_string(after.rows()) + " × " + std::to_string(after.cols()) +
                                  " now, " + std::to_string(before.rows()) + " × " +
                                  std::to_string(before.cols()) + " in the snapshot";
        return difference;
    }
    difference.delta = after - before;
    std::vector<CellChange> changes;
    for (Index r = 0; r < after.rows(); ++r)
        for (Index c = 0; c < after.cols(); ++c) {
            const double d = difference.delta(r, c);
            if (d == 0.0)
                continue;
            changes.push_back({r, c, before(r, c), after(r, c), d});
        }
    difference.changedCells = static_cast<Index>(changes.size());
    const auto magnitude = [](const CellChange& change) { return std::abs(change.delta); };
    const std::size_t kept = std::min(largestCount, changes.size());
    // Stable: equal changes stay in row-major order.
    std::stable_sort(changes.begin(), changes.end(),
                     [&](const CellChange& a, const CellChange& b) { return magnitude(a) > magnitude(b); });
    changes.resize(kept);
    difference.largest = std::move(changes);
    if (!difference.largest.empty())
        difference.largestChange = magnitude(difference.largest.front());
    return difference;
}

} // namespace qkv
