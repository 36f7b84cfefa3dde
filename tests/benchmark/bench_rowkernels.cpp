// SPDX-License-Identifier: GPL-3.0-or-later
// BM_RowKernels/<kernel>: the engine's row kernels (core/kernels/RowKernels) on rows of 1024 entries that
// stay in the L1 cache, in nanoseconds per entry, for the instruction-set level the engine chose for this CPU
// (the context block names it; QKV_ROW_KERNELS=x86-64 | x86-64-v3 | x86-64-v4 picks another one the CPU has).
// They make a slow level visible on any machine: before the kernels were written over vectors of the CPU's
// own width, the AVX2 version of the float64 softmax numerators was seven times slower than the AVX-512 one.

#include "RowKernels.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using qkv::rows::Index;

constexpr Index rowLength = 1024;

struct Rows {
    std::vector<double> x, e, scaled, weights, wide;
    std::vector<float> x32, e32, scratch32;
    std::vector<std::uint8_t> allowed;
    qkv::rows::Range range{}; // of x's allowed entries, as softmax passes it: they span far less than 700

    Rows()
        : x(rowLength), e(rowLength), scaled(rowLength), weights(rowLength), wide(rowLength), x32(rowLength),
          e32(rowLength), scratch32(rowLength), allowed(rowLength)
    {
        std::mt19937_64 random(1);
        std::normal_distribution<double> normal(0.0, 2.0);
        for (std::size_t j = 0; j < x.size(); ++j) {
            x[j] = normal(random);
            x32[j] = static_cast<float>(x[j]);
            allowed[j] = j % 7 != 3; // a few masked entries, as a sliding window or padding would leave
            weights[j] = allowed[j] ? 1.0 / rowLength : 0.0;
        }
        range = qkv::rows::allowedRange(x.data(), allowed.data(), rowLength);
    }
};

void runKernel(benchmark::State& state, const std::function<void(Rows&)>& kernel)
{
    Rows rows;
    for (auto _ : state) {
        kernel(rows);
        benchmark::ClobberMemory();
    }
    // Inverted, a rate of entries per second is seconds per entry: count them in billions for nanoseconds.
    state.counters["ns_per_entry"] =
        benchmark::Counter(double(rowLength) * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

} // namespace

void registerRowKernelBenchmarks()
{
    namespace rows = qkv::rows;
    std::vector<std::pair<std::string, std::function<void(Rows&)>>> kernels = {
        {"allowedRange/f64",
         [](Rows& r) {
             benchmark::DoNotOptimize(rows::allowedRange(r.x.data(), r.allowed.data(), rowLength));
         }},
        {"divide/f64",
         [](Rows& r) {
             benchmark::DoNotOptimize(rows::divide(r.x.data(), 3.0, r.scaled.data(), rowLength));
         }},
        {"weightSums/f64",
         [](Rows& r) { benchmark::DoNotOptimize(rows::weightSums(r.weights.data(), rowLength)); }},
        {"allFinite/f64", [](Rows& r) { benchmark::DoNotOptimize(rows::allFinite(r.x.data(), rowLength)); }},
        {"rowHash/f64", [](Rows& r) { benchmark::DoNotOptimize(rows::rowHash(r.x.data(), rowLength)); }},
        {"roundToFloat/f64",
         [](Rows& r) {
             benchmark::DoNotOptimize(rows::roundToFloat(r.x.data(), r.scratch32.data(), rowLength));
         }},
        {"allowedRange/f32",
         [](Rows& r) {
             benchmark::DoNotOptimize(rows::allowedRange(r.x32.data(), r.allowed.data(), rowLength));
         }},
        {"divide/f32",
         [](Rows& r) { // divides in place: by 1, so the row stays the same from call to call
             benchmark::DoNotOptimize(
                 rows::divide(r.x32.data(), 1.0f, r.wide.data(), r.scaled.data(), rowLength));
         }},
        {"roundToFloatAndSum/f64",
         [](Rows& r) {
             benchmark::DoNotOptimize(
                 rows::roundToFloatAndSum(r.weights.data(), r.scratch32.data(), rowLength));
         }},
        {"widenAndSum/f32",
         [](Rows& r) {
             benchmark::DoNotOptimize(rows::widenAndSum(r.e32.data(), r.wide.data(), rowLength));
         }},
    };
    // The softmax numerators at τ = 1, which skips a division, and at another temperature.
    for (const float temperature : {1.0f, 0.7f}) {
        const std::string suffix = temperature == 1.0f ? "" : "/temperature";
        kernels.emplace_back("shiftedExp/f64" + suffix, [temperature](Rows& r) {
            benchmark::DoNotOptimize(rows::shiftedExp(r.x.data(), r.allowed.data(), r.range,
                                                      double(temperature), r.e.data(), rowLength));
        });
        kernels.emplace_back("shiftedExp/f32" + suffix, [temperature](Rows& r) {
            benchmark::DoNotOptimize(
                rows::shiftedExp(r.x32.data(), r.allowed.data(), 8.0f, temperature, r.e32.data(), rowLength));
        });
    }
    for (const auto& [name, kernel] : kernels) {
        benchmark::RegisterBenchmark(("BM_RowKernels/" + name).c_str(), [kernel = kernel](
                                                                            benchmark::State& state) {
            runKernel(state, kernel);
        })->Unit(benchmark::kNanosecond);
    }
}
