// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to models/: what the passes on a model's text share (ForwardPass.cpp): the check of its ids, and
// the norms a session's attention input goes through.

#include "EigenTypes.h"
#include "Model.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace qkv::models {

/// Refuses no ids, an id outside the vocabulary and more tokens than the model's positions.
void checkIds(const Model& model, const std::vector<std::int64_t>& ids);

/// A run's `proceed` question, asked after each layer: tells `progress` (layers done, `layers`) and stops the
/// run when it returns false; none without a progress.
std::function<bool()> proceedAfterEachLayer(std::function<bool(Index done, Index total)> progress,
                                            Index layers);

Matrix layerNorm(const Matrix& x, const RowVector& gain, const RowVector& bias, double epsilon);
Matrix rmsNorm(const Matrix& x, const RowVector& gain, double epsilon);

} // namespace qkv::models
