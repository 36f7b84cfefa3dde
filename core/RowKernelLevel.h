// The row kernels' bodies, compiled once for each instruction-set level: a file per level defines
// QKV_ROW_LEVEL (its namespace) and QKV_REGISTER_BYTES (its vector registers' width), includes this file, and
// is compiled with that level's -march (core/CMakeLists.txt). RowKernels.cpp picks a level for the CPU.
//
// The kernels work on packs of eight lanes (eight doubles, or eight floats beside them), and sums keep one
// running total per lane, so every level does the same operations in the same order and gives the same bits.
// A pack is as many of the CPU's own vectors as it takes: one 512-bit vector for AVX-512, two 256-bit ones
// for AVX2, four 128-bit ones for SSE2. GCC's vector types wider than the CPU's registers are no substitute:
// GCC 12 compiles their compares and selects one lane at a time, which made the AVX2 float64 softmax
// numerators four times slower than this code on the same CPU.
//
// Everything here has internal linkage, and nothing here uses a library function that the compiler could
// emit as an out-of-line inline copy (nothing from Eigen, <cmath> or <limits>; std::memcpy is a builtin and
// <utility> gives only std::index_sequence, a type): the linker could keep such a copy compiled for AVX-512
// for the whole program, and a CPU without AVX-512 would crash in it.

#include "RowKernelTable.h"

#include <cstdint>
#include <cstring>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h> // non-temporal stores (WideRows::Streamed)
#endif

#if !defined(QKV_ROW_LEVEL) || !defined(QKV_REGISTER_BYTES)
#error "define QKV_ROW_LEVEL and QKV_REGISTER_BYTES before including RowKernelLevel.h"
#endif

#if defined(__GNUC__)                    // GCC and Clang
#pragma GCC diagnostic ignored "-Wpsabi" // vectors passed between always-inlined helpers: no ABI is involved
#endif

// Helpers and their lambdas are always inlined, and loops over a pack's vectors unrolled before GCC decides
// what stays in registers (without the unrolling, -O2 kept SSE2 packs on the stack).
#define QKV_INLINE __attribute__((always_inline)) inline
#define QKV_INLINE_LAMBDA __attribute__((always_inline))
#define QKV_FOR_EACH_PART _Pragma("GCC unroll 8") for

namespace qkv::rows::QKV_ROW_LEVEL {

namespace {

constexpr int registerBytes = QKV_REGISTER_BYTES;
constexpr int lanes = 8;
constexpr double infinity = __builtin_inf();

template <typename T> struct SameSizeInteger;
template <> struct SameSizeInteger<double> {
    using Type = std::int64_t;
};
template <> struct SameSizeInteger<std::int64_t> {
    using Type = std::int64_t;
};
template <> struct SameSizeInteger<float> {
    using Type = std::int32_t;
};
template <> struct SameSizeInteger<std::int32_t> {
    using Type = std::int32_t;
};
template <> struct SameSizeInteger<std::uint32_t> {
    using Type = std::int32_t;
};

/// N lanes of T in as many of the CPU's vectors as they fill; the lanes lie in memory in order, so a pack
/// copies to and from N consecutive T. Comparisons give a Mask: all ones where true, 0 where false.
template <typename T, int N> struct Pack {
    using Scalar = T;
    static constexpr int laneCount = N;
    static constexpr int partLanes = N * int(sizeof(T)) <= registerBytes ? N : registerBytes / int(sizeof(T));
    static constexpr int parts = N / partLanes;
    typedef T Part __attribute__((vector_size(partLanes * sizeof(T))));
    using Mask = Pack<typename SameSizeInteger<T>::Type, N>;

    Part part[parts];

    static QKV_INLINE Pack splat(T x)
    {
        Pack p;
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)
            p.part[i] = Part{} + x; // vector + scalar: the scalar in every lane
        return p;
    }
    static QKV_INLINE Pack load(const T* from)
    {
        Pack p;
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)
            std::memcpy(&p.part[i], from + i * partLanes, sizeof(Part));
        return p;
    }
    QKV_INLINE void store(T* to) const
    {
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)
            std::memcpy(to + i * partLanes, &part[i], sizeof(Part));
    }
    QKV_INLINE T operator[](int lane) const { return part[lane / partLanes][lane % partLanes]; }
    QKV_INLINE void set(int lane, T value) { part[lane / partLanes][lane % partLanes] = value; }
    /// store(to), around the caches when `streamed` (`to` 16-byte aligned; doubles only).
    template <bool streamed> QKV_INLINE void storeWide(T* to) const
    {
#if defined(__SSE2__)
        if constexpr (streamed) {
            static_assert(sizeof(T) == sizeof(double) && sizeof(Part) % 16 == 0);
            QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)
                QKV_FOR_EACH_PART (int k = 0; k < int(sizeof(Part)) / 16; ++k) {
                    __m128d piece;
                    std::memcpy(&piece, reinterpret_cast<const char*>(&part[i]) + 16 * k, 16);
                    _mm_stream_pd(to + i * partLanes + 2 * k, piece);
                }
            return;
        }
#endif
        store(to);
    }

// Lane by lane, on a pack and a pack, a pack and a scalar, a scalar and a pack: arithmetic gives a Pack,
// comparisons a Mask.
#define QKV_PACK_OPERATOR(op, Result)                                                                        \
    friend QKV_INLINE Result operator op(const Pack& a, const Pack& b)                                       \
    {                                                                                                        \
        Result r;                                                                                            \
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)                                                        \
            r.part[i] = a.part[i] op b.part[i];                                                              \
        return r;                                                                                            \
    }                                                                                                        \
    friend QKV_INLINE Result operator op(const Pack& a, T b)                                                 \
    {                                                                                                        \
        Result r;                                                                                            \
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)                                                        \
            r.part[i] = a.part[i] op b;                                                                      \
        return r;                                                                                            \
    }                                                                                                        \
    friend QKV_INLINE Result operator op(T a, const Pack& b)                                                 \
    {                                                                                                        \
        Result r;                                                                                            \
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)                                                        \
            r.part[i] = a op b.part[i];                                                                      \
        return r;                                                                                            \
    }
    QKV_PACK_OPERATOR(+, Pack)
    QKV_PACK_OPERATOR(-, Pack)
    QKV_PACK_OPERATOR(*, Pack)
    QKV_PACK_OPERATOR(/, Pack)
    QKV_PACK_OPERATOR(&, Pack)
    QKV_PACK_OPERATOR(<, Mask)
    QKV_PACK_OPERATOR(>, Mask)
    QKV_PACK_OPERATOR(!=, Mask)
#undef QKV_PACK_OPERATOR

    friend QKV_INLINE Pack operator<<(const Pack& a, int bits)
    {
        Pack r;
        QKV_FOR_EACH_PART (int i = 0; i < parts; ++i)
            r.part[i] = a.part[i] << bits;
        return r;
    }
    QKV_INLINE Pack& operator+=(const Pack& b)
    {
        return *this = *this + b;
    }
};

/// `where ? a : b` lane by lane.
template <typename P> QKV_INLINE P select(const typename P::Mask& where, const P& a, const P& b)
{
    P r;
    QKV_FOR_EACH_PART (int i = 0; i < P::parts; ++i)
        r.part[i] = where.part[i] ? a.part[i] : b.part[i];
    return r;
}

/// The same bits as another type of the same size.
template <typename To, typename From> QKV_INLINE To bitCast(const From& from)
{
    static_assert(sizeof(To) == sizeof(From));
    To to;
    std::memcpy(&to, &from, sizeof to);
    return to;
}

/// Two vectors of N lanes as one of 2N: the first's lanes, then the second's.
template <typename Whole, typename Half, std::size_t... lane>
QKV_INLINE Whole concatenate(const Half& low, const Half& high, std::index_sequence<lane...>)
{
    return __builtin_shufflevector(low, high, lane...);
}

/// Lanes [first, first + N) of a vector, as a vector of N.
template <typename Part, std::size_t first, typename Whole, std::size_t... lane>
QKV_INLINE Part lanesOf(const Whole& whole, std::index_sequence<lane...>)
{
    return __builtin_shufflevector(whole, whole, (first + lane)...);
}

/// Each lane converted as a scalar would be (float to double, double to float, int to int). Each of the
/// source's vectors is converted whole: GCC 12 compiles a conversion whose result is wider than a register
/// well, and one whose source is a part of a register poorly. Narrowed pieces are joined in pairs.
template <typename To, typename From> QKV_INLINE To convert(const From& from)
{
    static_assert(To::laneCount == From::laneCount);
    using ToScalar = typename To::Scalar;
    typedef ToScalar Piece __attribute__((vector_size(From::partLanes * sizeof(ToScalar))));
    To to;
    if constexpr (From::partLanes == To::partLanes) {
        QKV_FOR_EACH_PART (int i = 0; i < To::parts; ++i)
            to.part[i] = __builtin_convertvector(from.part[i], typename To::Part);
    } else if constexpr (From::partLanes > To::partLanes) { // widening: a piece fills two of To's vectors
        static_assert(From::partLanes == 2 * To::partLanes);
        QKV_FOR_EACH_PART (int i = 0; i < From::parts; ++i) {
            const Piece piece = __builtin_convertvector(from.part[i], Piece);
            to.part[2 * i] = lanesOf<typename To::Part, 0>(piece, std::make_index_sequence<To::partLanes>());
            to.part[2 * i + 1] =
                lanesOf<typename To::Part, To::partLanes>(piece, std::make_index_sequence<To::partLanes>());
        }
    } else { // narrowing: two pieces fill one of To's vectors
        static_assert(To::partLanes == 2 * From::partLanes);
        QKV_FOR_EACH_PART (int i = 0; i < To::parts; ++i)
            to.part[i] = concatenate<typename To::Part>(__builtin_convertvector(from.part[2 * i], Piece),
                                                        __builtin_convertvector(from.part[2 * i + 1], Piece),
                                                        std::make_index_sequence<To::partLanes>());
    }
    return to;
}

/// A pack of 2N lanes from two of N: the first's lanes, then the second's.
template <typename Whole, typename Half> QKV_INLINE Whole joinHalves(const Half& low, const Half& high)
{
    static_assert(Whole::laneCount == 2 * Half::laneCount);
    Whole whole;
    if constexpr (Whole::parts == 1) {
        whole.part[0] = concatenate<typename Whole::Part>(low.part[0], high.part[0],
                                                          std::make_index_sequence<Whole::partLanes>());
    } else {
        static_assert(Whole::partLanes == Half::partLanes);
        QKV_FOR_EACH_PART (int i = 0; i < Half::parts; ++i) {
            whole.part[i] = low.part[i];
            whole.part[Half::parts + i] = high.part[i];
        }
    }
    return whole;
}

using Doubles = Pack<double, lanes>;
using Longs = Pack<std::int64_t, lanes>;
// The float32 kernels work on as many floats as a Doubles holds doubles, so that their sums, kept in double,
// have the same eight lanes in the same order as the float64 kernels'.
using Floats = Pack<float, lanes>;
using Ints = Pack<std::int32_t, lanes>;
using Unsigneds = Pack<std::uint32_t, lanes>;
// Sixteen floats, for the float32 range, which keeps no sums in double.
using SixteenFloats = Pack<float, 2 * lanes>;
using SixteenInts = Pack<std::int32_t, 2 * lanes>;

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

QKV_INLINE double total(const Doubles& lane)
{
    double sum = 0.0;
    for (int l = 0; l < lanes; ++l)
        sum += lane[l];
    return sum;
}

/// Mask entries [j, j + 8) as eight integers, lane l holding byte l in its place (so nonzero exactly when the
/// entry is): one broadcast and an and, where widening byte by byte takes a step per lane.
QKV_INLINE void loadMask(const std::uint8_t* allowed, Longs& mask)
{
    static constexpr std::int64_t bytes[lanes] = {
        0xFF,        0xFF << 8,   0xFFL << 16, 0xFFL << 24,
        0xFFL << 32, 0xFFL << 40, 0xFFL << 48, std::int64_t(0xFFUL << 56)};
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "byte l of the word must be mask entry l");
    std::int64_t word;
    std::memcpy(&word, allowed, sizeof word);
    mask = Longs::splat(word) & Longs::load(bytes);
}

/// The same for eight int32 lanes: lanes 0–3 test the bytes of the first four entries' word, lanes 4–7 those
/// of the next four's. (A template only so that `if constexpr` discards the branch for the other widths.)
template <typename EightInts> QKV_INLINE void loadMask(const std::uint8_t* allowed, EightInts& mask)
{
    static_assert(EightInts::laneCount == 8 && sizeof(typename EightInts::Scalar) == 4);
    typedef std::int32_t Quad __attribute__((vector_size(16)));
    const Quad bytes = {0xFF, 0xFF << 8, 0xFF << 16, std::int32_t(0xFFu << 24)};
    std::int32_t words[2];
    std::memcpy(words, allowed, sizeof words);
    const Quad low = (Quad{} + words[0]) & bytes;
    const Quad high = (Quad{} + words[1]) & bytes;
    if constexpr (EightInts::partLanes == 4) {
        mask.part[0] = low;
        mask.part[1] = high;
    } else {
        mask.part[0] = concatenate<typename EightInts::Part>(low, high, std::make_index_sequence<8>());
    }
}

QKV_INLINE void loadMask(const std::uint8_t* allowed, SixteenInts& mask)
{
    Ints low, high;
    loadMask(allowed, low);
    loadMask(allowed + lanes, high);
    mask = joinHalves<SixteenInts>(low, high);
}

/// Entries [j, j + lanes) of a row and of its mask, as packs of the same number of lanes.
template <typename Values, typename Mask, typename Scalar>
QKV_INLINE void loadLanes(const Scalar* x, const std::uint8_t* allowed, Index j, Values& values, Mask& mask)
{
    static_assert(Values::laneCount == Mask::laneCount);
    values = Values::load(x + j);
    loadMask(allowed + j, mask);
}

/// exp(z) for z ≤ 0: z = k·ln 2 + r with |r| ≤ ln2/2 (Cody–Waite, so r is exact), e^r by its Taylor series
/// to r¹³ (truncation below 5e-18, summed by Estrin's scheme), 2^k built in the exponent bits. Below −700,
/// 2^(k+60) is built and the product scaled by 2^−60, so that subnormal results come out right. No branches.
/// On one of the CPU's vectors at a time: done on a whole pack at once, the polynomial's terms for two or
/// four vectors would not fit in AVX2's or SSE2's sixteen registers. `normalOnly` when every z ≥ −700 (the
/// result is then a normal number): the same bits without the steps for subnormal and zero results, which
/// took a sixth of the softmax numerators' time.
template <bool normalOnly = false, typename Vector> QKV_INLINE Vector expNonPositive(Vector z)
{
    typedef std::int64_t Bits __attribute__((vector_size(sizeof(Vector))));
    constexpr double log2e = 1.4426950408889634;
    constexpr double shifter = 6755399441055744.0;   // 1.5·2^52: adding it rounds to an integer
    constexpr double ln2High = 0x1.62e42fee00000p-1; // trailing zeros: k·ln2High is exact for |k| < 2^11
    constexpr double ln2Low = 0x1.a39ef35793c76p-33;
    const Vector none{};
    if constexpr (!normalOnly)
        z = z > -746.0 ? z : none - 746.0;
    const Vector t = z * log2e + shifter;
    const Vector k = t - shifter;
    const Vector r = (z - k * ln2High) - k * ln2Low;
    // Estrin's scheme: the terms in pairs, then pairs of pairs: four dependent steps where Horner's rule
    // takes thirteen, so the vector units are not left waiting on one long chain.
    const Vector r2 = r * r;
    const Vector r4 = r2 * r2;
    const Vector r8 = r4 * r4;
    const Vector a0 = 1.0 + r;
    const Vector a1 = 1.0 / 2.0 + r * (1.0 / 6.0);
    const Vector a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    const Vector a3 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    const Vector a4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    const Vector a5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    const Vector a6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    const Vector b0 = a0 + r2 * a1;
    const Vector b1 = a2 + r2 * a3;
    const Vector b2 = a4 + r2 * a5;
    const Vector d0 = b0 + r4 * b1;
    const Vector d1 = b2 + r4 * a6;
    const Vector p = d0 + r8 * d1;
    Bits bits;
    std::memcpy(&bits, &t, sizeof bits); // t's low bits: k, offset by the shifter
    if constexpr (normalOnly) {
        bits = (bits + 1023) << 52;
        Vector twoToK;
        std::memcpy(&twoToK, &bits, sizeof twoToK);
        return p * twoToK;
    }
    const Bits subnormal = z < -700.0;
    const Bits offset = subnormal ? Bits{} + (1023 + 60) : Bits{} + 1023;
    bits = (bits + offset) << 52;
    Vector twoToK;
    std::memcpy(&twoToK, &bits, sizeof twoToK);
    const Vector e = p * twoToK * (subnormal ? none + 0x1p-60 : none + 1.0);
    // e where z > −745.5, else +0: as a bitwise and, which GCC compiles as one instruction for every width.
    std::memcpy(&bits, &e, sizeof bits);
    bits &= z > -745.5;
    Vector result;
    std::memcpy(&result, &bits, sizeof result);
    return result;
}

template <bool normalOnly = false> QKV_INLINE Doubles expNonPositive(const Doubles& z)
{
    Doubles e;
    QKV_FOR_EACH_PART (int i = 0; i < Doubles::parts; ++i)
        e.part[i] = expNonPositive<normalOnly>(z.part[i]);
    return e;
}

/// exp(z) in float32 for smallestFloatExpArgument ≤ z ≤ 0, where the result is a normal number: Cody–Waite
/// reduction z = k·ln 2 + r as above, e^r by Cephes' expf polynomial (degree 7, within 1 ulp), 2^k in the
/// exponent bits. No branches: the same steps serve one float and a pack of eight.
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
    bits = (bits + 127u) << 23;
    Float twoToK;
    std::memcpy(&twoToK, &bits, sizeof twoToK);
    return er * twoToK;
}

/// The smallest and largest allowed entry, a pack at a time: eight lanes for doubles, sixteen for floats.
template <typename Values, typename Mask, typename Result>
QKV_INLINE Result allowedRangeOf(const typename Values::Scalar* x, const std::uint8_t* allowed, Index m)
{
    using Scalar = typename Values::Scalar;
    constexpr Scalar inf = Scalar(infinity);
    constexpr int width = Values::laneCount;
    Values low = Values::splat(inf), high = Values::splat(-inf);
    Index j = 0;
    for (; j + width <= m; j += width) {
        Values v;
        Mask a;
        loadLanes(x, allowed, j, v, a);
        // Selects, then compares: a NaN compares false and is passed over, as a masked entry is.
        const Values forLow = select(a != 0, v, Values::splat(inf));
        const Values forHigh = select(a != 0, v, Values::splat(-inf));
        low = select(forLow < low, forLow, low);
        high = select(forHigh > high, forHigh, high);
    }
    Result range{inf, -inf};
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

Range allowedRange(const double* x, const std::uint8_t* allowed, Index m)
{
    return allowedRangeOf<Doubles, Longs, Range>(x, allowed, m);
}

RangeF allowedRangeFloat(const float* x, const std::uint8_t* allowed, Index m)
{
    return allowedRangeOf<SixteenFloats, SixteenInts, RangeF>(x, allowed, m);
}

/// One pack of shiftedExp: z = max((x − max)/τ, −746) where allowed, else 0; e = exp(z) where allowed,
/// else 0; the sums gain e and e·z, and `check` gains (x − max)·0, NaN when an allowed x is not finite.
template <bool divideByTemperature, bool normalOnly>
QKV_INLINE Doubles shiftedExpPack(const Doubles& x, const Longs& allowed, double max, double temperature,
                                  Doubles& sum, Doubles& weighted, Doubles& check)
{
    const Doubles zero{};
    const Longs isAllowed = allowed != 0;
    const Doubles shifted = x - max;
    Doubles z = divideByTemperature ? shifted / temperature : shifted;
    z = select(z > -746.0, z, Doubles::splat(-746.0));
    z = select(isAllowed, z, zero);
    const Doubles e = select(isAllowed, expNonPositive<normalOnly>(z), zero);
    check += select(isAllowed, shifted * 0.0, zero);
    sum += e;
    weighted += e * z;
    return e;
}

template <bool divideByTemperature, bool normalOnly>
QKV_INLINE ExpSums shiftedExpRow(const double* x, const std::uint8_t* allowed, double max, double temperature,
                                 double* e, Index m)
{
    Doubles sum{}, weighted{}, check{};
    Index j = 0;
    for (; j + lanes <= m; j += lanes) {
        Doubles xs;
        Longs a;
        loadLanes(x, allowed, j, xs, a);
        shiftedExpPack<divideByTemperature, normalOnly>(xs, a, max, temperature, sum, weighted, check)
            .store(e + j);
    }
    if (j < m) { // the tail, padded with masked entries, which add nothing
        double tailX[lanes] = {}, tailE[lanes];
        std::int64_t tailAllowed[lanes] = {};
        for (int l = 0; j + l < m; ++l) {
            tailX[l] = x[j + l];
            tailAllowed[l] = allowed[j + l];
        }
        shiftedExpPack<divideByTemperature, normalOnly>(Doubles::load(tailX), Longs::load(tailAllowed), max,
                                                        temperature, sum, weighted, check)
            .store(tailE);
        for (int l = 0; j + l < m; ++l)
            e[j + l] = tailE[l];
    }
    return {total(check) == 0.0 ? total(sum) : __builtin_nan(""), total(weighted)};
}

ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, Range range, double temperature, double* e,
                   Index m)
{
    // Every allowed z at least (min − max)/τ, computed as z is: then no result is subnormal or zero. (A NaN
    // min or an allowed NaN, which the range passes over, makes the sum NaN either way.)
    const double max = range.max;
    const double shifted = range.min - max;
    const bool normalOnly = (temperature == 1.0 ? shifted : shifted / temperature) >= -700.0;
    // x / 1 is x, bit for bit: the common τ = 1 skips the division.
    if (temperature == 1.0)
        return normalOnly ? shiftedExpRow<false, true>(x, allowed, max, temperature, e, m)
                          : shiftedExpRow<false, false>(x, allowed, max, temperature, e, m);
    return normalOnly ? shiftedExpRow<true, true>(x, allowed, max, temperature, e, m)
                      : shiftedExpRow<true, false>(x, allowed, max, temperature, e, m);
}

template <bool divideByTemperature>
QKV_INLINE ExpSums shiftedExpFloatRow(const float* x, const std::uint8_t* allowed, float max,
                                      float temperature, float* e, Index m)
{
    // One pass, eight entries at a time; the tail goes to lane 0, as forEachLane would put it.
    Doubles sum{}, weighted{};
    Floats check{}; // gains (x − max)·0: NaN when an allowed score is NaN or infinite; only that is read
    Index j = 0;
    for (; j + lanes <= m; j += lanes) {
        Floats xs;
        Ints a;
        loadLanes(x, allowed, j, xs, a);
        const Ints isAllowed = a != 0;
        const Floats shifted = xs - max;
        const Floats logit =
            select(isAllowed, divideByTemperature ? shifted / temperature : shifted, Floats{});
        const Floats exponential =
            select(isAllowed, expNonPositiveFloats<Floats, Unsigneds>(logit), Floats{});
        exponential.store(e + j);
        const Doubles wideExponential = convert<Doubles>(exponential);
        check += select(isAllowed, shifted * 0.0f, Floats{});
        sum += wideExponential;
        weighted += wideExponential * convert<Doubles>(logit);
    }
    bool finite = true;
    for (int l = 0; l < lanes; ++l)
        finite &= check[l] == 0.0f;
    for (; j < m; ++j) {
        const bool isAllowed = allowed[j] != 0;
        const float shifted = x[j] - max;
        const float logit = isAllowed ? (divideByTemperature ? shifted / temperature : shifted) : 0.0f;
        e[j] = isAllowed ? expNonPositiveFloats<float, std::uint32_t>(logit) : 0.0f;
        finite &= !isAllowed || shifted * 0.0f == 0.0f;
        sum.set(0, sum[0] + double(e[j]));
        weighted.set(0, weighted[0] + double(e[j]) * double(logit));
    }
    return {finite ? total(sum) : __builtin_nan(""), total(weighted)};
}

ExpSums shiftedExpFloat(const float* x, const std::uint8_t* allowed, float max, float temperature, float* e,
                        Index m)
{
    // x / 1 is x, bit for bit: the common τ = 1 skips the division.
    return temperature == 1.0f ? shiftedExpFloatRow<false>(x, allowed, max, temperature, e, m)
                               : shiftedExpFloatRow<true>(x, allowed, max, temperature, e, m);
}

void multiplyFloat(const float* x, float factor, float* product, Index m)
{
    for (Index j = 0; j < m; ++j)
        product[j] = x[j] * factor;
}

void multiply(double* x, double factor, Index m)
{
    for (Index j = 0; j < m; ++j)
        x[j] *= factor;
}

bool divide(const double* scores, double divisor, double* scaled, Index m)
{
    double check[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        scaled[j] = scores[j] / divisor;
        check[l] += scaled[j] * 0.0; // inf·0 and NaN·0 are NaN
    });
    return total(check) == 0.0;
}

/// Whether WideRows::Streamed can stream into every one of `rows`: on x86-64, when each is 16-byte aligned.
template <typename... Rows> QKV_INLINE bool streams(WideRows stores, Rows... rows)
{
#if defined(__SSE2__)
    return stores == WideRows::Streamed && ((reinterpret_cast<std::uintptr_t>(rows) % 16 == 0) && ...);
#else
    (void)stores;
    ((void)rows, ...);
    return false;
#endif
}

/// Non-temporal stores are weakly ordered: fenced before the rows are handed on (to another thread).
template <bool streamed> QKV_INLINE void endStreaming()
{
#if defined(__SSE2__)
    if constexpr (streamed)
        _mm_sfence();
#endif
}

template <bool streamed>
QKV_INLINE bool divideFloatRow(float* scores, float divisor, double* scoresOut, double* scaled, Index m)
{
    Doubles check{};
    Index j = 0;
    for (; j + lanes <= m; j += lanes) {
        const Floats s = Floats::load(scores + j);
        convert<Doubles>(s).template storeWide<streamed>(scoresOut + j);
        const Floats quotient = s / divisor;
        quotient.store(scores + j);
        const Doubles wide = convert<Doubles>(quotient);
        wide.template storeWide<streamed>(scaled + j);
        check += wide * 0.0; // inf·0 and NaN·0 are NaN
    }
    for (; j < m; ++j) {
        scoresOut[j] = static_cast<double>(scores[j]);
        scores[j] /= divisor;
        scaled[j] = static_cast<double>(scores[j]);
        check.set(0, check[0] + scaled[j] * 0.0);
    }
    endStreaming<streamed>();
    return total(check) == 0.0;
}

bool divideFloat(float* scores, float divisor, double* scoresOut, double* scaled, Index m, WideRows stores)
{
    return streams(stores, scoresOut, scaled) ? divideFloatRow<true>(scores, divisor, scoresOut, scaled, m)
                                              : divideFloatRow<false>(scores, divisor, scoresOut, scaled, m);
}

bool allFinite(const double* x, Index m)
{
    // Σ x·0 is NaN exactly when an x is infinite or NaN (inf·0 and NaN·0 are NaN), in any order: so four
    // packs of running sums, and the loads, not the additions' latency, set the pace.
    constexpr int sums = 4 * lanes;
    double check[sums] = {};
    Index j = 0;
    for (; j + sums <= m; j += sums)
        for (int l = 0; l < sums; ++l)
            check[l] += x[j + l] * 0.0;
    for (; j < m; ++j)
        check[0] += x[j] * 0.0;
    double sum = 0.0;
    for (double c : check)
        sum += c;
    return sum == 0.0;
}

bool roundToFloat(const double* x, float* y, Index m)
{
    constexpr double largest = 0x1.fffffep+127; // float32's largest finite value
    double outside[lanes] = {};
    forEachLane(m, [&](Index j, int l) QKV_INLINE_LAMBDA {
        y[j] = static_cast<float>(x[j]);
        outside[l] += x[j] * 0.0 + (x[j] >= -largest && x[j] <= largest ? 0.0 : 1.0); // NaN counts too
    });
    return total(outside) == 0.0;
}

bool widen(const float* x, double* y, Index m)
{
    Doubles check{};
    Index j = 0;
    for (; j + lanes <= m; j += lanes) {
        const Doubles wide = convert<Doubles>(Floats::load(x + j));
        wide.store(y + j);
        check += wide * 0.0; // inf·0 and NaN·0 are NaN
    }
    for (; j < m; ++j) {
        y[j] = static_cast<double>(x[j]);
        check.set(0, check[0] + y[j] * 0.0);
    }
    return total(check) == 0.0;
}

std::uint64_t rowHash(const double* x, Index m)
{
    // FNV-1a over the entries' bits, each folded in half first: a product carries a bit only upwards, so
    // without the fold entries that differ only in sign, exponent and leading mantissa bits (one-hot tokens)
    // would differ only in the hash's top 12 bits. One running hash per lane of each of four packs, so that
    // four multiplications are in flight at once (one chain of them made this latency-bound), then the
    // lanes' hashes in turn. Each lane sees its entries in order, so permuted rows hash apart.
    constexpr int chains = 4;
    constexpr std::uint64_t basis = 1469598103934665603ull, prime = 1099511628211ull;
    std::uint64_t lane[chains][lanes];
    for (auto& chain : lane)
        for (std::uint64_t& h : chain)
            h = basis;
    const auto mix = [](std::uint64_t& h, double entry) QKV_INLINE_LAMBDA {
        const double value = entry == 0.0 ? 0.0 : entry;
        std::uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        h = (h ^ bits ^ (bits >> 32)) * prime;
    };
    Index j = 0;
    for (; j + chains * lanes <= m; j += chains * lanes)
        for (int c = 0; c < chains; ++c)
            for (int l = 0; l < lanes; ++l)
                mix(lane[c][l], x[j + c * lanes + l]);
    for (; j < m; ++j)
        mix(lane[0][0], x[j]);
    std::uint64_t hash = basis;
    for (const auto& chain : lane)
        for (std::uint64_t h : chain)
            hash = (hash ^ h ^ (h >> 32)) * prime;
    return hash;
}

enum class WeightsIn { Double, DoubleToRound, Float };

template <WeightsIn source, bool streamed = false>
QKV_INLINE WeightSums sumWeights(double* w, float* rounded, Index m)
{
    Doubles sum{}, count{}, high{};
    Index j = 0;
    for (; j + lanes <= m; j += lanes) {
        Doubles v;
        if constexpr (source == WeightsIn::Double) {
            v = Doubles::load(w + j);
        } else if constexpr (source == WeightsIn::DoubleToRound) {
            const Floats f = convert<Floats>(Doubles::load(w + j));
            f.store(rounded + j);
            v = convert<Doubles>(f);
            v.store(w + j);
        } else {
            v = convert<Doubles>(Floats::load(rounded + j));
            v.template storeWide<streamed>(w + j);
        }
        sum += v;
        count += select(v > 0.0, Doubles::splat(1.0), Doubles::splat(0.0));
        high = select(v > high, v, high);
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
        sum.set(0, sum[0] + v);
        count.set(0, count[0] + (v > 0.0 ? 1.0 : 0.0));
        high.set(0, v > high[0] ? v : high[0]);
    }
    endStreaming<streamed>();
    WeightSums sums{total(sum), static_cast<Index>(total(count)), 0.0};
    for (int l = 0; l < lanes; ++l)
        sums.max = high[l] > sums.max ? high[l] : sums.max;
    return sums;
}

WeightSums weightSums(const double* w, Index m)
{
    return sumWeights<WeightsIn::Double>(const_cast<double*>(w), nullptr, m); // reads only
}

WeightSums roundToFloatAndSum(double* w, float* rounded, Index m)
{
    return sumWeights<WeightsIn::DoubleToRound>(w, rounded, m);
}

WeightSums widenAndSum(const float* w, double* wide, Index m, WideRows stores)
{
    float* readOnly = const_cast<float*>(w); // reads w only
    return streams(stores, wide) ? sumWeights<WeightsIn::Float, true>(wide, readOnly, m)
                                 : sumWeights<WeightsIn::Float, false>(wide, readOnly, m);
}

double expOfNonPositive(double z)
{
    return expNonPositive(Doubles::splat(z))[0];
}

float expOfNonPositiveFloat(float z)
{
    return expNonPositiveFloats<float, std::uint32_t>(z);
}

} // namespace

extern const KernelTable kernels = {allowedRange,
                                    allowedRangeFloat,
                                    shiftedExp,
                                    shiftedExpFloat,
                                    multiply,
                                    multiplyFloat,
                                    divide,
                                    divideFloat,
                                    allFinite,
                                    roundToFloat,
                                    widen,
                                    rowHash,
                                    weightSums,
                                    roundToFloatAndSum,
                                    widenAndSum,
                                    expOfNonPositive,
                                    expOfNonPositiveFloat};

} // namespace qkv::rows::QKV_ROW_LEVEL
