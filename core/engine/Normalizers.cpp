// SPDX-License-Identifier: GPL-3.0-or-later
#include "Normalizers.h"

#include "RowKernels.h"
#include "SparseNormalizers.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

// Algorithms (docs/semantics.md, "Normalizers", says what each computes):
//
// * All shift-invariant normalizers work on z_j = (S'_j − max S') / τ over the allowed entries, clamped to
//   [−DBL_MAX, 0], so max z = 0 exactly and no infinity ever enters the arithmetic. Since max z = 0, the
//   thresholds below are ≥ −1, so only the candidates with (α−1) z_j > −1 can be in a support; they are
//   copied to the scratch (which only grows, so rows after the first allocate nothing) and nothing is fully
//   sorted.
// * normalizeRow also works in place (out == scaled).

namespace qkv {

namespace {

constexpr double kLowest = -std::numeric_limits<double>::max();

double clampFinite(double x)
{
    if (std::isnan(x))
        return 0.0;
    return std::clamp(x, kLowest, std::numeric_limits<double>::max());
}

/// What one pass over the allowed scores finds.
struct RowScan {
    Index allowed = 0;  ///< number of allowed entries
    double max = 0.0;   ///< maximum over the allowed, non-NaN scores
    bool found = false; ///< some allowed score is not NaN
};

RowScan scanRow(const double* scaled, const std::uint8_t* allowed, Index m)
{
    RowScan scan;
    for (Index j = 0; j < m; ++j) {
        if (!allowed[j])
            continue;
        ++scan.allowed;
        const double s = scaled[j];
        if (std::isnan(s))
            continue;
        if (!scan.found || s > scan.max) {
            scan.max = s;
            scan.found = true;
        }
    }
    return scan;
}

/// out[j] = z_j = (S'_j − max)/τ in [−DBL_MAX, 0] for allowed j, 0 for masked j. Infinite or NaN scores
/// (outside the contract) still give finite logits; a row of NaN only is treated as all ties.
void computeLogits(const double* scaled, const std::uint8_t* allowed, Index m, double temperature,
                   const RowScan& scan, double* out)
{
    if (!scan.found) {
        std::fill(out, out + m, 0.0);
        return;
    }
    const double max = scan.max;
    for (Index j = 0; j < m; ++j) {
        const double s = scaled[j];
        double z = (s - max) / temperature;
        // s − max overflows when the scores span more than DBL_MAX (−1.7e308 against 1.7e308); halving both
        // first is exact and keeps (s − max)/τ right for a large τ (every finite score and τ gives a finite,
        // correct row).
        if (std::isinf(z) && std::isfinite(s) && std::isfinite(max))
            z = (0.5 * s - 0.5 * max) / temperature * 2.0;
        z = s == max ? 0.0 : z;         // also for s = max = ±∞
        z = z >= kLowest ? z : kLowest; // −∞ and NaN
        z = z > 0.0 ? 0.0 : z;          // only for τ ≤ 0, outside the contract
        out[j] = allowed[j] ? z : 0.0;
    }
}

void ensureScratch(NormalizerScratch& scratch, Index m)
{
    const auto size = static_cast<std::size_t>(m);
    if (scratch.values.size() < 2 * size)
        scratch.values.resize(2 * size);
    if (scratch.indices.size() < size)
        scratch.indices.resize(size);
}

/// Softmax over the logits in out; returns Σ exp(z) (≥ 1 because max z = 0).
double softmaxRow(const std::uint8_t* allowed, Index m, double* out, bool allAllowed)
{
    Eigen::Map<Eigen::ArrayXd> row(out, m);
    // Eigen's vectorised exp clamps its argument near −709 and so never returns the 0 (or subnormal) that
    // std::exp gives below that; rows reaching down there take the exact scalar path.
    if (allAllowed && row.minCoeff() > -700.0) {
        row = row.exp();
    } else {
        for (Index j = 0; j < m; ++j)
            out[j] = allowed[j] ? std::exp(out[j]) : 0.0;
    }
    const double sum = row.sum();
    row *= 1.0 / sum;
    return sum;
}

/// Uniform weights over the allowed entries whose logit is exactly 0 (the maxima); returns their count.
Index uniformOverZeros(const std::uint8_t* allowed, Index m, double* out)
{
    Index count = 0;
    for (Index j = 0; j < m; ++j)
        count += (allowed[j] && out[j] == 0.0) ? 1 : 0;
    const double share = 1.0 / static_cast<double>(count);
    for (Index j = 0; j < m; ++j)
        out[j] = (allowed[j] && out[j] == 0.0) ? share : 0.0;
    return count;
}

void sigmoidRow(const double* scaled, const std::uint8_t* allowed, Index m, double temperature, double* out)
{
    for (Index j = 0; j < m; ++j) {
        if (!allowed[j]) {
            out[j] = 0.0;
            continue;
        }
        const double x = scaled[j] / temperature;
        double p;
        if (std::isnan(x)) {
            p = 0.0;
        } else if (x >= 0.0) {
            p = 1.0 / (1.0 + std::exp(-x));
        } else {
            const double e = std::exp(x);
            p = e / (1.0 + e);
        }
        out[j] = p;
    }
}

/// Hardmax: an equal share for every allowed score within hardmaxTieUlps units in the last place of the row
/// maximum (docs/semantics.md, "Hardmax ties"). Identical tokens can give scores that differ in the last bits
/// (a matrix product rounds its last rows differently; cosine gives 0.9999999999999999 for 1), and they must
/// share equally.
void hardmaxRow(const double* scaled, const std::uint8_t* allowed, Index m, const RowScan& scan, double* out)
{
    const double tolerance = hardmaxTieUlps * DBL_EPSILON * std::abs(scan.max); // 0.5–1 ulp per unit
    const double lowest = scan.max - tolerance;
    Index ties = 0;
    for (Index j = 0; j < m; ++j) {
        const bool winner = allowed[j] && (!scan.found || scaled[j] >= lowest);
        out[j] = winner ? 1.0 : 0.0;
        ties += winner;
    }
    const double share = 1.0 / static_cast<double>(ties);
    for (Index j = 0; j < m; ++j)
        out[j] *= share;
}

/// Softmax of a row whose allowed scores are finite and span less than DBL_MAX, in the vectorised row
/// kernels (in place too): the common case, and most of a large session's time. False for any other row
/// (having written at most to out), which then takes the exact general path.
bool fastSoftmaxRow(const double* scaled, const std::uint8_t* allowed, Index m, double temperature,
                    double* out, NormalizerTrace& trace)
{
    if (m == 0)
        return false;
    const rows::Range range = rows::allowedRange(scaled, allowed, m);
    if (!(range.min <= range.max) || !std::isfinite(range.max - range.min))
        return false; // nothing allowed, or s − max could overflow
    const rows::ExpSums sums = rows::shiftedExp(scaled, allowed, range, temperature, out, m);
    if (!std::isfinite(sums.sum)) // a NaN or infinite score
        return false;
    rows::multiply(out, 1.0 / sums.sum, m);
    trace.expSum = sums.sum;
    // The entropy comes almost free here: −Σ p ln p = ln Σe^z − Σ p z, both terms ≥ 0 (z ≤ 0), no log per
    // entry.
    trace.entropy = std::log(sums.sum) - sums.weightedLogits / sums.sum;
    return true;
}

/// Normalizes the row and returns the trace fields other than the support.
NormalizerTrace normalizeRowImpl(const NormalizerSpec& spec, const double* scaled,
                                 const std::uint8_t* allowed, Index m, double temperature, double* out,
                                 NormalizerScratch& scratch)
{
    NormalizerTrace trace;
    const bool softmax =
        spec.type == NormalizerType::Softmax || (spec.type == NormalizerType::Entmax && spec.alpha == 1.0);
    if (softmax && fastSoftmaxRow(scaled, allowed, m, temperature, out, trace))
        return trace;
    if (spec.type == NormalizerType::Sigmoid) {
        sigmoidRow(scaled, allowed, m, temperature, out);
        return trace;
    }
    const RowScan scan = scanRow(scaled, allowed, m);
    if (scan.allowed == 0) {
        std::fill(out, out + m, 0.0);
        return trace;
    }
    if (spec.type == NormalizerType::Hardmax) {
        hardmaxRow(scaled, allowed, m, scan, out);
        return trace;
    }

    computeLogits(scaled, allowed, m, temperature, scan, out);
    double thresholdSlope = 0.0; // α − 1 when a threshold was computed on the shifted logits
    switch (spec.type) {
    case NormalizerType::Sparsemax:
        ensureScratch(scratch, m);
        trace.threshold = sparse::sparsemaxRow(allowed, m, out, scratch);
        thresholdSlope = 1.0;
        break;
    case NormalizerType::Entmax: {
        const double alpha = spec.alpha;
        if (!(alpha > 1.0)) { // α = 1 (and, outside the contract, α < 1 or NaN)
            trace.expSum = softmaxRow(allowed, m, out, scan.allowed == m);
        } else if (alpha == 2.0) {
            ensureScratch(scratch, m);
            trace.threshold = sparse::sparsemaxRow(allowed, m, out, scratch);
            thresholdSlope = 1.0;
        } else if (alpha == 1.5) {
            ensureScratch(scratch, m);
            trace.threshold = sparse::entmax15Row(allowed, m, out, scratch);
            thresholdSlope = 0.5;
        } else if (std::isinf(alpha)) { // outside the contract: the α → ∞ limit
            uniformOverZeros(allowed, m, out);
        } else {
            ensureScratch(scratch, m);
            if (alpha < 2.0)
                trace.threshold = sparse::entmaxSolve<true>(alpha, allowed, m, out, scratch);
            else if ((alpha - 1.0) * std::log(static_cast<double>(scan.allowed)) <= 600.0)
                trace.threshold = sparse::entmaxSolveHighAlpha(alpha, allowed, m, out, scratch);
            else // astronomically large α: t* may underflow, so work with λ = −ln(−t)/ε
                trace.threshold = sparse::entmaxSolve<false>(alpha, allowed, m, out, scratch);
            thresholdSlope = alpha - 1.0;
        }
        break;
    }
    case NormalizerType::Softmax:
    default:
        trace.expSum = softmaxRow(allowed, m, out, scan.allowed == m);
        break;
    }
    if (thresholdSlope > 0.0 && scan.found) {
        // Report t for the unshifted logits S'/τ, as NormalizerTrace says: (α−1)(z + max/τ) − t' = (α−1)z −
        // t.
        trace.threshold =
            clampFinite(trace.threshold + clampFinite(thresholdSlope * (scan.max / temperature)));
    }
    return trace;
}

} // namespace

bool softmaxRowFloat32(const NormalizerSpec& spec, const float* scaled, const std::uint8_t* allowed, Index m,
                       float temperature, float* weights, NormalizerTrace& trace, NormalizerScratch& scratch)
{
    const bool softmax =
        spec.type == NormalizerType::Softmax || (spec.type == NormalizerType::Entmax && spec.alpha == 1.0);
    if (!softmax || m == 0 || !(temperature >= FLT_MIN && temperature <= FLT_MAX))
        return false;
    const rows::RangeF range = rows::allowedRange(scaled, allowed, m);
    if (!(range.min <= range.max) || !std::isfinite(range.max - range.min) ||
        !((range.min - range.max) / temperature >= rows::smallestFloatExpArgument))
        return false;
    scratch.exponentials.resize(static_cast<std::size_t>(m));
    float* e = scratch.exponentials.data();
    const rows::ExpSums sums = rows::shiftedExp(scaled, allowed, range.max, temperature, e, m);
    if (!std::isfinite(sums.sum)) // a NaN or infinite score
        return false;
    rows::multiply(e, static_cast<float>(1.0 / sums.sum), weights, m);
    trace.expSum = sums.sum;
    trace.entropy = std::log(sums.sum) - sums.weightedLogits / sums.sum; // as in fastSoftmaxRow
    return true;
}

NormalizerTrace normalizeRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed,
                             Index m, double temperature, double* out, NormalizerScratch& scratch)
{
    return normalizeRowImpl(spec, scaled, allowed, m, temperature, out, scratch);
}

std::vector<double> normalize(const NormalizerSpec& spec, const std::vector<double>& scaled,
                              double temperature, const std::vector<std::uint8_t>& allowed)
{
    if (!allowed.empty() && allowed.size() != scaled.size())
        throw std::invalid_argument("normalize: the mask and the row differ in length");
    const std::vector<std::uint8_t> all =
        allowed.empty() ? std::vector<std::uint8_t>(scaled.size(), 1) : allowed;
    std::vector<double> out(scaled.size(), 0.0);
    NormalizerScratch scratch;
    normalizeRow(spec, scaled.data(), all.data(), static_cast<Index>(scaled.size()), temperature, out.data(),
                 scratch);
    return out;
}

NormalizerTrace traceRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed,
                         Index m, double temperature)
{
    std::vector<double> out(static_cast<std::size_t>(m), 0.0);
    NormalizerScratch scratch;
    NormalizerTrace trace = normalizeRowImpl(spec, scaled, allowed, m, temperature, out.data(), scratch);
    trace.support =
        static_cast<Index>(std::count_if(out.begin(), out.end(), [](double p) { return p > 0.0; }));
    return trace;
}

} // namespace qkv
