// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The step-by-step arithmetic behind one cell (i, j) of one head: the score, the scale, the mask, the
/// temperature, the row's normalizer and the output row, as data (ExplanationText.h writes it out as plain
/// text or LaTeX); and what computing in float32 did to the weights of row i (comparePrecision()).
///
/// Every number is the engine's own (taken from the AttentionResult, or from traceRow on the engine's row);
/// the explanation only adds the intermediate values the engine does not keep, computed the same way.

#include "AttentionResult.h"
#include "Normalizers.h"
#include "Session.h"

#include <string>
#include <vector>

namespace qkv {

/// Why a cell is masked (or Allowed). Padding wins over the pattern when both apply.
enum class MaskReason { Allowed, Causal, Prefix, Sliding, Custom, QueryPadding, KeyPadding };

/// One key of the explained row, for the normalizer and output steps.
struct RowEntry {
    Index key = 0;
    std::string token;
    bool allowed = false;
    double scaled = 0.0;      ///< S'[i][j]
    double logit = 0.0;       ///< z_j = S'[i][j] / τ
    double shifted = 0.0;     ///< (S'[i][j] − max S') / τ over the allowed keys, as the engine computes it
    double exponential = 0.0; ///< softmax: e^shifted; 0 for masked keys and other normalizers
    double plainExponential = 0.0; ///< softmax with showPlainExponentials: e^S'[i][j]
    double weight = 0.0;           ///< A[i][j]
    RowVector value;               ///< v_j
};

struct CellExplanation {
    int head = 0;
    Index query = 0; ///< i
    Index key = 0;   ///< j
    std::string queryToken;
    std::string keyToken;
    RowVector q; ///< q_i
    RowVector k; ///< k_j

    // Where q_i and k_j come from when positions or biases take part (empty or false otherwise).
    PositionType positions = PositionType::None;
    RowVector queryInput;        ///< sinusoidal, learned: x_i + PE_i, what W_Q multiplies
    RowVector keyInput;          ///< sinusoidal, learned: z_j + PE_j (x_j + PE_j in self-attention)
    RowVector qBeforeRope;       ///< RoPE: x_i W_Q (+ b_Q), before it is turned by position i (in float64)
    RowVector kBeforeRope;       ///< RoPE: z_j W_K (+ b_K), before it is turned by position j (in float64)
    bool queryBias = false;      ///< the head has b_Q
    bool keyBias = false;        ///< the head has b_K
    bool crossAttention = false; ///< keys come from Z (else from X)

    // Score. The last step of every score function is a term-by-term sum Σ_t left_t · right_t:
    // dot: q · k; general: (q W_S) · k; additive: v_a · tanh(q W_a + k U_a); cosine: q · k, then divided.
    ScoreFunction scoreFunction = ScoreFunction::Dot;
    RowVector left;
    RowVector right;
    double sum = 0.0;           ///< Σ_t left_t · right_t (for cosine the dot product before dividing)
    RowVector queryTransformed; ///< general: q W_S; additive: q W_a; empty otherwise
    RowVector keyTransformed;   ///< additive: k U_a; empty otherwise
    RowVector hidden;           ///< additive: tanh(q W_a + k U_a); empty otherwise
    double queryNorm = 0.0;     ///< cosine: ‖q‖
    double keyNorm = 0.0;       ///< cosine: ‖k‖
    double score = 0.0;         ///< S[i][j]

    // Scale.
    Scale scale;
    Index dK = 0;
    double divisor = 1.0; ///< what the score is divided by
    double scaled = 0.0;  ///< S'[i][j] (with ALiBi's bias when positions are alibi)
    // ALiBi: S'[i][j] = score / divisor − slope · |i − j|.
    bool alibi = false;
    double alibiSlope = 0.0;
    double unbiasedScaled = 0.0; ///< score / divisor, before ALiBi's bias

    // Mask.
    bool allowed = true;
    MaskReason maskReason = MaskReason::Allowed;
    MaskType maskType = MaskType::None;
    Index prefixLength = 0;
    Index window = 1;

    // Temperature: z = S' / τ.
    double temperature = 1.0;
    double logit = 0.0;

    // The normalizer over row i.
    NormalizerSpec normalizer;
    NormalizerTrace trace;              ///< traceRow on the engine's row i
    std::vector<RowEntry> row;          ///< every key j' of row i
    Index allowedCount = 0;             ///< allowed keys in row i
    double rowMax = 0.0;                ///< max S'[i][·] over the allowed keys (0 when none is allowed)
    bool showPlainExponentials = false; ///< softmax, τ = 1, moderate row: also e^S' without the shift
    double plainExponentialSum = 0.0;   ///< Σ e^S' over the allowed keys when shown
    std::vector<Index> support;         ///< keys with A[i][j] > 0 (for hardmax: the arg-max set)
    double weight = 0.0;                ///< A[i][j]

    // Output of the head for query i: o_i = Σ_j A[i][j] v_j.
    RowVector output;
};

/// Explains cell (i, j) of head `head`. `result` must be computeAttention(session).
/// @throws std::out_of_range when head, i or j is out of range
/// @throws std::invalid_argument when the result does not have the session's shapes
CellExplanation explainCell(const Session& session, const AttentionResult& result, int head, Index i,
                            Index j);

/// Whether `spec` computes its weights as softmax does: softmax itself, or entmax with α ≤ 1.
bool normalizesAsSoftmax(const NormalizerSpec& spec);

/// float32's machine epsilon ε₃₂ = 2⁻²³ ≈ 1.19e-7: the gap between 1 and the next float32.
inline constexpr double float32Epsilon = 0x1p-23;

/// The gap between adjacent float32 values around `x`: 2^(e − 23) for |x| in [2^e, 2^(e+1)), and the
/// subnormal spacing 2⁻¹⁴⁹ below the smallest normal float32. Rounding x to float32 moves it by at most
/// half of this.
double float32Ulp(double x);

/// One key of a row whose weights are compared across precisions.
struct PrecisionEntry {
    Index key = 0;
    std::string token;
    double reference = 0.0;  ///< the weight computed in float64 from the session
    double computed = 0.0;   ///< the result's weight (a float32 value when the result is float32)
    double difference = 0.0; ///< computed − reference
    double ulps = 0.0;       ///< |difference| / float32Ulp(reference): float32 steps at the reference weight
};

/// What the result's precision did to the weights of one query row: the row computed again in float64 from
/// the session beside the result's row, their largest difference, and each row's sum against 1.
struct PrecisionComparison {
    int head = 0;
    Index query = 0; ///< i
    std::string queryToken;
    Precision precision = Precision::Float64; ///< what the result was computed in
    Index keyCount = 0;                       ///< m
    Index allowedCount = 0; ///< allowed keys of row i (masked weights are 0 in every precision)
    Index differing = 0;    ///< allowed keys whose weights differ
    /// Every allowed key when there are few, else those with the largest |difference| (the selected key
    /// among them when allowed), in key order.
    std::vector<PrecisionEntry> listed;
    double maxDifference = 0.0;  ///< max |computed − reference| over the row
    Index maxDifferenceKey = -1; ///< where it is (the first such key; −1 when no weight differs)
    /// The largest ulps over the row: not always at maxDifferenceKey, since an ulp scales with the weight.
    double maxUlps = 0.0;
    /// The normalizer makes every row with an allowed key sum to 1 (all but sigmoid), so the sums below
    /// say something.
    bool sumsToOne = false;
    double referenceSumError = 0.0; ///< Σ_j reference − 1, summed without rounding error (compensated)
    double computedSumError = 0.0;  ///< Σ_j computed − 1, the same way
};

/// Compares row i of head `head`'s weights in `result` with the same row computed in float64 from the
/// session, as the engine computes in double: q_i = x_i W_Q, K = Z W_K (X W_K for self-attention), the
/// scores of the session's score function, the scale and the normalizer with its temperature. The mask is
/// the result's (it does not depend on the precision). At most `maxListed` keys are listed (at least 1);
/// `selectedKey` stays among them when it is allowed.
/// @throws std::out_of_range when head or i is out of range
/// @throws std::invalid_argument when the result does not have the session's shapes
PrecisionComparison comparePrecision(const Session& session, const AttentionResult& result, int head, Index i,
                                     Index selectedKey, Index maxListed = 8);

/// About how many multiply-adds comparePrecision() does (K = Z W_K dominates), for a view to decide whether
/// to run it off the GUI thread.
double precisionComparisonWork(const Session& session);

} // namespace qkv
