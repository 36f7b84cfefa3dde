// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: load then compute. parseSession, then qkv::computeAttention on sessions small enough
// to stay fast. Refusal with qkv::Error is fine (an invalid session, or a result that would overflow); an
// accepted result must follow docs/semantics.md (the pipeline and the normalizers): every matrix finite,
// masked weights exactly 0, empty rows all zero, and each row equal to a long-double reference of its
// normalizer (softmax, sparsemax, entmax with α ≤ 2, sigmoid) or, for hardmax, shared equally between
// exact maxima and between identical keys.

#include "AttentionEngine.h"
#include "FuzzChecks.h"
#include "SessionFile.h"

#include <algorithm>
#include <cfloat>
#include <vector>

using namespace qkv;
using namespace qkv::fuzz;

namespace {

/// Sessions above this much work (multiply-adds, roughly) are skipped, so a run stays fast.
constexpr double maxWork = 2e6;
/// Allowed distance from the long-double reference of a weight (docs/semantics.md promises 1e-12).
constexpr long double tolerance = 1e-9L;

double work(const Session& s)
{
    const double n = double(s.n()), m = double(s.m()), heads = s.headCount();
    const double dA = s.heads.empty() ? 0.0 : double(s.heads.front().W_a.cols());
    const double dOut = s.W_O ? double(s.W_O->cols()) : 0.0;
    const double dK = double(s.dK()), dV = double(s.dV()), dModel = double(s.dModel());
    return heads * (n * m * (dK + dV + dA) + (n + m) * dModel * (dK + dV)) + n * heads * dV * dOut;
}

std::string where(int head, const char* stage, Index row = -1, Index col = -1)
{
    std::string text = "heads[" + std::to_string(head) + "]." + stage;
    if (row >= 0)
        text += "[" + std::to_string(row) + "]";
    if (col >= 0)
        text += "[" + std::to_string(col) + "]";
    return text;
}

/// Softmax (α = 1) or α-entmax (1 < α ≤ 2) of z, whose maximum is 0, in long double: the entmax
/// library's bisection on the threshold, then renormalized as it does.
std::vector<long double> entmaxReference(const std::vector<long double>& z, long double alpha)
{
    std::vector<long double> p(z.size());
    long double sum = 0;
    if (alpha == 1) {
        for (std::size_t j = 0; j < z.size(); ++j)
            sum += p[j] = std::exp(z[j]);
    } else {
        const long double a1 = alpha - 1;
        const long double power = 1 / a1;
        auto mass = [&](long double t) {
            long double total = 0;
            for (std::size_t j = 0; j < z.size(); ++j)
                total += std::pow(std::max(a1 * z[j] - t, 0.0L), power);
            return total;
        };
        long double lo = -1, hi = -std::pow(1.0L / static_cast<long double>(z.size()), a1);
        for (int i = 0; i < 400 && lo < hi; ++i) {
            const long double mid = (lo + hi) / 2;
            if (mid <= lo || mid >= hi)
                break;
            (mass(mid) >= 1 ? lo : hi) = mid;
        }
        for (std::size_t j = 0; j < z.size(); ++j)
            sum += p[j] = std::pow(std::max(a1 * z[j] - lo, 0.0L), power);
    }
    for (long double& v : p)
        v /= sum;
    return p;
}

void checkRow(const Session& s, const HeadResult& h, int head, Index i, const std::vector<Index>& sameKey)
{
    const Index m = h.weights.cols();
    std::vector<Index> keys;
    for (Index j = 0; j < m; ++j) {
        if (h.allowed(i, j))
            keys.push_back(j);
        else if (h.weights(i, j) != 0.0)
            fail(where(head, "weights", i, j) + " is masked but not 0");
    }
    const bool listedEmpty = std::find(h.emptyRows.begin(), h.emptyRows.end(), i) != h.emptyRows.end();
    if (keys.empty() != listedEmpty)
        fail(where(head, "empty_rows") + " is wrong about row " + std::to_string(i));
    if (keys.empty())
        return;

    const long double tau = s.temperature;
    long double maxScore = h.scaled(i, keys.front());
    for (Index j : keys)
        maxScore = std::max<long double>(maxScore, h.scaled(i, j));
    std::vector<long double> z; // (S' − max S') / τ: never overflows in long double
    for (Index j : keys)
        z.push_back((static_cast<long double>(h.scaled(i, j)) - maxScore) / tau);

    std::vector<long double> expected;
    switch (s.normalizer.type) {
    case NormalizerType::Softmax:
        expected = entmaxReference(z, 1);
        break;
    case NormalizerType::Sparsemax:
        expected = entmaxReference(z, 2);
        break;
    case NormalizerType::Entmax:
        // Above α = 2 an entry near the threshold is ill-conditioned; just above 1 the power 1/(α − 1)
        // magnifies the reference's own rounding.
        if (s.normalizer.alpha == 1.0 || (s.normalizer.alpha >= 1.0 + 1e-6 && s.normalizer.alpha <= 2.0))
            expected = entmaxReference(z, s.normalizer.alpha);
        break;
    case NormalizerType::Sigmoid:
        for (Index j : keys)
            expected.push_back(1 / (1 + std::exp(-static_cast<long double>(h.scaled(i, j)) / tau)));
        break;
    case NormalizerType::Hardmax: {
        double share = 0.0, total = 0.0;
        for (std::size_t k = 0; k < keys.size(); ++k) {
            const double w = h.weights(i, keys[k]);
            total += w;
            if (w != 0.0 && share == 0.0)
                share = w;
            else if (w != 0.0 && w != share)
                fail(where(head, "weights", i, keys[k]) + ": hardmax maxima do not share equally");
            if (z[k] == 0 && w == 0.0)
                fail(where(head, "weights", i, keys[k]) + ": an exact maximum of the row got weight 0");
        }
        // In float32 a share of 1/k is rounded, so k of them may miss 1 by k units of float32's epsilon.
        const double allowed = s.precision == Precision::Float32 ? double(keys.size()) * FLT_EPSILON : 1e-12;
        if (std::abs(total - 1.0) > allowed)
            fail(where(head, "weights", i) + ": hardmax row does not sum to 1");
        // Identical keys (same row of Z, so the same scores in exact arithmetic) always share equally.
        for (Index j : keys)
            if (sameKey[std::size_t(j)] != j && h.allowed(i, sameKey[std::size_t(j)]) &&
                h.weights(i, j) != h.weights(i, sameKey[std::size_t(j)]))
                fail(where(head, "weights", i) + ": identical keys " +
                     std::to_string(sameKey[std::size_t(j)]) + " and " + std::to_string(j) +
                     " got different hardmax weights");
        return;
    }
    }
    if (expected.empty()) { // entmax without a reference: still a distribution
        long double total = 0;
        for (Index j : keys)
            total += h.weights(i, j);
        const long double allowed = s.precision == Precision::Float32
                                        ? static_cast<long double>(keys.size()) * FLT_EPSILON
                                        : tolerance;
        if (!(std::abs(total - 1) <= allowed))
            fail(where(head, "weights", i) + ": entmax row sums to " + number(double(total)));
    }
    for (std::size_t k = 0; k < expected.size(); ++k) {
        const double got = h.weights(i, keys[k]);
        // float32 weights are float32 values, and softmax works in float32 itself: z = (s − max)/τ rounded to
        // float32 is off by up to |z|·ε, which exp turns into a relative error of |z|·ε; plus a few units in
        // the last place, or float32's smallest subnormal step for the tiniest weights.
        const long double epsilon = FLT_EPSILON;
        const long double allowed = s.precision == Precision::Float32
                                        ? 2 * (std::abs(z[k]) + 8) * epsilon * expected[k] + 3e-45L
                                        : tolerance;
        if (!(std::abs(static_cast<long double>(got) - expected[k]) <= allowed))
            fail(where(head, "weights", i, keys[k]) + " is " + number(got) + ", expected " +
                 number(static_cast<double>(expected[k])) + " (" + toString(s.normalizer.type) + ")");
    }
}

/// For each key j, the first key whose row of Z (X in self-attention) is identical to j's.
std::vector<Index> firstIdenticalKey(const Matrix& keySide)
{
    std::vector<Index> order(std::size_t(keySide.rows()));
    for (std::size_t j = 0; j < order.size(); ++j)
        order[j] = Index(j);
    auto less = [&](Index a, Index b) {
        for (Index c = 0; c < keySide.cols(); ++c)
            if (keySide(a, c) != keySide(b, c))
                return keySide(a, c) < keySide(b, c);
        return a < b;
    };
    std::sort(order.begin(), order.end(), less);
    std::vector<Index> first(order.size());
    for (std::size_t k = 0; k < order.size(); ++k)
        first[std::size_t(order[k])] = k > 0 && keySide.row(order[k]) == keySide.row(order[k - 1])
                                           ? first[std::size_t(order[k - 1])]
                                           : order[k];
    return first;
}

void checkResult(const Session& s, const AttentionResult& r)
{
    // Identical keys as the projections see them (Z + PE when the encoding is added); under RoPE and ALiBi a
    // key's position changes its scores, so no two keys are the same.
    std::vector<Index> sameKey(std::size_t(s.m()));
    for (std::size_t j = 0; j < sameKey.size(); ++j)
        sameKey[j] = Index(j);
    if (s.positions.type == PositionType::None)
        sameKey = firstIdenticalKey(s.keySide());
    else if (s.positions.type == PositionType::Sinusoidal || s.positions.type == PositionType::Learned)
        sameKey = firstIdenticalKey(s.context ? r.positionedZ : r.positionedX);
    if (r.heads.size() != s.heads.size())
        fail("result has " + std::to_string(r.heads.size()) + " heads");
    for (int head = 0; head < s.headCount(); ++head) {
        const HeadResult& h = r.heads[std::size_t(head)];
        const std::pair<const char*, const Matrix*> stages[] = {
            {"Q", &h.Q},           {"K", &h.K},           {"V", &h.V},
            {"scores", &h.scores}, {"scaled", &h.scaled}, {"weights", &h.weights},
            {"output", &h.output}};
        for (const auto& [name, matrix] : stages)
            if (!allFinite(*matrix))
                fail(where(head, name) + " is not finite");
        if (h.weights.rows() != s.n() || h.weights.cols() != s.m() || h.allowed.rows() != s.n() ||
            h.allowed.cols() != s.m())
            fail(where(head, "weights") + " has the wrong shape");
        if ((h.weights.array() < 0.0).any() || (h.weights.array() > 1.0).any())
            fail(where(head, "weights") + " has an entry outside [0, 1]");
        for (Index i = 0; i < s.n(); ++i)
            checkRow(s, h, head, i, sameKey);
    }
    if (!allFinite(r.concat))
        fail("concat is not finite");
    if (!allFinite(r.output))
        fail("output is not finite");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Session session;
    try {
        session = parseSession(text(data, size));
    } catch (const Error&) {
        return 0;
    }
    if (work(session) > maxWork)
        return 0;
    AttentionResult result;
    try {
        result = computeAttention(session);
    } catch (const Error&) {
        return 0;
    }
    checkResult(session, result);
    return 0;
}
