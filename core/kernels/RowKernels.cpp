// SPDX-License-Identifier: GPL-3.0-or-later
#include "RowKernels.h"

#include "RowKernelTable.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace qkv::rows {

namespace {

const KernelTable* tableOf(KernelLevel level)
{
    switch (level) {
    case KernelLevel::Baseline:
        return &baseline::kernels;
#if defined(QKV_ROW_KERNELS_X86_64)
    case KernelLevel::X86_64_V3:
        __builtin_cpu_init();
#if defined(__clang__) // Clang 14 knows the features, not the level names
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
#else
        if (__builtin_cpu_supports("x86-64-v3"))
#endif
            return &x86_64_v3::kernels;
        return nullptr;
    case KernelLevel::X86_64_V4:
        __builtin_cpu_init();
#if defined(__clang__)
        if (tableOf(KernelLevel::X86_64_V3) && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl"))
#else
        if (__builtin_cpu_supports("x86-64-v4"))
#endif
            return &x86_64_v4::kernels;
        return nullptr;
#else
    default:
        return nullptr;
#endif
    }
    return nullptr;
}

constexpr KernelLevel levels[] = {KernelLevel::X86_64_V4, KernelLevel::X86_64_V3, KernelLevel::Baseline};

/// The best level the CPU has, or the one QKV_ROW_KERNELS names when the CPU has it.
KernelLevel chosenLevel()
{
    if (const char* wanted = std::getenv("QKV_ROW_KERNELS"))
        for (KernelLevel level : levels)
            if (std::strcmp(wanted, kernelLevelName(level)) == 0 && tableOf(level))
                return level;
    for (KernelLevel level : levels)
        if (tableOf(level))
            return level;
    return KernelLevel::Baseline;
}

std::atomic<KernelLevel> activeLevel{KernelLevel::Baseline};
std::atomic<const KernelTable*> activeTable{nullptr};

const KernelTable& table()
{
    if (const KernelTable* chosen = activeTable.load(std::memory_order_acquire))
        return *chosen;
    const KernelLevel level = chosenLevel();
    useKernelLevel(level);
    return *tableOf(level);
}

} // namespace

const char* kernelLevelName(KernelLevel level)
{
    switch (level) {
    case KernelLevel::X86_64_V3:
        return "x86-64-v3";
    case KernelLevel::X86_64_V4:
        return "x86-64-v4";
    case KernelLevel::Baseline:
        break;
    }
#if defined(__x86_64__)
    return "x86-64";
#else
    return "baseline";
#endif
}

KernelLevel kernelLevel()
{
    table();
    return activeLevel.load(std::memory_order_acquire);
}

bool kernelLevelAvailable(KernelLevel level)
{
    return tableOf(level) != nullptr;
}

bool useKernelLevel(KernelLevel level)
{
    const KernelTable* chosen = tableOf(level);
    if (!chosen)
        return false;
    activeLevel.store(level, std::memory_order_release);
    activeTable.store(chosen, std::memory_order_release);
    return true;
}

Range allowedRange(const double* x, const std::uint8_t* allowed, Index m)
{
    return table().allowedRange(x, allowed, m);
}

RangeF allowedRange(const float* x, const std::uint8_t* allowed, Index m)
{
    return table().allowedRangeFloat(x, allowed, m);
}

ExpSums shiftedExp(const double* x, const std::uint8_t* allowed, Range range, double temperature, double* e,
                   Index m)
{
    return table().shiftedExp(x, allowed, range, temperature, e, m);
}

ExpSums shiftedExp(const float* x, const std::uint8_t* allowed, float max, float temperature, float* e,
                   Index m)
{
    return table().shiftedExpFloat(x, allowed, max, temperature, e, m);
}

void multiply(double* x, double factor, Index m)
{
    table().multiply(x, factor, m);
}

void multiply(const float* x, float factor, float* product, Index m)
{
    table().multiplyFloat(x, factor, product, m);
}

bool divide(const double* scores, double divisor, double* scaled, Index m)
{
    return table().divide(scores, divisor, scaled, m);
}

bool divide(float* scores, float divisor, double* scoresOut, double* scaled, Index m, WideRows stores)
{
    return table().divideFloat(scores, divisor, scoresOut, scaled, m, stores);
}

bool allFinite(const double* x, Index m)
{
    return table().allFinite(x, m);
}

bool roundToFloat(const double* x, float* y, Index m)
{
    return table().roundToFloat(x, y, m);
}

bool widen(const float* x, double* y, Index m)
{
    return table().widen(x, y, m);
}

std::uint64_t rowHash(const double* x, Index m)
{
    return table().rowHash(x, m);
}

WeightSums weightSums(const double* w, Index m)
{
    return table().weightSums(w, m);
}

WeightSums roundToFloatAndSum(double* w, float* rounded, Index m)
{
    return table().roundToFloatAndSum(w, rounded, m);
}

WeightSums widenAndSum(const float* w, double* wide, Index m, WideRows stores)
{
    return table().widenAndSum(w, wide, m, stores);
}

double expOfNonPositive(double z)
{
    return table().expOfNonPositive(z);
}

float expOfNonPositive(float z)
{
    return table().expOfNonPositiveFloat(z);
}

} // namespace qkv::rows
