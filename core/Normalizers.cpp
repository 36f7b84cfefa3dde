#include "Normalizers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

// Algorithms (spec section 4):
//
// * All shift-invariant normalizers work on z_j = (S'_j − max S') / τ over the allowed entries, clamped to
//   [−DBL_MAX, 0], so max z = 0 exactly and no infinity ever enters the arithmetic.
// * sparsemax: only z_j > −1 can be in the support (the threshold is ≥ −1), so those candidates are copied to
//   the scratch and the threshold is found by Michelot's filtering iteration: t = (Σ_W z − 1)/|W|, drop the
//   z ≤ t, repeat. Each t is a lower bound of the exact threshold, the loop ends when nothing is dropped, and
//   then W is exactly the support and t = (Σ_W z − 1)/|W| is the exact threshold of the sort-based algorithm.
//   After a bounded number of passes the remaining candidates are sorted instead (worst case O(k log k)).
// * 1.5-entmax: the exact sort-based algorithm of the entmax library on the candidates z/2 > −1 (with a
//   Welford update for the variance instead of the cancelling mean_sq − mean²).
// * other α: with ε = α − 1, q = 1/ε and y = ε z, the threshold is written t = −e^{−ελ} with λ ∈ [0, ln k]
//   (t ∈ [−1, −k^{−ε}]), so that p_j = e^{−λ} (1 + w_j)^q with w_j = y_j e^{ελ}. This parametrisation keeps full
//   relative precision when α → 1 (where t itself is within 1e-12 of −1) and reduces to logsumexp at α = 1.
//   λ is found by safeguarded Newton iteration inside a bisection bracket. For α < 2 the step is Newton's
//   step on u(t) = ‖[y − t]₊‖_q, which is convex and decreasing, so the iterates rise monotonically to the
//   root (this is Michelot's iteration again when q = 1) and entries leaving the support are dropped for
//   good. For α > 2 the step is Newton's on ln Σp, with rtsafe's fallback to bisection, and w is computed as
//   −exp(ln(−y) + ελ) so that huge α cannot overflow. Finally p is renormalised by its sum (as the entmax
//   library's ensure_sum_one).
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
    Index ties = 0;     ///< allowed entries exactly equal to the maximum
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
            scan.ties = 1;
            scan.found = true;
        } else if (s == scan.max) {
            ++scan.ties;
        }
    }
    return scan;
}

/// out[j] = z_j = (S'_j − max)/τ in [−DBL_MAX, 0] for allowed j, 0 for masked j. Infinite or NaN scores
/// (outside the contract) still give finite logits; a row of NaN only is treated as all ties.
void computeLogits(const double* scaled, const std::uint8_t* allowed, Index m, double temperature,
                   const RowScan& scan, double* out)
{
    for (Index j = 0; j < m; ++j) {
        if (!allowed[j] || !scan.found) {
            out[j] = 0.0;
            continue;
        }
        const double s = scaled[j];
        double z = s == scan.max ? 0.0 : (s - scan.max) / temperature;
        if (!(z >= kLowest))
            z = kLowest;
        else if (z > 0.0)
            z = 0.0;
        out[j] = z;
    }
}

void ensureScratch(NormalizerScratch& scratch, Index m)
{
    const auto size = static_cast<std::size_t>(m);
    if (scratch.values.size() < size)
        scratch.values.resize(size);
    if (scratch.indices.size() < size)
        scratch.indices.resize(size);
}

/// Softmax over the logits in out; returns Σ exp(z) (≥ 1 because max z = 0).
double softmaxRow(const std::uint8_t* allowed, Index m, double* out)
{
    double sum = 0.0;
    for (Index j = 0; j < m; ++j) {
        const double e = allowed[j] ? std::exp(out[j]) : 0.0;
        out[j] = e;
        sum += e;
    }
    for (Index j = 0; j < m; ++j)
        out[j] /= sum;
    return sum;
}

/// Exact threshold of the projection onto the simplex of v[0..n) (all ≤ 0, one = 0, sum = Σv).
/// Reorders and overwrites v.
double simplexThreshold(double* v, Index n, double sum)
{
    constexpr int maxFilterPasses = 40;
    for (int pass = 0; pass < maxFilterPasses; ++pass) {
        const double t = (sum - 1.0) / static_cast<double>(n);
        Index kept = 0;
        double keptSum = 0.0;
        for (Index i = 0; i < n; ++i) {
            if (v[i] > t) {
                keptSum += v[i];
                v[kept++] = v[i];
            }
        }
        if (kept == n || kept == 0)
            return t;
        n = kept;
        sum = keptSum;
    }
    // Adversarial input: finish with the sort-based algorithm on what is left.
    std::sort(v, v + n, std::greater<double>());
    double cumulative = 0.0;
    double supportSum = v[0];
    Index support = 1;
    for (Index i = 0; i < n; ++i) {
        cumulative += v[i];
        if (1.0 + static_cast<double>(i + 1) * v[i] > cumulative) {
            support = i + 1;
            supportSum = cumulative;
        }
    }
    return (supportSum - 1.0) / static_cast<double>(support);
}

/// Sparsemax over the logits in out; returns the threshold t (p = [z − t]₊).
double sparsemaxRow(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
{
    double* v = scratch.values.data();
    Index n = 0;
    double sum = 0.0;
    for (Index j = 0; j < m; ++j) {
        if (allowed[j] && out[j] > -1.0) {
            v[n++] = out[j];
            sum += out[j];
        }
    }
    const double t = simplexThreshold(v, n, sum);
    for (Index j = 0; j < m; ++j) {
        const double d = out[j] - t;
        out[j] = allowed[j] && d > 0.0 ? d : 0.0;
    }
    return t;
}

/// 1.5-entmax over the logits in out (the entmax library's exact sort-based algorithm on z' = z/2);
/// returns τ* (p = [z/2 − τ*]₊²).
double entmax15Row(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
{
    double* v = scratch.values.data();
    Index n = 0;
    for (Index j = 0; j < m; ++j) {
        const double x = 0.5 * out[j];
        if (allowed[j] && x > -1.0)
            v[n++] = x;
    }
    std::sort(v, v + n, std::greater<double>());

    // tau_k = mean_k − sqrt(max((1 − ss_k)/k, 0)) with ss_k = k·(mean_sq_k − mean_k²) = Σ (x − mean_k)².
    const auto tauAt = [v](Index k, Index* supportCount) {
        double mean = 0.0;
        double ss = 0.0;
        double tau = 0.0;
        for (Index i = 0; i < k; ++i) {
            const double x = v[i];
            const double count = static_cast<double>(i + 1);
            const double d = x - mean;
            mean += d / count;
            ss += d * (x - mean);
            const double delta = (1.0 - ss) / count;
            tau = mean - std::sqrt(delta > 0.0 ? delta : 0.0);
            if (supportCount && tau <= x)
                ++*supportCount;
        }
        return tau;
    };
    Index support = 0;
    tauAt(n, &support);
    const double tau = tauAt(std::max<Index>(support, 1), nullptr);

    for (Index j = 0; j < m; ++j) {
        const double d = 0.5 * out[j] - tau;
        out[j] = allowed[j] && d > 0.0 ? d * d : 0.0;
    }
    return tau;
}

/// α-entmax for α ∉ {1, 1.5, 2} (see the file comment). LowAlpha: 1 < α < 2, the scratch holds y = εz and
/// w = y·e^{ελ}; otherwise it holds ln(−y) and w = −exp(ln(−y) + ελ). Returns the threshold t = −e^{−ελ}.
template <bool LowAlpha>
double entmaxSolve(double alpha, const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
{
    const double eps = alpha - 1.0;
    const double q = 1.0 / eps;
    double* v = scratch.values.data();
    Index* index = scratch.indices.data();

    Index n = 0;
    for (Index j = 0; j < m; ++j) {
        if (allowed[j]) {
            const double y = eps * out[j];
            if (y > -1.0) {
                v[n] = LowAlpha ? y : std::log(-y);
                index[n] = j;
                ++n;
            }
        }
        out[j] = 0.0;
    }

    // The per-λ factor: e^{ελ} (≤ k) for LowAlpha, else ελ capped so that ln(−y) + ελ stays finite.
    const auto factorAt = [eps](double lambda) {
        return LowAlpha ? std::exp(eps * lambda) : std::min(eps * lambda, 1e300);
    };
    const auto wOf = [](double value, double factor) {
        return LowAlpha ? value * factor : -std::exp(value + factor);
    };

    double lambda = 0.0;
    if (n > 1) {
        double lo = 0.0;                                   // Σp ≥ 1 here (t = −1)
        double hi = std::log(static_cast<double>(n));      // Σp ≤ 1 here (t = −n^{−ε})
        double logSumLo = std::numeric_limits<double>::infinity();
        double logSumHi = -std::numeric_limits<double>::infinity();
        double stepBefore = hi - lo;
        double lastStep = hi - lo;
        for (int iteration = 0; iteration < 200; ++iteration) {
            // Σp and Σp/(1+w) at λ; entries with w ≤ −1 (outside the support) move behind the rest.
            const double factor = factorAt(lambda);
            double sum = 0.0;
            double slope = 0.0;
            Index inside = 0;
            for (Index i = 0; i < n; ++i) {
                const double w = wOf(v[i], factor);
                if (w > -1.0) {
                    const double p = std::exp(q * std::log1p(w) - lambda);
                    sum += p;
                    slope += p / (1.0 + w);
                    std::swap(v[i], v[inside]);
                    std::swap(index[i], index[inside]);
                    ++inside;
                }
            }
            const double logSum = std::log(sum);
            if (logSum >= 0.0) {
                lo = lambda;
                logSumLo = logSum;
                n = inside; // the support only shrinks as λ grows
            } else {
                hi = lambda;
                logSumHi = logSum;
            }
            if (logSum == 0.0)
                break;

            const double ratio = sum / slope; // in (0, 1]
            const double step = LowAlpha ? -std::log1p(ratio * std::expm1(-eps * logSum)) / eps
                                         : ratio * logSum;
            double next = lambda + step;
            if (std::abs(logSum) <= 1e-13) {
                // |λ − λ*| ≤ |ln Σp|: one last Newton step makes it negligible.
                if (next > lo && next < hi)
                    lambda = next;
                break;
            }
            const bool slow = !LowAlpha && std::abs(step) > 0.5 * std::abs(stepBefore);
            if (!(next > lo && next < hi) || slow)
                next = 0.5 * (lo + hi);
            if (!(next > lo && next < hi)) {
                // The bracket is down to adjacent doubles: take the better end.
                lambda = std::abs(logSumLo) <= std::abs(logSumHi) ? lo : hi;
                break;
            }
            stepBefore = lastStep;
            lastStep = next - lambda;
            lambda = next;
        }
    }

    const double factor = factorAt(lambda);
    double sum = 0.0;
    for (Index i = 0; i < n; ++i) {
        const double w = wOf(v[i], factor);
        if (w > -1.0) {
            const double p = std::exp(q * std::log1p(w) - lambda);
            out[index[i]] = p;
            sum += p;
        }
    }
    for (Index i = 0; i < n; ++i)
        out[index[i]] /= sum;

    const double threshold = -std::exp(-std::min(eps * lambda, 1e300));
    return threshold == 0.0 ? 0.0 : threshold;
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

void hardmaxRow(const double* scaled, const std::uint8_t* allowed, Index m, const RowScan& scan, double* out)
{
    const Index ties = scan.found ? scan.ties : scan.allowed;
    const double share = 1.0 / static_cast<double>(ties);
    for (Index j = 0; j < m; ++j) {
        const bool winner = allowed[j] && (!scan.found || scaled[j] == scan.max);
        out[j] = winner ? share : 0.0;
    }
}

/// Normalizes the row and returns the trace fields other than the support.
NormalizerTrace normalizeRowImpl(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed,
                                 Index m, double temperature, double* out, NormalizerScratch& scratch)
{
    NormalizerTrace trace;
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
        trace.threshold = sparsemaxRow(allowed, m, out, scratch);
        thresholdSlope = 1.0;
        break;
    case NormalizerType::Entmax: {
        const double alpha = spec.alpha;
        if (!(alpha > 1.0)) { // α = 1 (and, outside the contract, α < 1 or NaN)
            trace.expSum = softmaxRow(allowed, m, out);
        } else if (alpha == 2.0) {
            ensureScratch(scratch, m);
            trace.threshold = sparsemaxRow(allowed, m, out, scratch);
            thresholdSlope = 1.0;
        } else if (alpha == 1.5) {
            ensureScratch(scratch, m);
            trace.threshold = entmax15Row(allowed, m, out, scratch);
            thresholdSlope = 0.5;
        } else if (std::isinf(alpha)) { // outside the contract: the α → ∞ limit
            uniformOverZeros(allowed, m, out);
        } else {
            ensureScratch(scratch, m);
            trace.threshold = alpha < 2.0 ? entmaxSolve<true>(alpha, allowed, m, out, scratch)
                                          : entmaxSolve<false>(alpha, allowed, m, out, scratch);
            thresholdSlope = alpha - 1.0;
        }
        break;
    }
    case NormalizerType::Softmax:
    default:
        trace.expSum = softmaxRow(allowed, m, out);
        break;
    }
    if (thresholdSlope > 0.0 && scan.found) {
        // Report t for the unshifted logits S'/τ (spec section 4): (α−1)(z + max/τ) − t' = (α−1)z − t.
        trace.threshold = clampFinite(trace.threshold + clampFinite(thresholdSlope * (scan.max / temperature)));
    }
    return trace;
}

} // namespace

void normalizeRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed, Index m,
                  double temperature, double* out, NormalizerScratch& scratch)
{
    normalizeRowImpl(spec, scaled, allowed, m, temperature, out, scratch);
}

std::vector<double> normalize(const NormalizerSpec& spec, const std::vector<double>& scaled, double temperature,
                              const std::vector<std::uint8_t>& allowed)
{
    if (!allowed.empty() && allowed.size() != scaled.size())
        throw std::invalid_argument("normalize: the mask and the row differ in length");
    const std::vector<std::uint8_t> all = allowed.empty() ? std::vector<std::uint8_t>(scaled.size(), 1) : allowed;
    std::vector<double> out(scaled.size(), 0.0);
    NormalizerScratch scratch;
    normalizeRow(spec, scaled.data(), all.data(), static_cast<Index>(scaled.size()), temperature, out.data(),
                 scratch);
    return out;
}

NormalizerTrace traceRow(const NormalizerSpec& spec, const double* scaled, const std::uint8_t* allowed, Index m,
                         double temperature)
{
    std::vector<double> out(static_cast<std::size_t>(m), 0.0);
    NormalizerScratch scratch;
    NormalizerTrace trace = normalizeRowImpl(spec, scaled, allowed, m, temperature, out.data(), scratch);
    trace.support = static_cast<Index>(std::count_if(out.begin(), out.end(), [](double p) { return p > 0.0; }));
    return trace;
}

} // namespace qkv
