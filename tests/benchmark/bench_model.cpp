// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_bench, the model layer (docs/models.md): a GPT-2-small-shaped checkpoint (124M parameters, random, F32,
// written once to a temporary folder on first use and removed at exit):
//   BM_ModelOpen             Model::open: config.json, the safetensors header, every tensor checked against
//                            the config (target ≤ 0.5 s: the weights are memory-mapped, not read)
//   BM_ModelForward/N        the whole forward pass for N tokens through all 12 layers (residualBeforeLayer
//                            with layer = 12), reading and converting the weights it uses each time
//   BM_ModelProducts/N       the same pass's matrix products alone, on operands made beforehand (target:
//                            forward ≤ 2 × products)
//   BM_ModelForward/f32/N, BM_ModelProducts/f32/N   the same in float32 (the pass a float32 session runs)
// N ∈ {64, 512}.
//   BM_Predict/f32/gpt2_small/n:N      the forward pass to the logits of N token ids (a ModelRun made, the
//                                      model open): every layer, the final norm, the unembedding, the
//                                      next-token distributions and the loss (target: no slower than PyTorch
//                                      float32 doing the same work, compare_peers.py), N ∈ {64, 256, 1024};
//                                      GFLOP/s counts the pass's products
//   BM_AblationSweep/f32/gpt2_small/n:64   ModelRun::ablationSweep (zero, loss) over all 144 heads, the
//                                      unmodified run made beforehand; `vs_144_forwards` is its time over 144
//                                      unmodified passes to the logits timed in the same benchmark (target
//                                      ≤ 0.6: the cached lower layers are reused)
// Registered only when the filter names them (--benchmark_filter with Model, Predict or AblationSweep): the
// checkpoint takes 500 MB of disk and a few seconds to write.

#include "Gpt2SmallCheckpoint.h"
#include "MatrixProduct.h"
#include "ModelRun.h"
#include "ModelSession.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

/// The folder to remove at exit. A global, constructed before main(), so that it is destroyed after the
/// handler registered with std::atexit has run (a function's static, constructed later, would be gone by
/// then).
static std::filesystem::path folderToRemove;

const std::string& gpt2small::checkpointFolder()
{
    static const std::string folder = [] {
        const std::filesystem::path path =
            std::filesystem::temp_directory_path() / ("qkv_bench_gpt2_" + std::to_string(::getpid()));
        folderToRemove = path;
        std::atexit([] { std::filesystem::remove_all(folderToRemove); });
        writeCheckpoint(path);
        return path.string();
    }();
    return folder;
}

namespace {

using qkv::Index;
using qkv::Matrix;
using namespace gpt2small;

void BM_ModelOpen(benchmark::State& state)
{
    const std::string& folder = checkpointFolder();
    for (auto _ : state)
        benchmark::DoNotOptimize(qkv::Model::open(folder));
}

template <qkv::Precision precision> void BM_ModelForward(benchmark::State& state)
{
    const qkv::Model model = qkv::Model::open(checkpointFolder());
    const std::vector<std::int64_t> ids = someIds(state.range(0));
    qkv::residualBeforeLayer(model, ids, 1, precision); // the weights read once, outside the timing
    for (auto _ : state)
        benchmark::DoNotOptimize(qkv::residualBeforeLayer(model, ids, layers, precision));
}

template <typename Scalar> void BM_ModelProducts(benchmark::State& state)
{
    using Values = qkv::MatrixOf<Scalar>;
    const Index n = state.range(0);
    const Values x = Values::Random(n, dModel), wAttn = Values::Random(dModel, 3 * dModel),
                 wProj = Values::Random(dModel, dModel), wFc = Values::Random(dModel, inner),
                 wOut = Values::Random(inner, dModel), q = Values::Random(n, headDim),
                 k = Values::Random(n, headDim), hidden = Values::Random(n, inner);
    Values qkvOut(n, 3 * dModel), scores(n, n), head(n, headDim), proj(n, dModel), fc(n, inner),
        out(n, dModel);
    for (auto _ : state) {
        for (Index l = 0; l < layers; ++l) {
            qkv::multiply<Scalar>(x, wAttn, qkvOut);
            for (Index h = 0; h < heads; ++h) {
                qkv::multiply<Scalar>(q, k, scores, qkv::Operand::Transposed);
                qkv::multiply<Scalar>(scores, k, head);
            }
            qkv::multiply<Scalar>(x, wProj, proj);
            qkv::multiply<Scalar>(x, wFc, fc);
            qkv::multiply<Scalar>(hidden, wOut, out);
        }
        benchmark::DoNotOptimize(out.data());
    }
}

/// The products of the forward pass to the logits for n tokens (a multiply-add counted as two): per layer
/// X·W_attn, every head's Q·Kᵀ and A·V, concat·W_O and the MLP's two products; then the unembedding.
double predictFlops(Index n)
{
    const double t = double(n), d = double(dModel);
    const double perLayer = 2 * t * d * 3 * d + double(heads) * 2 * (2 * t * t * double(headDim)) +
                            2 * t * d * d + 2 * 2 * t * d * inner;
    return double(layers) * perLayer + 2 * t * d * double(vocab);
}

std::shared_ptr<const qkv::Model> openModel()
{
    return std::make_shared<const qkv::Model>(qkv::Model::open(checkpointFolder()));
}

void BM_Predict(benchmark::State& state, Index n)
{
    const std::shared_ptr<const qkv::Model> model = openModel();
    const std::vector<std::int64_t> ids = someIds(n);
    qkv::ModelRun(model, {1}, qkv::Precision::Float32); // the weights read once, as a peer loads its model
    for (auto _ : state) {
        const qkv::ModelRun run(model, ids, qkv::Precision::Float32);
        benchmark::DoNotOptimize(run.clean().meanLoss);
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(predictFlops(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AblationSweep(benchmark::State& state, Index n)
{
    using Clock = std::chrono::steady_clock;
    const std::shared_ptr<const qkv::Model> model = openModel();
    const std::vector<std::int64_t> ids = someIds(n);
    // One unmodified pass to the logits, the median of five, for the ratio.
    std::vector<double> forward;
    for (int k = 0; k < 5; ++k) {
        const auto start = Clock::now();
        const qkv::ModelRun once(model, ids, qkv::Precision::Float32);
        benchmark::DoNotOptimize(once.clean().meanLoss);
        forward.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    std::nth_element(forward.begin(), forward.begin() + 2, forward.end());
    const qkv::ModelRun run(model, ids, qkv::Precision::Float32);
    qkv::SweepMetric metric;
    metric.kind = qkv::SweepMetric::Kind::Loss;
    double swept = 0.0;
    for (auto _ : state) {
        const auto start = Clock::now();
        benchmark::DoNotOptimize(run.ablationSweep(qkv::HeadIntervention::Kind::Zero, metric).data());
        swept += std::chrono::duration<double>(Clock::now() - start).count();
    }
    const double perSweep = swept / double(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["vs_144_forwards"] = perSweep / (double(layers * heads) * forward[2]);
    state.counters["forward_ms"] = forward[2] * 1e3;
}

} // namespace

void registerModelBenchmarks()
{
    benchmark::RegisterBenchmark("BM_ModelOpen", BM_ModelOpen)->Unit(benchmark::kMillisecond)->UseRealTime();
    for (const auto& [name, function] :
         {std::pair{"BM_ModelForward", BM_ModelForward<qkv::Precision::Float64>},
          std::pair{"BM_ModelProducts", BM_ModelProducts<double>},
          std::pair{"BM_ModelForward/f32", BM_ModelForward<qkv::Precision::Float32>},
          std::pair{"BM_ModelProducts/f32", BM_ModelProducts<float>}})
        benchmark::RegisterBenchmark(name, function)
            ->Arg(64)
            ->Arg(512)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    for (const Index n : {64, 256, 1024})
        benchmark::RegisterBenchmark(("BM_Predict/f32/gpt2_small/n:" + std::to_string(n)).c_str(), BM_Predict,
                                     n)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    benchmark::RegisterBenchmark("BM_AblationSweep/f32/gpt2_small/n:64", BM_AblationSweep, Index(64))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
}
