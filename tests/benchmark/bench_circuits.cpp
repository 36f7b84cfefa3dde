// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_bench's circuit benchmarks, on the GPT-2-small-shaped checkpoint of bench_model.cpp
// (docs/performance.md):
//   BM_CompositionScores/f32/gpt2_small   the Q-, K- and V-composition scores of every pair of heads in
//                                         different layers, from the float32 weights (read before timing).
//                                         circuits_peers.py compares it with PyTorch doing TransformerLens's
//                                         computation (target ≤ 0.2, and ≤ 3 s).
//   BM_Circuits/f64/gpt2_small/n:64       what `qkvlab circuits` computes for one head (layer 5, head 3) with
//                                         64 token ids: both spectra, the full OV circuit's eigenvalues, the
//                                         composition into the head, the QK table and the OV circuit's top 5
//                                         tokens for each id (target ≤ one BM_Predict/f32/gpt2_small/n:64).
// Registered only when the filter names them (Circuits or Composition): the checkpoint takes 500 MB of disk.

#include "Circuits.h"
#include "Composition.h"
#include "Gpt2SmallCheckpoint.h"
#include "Model.h"
#include "TrainingModel.h"

#include <benchmark/benchmark.h>

namespace {

using qkv::Index;

void BM_CompositionScores(benchmark::State& state)
{
    const qkv::Model model = qkv::Model::open(gpt2small::checkpointFolder());
    const auto weights = qkv::training::sharedWeights<float>(model);
    for (auto _ : state)
        benchmark::DoNotOptimize(qkv::compositionScores(*weights).query.data());
}

void BM_Circuits(benchmark::State& state, Index n)
{
    const qkv::Model model = qkv::Model::open(gpt2small::checkpointFolder());
    const qkv::ModelCircuits circuits(model);
    const std::vector<std::int64_t> ids = gpt2small::someIds(n);
    const Index layer = 5, head = 3;
    for (auto _ : state) {
        const qkv::CircuitSpectra spectra = qkv::circuitSpectra(circuits.head(layer, head));
        const qkv::Matrix toLogits = circuits.outputToLogits(layer, head);
        const qkv::FullOvCircuit full = circuits.fullOv(layer, head, &toLogits);
        const qkv::CompositionScores composition = qkv::compositionScores(circuits.weights(), layer, head);
        const qkv::Matrix table = circuits.tokenQk(layer, head, ids);
        const auto tops = circuits.ovTop(layer, head, ids, 5, &toLogits);
        benchmark::DoNotOptimize(spectra.qk.frobenius + full.copyingScore + composition.key[0] + table(0, 0) +
                                 tops[0][0].value);
    }
}

} // namespace

void registerCircuitBenchmarks()
{
    benchmark::RegisterBenchmark("BM_CompositionScores/f32/gpt2_small", BM_CompositionScores)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_Circuits/f64/gpt2_small/n:64", BM_Circuits, Index(64))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
}
