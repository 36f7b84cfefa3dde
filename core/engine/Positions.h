// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Positional encodings (docs/semantics.md, "Positional encodings") as pure functions: the sinusoidal and
/// learned tables added to X and Z before the projections, RoPE's rotation of Q and K after them, ALiBi's
/// per-head linear bias on the scaled scores. Positions count from 0 on each side (the queries, and the keys
/// of cross-attention).

#include "EigenTypes.h"
#include "Session.h"

#include <cmath>
#include <cstdlib>
#include <vector>

namespace qkv {

/// Vaswani et al.'s table, `count` positions × `dModel`: PE[p][2i] = sin(p / base^{2i/d_model}),
/// PE[p][2i+1] = cos(p / base^{2i/d_model}). An odd d_model ends with a sine column.
Matrix sinusoidalTable(Index count, Index dModel, double base);

/// What the encoding adds to rows 0 … count − 1 of X or Z: the sinusoidal table, or the learned P's first
/// `count` rows. Empty for the encodings that add nothing to the embeddings (none, rope, alibi).
Matrix additiveEncoding(const PositionSpec& positions, Index count, Index dModel);

/// True when the encoding is added to X and Z (sinusoidal, learned).
bool addsToEmbeddings(const PositionSpec& positions);

/// RoPE's d/2 frequencies (radians a position): θ_r = base^{−2r/d}, then scaled as Hugging Face's
/// rope_scaling does (transformers' _compute_linear_scaling / _compute_llama3_parameters): linear θ_r /
/// factor; llama3 with wavelength λ_r = 2π / θ_r, L = original_max_position_embeddings: θ_r / factor when λ_r
/// > L / low_freq_factor, θ_r when λ_r < L / high_freq_factor, else (1 − s) θ_r / factor + s θ_r with s = (L
/// / λ_r − low_freq_factor) / (high_freq_factor − low_freq_factor).
std::vector<double> ropeFrequencies(Index d, double base, const RopeScaling& scaling = {});

/// RoPE: rotates row p of `rows` (position firstPosition + p) in place, pair r (of d/2, d = rows.cols(),
/// even) by the angle position · θ_r (ropeFrequencies): (x, y) → (x cos − y sin, x sin + y cos), x and y
/// being coordinates r and r + d/2 (half: GPT-NeoX, LLaMA) or 2r and 2r + 1 (interleaved: GPT-J). The angles
/// are computed in double; cos and sin are rounded to the matrix's precision and the rotation is done in it.
template <typename Scalar>
void applyRope(Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& rows, double base,
               RopePairing pairing, Index firstPosition = 0, const RopeScaling& scaling = {});

/// Press et al.'s ALiBi slopes for `heads` heads, the rule of their code (and of Hugging Face's BLOOM): for a
/// power of two H, 2^(−8h/H) for h = 1 … H; otherwise the slopes of the largest power of two P below H, then
/// slopes 1, 3, 5, … of 2P heads (2^(−8·1/2P), 2^(−8·3/2P), …) until there are H.
std::vector<double> alibiSlopes(int heads);

/// The slopes ALiBi uses for a session of `heads` heads: the ones given in `positions.slopes`, or
/// alibiSlopes(heads).
std::vector<double> effectiveAlibiSlopes(const PositionSpec& positions, int heads);

/// Adds ALiBi's bias −slope · |i − j| to row i of the scaled scores (m keys), in the row's precision; the
/// new entries are also written, widened, into `widened` when it is given (the float32 engine keeps a double
/// copy). False when an entry is no longer finite.
template <typename Scalar>
bool addAlibiBias(Scalar* row, Index m, Index i, Scalar slope, double* widened = nullptr)
{
    bool finite = true;
    for (Index j = 0; j < m; ++j) {
        row[j] -= slope * static_cast<Scalar>(std::abs(i - j));
        finite = finite && std::isfinite(row[j]);
        if (widened)
            widened[j] = static_cast<double>(row[j]);
    }
    return finite;
}

} // namespace qkv
