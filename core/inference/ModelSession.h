// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A head of a real model as a session (docs/models.md): a model folder opened (Model.h), the forward pass
/// run up to a layer (ForwardPass.h), and that layer's heads cut out of its weights into an ordinary session
/// whose weights are the model's attention probabilities.

#include "ForwardPass.h"
#include "Model.h"
#include "Session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

/// What from-model is asked for: a layer and query heads (counted from 0), token ids, a precision.
struct ModelHeadRequest {
    Index layer = 0;
    std::vector<Index> heads; ///< empty: every query head
    std::vector<std::int64_t> ids;
    Precision precision = Precision::Float64;
    std::string text; ///< for the title, when the ids came from a text
};

/// The session for the request: X is the normalized residual stream entering the layer's attention, the
/// heads carry that layer's W_Q, W_K, W_V and biases (a grouped key/value head copied into each query head
/// that reads it), W_O holds the rows of the chosen heads (so with every head chosen, output is the layer's
/// attention output) and b_O, causal mask, √d_k, softmax, and RoPE for the LLaMA family. Throws qkv::Error
/// naming the problem: a layer or head out of range, an id outside the vocabulary, no ids, more tokens
/// than the model's positions.
Session sessionFromModel(const Model& model, const ModelHeadRequest& request);

/// The link a session from the request keeps to its model (docs/session-file.md): the folder, the ids, the
/// layer and first head, and that head as the live intervention (the session's own head replaces it).
ModelLink modelLinkFor(const Model& model, const ModelHeadRequest& request);

} // namespace qkv
