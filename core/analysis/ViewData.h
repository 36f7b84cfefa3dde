// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Numbers that views show beyond the engine's matrices: a per-head summary for the multi-head overview and
/// one row's weights under every normalizer for the normalizer comparison. Pure functions of a HeadResult.

#include "AttentionResult.h"
#include "EigenTypes.h"
#include "Session.h"

#include <string>
#include <vector>

namespace qkv {

/// A head at a glance: how spread out its rows are.
struct HeadSummary {
    double meanEntropy = 0.0; ///< mean of RowStats::entropy over the non-empty rows (nats); 0 when none
    double meanSupport = 0.0; ///< mean of RowStats::support over the non-empty rows; 0 when none
    Index nonEmptyRows = 0;   ///< rows with at least one allowed key
};

/// Averages the head's row statistics over the rows that have at least one allowed key (an empty row's
/// all-zero weights say nothing about how the head attends).
HeadSummary summarizeHead(const HeadResult& head);

/// One query row's weights under each of the five normalizers, at one temperature.
struct NormalizerComparison {
    std::vector<std::string> names;    ///< "softmax", "sparsemax", "1.5-entmax", "sigmoid", "hardmax"
    std::vector<NormalizerSpec> specs; ///< the normalizer of each row of `weights`
    Matrix weights;                    ///< names.size() × m; masked keys are exactly 0
};

/// Normalizes row `row` of the head's scaled scores, with the head's mask, under softmax, sparsemax,
/// 1.5-entmax, sigmoid and hardmax (normalizeRow, as the engine does).
/// @throws std::out_of_range when `row` is not a row of the head
/// @throws std::invalid_argument when the temperature is not a finite positive number
NormalizerComparison compareNormalizers(const HeadResult& head, Index row, double temperature);

} // namespace qkv
