// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Sweeps: how a head's attention rows change as the temperature τ (or entmax's α) moves, for one query row
/// and on average over the rows. Every point is the engine's own normalizer (normalizeRow) applied to the
/// head's scaled scores with its mask, and the engine's row statistics (rowStatistics).

#include "AttentionResult.h"
#include "EigenTypes.h"
#include "Session.h"

#include <atomic>
#include <string>
#include <vector>

namespace qkv {

/// `points` values from `from` to `to` (both > 0, included), equally spaced in log10. At least 2 points.
/// @throws std::invalid_argument when the bounds are not finite positive numbers or points < 2
std::vector<double> logGrid(double from, double to, int points);
/// `points` values from `from` to `to` (both included), equally spaced. At least 2 points.
std::vector<double> linearGrid(double from, double to, int points);

/// One normalizer's statistics along the swept parameter (same length as SweepResult::parameter).
struct SweepCurve {
    std::string name;              ///< "softmax", "sparsemax", "1.5-entmax", ...
    NormalizerSpec spec;           ///< what was applied
    std::vector<double> entropy;   ///< −Σ a ln a (nats)
    std::vector<double> support;   ///< number of a > 0
    std::vector<double> topWeight; ///< max a
};

struct SweepResult {
    std::vector<double> parameter; ///< the τ (or α) of each point
    std::vector<SweepCurve> row;   ///< the selected query row, one curve per normalizer
    std::vector<SweepCurve> mean;  ///< the same averaged over the rows with at least one allowed key
    Index nonEmptyRows = 0;        ///< how many rows the mean is over (0: `mean` is all zeros)
    bool sampledRows = false;      ///< the mean is over evenly spread rows, not all (see meanRowLimit)
};

/// The normalizers a temperature sweep compares: softmax, sparsemax, entmax (the session's α when the
/// session uses entmax, else 1.5), sigmoid and hardmax.
std::vector<NormalizerSpec> sweepNormalizers(const NormalizerSpec& session);
/// "softmax", "sparsemax", "1.5-entmax" (α with up to 4 significant digits), "sigmoid", "hardmax".
std::string normalizerLabel(const NormalizerSpec& spec);

/// Entropy, support and top weight of row `row` (and of the mean over non-empty rows) under each of
/// `normalizers`, at each temperature of `temperatures`. With `meanRowLimit` > 0 and more rows than that,
/// the mean is over that many rows evenly spread (row ⌊k·n/limit⌋), so a huge head stays quick. Sets
/// `*cancel` (from any thread) to stop: then throws qkv::Cancelled.
/// @throws std::out_of_range when `row` is not a row of the head
/// @throws std::invalid_argument when a temperature is not a finite positive number, or the head's mask
///         does not have the scores' shape
SweepResult sweepTemperature(const HeadResult& head, Index row,
                             const std::vector<NormalizerSpec>& normalizers,
                             const std::vector<double>& temperatures, Index meanRowLimit = 0,
                             const std::atomic<bool>* cancel = nullptr);

/// The same for entmax at one temperature, with α taking each value of `alphas` (each ≥ 1): one curve,
/// named "entmax".
/// @throws std::invalid_argument when an α is below 1 or not finite, or the temperature is not a finite
///         positive number
SweepResult sweepAlpha(const HeadResult& head, Index row, double temperature,
                       const std::vector<double>& alphas, Index meanRowLimit = 0,
                       const std::atomic<bool>* cancel = nullptr);

} // namespace qkv
