#include "RowKernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// GCC compiles each QKV_ROW_KERNEL function three times and picks one when the program starts. Clang's
// target_clones and the sanitizers' run-time do not mix well with it, so those builds get one plain version.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define QKV_ROW_KERNEL __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define QKV_ROW_KERNEL
#endif
// Helpers (and the lambdas given to them) must be inlined into each version to be compiled for its
// instruction set: a function of its own is compiled for plain x86-64 only.
#define QKV_INLINE __attribute__((always_inline)) inline
#define QKV_INLINE_LAMBDA __attribute__((always_inline))

namespace qkv::rows {

namespace {

constexpr int lanes = 8; // eight doubles: one AVX-512 vector, two AVX2 ones

constexpr double infinity = std::numeric_limits<double>::infinity();

template <typename Body> QKV_INLINE void forEachLane(Index m, Body body)
{
    Index j = 0;
    for (; j + lanes <= m; j += lanes)
        for (int l = 0; l < lanes; ++l)
            body(j + l, l);
    for (; j < m; ++j)
        body(j, 0);
}

QKV_INLINE double total(const double (&lane)[lanes])
{
    double sum = 0.0;
    for (double x : lane)
        sum += x;
    return sum;
}

/// exp(z) for z ≤ 0: z = k·ln 2 + r with |r| ≤ ln2/2 (Cody–Waite, so r is exact), e^r by its Taylor series
/// to r¹³ (truncation below 5e-18), 2^k built in the exponent bits. Below −700, 2^(k+60) is built and the
/// product scaled by 2^−60, so that subnormal results come out right. No branches: it vectorises.
QKV_INLINE double expNonPositiveInline(double z)
{
    constexpr double log2e = 1.4426950408889634;
    constexpr double shifter = 6755399441055744.0;   // 1.5·2^52: adding it rounds to an integer
    constexpr double ln2High = 0x1.62e42fee00000p-1; // trailing zeros: k·ln2High is exact for |k| < 2^11
    constexpr double ln2Low = 0x1.a39ef35793c76p-33;
    z = z > -746.0 ? z : -746.0;
    const double t = z * log2e + shifter;
    const double k = t - shifter;
    const double r = (z - k * ln2High) - k * ln2Low;
    double p = 1.0 / 6227020800.0; // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const bool subnormal = z < -700.0;
    std::uint64_t bits;
    std::memcpy(&bits, &t, sizeof bits); // low bits: k, offset by the shifter
    bits = (bits + (subnormal ? 1023 + 60 : 1023)) << 52;
    double twoToK;
    std::memcpy(&twoToK, &bits, sizeof twoToK);
    const double e = p * twoToK * (subnormal ? 0x1p-60 : 1.0);
    return z > -745.5 ? e : 0.0;
}

} // namespace

QKV_ROW_KERNEL Range allowedRange(const double* x, const std::uint8_t* allowed, Index m)
{
    double low[lanes], high[lanes];
    for (int l = 0; l < lanes; ++l) {
        low[l] = infinity;
        high[l] = -infinity;
    }
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        const double v = x[j];
        const bool a = allowed[j] != 0;
        low[l] = a && v < low[l] ? v : low[l];
        high[l] = a && v > high[l] ? v : high[l];
    });
    Range range{infinity, -infinity};
    for (int l = 0; l < lanes; ++l) {
        range.min = low[l] < range.min ? low[l] : range.min;
        range.max = high[l] > range.max ? high[l] : range.max;
    }
    return range;
}

/// z_j = max((x_j − max)/τ, −746) for allowed j (also for x_j = −∞), 0 for masked j.
QKV_INLINE double clampedLogit(double x, bool allowed, double max, double temperature)
{
    const double z = (x - max) / temperature;
    return allowed ? (z > -746.0 ? z : -746.0) : 0.0;
}

QKV_ROW_KERNEL ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, double max,
                                  double temperature, double* e, Index m)
{
    // Two passes: a plain loop vectorises the exp; the sums keep their eight lanes. Everything is computed
    // for every entry and then selected: a computation under a condition does not vectorise without masks.
    for (Index j = 0; j < m; ++j) {
        const bool a = allowed[j] != 0;
        const double ez = expNonPositiveInline(clampedLogit(x[j], a, max, temperature));
        e[j] = a ? ez : 0.0;
    }
    double sum[lanes] = {}, weighted[lanes] = {}, check[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        const bool a = allowed[j] != 0;
        check[l] += a ? (x[j] - max) * 0.0 : 0.0; // NaN when a score is NaN or infinite
        sum[l] += e[j];
        weighted[l] += e[j] * clampedLogit(x[j], a, max, temperature);
    });
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {total(check) == 0.0 ? total(sum) : nan, total(weighted)};
}

QKV_ROW_KERNEL void multiply(double* x, double factor, Index m)
{
    for (Index j = 0; j < m; ++j)
        x[j] *= factor;
}

QKV_ROW_KERNEL bool divide(const double* scores, double divisor, double* scaled, Index m)
{
    double check[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        scaled[j] = scores[j] / divisor;
        check[l] += scaled[j] * 0.0; // inf·0 and NaN·0 are NaN
    });
    return total(check) == 0.0;
}

QKV_ROW_KERNEL bool divide(const float* scores, float divisor, double* scoresOut, double* scaled, Index m)
{
    double check[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        scoresOut[j] = static_cast<double>(scores[j]);
        scaled[j] = static_cast<double>(scores[j] / divisor);
        check[l] += scaled[j] * 0.0;
    });
    return total(check) == 0.0;
}

QKV_ROW_KERNEL bool allFinite(const double* x, Index m)
{
    double check[lanes] = {};
    forEachLane(m,
                [&](Index j, int l) QKV_INLINE_LAMBDA { check[l] += x[j] * 0.0; }); // inf·0 and NaN·0 are NaN
    return total(check) == 0.0;
}

template <bool roundToFloat> QKV_INLINE WeightSums sumWeights(double* w, float* rounded, Index m)
{
    double sum[lanes] = {}, count[lanes] = {}, high[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        double v = w[j];
        if constexpr (roundToFloat) {
            rounded[j] = static_cast<float>(v);
            v = static_cast<double>(rounded[j]);
            w[j] = v;
        }
        sum[l] += v;
        count[l] += v > 0.0 ? 1.0 : 0.0;
        high[l] = v > high[l] ? v : high[l];
    });
    WeightSums sums{total(sum), static_cast<Index>(total(count)), 0.0};
    for (double h : high)
        sums.max = h > sums.max ? h : sums.max;
    return sums;
}

QKV_ROW_KERNEL WeightSums weightSums(const double* w, Index m)
{
    return sumWeights<false>(const_cast<double*>(w), nullptr, m); // reads only
}

QKV_ROW_KERNEL WeightSums roundToFloatAndSum(double* w, float* rounded, Index m)
{
    return sumWeights<true>(w, rounded, m);
}

double expOfNonPositive(double z)
{
    return expNonPositiveInline(z);
}

} // namespace qkv::rows
