// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// What `qkvlab predict` and `qkvlab heads` print (docs/command-line.md).

#include "HeadScores.h"
#include "Model.h"
#include "ModelRun.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

/// A token as the JSON names it: its vocabulary entry ("Ġsat"), or "#id" without a tokenizer that knows it.
std::string tokenName(const Model& model, std::int64_t id);

/// {"ids", "tokens", "positions": [{"top": [{"id", "token", "p"}…], "next_id", "loss"}…], "loss"}: one line.
std::string predictionJson(const Model& model, const std::vector<std::int64_t>& ids,
                           const Prediction& prediction);

/// {"layers", "heads", "scores": {NAME: [[…] × layers]}}: one line.
std::string headScoresJson(const HeadScoreGrid& scores);

} // namespace qkv
