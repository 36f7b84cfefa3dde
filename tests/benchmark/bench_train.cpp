// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_bench, training (docs/training.md): one optimizer step (forward, backward, AdamW) in float32.
//   BM_TrainStep/f32/induction   the default induction recipe's model, batch and sequence length
//   BM_TrainStep/f32/gpt2_tiny   4 layers, d_model 256, 8 heads, an MLP, 256 tokens, batch 8, 256 tokens
//                                of vocabulary
// Items per second are sequences; train_peers.py times PyTorch on the same models.

#include "Network.h"
#include "Optimizer.h"
#include "Tasks.h"
#include "Trainer.h"

#include <benchmark/benchmark.h>

namespace {

using namespace qkv::training;

void trainSteps(benchmark::State& state, const Architecture& a, const Batch& batch, double lr)
{
    const Layout layout = layoutOf(a);
    Tensors<float> parameters = initialParameters<float>(a, layout, 1), gradients;
    OptimizerSettings settings;
    settings.learningRate = lr;
    Optimizer<float> optimizer(settings, layout);
    Network<float> network(a, layout);
    // One step first: the buffers' first touch is not part of a step's cost.
    network.forward(parameters, batch);
    network.backward(parameters, gradients);
    optimizer.step(parameters, gradients);
    for (auto _ : state) {
        benchmark::DoNotOptimize(network.forward(parameters, batch));
        network.backward(parameters, gradients);
        optimizer.step(parameters, gradients);
    }
    state.SetItemsProcessed(state.iterations() * std::int64_t(batch.size()));
}

void BM_TrainStepInduction(benchmark::State& state)
{
    const Recipe recipe = defaultRecipe(TaskKind::Induction);
    const Task task(TaskSettings{});
    Architecture a = recipe.architecture;
    a.vocabSize = task.modelVocab();
    a.maxPositions = task.sequenceLength();
    Batch batch;
    for (qkv::Index i = 0; i < recipe.batch; ++i)
        batch.push_back(task.trainingSequence(1, 1, i));
    trainSteps(state, a, batch, recipe.learningRate);
}

void BM_TrainStepGpt2Tiny(benchmark::State& state)
{
    Architecture a;
    a.layers = 4;
    a.hiddenSize = 256;
    a.heads = a.kvHeads = 8;
    a.headDim = 32;
    a.intermediateSize = 1024;
    a.vocabSize = 256;
    a.maxPositions = 256;
    Batch batch;
    std::uint64_t x = 1;
    for (int b = 0; b < 8; ++b) {
        std::vector<std::int64_t> ids;
        for (int i = 0; i < 256; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            ids.push_back(std::int64_t(x >> 56));
        }
        batch.push_back(ids);
    }
    trainSteps(state, a, batch, 1e-3);
}

BENCHMARK(BM_TrainStepInduction)
    ->Name("BM_TrainStep/f32/induction")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TrainStepGpt2Tiny)
    ->Name("BM_TrainStep/f32/gpt2_tiny")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

} // namespace
