// SPDX-License-Identifier: GPL-3.0-or-later
#include "SparseNormalizers.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

// The sparse normalizers' algorithms, on the candidates Normalizers.cpp describes (the allowed z_j with
// (α−1) z_j > −1):
//
// * sparsemax: Michelot's filtering iteration on the candidates: t = (Σ_W z − 1)/|W|, drop the z ≤ t, repeat.
//   Every t is a lower bound of the exact threshold; when nothing is dropped W is exactly the support and t
//   is the exact threshold of the sort-based algorithm. After 40 passes (adversarial input) the remaining
//   candidates are sorted instead.
// * 1.5-entmax: the entmax library's exact sort-based algorithm on the candidates z/2 > −1. With more than 64
//   candidates, Newton's method on the convex u(t) = ‖[z/2 − t]₊‖₂ first prunes them from below, and the
//   closed form τ = mean − sqrt((1 − ss)/k) of the sorted algorithm is taken on the survivors if they are
//   provably the support (else they are sorted).
// * other α, 1 < α < 2 (q = 1/(α−1) > 1): with ε = α − 1 and y = εz, the threshold is written
//   t = −e^{−ελ}, λ ∈ [0, ln k], so that p_j = e^{−λ} (1 + w_j)^q with w_j = y_j e^{ελ}. This keeps full
//   relative precision when α → 1 (where t is within 1e-12 of −1) and becomes logsumexp at α = 1. λ comes
//   from Halley's (or Newton's) method on u(t) = ‖[y − t]₊‖_q − 1, which is convex and decreasing, so the
//   iterates rise to the root and entries leaving the support are dropped for good; the last step moves the
//   stored p with a second-order expansion instead of another pass.
// * other α > 2 (q < 1): p_j = d_j^q with d_j = y_j − t has an unbounded derivative as d_j → 0, so y_j
//   (via fma) and t are double-doubles and d_j keeps its relative precision; t comes from Newton's method on
//   ln Σp against ln(−t), falling back to false position and bisection in ln(−t). When t* could underflow
//   (ε ln k > 600) the λ form above is used instead, with w_j = −exp(ln(−y_j) + ελ).
// * Finally p is renormalised by its sum (as the entmax library's ensure_sum_one).

namespace qkv::sparse {

namespace {

/// keep ? x : +0.0 without a branch (for conditions a branch predictor cannot guess).
inline double selectIf(bool keep, double x)
{
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits &= std::uint64_t{0} - static_cast<std::uint64_t>(keep);
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

/// Copies the allowed x_j = scale·out[j] > −1 to v (without branching on them) and returns how many.
Index collectCandidates(const std::uint8_t* allowed, Index m, const double* out, double scale, double* v)
{
    Index n = 0;
    for (Index j = 0; j < m; ++j) {
        const double x = scale * out[j];
        v[n] = x;
        n += (allowed[j] != 0) & (x > -1.0);
    }
    return n;
}

/// Exact threshold of the projection onto the simplex of v[0..n) (all ≤ 0, one = 0). Reorders and
/// overwrites v.
double simplexThreshold(double* v, Index n)
{
    double sum = 0.0;
    for (Index i = 0; i < n; ++i)
        sum += v[i];
    constexpr int maxFilterPasses = 40;
    for (int pass = 0; pass < maxFilterPasses; ++pass) {
        const double t = (sum - 1.0) / static_cast<double>(n);
        Index kept = 0;
        double keptSum = 0.0;
        for (Index i = 0; i < n; ++i) {
            const double x = v[i];
            const bool keep = x > t;
            v[kept] = x;
            kept += keep;
            keptSum += selectIf(keep, x);
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

} // namespace

/// Sparsemax over the logits in out; returns the threshold t (p = [z − t]₊).
double sparsemaxRow(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
{
    double* v = scratch.values.data();
    const double t = simplexThreshold(v, collectCandidates(allowed, m, out, 1.0, v));
    for (Index j = 0; j < m; ++j) {
        const double d = out[j] - t;
        out[j] = selectIf(allowed[j] && d > 0.0, d);
    }
    return t;
}

namespace {

/// The threshold τ of 1.5-entmax for candidates v[0..n) that already are sorted in descending order: the
/// entmax library's exact algorithm, τ_k = mean_k − sqrt(max((1 − ss_k)/k, 0)) with
/// ss_k = k·(mean_sq_k − mean_k²) = Σ_{i≤k} (x_i − mean_k)² (updated as Welford does, without cancellation),
/// support = #{k : τ_k ≤ x_k}, τ* = τ_support.
double entmax15SortedThreshold(const double* v, Index n)
{
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
    return tauAt(std::max<Index>(support, 1), nullptr);
}

/// 1.5-entmax without sorting, for many candidates: Newton's method on the convex, decreasing
/// u(t) = ‖[x − t]₊‖₂ from t = −1 rises monotonically towards τ*, so every x ≤ t can be dropped for good.
/// When it has converged, the survivors W give τ_W = mean_W − sqrt((1 − ss_W)/|W|), the same closed form the
/// sorted algorithm uses; if all of W is ≥ τ_W and everything dropped is ≤ τ_W, then Σ[x − τ_W]₊² = 1, so
/// τ_W is exact and true is returned. Otherwise (ties within rounding of τ*) v[0..n) still holds every
/// candidate of the support and false is returned.
bool entmax15UnsortedThreshold(double* v, Index& n, double& tau)
{
    double t = -1.0;
    double dropped = -1.0; // every dropped x is ≤ this
    for (int pass = 0; pass < 64; ++pass) {
        double sum = 0.0;
        double sumSquares = 0.0;
        Index kept = 0;
        for (Index i = 0; i < n; ++i) {
            const double x = v[i];
            const bool keep = x > t;
            const double d = selectIf(keep, x - t);
            v[kept] = x;
            kept += keep;
            sum += d;
            sumSquares += d * d;
        }
        if (kept != n)
            dropped = t;
        n = kept;
        const double u = std::sqrt(sumSquares);
        const double slope = sum;
        if (!(u > 1.0 + 1e-12) || !(slope > 0.0))
            break;
        t += (u - 1.0) * u / slope;
    }

    // mean and ss = Σ(x − mean)² in two passes (no cancellation).
    double total = 0.0;
    double smallest = 0.0;
    for (Index i = 0; i < n; ++i) {
        total += v[i];
        smallest = std::min(smallest, v[i]);
    }
    const double mean = total / static_cast<double>(n);
    double ss = 0.0;
    for (Index i = 0; i < n; ++i)
        ss += (v[i] - mean) * (v[i] - mean);
    const double delta = (1.0 - ss) / static_cast<double>(n);
    if (!(delta >= 0.0))
        return false;
    tau = mean - std::sqrt(delta);
    return tau <= smallest && dropped <= tau;
}

} // namespace

/// 1.5-entmax over the logits in out; returns τ* (p = [z/2 − τ*]₊²). Only candidates z/2 > −1 can be in the
/// support (τ* ≥ −1); a few are sorted, many are first pruned without sorting.
double entmax15Row(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
{
    double* v = scratch.values.data();
    Index n = collectCandidates(allowed, m, out, 0.5, v);
    double tau = 0.0;
    if (n <= 64 || !entmax15UnsortedThreshold(v, n, tau)) {
        std::sort(v, v + n, std::greater<double>());
        tau = entmax15SortedThreshold(v, n);
    }
    for (Index j = 0; j < m; ++j) {
        const double d = 0.5 * out[j] - tau;
        out[j] = selectIf(allowed[j] && d > 0.0, d * d);
    }
    return tau;
}

namespace {

/// The support's weights divided by their sum (as the entmax library's ensure_sum_one).
void renormalize(double* out, const Index* index, Index inside)
{
    double sum = 0.0;
    for (Index i = 0; i < inside; ++i)
        sum += out[index[i]];
    for (Index i = 0; i < inside; ++i)
        out[index[i]] /= sum;
}

/// Σp, Σpg, Σph and Σph² at one λ with h = g − 1 = −wg (small when α → 1, where g − 1 itself would lose its
/// digits), and how many entries are inside the support.
struct LambdaEvaluation {
    double sum = 0.0;
    double sumG = 0.0;
    double sumH = 0.0;
    double sumH2 = 0.0;
    Index inside = 0;
};

/// The working set of the λ form (see the file comment) and what is computed on it. LowAlpha: the values
/// are y = εz and w = y·e^{ελ}; otherwise they are ln(−y) and w = −exp(ln(−y) + ελ).
template <bool LowAlpha> class LambdaForm {
public:
    /// Collects the candidates y > −1 of the row and zeroes `out`.
    LambdaForm(double alpha, const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
        : eps(alpha - 1.0), q(1.0 / eps), m_out(out), m_v(scratch.values.data()), m_g(m_v + m),
          m_index(scratch.indices.data())
    {
        for (Index j = 0; j < m; ++j) {
            const double y = eps * out[j];
            m_v[m_candidates] = y;
            m_index[m_candidates] = j;
            m_candidates += (allowed[j] != 0) & (y > -1.0);
            out[j] = 0.0;
        }
        if (!LowAlpha) {
            for (Index i = 0; i < m_candidates; ++i)
                m_v[i] = std::log(-m_v[i]);
        }
    }

    Index candidates() const { return m_candidates; }
    const Index* index() const { return m_index; }

    /// The only candidate gets all the weight.
    LambdaEvaluation single() const
    {
        m_out[m_index[0]] = 1.0;
        LambdaEvaluation e;
        e.sum = 1.0;
        e.inside = 1;
        return e;
    }

    /// Writes p_j(λ) to out (0 outside the support) for the working set [0, count), moves the entries inside
    /// the support to the front with g_j = 1/(1 + w_j) kept, and returns their sums.
    LambdaEvaluation evaluate(double lambda, Index count)
    {
        const double factor = factorAt(lambda);
        LambdaEvaluation e;
        for (Index i = 0; i < count; ++i) {
            const double w = wOf(m_v[i], factor);
            if (w > -1.0) {
                // ln(1 + w) as accurately as log1p, at the cost of log: 1 + w rounds to a, the rounding error
                // w − (a − 1) is exact (Fast2Sum, |w| ≤ 1), and ln(1 + w) = ln a + ln(1 + err/a) ≈ ln a +
                // err/a.
                const double a = 1.0 + w;
                const double gi = 1.0 / a;
                const double logOnePlusW = std::log(a) + (w - (a - 1.0)) * gi;
                const double p = std::exp(q * logOnePlusW - lambda);
                if (i != e.inside) {
                    std::swap(m_v[i], m_v[e.inside]);
                    std::swap(m_index[i], m_index[e.inside]);
                }
                m_out[m_index[e.inside]] = p;
                m_g[e.inside] = gi;
                const double h = -w * gi;
                e.sum += p;
                e.sumG += p * gi;
                e.sumH += p * h;
                e.sumH2 += p * h * h;
                ++e.inside;
            } else {
                m_out[m_index[i]] = 0.0;
            }
        }
        return e;
    }

    /// The next step of λ from an evaluation whose ln Σp is `logSum`.
    double step(const LambdaEvaluation& last, double logSum) const
    {
        const double ratio = last.sum / last.sumG; // in (0, 1]
        if (!LowAlpha)
            return ratio * logSum; // Newton on ln Σp
        // Newton's and Halley's steps on u(t) = (Σ [y − t]₊^q)^{1/q} − 1, as relative changes of c = −t:
        // Δc/c = −Δt/c. With Σ d^{q−1} = Σpg/c and Σ d^{q−2} = Σpg²/c², the Halley factor is
        // 1/(1 − (Δt_N/c)(q − 1)·spread/2) with spread = Σpg²/Σpg − Σpg/Σp = (ΣpΣph² − (Σph)²)/(ΣpΣpg);
        // it is ≥ 1 (Cauchy–Schwarz) and corrects Newton's undershoot on the convex u. A step that would
        // leave the bracket is handled by the caller.
        const double newton = -ratio * std::expm1(-eps * logSum); // Δt_N/c
        const double spread =
            std::max((last.sum * last.sumH2 - last.sumH * last.sumH) / (last.sum * last.sumG), 0.0);
        const double damping = 1.0 - 0.5 * newton * (q - 1.0) * spread;
        const double halley = newton / damping;
        const double relative = damping > 0.25 && halley < 0.5 ? halley : newton;
        return -std::log1p(-relative) / eps;
    }

    /// Moves the stored p of the `inside` entries of the support from λ to λ + step (λ* within ~step³)
    /// instead of another pass. ln p_j(λ) has the derivatives −g_j and ε g_j (1 − g_j), so a second-order
    /// expansion of its change a_j is exact to ~|a_j|³ when |a_j| ≤ 1e-5; the few entries near the threshold
    /// (large g_j) are recomputed.
    void expandTo(double lambda, double step, Index inside)
    {
        const double next = lambda + step;
        const double factor = factorAt(next);
        for (Index i = 0; i < inside; ++i) {
            const double a = step * (-m_g[i] + 0.5 * step * eps * m_g[i] * (1.0 - m_g[i]));
            if (std::abs(a) <= 1e-5) {
                m_out[m_index[i]] *= 1.0 + a * (1.0 + 0.5 * a);
            } else {
                const double w = wOf(m_v[i], factor);
                m_out[m_index[i]] = w > -1.0 ? std::exp(q * std::log1p(w) - next) : 0.0;
            }
        }
    }

    const double eps;
    const double q;

private:
    /// The per-λ factor: e^{ελ} (≤ k) for LowAlpha, else ελ capped so that ln(−y) + ελ stays finite.
    double factorAt(double lambda) const
    {
        return LowAlpha ? std::exp(eps * lambda) : std::min(eps * lambda, 1e300);
    }
    static double wOf(double value, double factor)
    {
        return LowAlpha ? value * factor : -std::exp(value + factor);
    }

    double* m_out;
    double* m_v;    // candidate values, working set first
    double* m_g;    // 1/(1 + w) of the entries inside the support at the last λ
    Index* m_index; // their positions in the row
    Index m_candidates = 0;
};

} // namespace

/// α-entmax in the λ form (see the file comment). LowAlpha: 1 < α < 2; otherwise (astronomically large α)
/// Newton's step is on ln Σp and rtsafe's fallback to bisection guards it. Returns the threshold
/// t = −e^{−ελ} of the shifted logits.
template <bool LowAlpha>
double entmaxSolve(double alpha, const std::uint8_t* allowed, Index m, double* out,
                   NormalizerScratch& scratch)
{
    LambdaForm<LowAlpha> form(alpha, allowed, m, out, scratch);
    const double eps = form.eps;
    Index n = form.candidates();
    double lambda = 0.0;
    LambdaEvaluation last;
    bool finished = false; // out already holds p at the final λ (before renormalisation)
    if (n == 1) {
        last = form.single();
        finished = true;
    }
    double lo = 0.0;                              // Σp ≥ 1 here (t = −1)
    double hi = std::log(static_cast<double>(n)); // Σp ≤ 1 here (t = −n^{−ε})
    double logSumLo = std::numeric_limits<double>::infinity();
    double logSumHi = -std::numeric_limits<double>::infinity();
    double stepBefore = hi - lo;
    double lastStep = hi - lo;
    for (int iteration = 0; iteration < 200 && !finished; ++iteration) {
        last = form.evaluate(lambda, n);
        const double logSum = std::log(last.sum);
        if (logSum >= 0.0) {
            lo = lambda;
            logSumLo = logSum;
            n = last.inside; // the support only shrinks as λ grows
        } else {
            hi = lambda;
            logSumHi = logSum;
        }
        if (logSum == 0.0) {
            finished = true;
            break;
        }
        const double step = form.step(last, logSum);
        if (LowAlpha && std::abs(step) <= 1e-6 && (step >= 0.0 || (last.inside == n && lambda + step > lo))) {
            // Nothing enters the support: as λ grows entries only leave, and when it shrinks, every entry
            // left in the working set is inside already and the others were outside at lo.
            form.expandTo(lambda, step, last.inside);
            lambda += step;
            finished = true;
            break;
        }
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
    if (!finished)
        last = form.evaluate(lambda, n);
    renormalize(out, form.index(), last.inside);

    const double threshold = -std::exp(-std::min(eps * lambda, 1e300));
    return threshold == 0.0 ? 0.0 : threshold;
}

namespace {

/// A double-double number hi + lo (|lo| ≤ ulp(hi)/2), enough to hold y = εz and t exactly where it matters.
struct DoubleDouble {
    double hi = 0.0;
    double lo = 0.0;
};

inline DoubleDouble twoSum(double a, double b)
{
    const double s = a + b;
    const double bb = s - a;
    return {s, (a - (s - bb)) + (b - bb)};
}

inline DoubleDouble add(DoubleDouble x, DoubleDouble y)
{
    const DoubleDouble s = twoSum(x.hi, y.hi);
    const double e = s.lo + (x.lo + y.lo);
    const double hi = s.hi + e;
    return {hi, e - (hi - s.hi)};
}

inline bool less(DoubleDouble a, DoubleDouble b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

/// The working set of the direct form for α > 2: y_j = εz_j as double-doubles, and what is computed at a t.
class DirectForm {
public:
    /// Collects the candidates y > −1 of the row and zeroes `out`.
    DirectForm(double alpha, const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch)
        : eps(alpha - 1.0), q(1.0 / eps), m_out(out), m_yHi(scratch.values.data()), m_yLo(m_yHi + m),
          m_index(scratch.indices.data())
    {
        for (Index j = 0; j < m; ++j) {
            const double z = out[j];
            const double hi = eps * z;
            m_yHi[m_candidates] = hi;
            m_yLo[m_candidates] = std::fma(eps, z, -hi);
            m_index[m_candidates] = j;
            m_candidates += (allowed[j] != 0) & (hi > -1.0);
            out[j] = 0.0;
        }
    }

    Index candidates() const { return m_candidates; }
    const Index* index() const { return m_index; }

    /// The only candidate gets all the weight.
    void single() const { m_out[m_index[0]] = 1.0; }

    /// Writes p_j(t) to out for the working set [0, count), moves the support to the front and returns its
    /// size; keeps Σp and Σp/d (−dΣp/dt = qΣp/d).
    Index evaluate(DoubleDouble t, Index count)
    {
        sum = 0.0;
        slope = 0.0;
        Index inside = 0;
        for (Index i = 0; i < count; ++i) {
            const double d = (m_yHi[i] - t.hi) + (m_yLo[i] - t.lo);
            if (d > 0.0) {
                const double p = std::exp(q * std::log(d));
                sum += p;
                slope += p / d;
                if (i != inside) {
                    std::swap(m_yHi[i], m_yHi[inside]);
                    std::swap(m_yLo[i], m_yLo[inside]);
                    std::swap(m_index[i], m_index[inside]);
                }
                m_out[m_index[inside]] = p;
                ++inside;
            } else {
                m_out[m_index[i]] = 0.0;
            }
        }
        return inside;
    }

    const double eps; // exact for α < 2^53
    const double q;
    double sum = 0.0;
    double slope = 0.0;

private:
    double* m_out;
    double* m_yHi;
    double* m_yLo;
    Index* m_index;
    Index m_candidates = 0;
};

/// The bracket [lo, hi] of the direct form's t with ln Σp at each end (±∞ where not evaluated yet).
struct Bracket {
    DoubleDouble lo;
    DoubleDouble hi;
    double logSumLo = std::numeric_limits<double>::infinity();
    double logSumHi = -std::numeric_limits<double>::infinity();

    bool contains(DoubleDouble x) const { return less(lo, x) && less(x, hi); }
};

/// Where to go instead of a slow Newton step or one leaving the bracket: false position in s = ln(−t) when
/// both ends have been evaluated, alternating with bisection in s (which keeps the bracket shrinking), and
/// bisection in t when that lands outside.
DoubleDouble fallbackPoint(const Bracket& bracket, bool& falsePositionBefore)
{
    const bool bothEnds = std::isfinite(bracket.logSumLo) && std::isfinite(bracket.logSumHi);
    double fraction = 0.5;
    if (bothEnds && !falsePositionBefore)
        fraction = bracket.logSumLo / (bracket.logSumLo - bracket.logSumHi);
    falsePositionBefore = bothEnds && !falsePositionBefore;
    const double sLo = std::log(-bracket.lo.hi);
    const double sHi = std::log(-bracket.hi.hi);
    DoubleDouble next{-std::exp(sLo + fraction * (sHi - sLo)), 0.0};
    if (!bracket.contains(next)) {
        const DoubleDouble sumEnds = add(bracket.lo, bracket.hi);
        next = {0.5 * sumEnds.hi, 0.5 * sumEnds.lo};
    }
    return next;
}

} // namespace

/// α-entmax for α > 2 (q = 1/ε < 1), solved directly for t. There p_j = d_j^q with d_j = y_j − t has an
/// unbounded derivative where d_j → 0, so an entry near the threshold is only right if d_j is: y_j = εz_j is
/// kept exactly as a double-double (fma), t is a double-double, and d_j = (y_j.hi − t.hi) + (y_j.lo − t.lo)
/// is then accurate to a few ulps of d_j itself. The root of ln Σ d^q is found by Newton's method with
/// rtsafe's fallback to bisection inside the bracket [−1, 0]; left ends of the bracket drop entries for good.
/// Needs t* ≥ −k^{−ε} to stay a normal double, i.e. ε·ln k ≤ 600 (see entmaxSolve<false> otherwise).
double entmaxSolveHighAlpha(double alpha, const std::uint8_t* allowed, Index m, double* out,
                            NormalizerScratch& scratch)
{
    DirectForm form(alpha, allowed, m, out, scratch);
    Index n = form.candidates();
    if (n == 1) {
        form.single();
        return -1.0;
    }

    // The root lies in [−1, −n^{−ε}] (every p ≤ 1/n at the right end), often orders of magnitude from −1, so
    // both Newton's method and bisection work on s = ln(−t): ln Σp is linear in s when the support is ties.
    DoubleDouble t{-1.0, 0.0};
    Bracket bracket;
    bracket.lo = {-1.0, 0.0};                                                    // Σp ≥ 1
    bracket.hi = {-std::exp(-form.eps * std::log(static_cast<double>(n))), 0.0}; // Σp ≤ 1
    double stepBefore = 1.0;
    double lastStep = 1.0;
    Index inside = 0;
    bool evaluated = false; // out holds p at t
    bool falsePositionBefore = false;
    for (int iteration = 0; iteration < 400; ++iteration) {
        inside = form.evaluate(t, n);
        evaluated = true;
        const double logSum = std::log(form.sum);
        if (logSum >= 0.0) {
            bracket.lo = t;
            bracket.logSumLo = logSum;
            n = inside;
        } else {
            bracket.hi = t;
            bracket.logSumHi = logSum;
        }
        if (logSum == 0.0)
            break;
        // d ln Σp / ds = q (−t) Σ(p/d) / Σp.
        const double ds = -logSum * form.sum / (form.q * -t.hi * form.slope);
        const double step = t.hi * std::expm1(ds);
        DoubleDouble next = add(t, {step, 0.0});
        if (std::abs(logSum) <= std::max(1e-13, 8.0 * DBL_EPSILON * static_cast<double>(n))) {
            // One last Newton step makes the error negligible.
            if (bracket.contains(next)) {
                t = next;
                evaluated = false;
            }
            break;
        }
        const bool slow = std::abs(step) > 0.5 * std::abs(stepBefore);
        if (slow || !bracket.contains(next))
            next = fallbackPoint(bracket, falsePositionBefore);
        if (!bracket.contains(next)) {
            // The bracket is down to adjacent double-doubles: take the better end.
            t = std::abs(bracket.logSumLo) <= std::abs(bracket.logSumHi) ? bracket.lo : bracket.hi;
            evaluated = false;
            break;
        }
        stepBefore = lastStep;
        lastStep = (next.hi - t.hi) + (next.lo - t.lo);
        t = next;
        evaluated = false;
    }
    if (!evaluated)
        inside = form.evaluate(t, n);
    renormalize(out, form.index(), inside);
    return t.hi;
}

template double entmaxSolve<true>(double, const std::uint8_t*, Index, double*, NormalizerScratch&);
template double entmaxSolve<false>(double, const std::uint8_t*, Index, double*, NormalizerScratch&);

} // namespace qkv::sparse
