// qkv_bench: how close the full attention pipeline comes to the matrix products it cannot avoid.
//
// For every case it times
//   BM_Pipeline/<normalizer>/n:<n>   qkv::computeAttention(session, result), reusing `result`
//   BM_BareProducts/n:<n>            the same products done directly in Eigen into preallocated outputs:
//                                    Q = X W_Q, K = X W_K, V = X W_V, S = Q Kᵀ, O = A V per head, and
//                                    concat · W_O when the session has W_O
// and after the run prints a table of pipeline / bare for every case and of each normalizer / softmax.
//
// Cases: n ∈ {64, 256, 1024, 2048} with d_model = 512 and one head of d_k = d_v = 512 (no W_O), and a
// GPT-2-small-sized layer (n = 1024, d_model = 768, 12 heads of 64, W_O 768 × 768). Bidirectional mask,
// dot score, √d_k scale, τ = 1.
//
// Build in Release and run by hand:  build/bench/tests/benchmark/qkv_bench
// Unless --benchmark_min_time is given, 0.5 s is used. With --benchmark_repetitions=N the table uses the
// fastest repetition of each benchmark (the machine is shared; the minimum is the least noisy estimate).
// Everything here is single-threaded, so where the wall clock ran well ahead of the process's CPU clock
// (other processes had the core) the targets are judged on CPU time instead; the table says which.

#include "AttentionEngine.h"
#include "Initializers.h"
#include "Session.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace {

using qkv::Index;
using qkv::Matrix;

struct Shape {
    std::string label; ///< "n:1024" or "gpt2_small"
    Index n = 0;
    Index dModel = 0;
    int heads = 1;
    Index dK = 0;
    Index dV = 0;
    bool withOutputProjection = false;
};

struct NormalizerCase {
    std::string label;
    qkv::NormalizerSpec spec;
};

const std::vector<Shape>& shapes()
{
    static const std::vector<Shape> all = {
        {"n:64", 64, 512, 1, 512, 512, false},       {"n:256", 256, 512, 1, 512, 512, false},
        {"n:1024", 1024, 512, 1, 512, 512, false},   {"n:2048", 2048, 512, 1, 512, 512, false},
        {"gpt2_small", 1024, 768, 12, 64, 64, true},
    };
    return all;
}

const std::vector<NormalizerCase>& normalizers()
{
    static const std::vector<NormalizerCase> all = {
        {"softmax", {qkv::NormalizerType::Softmax, 1.5}},
        {"sparsemax", {qkv::NormalizerType::Sparsemax, 1.5}},
        {"entmax1.5", {qkv::NormalizerType::Entmax, 1.5}},
        {"entmax1.3", {qkv::NormalizerType::Entmax, 1.3}},
        {"sigmoid", {qkv::NormalizerType::Sigmoid, 1.5}},
        {"hardmax", {qkv::NormalizerType::Hardmax, 1.5}},
    };
    return all;
}

bool isSparse(const std::string& normalizer)
{
    return normalizer == "sparsemax" || normalizer.rfind("entmax", 0) == 0;
}

std::string pipelineName(const Shape& shape, const NormalizerCase& normalizer)
{
    // Single-head cases: BM_Pipeline/softmax/n:1024; the GPT-2 layer: BM_Pipeline/gpt2_small/softmax.
    if (shape.label.rfind("n:", 0) == 0) {
        return "BM_Pipeline/" + normalizer.label + "/" + shape.label;
    }
    return "BM_Pipeline/" + shape.label + "/" + normalizer.label;
}

std::string bareName(const Shape& shape)
{
    return "BM_BareProducts/" + shape.label;
}

qkv::Matrix initialize(qkv::Initializer kind, std::uint64_t seed, Index rows, Index cols)
{
    qkv::InitializerSpec spec;
    spec.kind = kind;
    spec.scale = 1.0;
    spec.seed = seed;
    return qkv::initializeMatrix(spec, rows, cols);
}

/// The session of a shape (softmax; the caller sets the normalizer). Fixed seeds: X from seed 1, head h's
/// W_Q, W_K, W_V from seeds 100 + 3h, 101 + 3h, 102 + 3h, W_O from seed 7.
qkv::Session makeSession(const Shape& shape)
{
    qkv::Session session;
    session.title = "benchmark " + shape.label;
    session.X = initialize(qkv::Initializer::Normal, 1, shape.n, shape.dModel);
    session.tokens.reserve(static_cast<std::size_t>(shape.n));
    for (Index i = 0; i < shape.n; ++i) {
        session.tokens.push_back("t" + std::to_string(i));
    }
    session.pad.assign(static_cast<std::size_t>(shape.n), false);
    for (int h = 0; h < shape.heads; ++h) {
        const auto base = static_cast<std::uint64_t>(100 + 3 * h);
        qkv::Head head;
        head.W_Q = initialize(qkv::Initializer::XavierNormal, base, shape.dModel, shape.dK);
        head.W_K = initialize(qkv::Initializer::XavierNormal, base + 1, shape.dModel, shape.dK);
        head.W_V = initialize(qkv::Initializer::XavierNormal, base + 2, shape.dModel, shape.dV);
        session.heads.push_back(std::move(head));
    }
    if (shape.withOutputProjection) {
        const Index width = shape.heads * shape.dV;
        session.W_O = initialize(qkv::Initializer::XavierNormal, 7, width, shape.dModel);
    }
    session.score = qkv::ScoreFunction::Dot;
    session.scale = qkv::Scale{qkv::Scale::Kind::SqrtDk, 1.0};
    session.temperature = 1.0;
    session.mask.type = qkv::MaskType::None;
    return session;
}

/// One session per shape, built on first use and kept (the largest is about 15 MB).
qkv::Session& sessionFor(const Shape& shape)
{
    static std::map<std::string, std::unique_ptr<qkv::Session>> cache;
    auto& slot = cache[shape.label];
    if (!slot) {
        slot = std::make_unique<qkv::Session>(makeSession(shape));
    }
    return *slot;
}

void runPipeline(benchmark::State& state, const Shape& shape, const NormalizerCase& normalizer)
{
    qkv::Session& session = sessionFor(shape);
    session.normalizer = normalizer.spec;
    qkv::AttentionResult result;
    try {
        qkv::computeAttention(session, result); // warm-up: allocates every buffer once
    } catch (const std::exception& error) {
        state.SkipWithError(error.what());
        return;
    }
    for (auto _ : state) {
        qkv::computeAttention(session, result);
        benchmark::DoNotOptimize(result.output.data());
        benchmark::ClobberMemory();
    }
    state.counters["n"] = static_cast<double>(shape.n);
}

/// The products of the pipeline, nothing else, into preallocated outputs.
void runBareProducts(benchmark::State& state, const Shape& shape)
{
    const qkv::Session& session = sessionFor(shape);
    const Index n = shape.n;
    const int heads = shape.heads;
    std::vector<Matrix> Q(static_cast<std::size_t>(heads), Matrix(n, shape.dK));
    std::vector<Matrix> K(static_cast<std::size_t>(heads), Matrix(n, shape.dK));
    std::vector<Matrix> V(static_cast<std::size_t>(heads), Matrix(n, shape.dV));
    Matrix S(n, n);
    // Any row-stochastic matrix times the same as the real weights: dense products do not look at values.
    const Matrix A = Matrix::Constant(n, n, 1.0 / static_cast<double>(n));
    Matrix concat(n, heads * shape.dV);
    Matrix output(n, shape.withOutputProjection ? session.W_O->cols() : 0);

    auto products = [&] {
        for (int h = 0; h < heads; ++h) {
            const auto hs = static_cast<std::size_t>(h);
            const qkv::Head& head = session.heads[hs];
            Q[hs].noalias() = session.X * head.W_Q;
            K[hs].noalias() = session.X * head.W_K;
            V[hs].noalias() = session.X * head.W_V;
            S.noalias() = Q[hs] * K[hs].transpose();
            benchmark::DoNotOptimize(S.data());
            // O_h = A V_h, written straight into its columns of the concatenation.
            concat.middleCols(h * shape.dV, shape.dV).noalias() = A * V[hs];
        }
        if (shape.withOutputProjection) {
            output.noalias() = concat * *session.W_O;
        }
    };

    products(); // warm-up, as for the pipeline
    for (auto _ : state) {
        products();
        benchmark::DoNotOptimize(concat.data());
        benchmark::DoNotOptimize(output.data());
        benchmark::ClobberMemory();
    }
    state.counters["n"] = static_cast<double>(n);
}

/// The console output as usual, plus the per-iteration real and CPU time of every benchmark (the fastest
/// repetition of each) for the ratio table printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& reports) override
    {
        ConsoleReporter::ReportRuns(reports);
        for (const Run& run : reports) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred || run.iterations <= 0) {
                continue;
            }
            const double iterations = static_cast<double>(run.iterations);
            const Timing timing{run.real_accumulated_time / iterations,
                                run.cpu_accumulated_time / iterations};
            const std::string& name = run.run_name.function_name;
            auto found = m_timings.find(name);
            if (found == m_timings.end()) {
                m_timings[name] = timing;
            } else {
                found->second.real = std::min(found->second.real, timing.real);
                found->second.cpu = std::min(found->second.cpu, timing.cpu);
            }
        }
    }

    void printRatioTable(std::ostream& out) const
    {
        char line[256];
        out << "\nRatio table (time per iteration, fastest repetition; real = wall clock, cpu = process "
               "CPU)\n";
        out << "Targets: softmax pipeline/bare <= 1.30; sparsemax/entmax pipeline <= 3.00 x softmax "
               "pipeline\n\n";
        std::snprintf(line, sizeof line, "%-11s %-10s %11s %11s %8s %8s %8s %8s  %s\n", "case", "normalizer",
                      "pipeline ms", "bare ms", "p/bare", "p/bare", "vs soft", "vs soft", "target");
        out << line;
        std::snprintf(line, sizeof line, "%-11s %-10s %11s %11s %8s %8s %8s %8s\n", "", "", "(real)",
                      "(real)", "real", "cpu", "real", "cpu");
        out << line;
        out << std::string(100, '-') << "\n";
        bool busy = false;
        for (const Shape& shape : shapes()) {
            const Timing bare = lookup(bareName(shape));
            const Timing softmax = lookup(pipelineName(shape, normalizers().front()));
            for (const NormalizerCase& normalizer : normalizers()) {
                const Timing pipeline = lookup(pipelineName(shape, normalizer));
                if (pipeline.real < 0.0) {
                    continue; // filtered out or failed
                }
                // Single-threaded code: when the wall clock ran well ahead of the CPU clock, other processes
                // had the core, and the CPU-time ratios are the ones to judge by.
                const bool rowBusy = pipeline.cpu < 0.9 * pipeline.real || bare.cpu < 0.9 * bare.real ||
                                     softmax.cpu < 0.9 * softmax.real;
                busy = busy || rowBusy;
                const double overBare = ratio(pipeline.real, bare.real);
                const double overSoftmax = ratio(pipeline.real, softmax.real);
                const double judgedOverBare = rowBusy ? ratio(pipeline.cpu, bare.cpu) : overBare;
                const double judgedOverSoftmax = rowBusy ? ratio(pipeline.cpu, softmax.cpu) : overSoftmax;
                const std::string clock = rowBusy ? " [cpu]" : " [real]";
                std::string verdict;
                if (normalizer.label == "softmax" && judgedOverBare >= 0.0) {
                    verdict = (judgedOverBare <= 1.3 ? "ok" : "MISS (>1.3x bare)") + clock;
                } else if (isSparse(normalizer.label) && judgedOverSoftmax >= 0.0) {
                    verdict = (judgedOverSoftmax <= 3.0 ? "ok" : "MISS (>3x softmax)") + clock;
                }
                std::snprintf(line, sizeof line, "%-11s %-10s %11s %11s %8s %8s %8s %8s  %s\n",
                              shape.label.c_str(), normalizer.label.c_str(),
                              number(pipeline.real * 1e3, 3).c_str(), number(bare.real * 1e3, 3).c_str(),
                              number(overBare, 2).c_str(), number(ratio(pipeline.cpu, bare.cpu), 2).c_str(),
                              number(overSoftmax, 2).c_str(),
                              number(ratio(pipeline.cpu, softmax.cpu), 2).c_str(), verdict.c_str());
                out << line;
            }
        }
        if (busy) {
            out << "\nNote: for rows marked [cpu] the CPU time was below 90% of the wall-clock time (other "
                   "processes\n"
                   "had the core), so the target is judged on the CPU-time ratios; the real-time ones are "
                   "noisy.\n";
        }
        out.flush();
    }

private:
    struct Timing {
        double real = -1.0; ///< seconds per iteration
        double cpu = -1.0;
    };

    Timing lookup(const std::string& name) const
    {
        const auto found = m_timings.find(name);
        return found == m_timings.end() ? Timing{} : found->second;
    }

    static double ratio(double numerator, double denominator)
    {
        return numerator >= 0.0 && denominator > 0.0 ? numerator / denominator : -1.0;
    }

    static std::string number(double value, int decimals)
    {
        if (value < 0.0) {
            return "-";
        }
        char text[64];
        std::snprintf(text, sizeof text, "%.*f", decimals, value);
        return text;
    }

    std::map<std::string, Timing> m_timings;
};

void registerBenchmarks()
{
    for (const Shape& shape : shapes()) {
        benchmark::RegisterBenchmark(bareName(shape).c_str(),
                                     [&shape](benchmark::State& state) { runBareProducts(state, shape); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        for (const NormalizerCase& normalizer : normalizers()) {
            benchmark::RegisterBenchmark(
                pipelineName(shape, normalizer).c_str(),
                [&shape, &normalizer](benchmark::State& state) { runPipeline(state, shape, normalizer); })
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
    }
}

} // namespace

int main(int argc, char** argv)
{
    // Default --benchmark_min_time=0.5 unless the caller chose one (keeps a full run to a few minutes).
    std::vector<char*> args(argv, argv + argc);
    bool minTimeGiven = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--benchmark_min_time", 20) == 0) {
            minTimeGiven = true;
        }
    }
    static char defaultMinTime[] = "--benchmark_min_time=0.5";
    if (!minTimeGiven) {
        args.insert(args.begin() + 1, defaultMinTime);
    }
    int count = static_cast<int>(args.size());
    args.push_back(nullptr);

    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
        return 1;
    }
    registerBenchmarks();

    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.printRatioTable(reporter.GetOutputStream());
    benchmark::Shutdown();
    return 0;
}
