// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Whether two results are the same to the bit (−0 is not 0), matrix by matrix.

#include "AttentionResult.h"

namespace qkv::test {

inline bool sameResultBits(const AttentionResult& a, const AttentionResult& b)
{
    if (a.precision != b.precision || a.heads.size() != b.heads.size() || !sameBits(a.output, b.output) ||
        !sameBits(a.concat, b.concat) || !sameBits(a.positionedX, b.positionedX) ||
        !sameBits(a.positionedZ, b.positionedZ))
        return false;
    for (std::size_t h = 0; h < a.heads.size(); ++h) {
        const HeadResult &x = a.heads[h], &y = b.heads[h];
        if (!sameBits(x.Q, y.Q) || !sameBits(x.K, y.K) || !sameBits(x.V, y.V) ||
            !sameBits(x.scores, y.scores) || !sameBits(x.scaled, y.scaled) ||
            !sameBits(x.allowed, y.allowed) || !sameBits(x.weights, y.weights) ||
            !sameBits(x.output, y.output) || !(x.rowStats == y.rowStats) || x.emptyRows != y.emptyRows)
            return false;
    }
    return true;
}

} // namespace qkv::test
