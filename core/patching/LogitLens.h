// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The logit lens (nostalgebraist, "interpreting GPT: the logit lens"; docs/patching.md): the residual stream
/// entering every layer (and after the last), at every position, read through the final norm (with its own
/// statistics at that layer) and the unembedding, as if the model stopped there.

#include "EigenTypes.h"
#include "ModelRun.h"
#include "Patching.h"
#include "Session.h"

#include <cstdint>
#include <vector>

namespace qkv {

class Model;

struct LensCell {
    std::vector<TokenProbability> top; ///< the most probable tokens, by probability descending, ties by id
    double answerProbability = 0;      ///< when an answer was given
    Index answerRank = 0;              ///< 1 + #{p_v > p_a} + #{v < a : p_v = p_a}; 0 without an answer
};

/// layers[l][i]: the residual entering layer l (l = the model's layers: after the last) at position i.
struct LogitLens {
    std::vector<std::vector<LensCell>> layers;
    bool hasAnswer = false;
};

struct LensOptions {
    Index top = 10;
    std::int64_t answer = -1; ///< −1: none
    Precision precision = Precision::Float64;
};

/// Throws qkv::Error for no ids, an id or answer outside the vocabulary, more tokens than the model's
/// positions, an architecture the hooked pass cannot run; qkv::Cancelled when `progress` (layers done,
/// layers + 1) returns false.
LogitLens logitLens(const Model& model, const std::vector<std::int64_t>& ids, const LensOptions& options,
                    const PatchProgress& progress = {});

} // namespace qkv
