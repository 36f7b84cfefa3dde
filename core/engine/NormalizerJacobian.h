// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// How a row's weights move when its scores move: the Jacobian ∂p/∂S' of each normalizer for one row, and the
/// gradient a unit upstream signal sends back to each score. This is what makes vanishing gradients (softmax
/// saturating) and sparsemax's zero gradients off its support visible.

#include "EigenTypes.h"
#include "Session.h"

#include <cstdint>
#include <vector>

namespace qkv {

/// One row's weights and their Jacobian.
struct RowJacobian {
    std::vector<double> weights; ///< p = normalizeRow(S'), length m
    /// m × m, J(i, j) = ∂p_i / ∂S'_j with the chain rule through ÷τ included (J = J_z / τ). Symmetric for the
    /// five normalizers; the rows and columns of masked keys are exactly 0:
    /// - softmax (and entmax with α = 1): J_z = diag(p) − p pᵀ
    /// - sparsemax (and entmax with α = 2): J_z = diag(s) − s sᵀ / |S|, s the indicator of the support S
    /// - α-entmax: J_z = diag(s) − s sᵀ / Σs with s_i = p_i^(2−α) on the support, 0 off it
    /// - sigmoid: J_z = diag(p (1 − p)); hardmax: 0 (piecewise constant)
    Matrix jacobian;
};

/// The weights of one row of scaled scores (as normalizeRow computes them) and their Jacobian.
/// @param scaled       the row's scaled scores S' (length m), finite
/// @param temperature  τ > 0, finite
/// @param allowed      the row's mask (length m), 1 where the key may be attended to; empty: all allowed
/// @throws std::invalid_argument when the lengths differ, a score is not finite or τ is not a finite positive
///         number
RowJacobian normalizerJacobian(const NormalizerSpec& spec, const std::vector<double>& scaled,
                               double temperature = 1.0, const std::vector<std::uint8_t>& allowed = {});

/// The gradient reaching each score when `upstream` (∂L/∂p) comes back from above: Jᵀ · upstream.
/// @throws std::invalid_argument when the lengths differ
std::vector<double> scoreGradient(const Matrix& jacobian, const std::vector<double>& upstream);

/// The same gradient without forming J (O(m), for long rows): Jᵀ · upstream for the weights `weights` that
/// `spec` gave at `temperature` (masked keys have weight 0 and get 0).
/// @throws std::invalid_argument when the lengths differ or τ is not a finite positive number
std::vector<double> scoreGradient(const NormalizerSpec& spec, const std::vector<double>& weights,
                                  double temperature, const std::vector<double>& upstream);

/// The Euclidean norm of a vector.
double euclideanNorm(const std::vector<double>& values);

/// The key with the largest weight (the first of equal ones); −1 when every weight is 0.
Index topKey(const std::vector<double>& weights);

/// e_key: the upstream signal of a loss that asks for more weight on `key` (length m, 1 at `key`, 0
/// elsewhere; all zeros when key is not in 0 … m−1).
std::vector<double> unitUpstream(Index m, Index key);

} // namespace qkv
