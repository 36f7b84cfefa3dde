// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to models/: a layer's attention. The forward pass (ForwardPass.cpp) computes every layer's
// attention from the same session sessionFromModel (ModelSession.cpp) returns for one layer.

#include "EigenTypes.h"
#include "Model.h"
#include "Session.h"

#include <vector>

namespace qkv::models {

/// The attention input of `layer`: the normalized residual stream (ForwardPass.cpp).
Matrix normalizedForAttention(const Model& model, const Matrix& residual, Index layer, Precision precision);

/// The layer's attention as a session over `x` (the normalized residual stream), for `heads`.
/// With `float32` (a float32 pass), the projections go there instead of into the session (ModelSession.cpp).
Session layerSession(const Model& model, const Matrix& x, Index layer, const std::vector<Index>& heads,
                     Precision precision, Float32Weights* float32 = nullptr);

/// Every query head of the model: 0 to heads − 1 (ModelSession.cpp).
std::vector<Index> allHeads(const ModelConfig& c);

} // namespace qkv::models
