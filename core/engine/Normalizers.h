// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Row normalizers (docs/semantics.md, "Normalizers"): softmax, sparsemax, α-entmax, sigmoid and hardmax.
/// Each works on one row of scaled scores with its mask and never produces NaN or infinity.

#include "EigenTypes.h"
#include "Session.h"

#include <vector>

namespace qkv {

/// Hardmax ties: scores within this many units in the last place (DBL_EPSILON·|max| each) of the row
/// maximum share the weight equally.
inline constexpr double hardmaxTieUlps = 8.0;

/// Scratch space reused across rows so normalizing a large matrix allocates nothing per row.
struct NormalizerScratch {
    std::vector<double> values;
    std::vector<Index> indices;
    std::vector<float> exponentials; // the float32 softmax
};

/// What a normalizer did to one row, for the step-by-step view: the threshold t of sparsemax/entmax
/// (p_j = [(α−1) z_j − t]₊^{1/(α−1)}, with α = 2 for sparsemax), the sum of exponentials of softmax, and
/// the support size. Fields that do not apply to the normalizer are 0. z here is the unshifted S'/τ (t is
/// clamped to ±DBL_MAX), and expSum = Σ exp(z − max z) over the allowed entries.
struct NormalizerTrace {
    double threshold = 0.0;
    double expSum = 0.0;
    Index support = 0;
    /// −Σ p ln p when the normalizer had it for free (the unmasked softmax path), else −1.
    double entropy = -1.0;
};
/// Normalizes one row and returns its trace (the support is not counted: see traceRow()).
/// @param scaled       the row's scaled scores S'[i][·] (length m), any finite doubles
/// @param allowed      the row's mask (length m), 1 where the key may be attended to
/// @param temperature  τ > 0 (finite)
/// @param out          receives the weights (length m); every entry with allowed = 0 is exactly 0, and a row
///                     with no allowed entry is all zeros
/// Softmax, sparsemax, entmax and hardmax work on z = (S' − max S') / τ over the allowed entries;
/// sigmoid works on S' / τ.
NormalizerTrace normalizeRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed,
                             Index m, double temperature, double* out, NormalizerScratch& scratch);

/// The float32 softmax (and 1-entmax) of a row of float32 scaled scores, computed as PyTorch computes it:
/// z = (S' − max S')/τ and exp(z) in float32, the sum in double, each weight exp(z) · float32(1/Σ).
/// Writes the float32 weights to `weights` (which may be `scaled`) and returns true; returns false, having
/// written nothing, for any other normalizer and for rows that need the exact float64 path: nothing
/// allowed, a score that is not finite, or a logit below rows::smallestFloatExpArgument (−87, where
/// float32's exp leaves the normal numbers).
bool softmaxRowFloat32(const NormalizerSpec& spec, const float* scaled, const std::uint8_t* allowed, Index m,
                       float temperature, float* weights, NormalizerTrace& trace, NormalizerScratch& scratch);

/// Convenience for tests and views: one row in, one row out, all entries allowed unless a mask is given.
std::vector<double> normalize(const NormalizerSpec& spec, const std::vector<double>& scaled,
                              double temperature = 1.0, const std::vector<std::uint8_t>& allowed = {});

NormalizerTrace traceRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed,
                         Index m, double temperature);

} // namespace qkv
