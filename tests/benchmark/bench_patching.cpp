// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_bench, activation patching (docs/performance.md) on bench_model.cpp's GPT-2-small-shaped checkpoint, in
// float32. The clean prompt is gpt2small::someIds(n); the corrupted one differs at two positions (n/4, n/2);
// the metric is logit[answer] − logit[wrong] at the last position.
//   BM_PatchHeads/f32/gpt2_small/n:16     the exact head_out grid (all 144 heads), the PatchingRun made
//                                         beforehand (target: ≤ 0.5 × PyTorch's 144 passes to the logits with
//                                         a hook patching one head's z, compare_peers.py --only patch).
//                                         Counters: setup_ms, the PatchingRun; vs_144_predicts, the grid over
//                                         144 of our own passes to the logits (BM_Predict's work)
//   BM_AttributionPatch/f32/gpt2_small/n:64
//                                         one PatchingRun, then the attribution grid of each of the nine
//                                         sites; vs_predict: its time over one BM_Predict pass timed in the
//                                         same benchmark (target ≤ 3)
//   BM_PatchResidPre/f32/gpt2_small/n:256 the exact resid_pre grid to the end, once, with progress. Counters:
//                                         cells, progress_calls, max_gap_ms (the longest stretch without a
//                                         progress call: what bounds a stop's latency)
//   BM_PatchStop/f32/gpt2_small/n:256     the same grid on a worker thread, stopped (progress returning
//                                         false) a different time after its start in each iteration; the
//                                         time is from the stop's request to qkv::Cancelled caught on the
//                                         worker (target ≤ 0.2 s). Counters: max_stop_ms, cells_done
// Registered only when the filter names them (Patch): the checkpoint takes 500 MB of disk.

#include "Error.h"
#include "Gpt2SmallCheckpoint.h"
#include "ModelRun.h"
#include "Patching.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using qkv::Index;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::shared_ptr<const qkv::Model> openModel()
{
    return std::make_shared<const qkv::Model>(qkv::Model::open(gpt2small::checkpointFolder()));
}

qkv::PatchPair patchPair(Index n)
{
    qkv::PatchPair pair;
    pair.clean = gpt2small::someIds(n);
    pair.corrupt = pair.clean;
    for (const Index position : {n / 4, n / 2})
        pair.corrupt[std::size_t(position)] = (pair.clean[std::size_t(position)] + 1234) % gpt2small::vocab;
    pair.answer = 1000;
    pair.wrong = 2000;
    return pair;
}

/// The median of five unmodified passes to the logits (BM_Predict's work), in seconds.
double predictSeconds(const std::shared_ptr<const qkv::Model>& model, Index n)
{
    const std::vector<std::int64_t> ids = gpt2small::someIds(n);
    std::vector<double> passes;
    for (int k = 0; k < 5; ++k) {
        const auto start = Clock::now();
        const qkv::ModelRun run(model, ids, qkv::Precision::Float32);
        benchmark::DoNotOptimize(run.clean().meanLoss);
        passes.push_back(secondsSince(start));
    }
    std::nth_element(passes.begin(), passes.begin() + 2, passes.end());
    return passes[2];
}

void BM_PatchHeads(benchmark::State& state, Index n)
{
    const std::shared_ptr<const qkv::Model> model = openModel();
    const double forward = predictSeconds(model, n);
    const auto setupStart = Clock::now();
    qkv::PatchingRun run(*model, patchPair(n), qkv::Precision::Float32);
    const double setup = secondsSince(setupStart);
    double patched = 0.0;
    for (auto _ : state) {
        const auto start = Clock::now();
        benchmark::DoNotOptimize(run.patch(qkv::PatchSite::HeadOut, qkv::PatchMethod::Exact).values.data());
        patched += secondsSince(start);
    }
    const double perGrid = patched / double(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["setup_ms"] = setup * 1e3;
    state.counters["forward_ms"] = forward * 1e3;
    state.counters["vs_144_predicts"] = perGrid / (double(gpt2small::layers * gpt2small::heads) * forward);
}

void BM_AttributionPatch(benchmark::State& state, Index n)
{
    const std::shared_ptr<const qkv::Model> model = openModel();
    const double forward = predictSeconds(model, n);
    const qkv::PatchPair pair = patchPair(n);
    double total = 0.0;
    for (auto _ : state) {
        const auto start = Clock::now();
        qkv::PatchingRun run(*model, pair, qkv::Precision::Float32);
        for (const qkv::PatchSite site : qkv::allPatchSites())
            benchmark::DoNotOptimize(run.patch(site, qkv::PatchMethod::Attribution).values.data());
        total += secondsSince(start);
    }
    state.counters["forward_ms"] = forward * 1e3;
    state.counters["vs_predict"] =
        total / double(std::max<benchmark::IterationCount>(1, state.iterations())) / forward;
}

void BM_PatchResidPre(benchmark::State& state, Index n)
{
    const std::shared_ptr<const qkv::Model> model = openModel();
    qkv::PatchingRun run(*model, patchPair(n), qkv::Precision::Float32);
    double longestGap = 0.0;
    Index calls = 0, cells = 0;
    for (auto _ : state) {
        auto last = Clock::now();
        const qkv::PatchProgress progress = [&](Index, Index) {
            longestGap = std::max(longestGap, secondsSince(last));
            last = Clock::now();
            ++calls;
            return true;
        };
        const qkv::PatchGrid grid =
            run.patch(qkv::PatchSite::ResidPre, qkv::PatchMethod::Exact, 0, -1, progress);
        longestGap = std::max(longestGap, secondsSince(last));
        cells = grid.done;
        if (grid.done != grid.cells())
            state.SkipWithError("the resid_pre grid finished with cells missing");
    }
    state.counters["cells"] = double(cells);
    state.counters["progress_calls"] =
        double(calls) / double(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["max_gap_ms"] = longestGap * 1e3;
}

/// Starts the resid_pre grid on a worker thread, asks it to stop `delay` seconds later (its progress then
/// returns false) and reports the seconds from that request to qkv::Cancelled caught on the worker.
struct StopMeasurement {
    double seconds = -1.0; ///< < 0: the grid finished, or threw something else, before the stop took effect
    Index cellsDone = 0;
};

StopMeasurement stopAfter(qkv::PatchingRun& run, double delay)
{
    std::atomic<bool> stopRequested{false};
    std::atomic<Clock::rep> requestedAt{0};
    StopMeasurement measured;
    std::thread worker([&] {
        const qkv::PatchProgress progress = [&](Index, Index) { return !stopRequested.load(); };
        qkv::PatchGrid partial;
        try {
            run.patch(qkv::PatchSite::ResidPre, qkv::PatchMethod::Exact, 0, -1, progress, &partial);
        } catch (const qkv::Cancelled&) {
            const Clock::time_point requested{Clock::duration(requestedAt.load())};
            measured.seconds = std::chrono::duration<double>(Clock::now() - requested).count();
            measured.cellsDone = partial.done;
        } catch (const qkv::Error&) {
        }
    });
    // The delay places the request at a different point of the grid in each iteration; it is not timed.
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    requestedAt = Clock::now().time_since_epoch().count();
    stopRequested = true;
    worker.join();
    return measured;
}

void BM_PatchStop(benchmark::State& state, Index n)
{
    const std::shared_ptr<const qkv::Model> model = openModel();
    qkv::PatchingRun run(*model, patchPair(n), qkv::Precision::Float32);
    double longest = 0.0;
    Index cellsDone = 0;
    int iteration = 0;
    for (auto _ : state) {
        const double delay = 0.1 + 0.23 * double(iteration++ % 7);
        const StopMeasurement measured = stopAfter(run, delay);
        if (measured.seconds < 0.0) {
            state.SkipWithError("the grid was not stopped by its progress returning false");
            break;
        }
        state.SetIterationTime(measured.seconds);
        longest = std::max(longest, measured.seconds);
        cellsDone = measured.cellsDone;
    }
    state.counters["max_stop_ms"] = longest * 1e3;
    state.counters["cells_done"] = double(cellsDone);
}

} // namespace

void registerPatchingBenchmarks()
{
    benchmark::RegisterBenchmark("BM_PatchHeads/f32/gpt2_small/n:16", BM_PatchHeads, Index(16))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_AttributionPatch/f32/gpt2_small/n:64", BM_AttributionPatch, Index(64))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_PatchResidPre/f32/gpt2_small/n:256", BM_PatchResidPre, Index(256))
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_PatchStop/f32/gpt2_small/n:256", BM_PatchStop, Index(256))
        ->Unit(benchmark::kMillisecond)
        ->Iterations(7)
        ->UseManualTime();
}
