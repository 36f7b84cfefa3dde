// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Everything the engine computes for a session: every intermediate matrix of every head, the
/// concatenation, the final output and per-row statistics. A plain value, safe to hand across threads.

#include "EigenTypes.h"
#include "Session.h"

#include <vector>

namespace qkv {

struct RowStats {
    double entropy = 0.0; ///< −Σ a ln a, with 0 ln 0 = 0
    Index support = 0;    ///< number of a > 0
    double max = 0.0;
    double sum = 0.0;

    friend bool operator==(const RowStats& a, const RowStats& b)
    {
        return a.entropy == b.entropy && a.support == b.support && a.max == b.max && a.sum == b.sum;
    }
};

struct HeadResult {
    Matrix Q;           ///< n × d_k (after RoPE's rotation when positions are rope: what the scores use)
    Matrix K;           ///< m × d_k (likewise)
    Matrix V;           ///< m × d_v
    Matrix scores;      ///< n × m, s(q_i, k_j)
    Matrix scaled;      ///< n × m, scores / scale (plus ALiBi's bias when positions are alibi)
    MaskMatrix allowed; ///< n × m, 1 where attention is allowed
    Matrix weights;     ///< n × m, the normalized rows
    Matrix output;      ///< n × d_v, weights · V
    std::vector<RowStats> rowStats;
    std::vector<Index> emptyRows; ///< rows with no allowed key (all-zero weights)

    friend bool operator==(const HeadResult& a, const HeadResult& b)
    {
        return sameMatrix(a.Q, b.Q) && sameMatrix(a.K, b.K) && sameMatrix(a.V, b.V) &&
               sameMatrix(a.scores, b.scores) && sameMatrix(a.scaled, b.scaled) &&
               sameMatrix(a.allowed, b.allowed) && sameMatrix(a.weights, b.weights) &&
               sameMatrix(a.output, b.output) && a.rowStats == b.rowStats && a.emptyRows == b.emptyRows;
    }
};

struct AttentionResult {
    /// What the engine computed in. In float32 every matrix entry is a float32 value, stored as a double.
    Precision precision = Precision::Float64;
    /// X + PE and Z + PE, what the projections see, when the positional encoding is added to the embeddings
    /// (sinusoidal, learned); empty otherwise (positionedZ also without cross-attention).
    Matrix positionedX;
    Matrix positionedZ;
    std::vector<HeadResult> heads;
    Matrix concat; ///< n × (H·d_v)
    Matrix output; ///< concat · W_O (+ b_O), or concat when there is no W_O

    friend bool operator==(const AttentionResult& a, const AttentionResult& b)
    {
        return a.precision == b.precision && sameMatrix(a.positionedX, b.positionedX) &&
               sameMatrix(a.positionedZ, b.positionedZ) && a.heads == b.heads &&
               sameMatrix(a.concat, b.concat) && sameMatrix(a.output, b.output);
    }
};

} // namespace qkv
