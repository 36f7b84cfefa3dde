// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The loops the engine runs over every entry of an n × m row block (scaling, softmax,
/// finiteness, statistics), compiled for AVX-512 (x86-64-v4), for AVX2 (x86-64-v3) and for the baseline
/// (SSE2 on x86-64), each over vectors of its CPU's own width, and chosen once at run time for the CPU.
/// Every version does the same operations in the same order (sums keep eight running totals, one per lane
/// of eight), so results are bit for bit the same on any CPU.

#include <cstddef>
#include <cstdint>

namespace qkv::rows {

// Eigen::Index: the kernels' files include no Eigen (RowKernelLevel.inc says why).
using Index = std::ptrdiff_t;

/// The instruction-set levels the kernels are compiled for.
enum class KernelLevel { Baseline, X86_64_V3, X86_64_V4 };
/// "x86-64" (or "baseline" off x86-64), "x86-64-v3", "x86-64-v4".
const char* kernelLevelName(KernelLevel level);
/// The level in use: the best this CPU has, or the one QKV_ROW_KERNELS names (an x86-64-v* name above) when
/// the CPU has it.
KernelLevel kernelLevel();
/// True when the level is compiled in and this CPU can run it.
bool kernelLevelAvailable(KernelLevel level);
/// Makes `level` the one in use, for tests and benchmarks that compare levels (not while kernels run on other
/// threads); false, and nothing changed, when it is not available.
bool useKernelLevel(KernelLevel level);

/// Smallest and largest allowed entry (allowed[j] ≠ 0); max < min when nothing is allowed.
struct Range {
    double min;
    double max;
};
Range allowedRange(const double* x, const std::uint8_t* allowed, Index m);
struct RangeF {
    float min;
    float max;
};
RangeF allowedRange(const float* x, const std::uint8_t* allowed, Index m);

/// The softmax numerators of a row: e_j = exp(z_j) with z_j = max((x_j − max)/τ, −746) for allowed j,
/// 0 for masked j, where `range` is the row's allowedRange (max = range.max; a row whose allowed z all
/// exceed −700 skips exp's steps for subnormal results). Returns Σ e (NaN when an allowed x is not finite)
/// and Σ e·z (the entropy is ln Σe − Σez/Σe). exp is accurate to 2 units in the last place down to the
/// smallest subnormal (z ≥ −745.13); below, e = 0, as exp's correctly rounded value.
struct ExpSums {
    double sum;
    double weightedLogits;
};
ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, Range range, double temperature, double* e,
                   Index m);

/// The float32 softmax numerators: e_j = exp(z_j) in float32 with z_j = (x_j − max)/τ in float32 for allowed
/// j, 0 for masked j; sums in double as above. Every allowed z must be at least smallestFloatExpArgument,
/// where float32's exp is still a normal number (the caller takes the exact path for any other row); exp
/// is within 2 units in float32's last place. e must not overlap x.
inline constexpr float smallestFloatExpArgument = -87.0f;
ExpSums shiftedExp(const float* x, const std::uint8_t* allowed, float max, float temperature, float* e,
                   Index m);

void multiply(double* x, double factor, Index m);
void multiply(const float* x, float factor, float* product, Index m);

/// How a float32 kernel writes the double rows it widens into: through the caches, or around them
/// (non-temporal stores, on x86-64 when the row is 16-byte aligned) when the rows are far larger than the
/// caches and nothing reads them soon. The bits written are the same either way.
enum class WideRows { Cached, Streamed };

/// scaled_j = s_j / divisor, in the precision of s; true when every scaled entry is finite. A float32 row is
/// divided in place, and its scores and scaled scores are also widened into the double rows.
bool divide(const double* scores, double divisor, double* scaled, Index m);
bool divide(float* scores, float divisor, double* scoresOut, double* scaled, Index m,
            WideRows stores = WideRows::Cached);

bool allFinite(const double* x, Index m);

/// y_j = float32(x_j), rounded to nearest; false (y then partly written) when an x_j is NaN or beyond
/// float32's range, where it would become infinite.
bool roundToFloat(const double* x, float* y, Index m);

/// y_j = double(x_j), exactly; true when every x_j is finite.
bool widen(const float* x, double* y, Index m);

/// A hash of the row's entries, equal for equal rows (−0 counts as +0), for finding duplicate tokens.
std::uint64_t rowHash(const double* x, Index m);

/// Σ w, the number of w > 0, and max w (0 when m = 0).
struct WeightSums {
    double sum;
    Index support;
    double max;
};
WeightSums weightSums(const double* w, Index m);
/// The same after rounding each entry to the nearest float32 value, which also goes to `rounded`.
WeightSums roundToFloatAndSum(double* w, float* rounded, Index m);
/// The same for float32 weights, which are also widened into `wide`.
WeightSums widenAndSum(const float* w, double* wide, Index m, WideRows stores = WideRows::Cached);

/// exp(z) for z ≤ 0 as shiftedExp computes it, for tests against std::exp.
double expOfNonPositive(double z);
/// exp(z) for smallestFloatExpArgument ≤ z ≤ 0 as the float32 shiftedExp computes it.
float expOfNonPositive(float z);

} // namespace qkv::rows
