#include "RowKernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// GCC compiles each QKV_ROW_KERNEL function three times and picks one when the program starts: plain x86-64,
// x86-64-v3 (AVX2) and x86-64-v4 (AVX-512 F, DQ, BW, VL). A bare "avx512f" version ran the float64 exp at
// 2 ns an entry: without AVX512DQ, GCC 12 turns each select on a vector comparison into eight scalar
// compares and branches. Clang's target_clones and the sanitizers' run-time do not mix well with it, so
// those builds get one plain version. No version contracts a·b + c into one rounding (-ffp-contract=off,
// core/CMakeLists.txt), so all three give the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define QKV_ROW_KERNEL __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
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

// GCC's vector types, for loops its vectoriser leaves scalar (a select feeding a sum, a division in a
// second pass): eight doubles, one AVX-512 vector, two AVX2 ones, four SSE ones; the same operations in the
// same order in every version.
#if defined(__GNUC__)                    // GCC and Clang
#pragma GCC diagnostic ignored "-Wpsabi" // vectors passed between always-inlined helpers: no ABI is involved
#endif
typedef double Doubles __attribute__((vector_size(64)));
typedef std::int64_t Longs __attribute__((vector_size(64)));
constexpr int doubleWidth = 8;
// Eight floats: the float32 kernels work on as many floats as a Doubles holds doubles, so that their sums,
// kept in double, have the same eight lanes in the same order as the float64 kernels'.
typedef float Floats __attribute__((vector_size(32)));
typedef std::int32_t Ints __attribute__((vector_size(32)));
typedef std::uint32_t Unsigneds __attribute__((vector_size(32)));
// Sixteen floats, for the float32 range, which keeps no sums in double.
typedef float SixteenFloats __attribute__((vector_size(64)));
typedef std::int32_t SixteenInts __attribute__((vector_size(64)));

QKV_INLINE Doubles widen(Floats x)
{
    return __builtin_convertvector(x, Doubles);
}

QKV_INLINE Longs widen(Ints x)
{
    return __builtin_convertvector(x, Longs);
}

template <typename Vector> QKV_INLINE Vector load(const void* from)
{
    Vector v;
    std::memcpy(&v, from, sizeof v);
    return v;
}

template <typename Vector> QKV_INLINE void store(void* to, const Vector& v)
{
    std::memcpy(to, &v, sizeof v);
}

QKV_INLINE double total(Doubles lane)
{
    double sum = 0.0;
    for (int l = 0; l < doubleWidth; ++l)
        sum += lane[l];
    return sum;
}

QKV_INLINE Doubles splat(double x)
{
    Doubles v;
    for (int l = 0; l < doubleWidth; ++l)
        v[l] = x;
    return v;
}

QKV_INLINE Longs splat(std::int64_t x)
{
    Longs v;
    for (int l = 0; l < doubleWidth; ++l)
        v[l] = x;
    return v;
}

/// v where `keep` is true (all ones), else +0: the same as `keep ? v : 0`, written as a bitwise and because
/// GCC 12 compiles some such selects lane by lane, with a scalar compare and branch for each of the eight.
QKV_INLINE Doubles keepWhere(Longs keep, Doubles v)
{
    Longs bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits &= keep;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

/// Mask entries [j, j + lanes) as a vector of `lanes` integers, lane l holding byte l in its place (so
/// nonzero exactly when the entry is): one broadcast and an and. GCC 12 widens bytes to longs one lane at a
/// time.
QKV_INLINE void loadMask(const std::uint8_t* allowed, Longs& mask)
{
    const Longs bytes = {0xFF,        0xFF << 8,   0xFFL << 16, 0xFFL << 24,
                         0xFFL << 32, 0xFFL << 40, 0xFFL << 48, std::int64_t(0xFFUL << 56)};
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "byte l of the word must be mask entry l");
    std::int64_t word;
    std::memcpy(&word, allowed, sizeof word);
    mask = (Longs{} + word) & bytes; // vector + scalar: the scalar in every lane
}

QKV_INLINE void loadMask(const std::uint8_t* allowed, Ints& mask)
{
    Longs wide;
    loadMask(allowed, wide);
    mask = __builtin_convertvector(wide != 0, Ints); // all ones or zero: narrowing keeps it
}

QKV_INLINE void loadMask(const std::uint8_t* allowed, SixteenInts& mask)
{
    Ints low, high;
    loadMask(allowed, low);
    loadMask(allowed + 8, high);
    mask = __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/// Entries [j, j + lanes) of a row and of its mask, as vectors of the same number of lanes.
template <typename Values, typename Mask, typename Scalar>
QKV_INLINE void loadLanes(const Scalar* x, const std::uint8_t* allowed, Index j, Values& values, Mask& mask)
{
    static_assert(sizeof(Values) / sizeof(Scalar) == sizeof(Mask) / sizeof(mask[0]));
    std::memcpy(&values, x + j, sizeof values);
    loadMask(allowed + j, mask);
}

/// exp(z) for z ≤ 0: z = k·ln 2 + r with |r| ≤ ln2/2 (Cody–Waite, so r is exact), e^r by its Taylor series
/// to r¹³ (truncation below 5e-18, summed by Estrin's scheme), 2^k built in the exponent bits. Below −700,
/// 2^(k+60) is built and the product scaled by 2^−60, so that subnormal results come out right. No branches.
QKV_INLINE Doubles expNonPositive(Doubles z)
{
    constexpr double log2e = 1.4426950408889634;
    constexpr double shifter = 6755399441055744.0;   // 1.5·2^52: adding it rounds to an integer
    constexpr double ln2High = 0x1.62e42fee00000p-1; // trailing zeros: k·ln2High is exact for |k| < 2^11
    constexpr double ln2Low = 0x1.a39ef35793c76p-33;
    z = z > -746.0 ? z : splat(-746.0);
    const Doubles t = z * log2e + shifter;
    const Doubles k = t - shifter;
    const Doubles r = (z - k * ln2High) - k * ln2Low;
    // Estrin's scheme: the terms in pairs, then pairs of pairs: four dependent steps where Horner's rule
    // takes thirteen, so the vector units are not left waiting on one long chain.
    const Doubles r2 = r * r;
    const Doubles r4 = r2 * r2;
    const Doubles r8 = r4 * r4;
    const Doubles a0 = 1.0 + r;
    const Doubles a1 = 1.0 / 2.0 + r * (1.0 / 6.0);
    const Doubles a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    const Doubles a3 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    const Doubles a4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    const Doubles a5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    const Doubles a6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    const Doubles b0 = a0 + r2 * a1;
    const Doubles b1 = a2 + r2 * a3;
    const Doubles b2 = a4 + r2 * a5;
    const Doubles d0 = b0 + r4 * b1;
    const Doubles d1 = b2 + r4 * a6;
    const Doubles p = d0 + r8 * d1;
    const Longs subnormal = z < -700.0;
    Longs bits;
    std::memcpy(&bits, &t, sizeof bits); // low bits: k, offset by the shifter
    bits = (bits + (subnormal ? splat(std::int64_t{1023 + 60}) : splat(std::int64_t{1023}))) << 52;
    Doubles twoToK;
    std::memcpy(&twoToK, &bits, sizeof twoToK);
    const Doubles e = p * twoToK * (subnormal ? splat(0x1p-60) : splat(1.0));
    return keepWhere(z > -745.5, e);
}

QKV_INLINE double expNonPositiveInline(double z)
{
    return expNonPositive(splat(z))[0];
}

/// exp(z) in float32 for smallestFloatExpArgument ≤ z ≤ 0, where the result is a normal number: Cody–Waite
/// reduction z = k·ln 2 + r as above, e^r by Cephes' expf polynomial (degree 7, within 1 ulp), 2^k in the
/// exponent bits. No branches: the same steps serve one float and a vector of eight.
template <typename Float, typename Bits> QKV_INLINE Float expNonPositiveFloats(Float z)
{
    constexpr float log2e = 1.44269504088896341f;
    constexpr float shifter = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
    constexpr float ln2High = 0.693359375f; // 9 significant bits: k·ln2High is exact for |k| < 2^15
    constexpr float ln2Low = -2.12194440e-4f;
    const Float t = z * log2e + shifter;
    const Float k = t - shifter;
    const Float r = (z - k * ln2High) - k * ln2Low;
    Float p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const Float er = (p * r) * r + r + 1.0f;
    Bits bits;
    std::memcpy(&bits, &t, sizeof bits); // low bits: k, offset by the shifter
    bits = (bits + 127) << 23;
    Float twoToK;
    std::memcpy(&twoToK, &bits, sizeof twoToK);
    return er * twoToK;
}

QKV_INLINE float expNonPositiveFloatInline(float z)
{
    return expNonPositiveFloats<float, std::uint32_t>(z);
}

} // namespace

QKV_ROW_KERNEL Range allowedRange(const double* x, const std::uint8_t* allowed, Index m)
{
    Doubles low = splat(infinity), high = splat(-infinity);
    Index j = 0;
    for (; j + doubleWidth <= m; j += doubleWidth) {
        Doubles v;
        Longs a;
        loadLanes(x, allowed, j, v, a);
        // Selects, then compares: a NaN compares false and is passed over, as a masked entry is.
        const Doubles forLow = a != 0 ? v : splat(infinity);
        const Doubles forHigh = a != 0 ? v : splat(-infinity);
        low = forLow < low ? forLow : low;
        high = forHigh > high ? forHigh : high;
    }
    Range range{infinity, -infinity};
    for (int l = 0; l < doubleWidth; ++l) {
        range.min = low[l] < range.min ? low[l] : range.min;
        range.max = high[l] > range.max ? high[l] : range.max;
    }
    for (; j < m; ++j) {
        if (allowed[j] != 0) {
            range.min = x[j] < range.min ? x[j] : range.min;
            range.max = x[j] > range.max ? x[j] : range.max;
        }
    }
    return range;
}

QKV_ROW_KERNEL RangeF allowedRange(const float* x, const std::uint8_t* allowed, Index m)
{
    // GCC's vectoriser leaves a float min/max with a mask scalar (it does for double), so this one is
    // written with GCC's vector types: sixteen lanes, one AVX-512 vector, two AVX2 ones, four SSE ones.
    constexpr int width = 16;
    constexpr float infinityF = std::numeric_limits<float>::infinity();
    SixteenFloats low, high;
    for (int l = 0; l < width; ++l) {
        low[l] = infinityF;
        high[l] = -infinityF;
    }
    Index j = 0;
    for (; j + width <= m; j += width) {
        SixteenFloats v;
        SixteenInts a;
        loadLanes(x, allowed, j, v, a);
        const SixteenFloats forLow = a != 0 ? v : infinityF;
        const SixteenFloats forHigh = a != 0 ? v : -infinityF;
        low = forLow < low ? forLow : low;
        high = forHigh > high ? forHigh : high;
    }
    RangeF range{infinityF, -infinityF};
    for (int l = 0; l < width; ++l) {
        range.min = low[l] < range.min ? low[l] : range.min;
        range.max = high[l] > range.max ? high[l] : range.max;
    }
    for (; j < m; ++j) {
        if (allowed[j] != 0) {
            range.min = x[j] < range.min ? x[j] : range.min;
            range.max = x[j] > range.max ? x[j] : range.max;
        }
    }
    return range;
}

namespace {

/// One vector of shiftedExp: z = max((x − max)/τ, −746) where allowed, else 0; e = exp(z) where allowed,
/// else 0; the sums gain e and e·z, and `check` gains (x − max)·0, NaN when an allowed x is not finite.
template <bool divideByTemperature>
QKV_INLINE Doubles shiftedExpVector(Doubles x, Longs allowed, double max, double temperature, Doubles& sum,
                                    Doubles& weighted, Doubles& check)
{
    const Doubles zero = splat(0.0);
    const Doubles shifted = x - max;
    Doubles z = divideByTemperature ? shifted / temperature : shifted;
    z = z > -746.0 ? z : splat(-746.0);
    z = allowed != 0 ? z : zero;
    const Doubles e = allowed != 0 ? expNonPositive(z) : zero;
    check += allowed != 0 ? shifted * 0.0 : zero;
    sum += e;
    weighted += e * z;
    return e;
}

template <bool divideByTemperature>
QKV_INLINE ExpSums shiftedExpRow(const double* x, const std::uint8_t* allowed, double max, double temperature,
                                 double* e, Index m)
{
    Doubles sum{}, weighted{}, check{};
    Index j = 0;
    for (; j + doubleWidth <= m; j += doubleWidth) {
        Doubles xs;
        Longs a;
        loadLanes(x, allowed, j, xs, a);
        const Doubles es =
            shiftedExpVector<divideByTemperature>(xs, a, max, temperature, sum, weighted, check);
        std::memcpy(e + j, &es, sizeof es);
    }
    if (j < m) { // the tail, padded with masked entries, which add nothing
        Doubles xs{};
        Longs a{};
        for (int l = 0; j + l < m; ++l) {
            xs[l] = x[j + l];
            a[l] = allowed[j + l];
        }
        const Doubles es =
            shiftedExpVector<divideByTemperature>(xs, a, max, temperature, sum, weighted, check);
        for (int l = 0; j + l < m; ++l)
            e[j + l] = es[l];
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {total(check) == 0.0 ? total(sum) : nan, total(weighted)};
}

} // namespace

QKV_ROW_KERNEL ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, double max,
                                  double temperature, double* e, Index m)
{
    // x / 1 is x, bit for bit: the common τ = 1 skips the division.
    return temperature == 1.0 ? shiftedExpRow<false>(x, allowed, max, temperature, e, m)
                              : shiftedExpRow<true>(x, allowed, max, temperature, e, m);
}

QKV_ROW_KERNEL ExpSums shiftedExp(const float* x, const std::uint8_t* allowed, float max, float temperature,
                                  float* e, Index m)
{
    // One pass, eight entries at a time; the tail goes to lane 0, as forEachLane would put it.
    Doubles sum{}, weighted{}, check{};
    Index j = 0;
    for (; j + doubleWidth <= m; j += doubleWidth) {
        Floats xs;
        Ints a;
        loadLanes(x, allowed, j, xs, a);
        const Floats shifted = xs - max;
        const Floats logit = a != 0 ? shifted / temperature : Floats{};
        const Floats exponential = a != 0 ? expNonPositiveFloats<Floats, Unsigneds>(logit) : Floats{};
        store(e + j, exponential);
        const Doubles wideExponential = widen(exponential);
        check += widen(a) != 0 ? widen(shifted) * 0.0 : splat(0.0); // NaN when a score is NaN or infinite
        sum += wideExponential;
        weighted += wideExponential * widen(logit);
    }
    for (; j < m; ++j) {
        const bool isAllowed = allowed[j] != 0;
        const float logit = isAllowed ? (x[j] - max) / temperature : 0.0f;
        e[j] = isAllowed ? expNonPositiveFloatInline(logit) : 0.0f;
        check[0] += isAllowed ? double(x[j] - max) * 0.0 : 0.0;
        sum[0] += double(e[j]);
        weighted[0] += double(e[j]) * double(logit);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {total(check) == 0.0 ? total(sum) : nan, total(weighted)};
}

QKV_ROW_KERNEL void multiply(const float* x, float factor, float* product, Index m)
{
    for (Index j = 0; j < m; ++j)
        product[j] = x[j] * factor;
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

QKV_ROW_KERNEL bool divide(float* scores, float divisor, double* scoresOut, double* scaled, Index m)
{
    Doubles check{};
    Index j = 0;
    for (; j + doubleWidth <= m; j += doubleWidth) {
        const Floats s = load<Floats>(scores + j);
        store(scoresOut + j, widen(s));
        const Floats quotient = s / divisor;
        store(scores + j, quotient);
        const Doubles wide = widen(quotient);
        store(scaled + j, wide);
        check += wide * 0.0; // inf·0 and NaN·0 are NaN
    }
    for (; j < m; ++j) {
        scoresOut[j] = static_cast<double>(scores[j]);
        scores[j] /= divisor;
        scaled[j] = static_cast<double>(scores[j]);
        check[0] += scaled[j] * 0.0;
    }
    return total(check) == 0.0;
}

QKV_ROW_KERNEL bool allFinite(const double* x, Index m)
{
    double check[lanes] = {};
    forEachLane(m,
                [&](Index j, int l) QKV_INLINE_LAMBDA { check[l] += x[j] * 0.0; }); // inf·0 and NaN·0 are NaN
    return total(check) == 0.0;
}

QKV_ROW_KERNEL bool roundToFloat(const double* x, float* y, Index m)
{
    constexpr double largest = std::numeric_limits<float>::max();
    double outside[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        y[j] = static_cast<float>(x[j]);
        outside[l] += x[j] * 0.0 + (x[j] >= -largest && x[j] <= largest ? 0.0 : 1.0); // NaN counts too
    });
    return total(outside) == 0.0;
}

QKV_ROW_KERNEL std::uint64_t rowHash(const double* x, Index m)
{
    // FNV-1a over the entries' bits, one running hash per lane, then the lanes' hashes in turn.
    std::uint64_t lane[lanes];
    for (int l = 0; l < lanes; ++l)
        lane[l] = 1469598103934665603ull;
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        const double value = x[j] == 0.0 ? 0.0 : x[j];
        std::uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        lane[l] = (lane[l] ^ bits) * 1099511628211ull;
    });
    std::uint64_t hash = 1469598103934665603ull;
    for (std::uint64_t h : lane)
        hash = (hash ^ h) * 1099511628211ull;
    return hash;
}

enum class WeightsIn { Double, DoubleToRound, Float };

template <WeightsIn source> QKV_INLINE WeightSums sumWeights(double* w, float* rounded, Index m)
{
    Doubles sum{}, count{}, high{};
    Index j = 0;
    for (; j + doubleWidth <= m; j += doubleWidth) {
        Doubles v;
        if constexpr (source == WeightsIn::Double) {
            v = load<Doubles>(w + j);
        } else if constexpr (source == WeightsIn::DoubleToRound) {
            const Floats f = __builtin_convertvector(load<Doubles>(w + j), Floats);
            store(rounded + j, f);
            v = widen(f);
            store(w + j, v);
        } else {
            v = widen(load<Floats>(rounded + j));
            store(w + j, v);
        }
        sum += v;
        count += v > 0.0 ? splat(1.0) : splat(0.0);
        high = v > high ? v : high;
    }
    for (; j < m; ++j) { // the tail in lane 0
        double v;
        if constexpr (source == WeightsIn::Double) {
            v = w[j];
        } else if constexpr (source == WeightsIn::DoubleToRound) {
            rounded[j] = static_cast<float>(w[j]);
            v = static_cast<double>(rounded[j]);
            w[j] = v;
        } else {
            v = static_cast<double>(rounded[j]);
            w[j] = v;
        }
        sum[0] += v;
        count[0] += v > 0.0 ? 1.0 : 0.0;
        high[0] = v > high[0] ? v : high[0];
    }
    WeightSums sums{total(sum), static_cast<Index>(total(count)), 0.0};
    for (int l = 0; l < doubleWidth; ++l)
        sums.max = high[l] > sums.max ? high[l] : sums.max;
    return sums;
}

QKV_ROW_KERNEL WeightSums weightSums(const double* w, Index m)
{
    return sumWeights<WeightsIn::Double>(const_cast<double*>(w), nullptr, m); // reads only
}

QKV_ROW_KERNEL WeightSums roundToFloatAndSum(double* w, float* rounded, Index m)
{
    return sumWeights<WeightsIn::DoubleToRound>(w, rounded, m);
}

QKV_ROW_KERNEL WeightSums widenAndSum(const float* w, double* wide, Index m)
{
    return sumWeights<WeightsIn::Float>(wide, const_cast<float*>(w), m); // reads w only
}

double expOfNonPositive(double z)
{
    return expNonPositiveInline(z);
}

float expOfNonPositive(float z)
{
    return expNonPositiveFloatInline(z);
}

} // namespace qkv::rows
