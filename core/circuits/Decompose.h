// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// One attention score taken apart (docs/circuits.md): the residual stream entering a layer is a sum of
/// components (the token's embedding, its position, every earlier head's output, each layer's output bias
/// and MLP); once the layer norm's divisor is taken from the whole stream the norm is affine, so the query
/// and the key are sums of one part per component plus a bias part, and the score is the sum of every
/// query part's product with every key part.

#include "EigenTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

class Model;

struct DecomposeRequest {
    Index layer = 0;
    Index head = 0; ///< a query head
    std::vector<std::int64_t> ids;
    Index query = 0, key = 0; ///< positions; a key the causal mask hides still has a score
};

struct ScoreDecomposition {
    /// `embed`, `pos`, then for each earlier layer `L{l}H0` … `L{l}H{H−1}`, `L{l}.b_O`, `L{l}.mlp`, then
    /// `bias` (a part the model does not have is left out).
    std::vector<std::string> components;
    double score = 0; ///< the engine's own scaled score of the head's session, before mask and softmax
    Matrix terms;     ///< C × C: query-side component (row) × key-side component (column)
    std::vector<double> query, key; ///< the rows' and the columns' sums
};

/// Throws qkv::Error naming what is wrong: a layer, head or position out of range, no ids, an id outside the
/// vocabulary, more tokens than the model's positions.
ScoreDecomposition decomposeScore(const Model& model, const DecomposeRequest& request);

} // namespace qkv
