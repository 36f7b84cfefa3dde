// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the row kernels: one table of functions for each instruction-set level they are compiled for
// (RowKernelLevel.inc, once per level), and the dispatcher in RowKernels.cpp that picks one for the CPU.

#include "RowKernels.h"

namespace qkv::rows {

struct KernelTable {
    Range (*allowedRange)(const double*, const std::uint8_t*, Index);
    RangeF (*allowedRangeFloat)(const float*, const std::uint8_t*, Index);
    ExpSums (*shiftedExp)(const double*, const std::uint8_t*, Range, double, double*, Index);
    ExpSums (*shiftedExpFloat)(const float*, const std::uint8_t*, float, float, float*, Index);
    void (*multiply)(double*, double, Index);
    void (*multiplyFloat)(const float*, float, float*, Index);
    bool (*divide)(const double*, double, double*, Index);
    bool (*divideFloat)(float*, float, double*, double*, Index, WideRows);
    bool (*allFinite)(const double*, Index);
    bool (*roundToFloat)(const double*, float*, Index);
    bool (*widen)(const float*, double*, Index);
    std::uint64_t (*rowHash)(const double*, Index);
    WeightSums (*weightSums)(const double*, Index);
    WeightSums (*roundToFloatAndSum)(double*, float*, Index);
    WeightSums (*widenAndSum)(const float*, double*, Index, WideRows);
    double (*expOfNonPositive)(double);
    float (*expOfNonPositiveFloat)(float);
};

// RowKernelsBaseline.cpp: no instruction set beyond the target's baseline (SSE2 on x86-64).
namespace baseline {
extern const KernelTable kernels;
}
#if defined(QKV_ROW_KERNELS_X86_64)
namespace x86_64_v3 { // RowKernelsX86_64_V3.cpp: AVX2, FMA (not used: no contraction), BMI
extern const KernelTable kernels;
}
namespace x86_64_v4 { // RowKernelsX86_64_V4.cpp: AVX-512 F, DQ, BW, VL
extern const KernelTable kernels;
}
#endif

} // namespace qkv::rows
