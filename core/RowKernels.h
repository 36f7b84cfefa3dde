#pragma once
/// @file
/// Internal to core: the loops the engine runs over every entry of an n × m row block (scaling, softmax,
/// finiteness, statistics), compiled for AVX-512, for AVX2 and for plain x86-64, and chosen at run time for
/// the CPU (GCC's target_clones). Every version does the same operations in the same order (sums keep eight
/// running totals, one per lane of the widest vector), so results are bit for bit the same on any CPU.

#include "EigenTypes.h"

namespace qkv::rows {

/// Smallest and largest allowed entry (allowed[j] ≠ 0); max < min when nothing is allowed.
struct Range {
    double min;
    double max;
};
Range allowedRange(const double* x, const std::uint8_t* allowed, Index m);

/// The softmax numerators of a row: e_j = exp(z_j) with z_j = max((x_j − max)/τ, −746) for allowed j,
/// 0 for masked j. Returns Σ e (NaN when an allowed x is not finite) and Σ e·z (the entropy is
/// ln Σe − Σez/Σe). exp is accurate to 2 units in the
/// last place down to the smallest subnormal (z ≥ −745.13); below, e = 0, as exp's correctly rounded value.
struct ExpSums {
    double sum;
    double weightedLogits;
};
ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, double max, double temperature, double* e,
                   Index m);

void multiply(double* x, double factor, Index m);

/// scaled_j = s_j / divisor, in the precision of s (float32 rows also get their scores widened to double);
/// true when every scaled entry is finite.
bool divide(const double* scores, double divisor, double* scaled, Index m);
bool divide(const float* scores, float divisor, double* scoresOut, double* scaled, Index m);

bool allFinite(const double* x, Index m);

/// Σ w, the number of w > 0, and max w (0 when m = 0).
struct WeightSums {
    double sum;
    Index support;
    double max;
};
WeightSums weightSums(const double* w, Index m);
/// The same after rounding each entry to the nearest float32 value, which also goes to `rounded`.
WeightSums roundToFloatAndSum(double* w, float* rounded, Index m);

/// exp(z) for z ≤ 0 as shiftedExp computes it, for tests against std::exp.
double expOfNonPositive(double z);

} // namespace qkv::rows
