// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Softmax saturation (after the experiment in Brenndoerfer's article, docs/references.md): one row's scores
/// multiplied by a factor c, the weights that come out, and the gradient that still reaches each score. As c
/// grows softmax's top weight tends to 1 and every gradient to 0; sparsemax's gradients are exactly 0 off its
/// support whatever c is.

#include "EigenTypes.h"
#include "Session.h"

#include <cstdint>
#include <vector>

namespace qkv {

/// One panel of the saturation figure: the row at one factor c.
struct SaturationPanel {
    double factor = 1.0;
    /// z = c · S' / τ, the scores the normalizer sees (at temperature 1); clamped to ±saturationScoreLimit.
    std::vector<double> scores;
    std::vector<double> weights; ///< the normalizer of z; masked keys 0
    Index topKey = -1;           ///< the largest weight's key (−1 when the row has no allowed key)
    double topWeight = 0.0;
    double entropy = 0.0; ///< −Σ p ln p (nats)
    Index support = 0;    ///< keys with p > 0
    /// The key of the unit upstream signal e_k (∂L/∂p = e_k: a loss asking for more weight on key k).
    Index upstreamKey = -1;
    /// ∂L/∂z_j = (Jᵀ e_k)_j = J(k, j), the gradient that reaches each score; 0 for masked keys.
    std::vector<double> gradient;
    double gradientNorm = 0.0; ///< ‖gradient‖₂
    bool clamped = false;      ///< some c · S' / τ was beyond ±saturationScoreLimit
};

/// Scores larger in magnitude are clamped (the normalizers take finite scores and differences of them).
inline constexpr double saturationScoreLimit = 1e300;

/// The default factors of the three panels, as the article's code has them (`scores`, `scores * 5`,
/// `scores * 20`).
inline constexpr double defaultSaturationFactors[] = {1.0, 5.0, 20.0};

/// Normalizes c · S' / τ of one row and the gradient of a unit upstream signal on `upstreamKey` (−1: the
/// panel's own top key, the key a saturated row already attends to).
/// @param scaled       the row's scaled scores S' (length m), finite
/// @param allowed      the row's mask (length m); empty: all allowed
/// @throws std::invalid_argument when the factor or τ is not a finite positive number, a score is not finite,
///         the lengths differ or `upstreamKey` is not −1 or a key of the row
SaturationPanel saturateRow(const NormalizerSpec& spec, const std::vector<double>& scaled,
                            const std::vector<std::uint8_t>& allowed, double temperature, double factor,
                            Index upstreamKey = -1);

} // namespace qkv
