// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The blocks of a decoder-only transformer, each with its forward and its backward side by side
/// (docs/design.md): embeddings, learned positions, LayerNorm and RMSNorm, linear maps, RoPE, causal
/// attention with a softmax, sparsemax or α-entmax normalizer and grouped-query heads, the MLP's
/// activations (GELU in its tanh form, SiLU-gated), and the log-softmax with the next-token loss. The
/// inference pass (models/) and the trainer's network (training/) both compute with these; a backward
/// takes its forward's cache and the gradient of its output, and adds to (never overwrites) the gradients
/// of its parameters.
///
/// Activations are row-major matrices with a row per token. A batch is a list of sequences stored one
/// after another (Sequences): sequence b is rows offsets[b] … offsets[b] + lengths[b] − 1, and a token's
/// position is its row within its sequence. Float64 or float32 throughout (Scalar).

#include "EigenTypes.h"
#include "Session.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace qkv::transformer {

template <typename Scalar> using M = MatrixOf<Scalar>;
template <typename Scalar> using Row = Eigen::Matrix<Scalar, 1, Eigen::Dynamic, Eigen::RowMajor>;
template <typename Scalar> using ConstRowRef = Eigen::Ref<const Row<Scalar>>;

/// Sequences stored one after another in the rows of every activation.
struct Sequences {
    std::vector<Index> offsets, lengths;
    Index rows = 0;

    /// `count` sequences of `length` tokens each.
    static Sequences uniform(Index count, Index length);
    /// Sequences of the given lengths.
    static Sequences ofLengths(const std::vector<Index>& lengths);
    Index count() const { return Index(lengths.size()); }
    /// The position of every row within its sequence.
    std::vector<Index> positions() const;
};

/// c = a · b, c = a · bᵀ, and c += aᵀ · b (a weight's gradient from its input and its output's gradient).
template <typename Scalar> void product(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c);
template <typename Scalar> void productTransposed(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c);
template <typename Scalar> void addTransposedProduct(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c);

// ---- Embedding: out[r] = table[ids[r]] (+ positions[position(r)]) -------------------------------------

template <typename Scalar>
void embeddingForward(const M<Scalar>& table, const std::vector<std::int64_t>& ids, M<Scalar>& out);
/// dTable[ids[r]] += dOut[r].
template <typename Scalar>
void embeddingBackward(const std::vector<std::int64_t>& ids, const M<Scalar>& dOut, M<Scalar>& dTable);
/// out[r] = table[positions[r]] (learned absolute positions).
template <typename Scalar>
void positionsForward(const M<Scalar>& table, const std::vector<Index>& positions, M<Scalar>& out);
template <typename Scalar>
void positionsBackward(const std::vector<Index>& positions, const M<Scalar>& dOut, M<Scalar>& dTable);

// ---- Linear map: y = x · W + b (W: inputs × outputs) ---------------------------------------------------

template <typename Scalar>
void linearForward(const M<Scalar>& x, const M<Scalar>& weight, const M<Scalar>* bias, M<Scalar>& y);
/// dW += xᵀ·dy, db += Σ rows of dy (each when not null), dx = dy · Wᵀ (added to dx when `accumulate`).
template <typename Scalar>
void linearBackward(const M<Scalar>& x, const M<Scalar>& dy, const M<Scalar>& weight, M<Scalar>* dWeight,
                    M<Scalar>* dBias, M<Scalar>* dx, bool accumulate);

// ---- Norms: LayerNorm (x − mean)/√(var + ε)·γ + β, RMSNorm x/√(mean x² + ε)·γ ---------------------------

enum class NormKind { LayerNorm, RmsNorm };

template <typename Scalar> struct NormCache {
    M<Scalar> normalized;                                  ///< x̂, before the gain (and bias)
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> inverseScale; ///< 1/√(var + ε) or 1/√(mean x² + ε) per row
    M<Scalar> out;
};

/// `bias` empty: none (RMSNorm has none).
template <typename Scalar>
void normForward(NormKind kind, const M<Scalar>& x, const ConstRowRef<Scalar>& gain,
                 const ConstRowRef<Scalar>& bias, double epsilon, NormCache<Scalar>& cache);
/// dx += ∂/∂x; dGain and dBias (1 × d, when not null) += theirs.
template <typename Scalar>
void normBackward(NormKind kind, const NormCache<Scalar>& cache, const ConstRowRef<Scalar>& gain,
                  const M<Scalar>& dOut, M<Scalar>& dx, M<Scalar>* dGain, M<Scalar>* dBias);

// ---- Activations -------------------------------------------------------------------------------------

/// GELU in its tanh form (GPT-2's gelu_new, PyTorch's approximate="tanh"): ½·x·(1 + tanh u) with
/// u = √(2/π)·(x + 0.044715·x³), written x / (1 + e^(−2u)) (one exp, no cancellation for negative x), and
/// its derivative into `derivative` when not null. Inline: the passes call it on every entry of the MLP.
template <typename Scalar> inline Scalar geluTanh(Scalar x, Scalar* derivative = nullptr)
{
    const Scalar c = Scalar(std::sqrt(2.0 / 3.14159265358979323846)), a = Scalar(0.044715);
    const Scalar u = c * (x + a * x * x * x);
    // e^(−2u) overflows to ∞ only where the result is −0, as it should be.
    const Scalar e = std::exp(Scalar(-2) * u);
    if (derivative != nullptr) {
        const Scalar s = Scalar(1) / (Scalar(1) + e);
        *derivative = s + x * s * (Scalar(1) - s) * Scalar(2) * c * (Scalar(1) + Scalar(3) * a * x * x);
    }
    return x / (Scalar(1) + e);
}

/// SiLU x·σ(x) and its derivative.
template <typename Scalar> inline Scalar silu(Scalar x, Scalar* derivative = nullptr)
{
    const Scalar s = Scalar(1) / (Scalar(1) + std::exp(-x));
    if (derivative != nullptr)
        *derivative = s * (Scalar(1) + x * (Scalar(1) - s));
    return x * s;
}

/// The MLP's hidden values from its pre-activations: gelu_tanh(pre), or silu(gate) ⊙ up when `up` is given.
template <typename Scalar>
void activationForward(const M<Scalar>& pre, const M<Scalar>* up, M<Scalar>& activated);
/// dHidden holds ∂/∂activated and becomes ∂/∂pre; dUp receives ∂/∂up (gated only).
template <typename Scalar>
void activationBackward(const M<Scalar>& pre, const M<Scalar>* up, M<Scalar>& dHidden, M<Scalar>* dUp);

// ---- RoPE: dimension r of a head paired with r + d_head/2, rotated by position × frequency r
// ---------------

template <typename Scalar> struct RopeTable {
    M<Scalar> cos, sin; ///< positions × d_head/2
    Index headDim = 0;
};
template <typename Scalar>
RopeTable<Scalar> ropeTable(Index headDim, double theta, const RopeScaling& scaling, Index positions);
/// Rotates every head of `m` (rows × headCount·d_head) in place; the backward rotates back.
template <typename Scalar>
void ropeForward(const RopeTable<Scalar>& table, const std::vector<Index>& positions, Index headCount,
                 M<Scalar>& m);
template <typename Scalar>
void ropeBackward(const RopeTable<Scalar>& table, const std::vector<Index>& positions, Index headCount,
                  M<Scalar>& dm);

// ---- Causal attention ----------------------------------------------------------------------------------

struct AttentionShape {
    Index heads = 1, kvHeads = 1, headDim = 1;
    NormalizerSpec normalizer{};
    Index window = 0; ///< > 0: a query i sees the keys j with i − j < window (Mistral's sliding window)
    Index groupSize() const { return heads / kvHeads; }
};

/// weights[b · heads + h] (n_b × n_b, zero above the diagonal and outside the window): normalize(q_h
/// k_gᵀ/√d_head) causally for query head h and its key/value head g = h / group; z (rows × heads·d_head) =
/// weights · v_g. The (sequence, head) pairs on the engine's threads.
template <typename Scalar>
void attentionForward(const AttentionShape& shape, const Sequences& sequences, const M<Scalar>& q,
                      const M<Scalar>& k, const M<Scalar>& v, std::vector<M<Scalar>>& weights, M<Scalar>& z);
/// ∂/∂q, ∂/∂k, ∂/∂v (overwritten) from ∂/∂z; with `dPattern`, ∂/∂weights is added there per (b, h).
template <typename Scalar>
void attentionBackward(const AttentionShape& shape, const Sequences& sequences, const M<Scalar>& q,
                       const M<Scalar>& k, const M<Scalar>& v, const std::vector<M<Scalar>>& weights,
                       const M<Scalar>& dz, M<Scalar>& dq, M<Scalar>& dk, M<Scalar>& dv,
                       const std::vector<M<Scalar>>* dPattern = nullptr);
/// From the gradient of the weights: the gradient of the scaled scores, row by row, through the
/// normalizer's Jacobian (diag(s) − s sᵀ/Σs with s = p^(2−α) on the support).
template <typename Scalar>
void patternBackward(const NormalizerSpec& normalizer, const M<Scalar>& weights, M<Scalar>& dWeights);

// ---- Log-softmax and the next-token loss ---------------------------------------------------------------

/// ln Σ exp(row), from the row's maximum: the one log-sum-exp of the core.
template <typename Scalar> Scalar logSumExp(const Scalar* row, Index count);

/// What the loss scores: each row's target id, or −1 for a row not scored (each sequence's last token).
/// The loss is the mean over the scored rows of −ln softmax(logits)[target]; with `logNormalizers`, every
/// row's ln Σ exp (scored or not) too. The rows on the engine's threads, summed in row order.
template <typename Scalar>
double crossEntropyForward(const M<Scalar>& logits, const std::vector<std::int64_t>& targets,
                           std::vector<double>* rowLosses = nullptr,
                           std::vector<double>* logNormalizers = nullptr);
/// Turns `logits` into ∂loss/∂logits in place: (softmax − one-hot)/count on scored rows, 0 elsewhere.
template <typename Scalar>
void crossEntropyBackward(M<Scalar>& logits, const std::vector<std::int64_t>& targets);
/// The next-token targets of a batch: ids[r + 1] within a sequence, −1 at each sequence's last row.
std::vector<std::int64_t> nextTokenTargets(const Sequences& sequences, const std::vector<std::int64_t>& ids);

} // namespace qkv::transformer
