// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_bench: how close the full attention pipeline comes to the matrix products it cannot avoid, and to the
// speed of one large product, in float64 and float32.
//
// For every case and precision (f64, f32) it times
//   BM_Pipeline/<precision>/<normalizer>/n:<n>   qkv::computeAttention(session, result), reusing `result`
//   BM_BareProducts/<precision>/n:<n>            the same products through the engine's own product routine
//                                                (qkv::multiply: OpenBLAS, split over the engine's threads)
//                                                into preallocated outputs: Q = X W_Q, K = X W_K, V = X W_V,
//                                                S = Q Kᵀ, O = A V per head, and concat · W_O when the
//                                                session has W_O
//   BM_GemmPeak/<precision>                      one 1024 × 1024 × 1024 product the same way: the speed the
//                                                engine's products can reach on this machine
// and after the run prints two tables: per case the time, GFLOP/s and share of the GEMM peak of the softmax
// pipeline in each precision with its pipeline / bare ratio; and pipeline / bare and normalizer / softmax
// for every normalizer.
//
// Cases: n ∈ {64, 256, 1024, 2048} with d_model = 512 and one head of d_k = d_v = 512 (no W_O), and a
// GPT-2-small-sized layer (n = 1024, d_model = 768, 12 heads of 64, W_O 768 × 768). Bidirectional mask,
// dot score, √d_k scale, τ = 1.
//
// Build in Release and run by hand:  build/bench/tests/benchmark/qkv_bench
// Unless --benchmark_min_time is given, 0.5 s is used. With --benchmark_repetitions=N the tables use the
// fastest repetition of each benchmark (the machine is shared; the minimum is the least noisy estimate).
// --qkv_competing_load keeps one core busy with a spinning child process for the whole run, to measure
// what the engine's threads cost when another program wants the CPU (compare QKV_THREADS=1 with the default).
// With --benchmark_format=json the tables go to stderr, so stdout stays machine-readable (csv is not offered:
// Google Benchmark deprecated it).
//
// The engine runs on several threads, so the CPU time shown is the whole process's (MeasureProcessCPUTime):
// cpu / real is the number of cores it kept busy. Each benchmark also records `others_load`, the share of
// the machine's cores that other processes used while it ran (from /proc/stat), so a noisy row is visible.

#include "AttentionEngine.h"
#include "BenchmarkMatrices.h"
#include "Initializers.h"
#include "MatrixProduct.h"
#include "Parallel.h"
#include "RowKernels.h"
#include "Session.h"

#include <benchmark/benchmark.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace {

using qkv::Index;
using qkv::Matrix;
using qkv::MatrixOf;

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

struct PrecisionCase {
    std::string label; ///< "f64" or "f32", as in the benchmark names
    qkv::Precision precision;
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

const std::vector<PrecisionCase>& precisions()
{
    static const std::vector<PrecisionCase> all = {
        {"f64", qkv::Precision::Float64},
        {"f32", qkv::Precision::Float32},
    };
    return all;
}

/// Side of the square product that serves as the GEMM peak: large enough for OpenBLAS to reach full speed,
/// small enough to stay a fraction of a second.
constexpr Index peakSide = 1024;

bool isSparse(const std::string& normalizer)
{
    return normalizer == "sparsemax" || normalizer.rfind("entmax", 0) == 0;
}

std::string pipelineName(const PrecisionCase& precision, const Shape& shape, const NormalizerCase& normalizer)
{
    // Single-head cases: BM_Pipeline/f32/softmax/n:1024; the GPT-2 layer: BM_Pipeline/f32/gpt2_small/softmax.
    const std::string prefix = "BM_Pipeline/" + precision.label + "/";
    if (shape.label.rfind("n:", 0) == 0) {
        return prefix + normalizer.label + "/" + shape.label;
    }
    return prefix + shape.label + "/" + normalizer.label;
}

std::string bareName(const PrecisionCase& precision, const Shape& shape)
{
    return "BM_BareProducts/" + precision.label + "/" + shape.label;
}

std::string peakName(const PrecisionCase& precision)
{
    return "BM_GemmPeak/" + precision.label;
}

/// Floating-point operations of the products of a shape, a multiply-add counted as two: per head
/// X·W_Q, X·W_K, X·W_V (2·n·d_model·(2·d_k + d_v)), Q·Kᵀ (2·n²·d_k) and A·V (2·n²·d_v), plus concat·W_O.
/// For one head of d = d_model = d_k = d_v this is 6·n·d² + 4·n²·d. The normalizer's work is not counted:
/// GFLOP/s says how close the pipeline comes to spending all its time in products.
double productFlops(const Shape& shape)
{
    const double n = static_cast<double>(shape.n);
    const double dModel = static_cast<double>(shape.dModel);
    const double dK = static_cast<double>(shape.dK);
    const double dV = static_cast<double>(shape.dV);
    const double perHead = 2.0 * n * dModel * (2.0 * dK + dV) + 2.0 * n * n * dK + 2.0 * n * n * dV;
    const double outputProjection = shape.withOutputProjection ? 2.0 * n * (shape.heads * dV) * dModel : 0.0;
    return shape.heads * perHead + outputProjection;
}

double peakFlops()
{
    const double side = static_cast<double>(peakSide);
    return 2.0 * side * side * side;
}

/// The session of a shape (softmax, float64; the caller sets normalizer and precision). Fixed seeds: X from
/// seed 1, head h's W_Q, W_K, W_V from seeds 100 + 3h, 101 + 3h, 102 + 3h, W_O from seed 7.
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

/// CPU time used on the whole machine and by this process, to tell how much of the machine other processes
/// took while a benchmark ran.
struct CpuUse {
    double machineBusySeconds =
        0.0;                 ///< all cores, every process (/proc/stat: everything but idle and iowait)
    double ownSeconds = 0.0; ///< this process, all its threads
    std::chrono::steady_clock::time_point when;

    static CpuUse now()
    {
        CpuUse use;
        use.when = std::chrono::steady_clock::now();
        std::ifstream stat("/proc/stat");
        std::string cpu;
        unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                           steal = 0;
        if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) {
            const double ticksPerSecond = static_cast<double>(sysconf(_SC_CLK_TCK));
            use.machineBusySeconds =
                static_cast<double>(user + nice + system + irq + softirq + steal) / ticksPerSecond;
        }
        rusage own{};
        getrusage(RUSAGE_SELF, &own);
        auto seconds = [](const timeval& t) {
            return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
        };
        use.ownSeconds = seconds(own.ru_utime) + seconds(own.ru_stime);
        return use;
    }
};

/// Runs the timing loop of `state` around `body` and records, as counters, the GFLOP/s of `flops` per
/// iteration and `others_load`: the share of all cores that other processes used meanwhile (0 = the machine
/// was ours, 0.5 = one of two cores was taken).
template <typename Body> void timeLoop(benchmark::State& state, double flops, Body&& body)
{
    const CpuUse before = CpuUse::now();
    for (auto _ : state) {
        body();
        benchmark::ClobberMemory();
    }
    const CpuUse after = CpuUse::now();
    const double wall = std::chrono::duration<double>(after.when - before.when).count();
    const double cores = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    const double others =
        (after.machineBusySeconds - before.machineBusySeconds) - (after.ownSeconds - before.ownSeconds);
    state.counters["others_load"] = wall > 0.0 ? std::clamp(others / (cores * wall), 0.0, 1.0) : 0.0;
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void runPipeline(benchmark::State& state, const PrecisionCase& precision, const Shape& shape,
                 const NormalizerCase& normalizer)
{
    qkv::Session& session = sessionFor(shape);
    session.normalizer = normalizer.spec;
    session.precision = precision.precision;
    qkv::AttentionResult result;
    try {
        qkv::computeAttention(session, result); // warm-up: allocates every buffer once
    } catch (const std::exception& error) {
        state.SkipWithError(error.what());
        return;
    }
    timeLoop(state, productFlops(shape), [&] {
        qkv::computeAttention(session, result);
        benchmark::DoNotOptimize(result.output.data());
    });
}

/// The products of the pipeline, nothing else, in `Scalar`, into preallocated outputs.
template <typename Scalar> void runBareProducts(benchmark::State& state, const Shape& shape)
{
    using Values = MatrixOf<Scalar>;
    const qkv::Session& session = sessionFor(shape);
    const Index n = shape.n;
    const auto heads = static_cast<std::size_t>(shape.heads);
    // The inputs already in Scalar: rounding them is the pipeline's work, not the products'.
    const Values X = session.X.cast<Scalar>();
    std::vector<Values> W_Q, W_K, W_V;
    for (const qkv::Head& head : session.heads) {
        W_Q.push_back(head.W_Q.cast<Scalar>());
        W_K.push_back(head.W_K.cast<Scalar>());
        W_V.push_back(head.W_V.cast<Scalar>());
    }
    const Values W_O = shape.withOutputProjection ? Values(session.W_O->cast<Scalar>()) : Values();
    std::vector<Values> Q(heads, Values(n, shape.dK));
    std::vector<Values> K(heads, Values(n, shape.dK));
    std::vector<Values> V(heads, Values(n, shape.dV));
    Values S(n, n);
    // Any row-stochastic matrix takes the same time as the real weights: dense products do not look at
    // values.
    const Values A = Values::Constant(n, n, Scalar(1) / static_cast<Scalar>(n));
    Values concat(n, shape.heads * shape.dV);
    Values output(n, shape.withOutputProjection ? W_O.cols() : 0);

    auto products = [&] {
        for (std::size_t h = 0; h < heads; ++h) {
            qkv::multiply<Scalar>(X, W_Q[h], Q[h]);
            qkv::multiply<Scalar>(X, W_K[h], K[h]);
            qkv::multiply<Scalar>(X, W_V[h], V[h]);
            qkv::multiply<Scalar>(Q[h], K[h], S, qkv::Operand::Transposed);
            benchmark::DoNotOptimize(S.data());
            // O_h = A V_h, written straight into its columns of the concatenation.
            auto headColumns = concat.middleCols(static_cast<Index>(h) * shape.dV, shape.dV);
            qkv::multiply<Scalar>(A, V[h], headColumns);
        }
        if (shape.withOutputProjection) {
            qkv::multiply<Scalar>(concat, W_O, output);
        }
        benchmark::DoNotOptimize(concat.data());
        benchmark::DoNotOptimize(output.data());
    };

    products(); // warm-up, as for the pipeline
    timeLoop(state, productFlops(shape), products);
}

/// One peakSide³ product in `Scalar` through the engine's product routine.
template <typename Scalar> void runGemmPeak(benchmark::State& state)
{
    using Values = MatrixOf<Scalar>;
    const Values a = initialize(qkv::Initializer::Normal, 11, peakSide, peakSide).cast<Scalar>();
    const Values b = initialize(qkv::Initializer::Normal, 12, peakSide, peakSide).cast<Scalar>();
    Values c(peakSide, peakSide);
    qkv::multiply<Scalar>(a, b, c); // warm-up
    timeLoop(state, peakFlops(), [&] {
        qkv::multiply<Scalar>(a, b, c);
        benchmark::DoNotOptimize(c.data());
    });
}

/// Passes every report to the reporter of the chosen --benchmark_format and keeps, per benchmark, the
/// fastest repetition's time per iteration and its other processes' load, for the tables printed at the end.
class TableReporter : public benchmark::BenchmarkReporter {
public:
    explicit TableReporter(std::unique_ptr<benchmark::BenchmarkReporter> display)
        : m_display(std::move(display))
    {
    }

    bool ReportContext(const Context& context) override { return m_display->ReportContext(context); }

    void ReportRuns(const std::vector<Run>& reports) override
    {
        m_display->ReportRuns(reports);
        for (const Run& run : reports) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred || run.iterations <= 0) {
                continue;
            }
            const double iterations = static_cast<double>(run.iterations);
            Timing timing;
            timing.real = run.real_accumulated_time / iterations;
            timing.cpu = run.cpu_accumulated_time / iterations;
            const auto others = run.counters.find("others_load");
            timing.othersLoad = others == run.counters.end() ? 0.0 : others->second.value;
            const std::string& name = run.run_name.function_name;
            auto found = m_timings.find(name);
            if (found == m_timings.end() || timing.real < found->second.real) {
                m_timings[name] = timing;
            }
        }
    }

    void Finalize() override { m_display->Finalize(); }

    /// Per case, the softmax pipeline in both precisions against the GEMM peak and the bare products.
    void printPrecisionTable(std::ostream& out) const
    {
        const PrecisionCase& f64 = precisions()[0];
        const PrecisionCase& f32 = precisions()[1];
        const NormalizerCase& softmax = normalizers().front();
        const Timing peak64 = lookup(peakName(f64));
        const Timing peak32 = lookup(peakName(f32));
        if (!anyNamed("BM_Pipeline/") && !anyNamed("BM_GemmPeak/")) {
            return; // filtered out
        }
        out << "\nSoftmax pipeline per precision (time per call, fastest repetition, wall clock)\n";
        out << "GEMM peak (" << peakSide << "^3 product through the engine's product routine): f64 "
            << number(gflops(peakFlops(), peak64.real), 1) << " GFLOP/s, f32 "
            << number(gflops(peakFlops(), peak32.real), 1) << " GFLOP/s\n";
        out << "Targets: f32 pipeline >= 70% of the f32 peak at n >= 256; softmax pipeline/bare <= 1.30\n\n";
        char line[256];
        const char* layout = "%-11s %8s %8s %8s %8s %7s %7s %7s %7s %9s %7s  %s\n";
        std::snprintf(line, sizeof line, layout, "case", "ms", "ms", "GFLOP/s", "GFLOP/s", "% peak", "% peak",
                      "p/bare", "p/bare", "cores", "others", "verdict");
        out << line;
        std::snprintf(line, sizeof line, layout, "", "f64", "f32", "f64", "f32", "f64", "f32", "f64", "f32",
                      "f64/f32", "load", "");
        out << line;
        out << std::string(110, '-') << "\n";
        bool busy = false;
        for (const Shape& shape : shapes()) {
            const Timing pipeline64 = lookup(pipelineName(f64, shape, softmax));
            const Timing pipeline32 = lookup(pipelineName(f32, shape, softmax));
            if (pipeline64.real < 0.0 && pipeline32.real < 0.0) {
                continue; // filtered out or failed
            }
            const Timing bare64 = lookup(bareName(f64, shape));
            const Timing bare32 = lookup(bareName(f32, shape));
            const double flops = productFlops(shape);
            const double peakShare64 =
                ratio(gflops(flops, pipeline64.real), gflops(peakFlops(), peak64.real));
            const double peakShare32 =
                ratio(gflops(flops, pipeline32.real), gflops(peakFlops(), peak32.real));
            const double overBare64 = ratio(pipeline64.real, bare64.real);
            const double overBare32 = ratio(pipeline32.real, bare32.real);
            const double othersLoad =
                std::max({pipeline64.othersLoad, pipeline32.othersLoad, bare64.othersLoad, bare32.othersLoad,
                          peak64.othersLoad, peak32.othersLoad});

            Verdict targets;
            if (shape.n >= 256) {
                targets.check(peakShare32, peakShare32 >= 0.7, "f32 < 70% peak");
            }
            targets.check(overBare64, overBare64 <= 1.3, "f64 > 1.3x bare");
            targets.check(overBare32, overBare32 <= 1.3, "f32 > 1.3x bare");
            std::string verdict = targets.text();
            if (othersLoad > busyLoad) {
                verdict += " [busy]";
                busy = true;
            }
            const std::string cores = number(ratio(pipeline64.cpu, pipeline64.real), 1) + "/" +
                                      number(ratio(pipeline32.cpu, pipeline32.real), 1);
            std::snprintf(
                line, sizeof line, layout, shape.label.c_str(), number(pipeline64.real * 1e3, 3).c_str(),
                number(pipeline32.real * 1e3, 3).c_str(), number(gflops(flops, pipeline64.real), 1).c_str(),
                number(gflops(flops, pipeline32.real), 1).c_str(), number(peakShare64 * 100, 0).c_str(),
                number(peakShare32 * 100, 0).c_str(), number(overBare64, 2).c_str(),
                number(overBare32, 2).c_str(), cores.c_str(), percent(othersLoad).c_str(), verdict.c_str());
            out << line;
        }
        out << "\ncores: process CPU time / wall-clock time of the pipeline (how many cores it kept busy).\n"
               "others load: the largest share of the machine's cores that other processes used while this "
               "row's\nbenchmarks ran.\n";
        if (busy) {
            out << "[busy]: other processes used more than " << percent(busyLoad)
                << " of the machine during this row; its times are not the engine's alone\n"
                   "(expected with --qkv_competing_load, which takes one core).\n";
        }
        out.flush();
    }

    /// Per case and normalizer, pipeline / bare products and normalizer / softmax, in both precisions.
    void printNormalizerTable(std::ostream& out) const
    {
        if (!anyNamed("BM_Pipeline/")) {
            return; // filtered out
        }
        char line[256];
        out << "\nEvery normalizer (time per call, fastest repetition, wall clock)\n";
        out << "Targets: softmax pipeline/bare <= 1.30; sparsemax/entmax pipeline <= 3.00 x softmax "
               "pipeline\n\n";
        const char* layout = "%-11s %-10s %9s %9s %8s %8s %8s %8s  %s\n";
        std::snprintf(line, sizeof line, layout, "case", "normalizer", "ms", "ms", "p/bare", "p/bare",
                      "vs soft", "vs soft", "verdict");
        out << line;
        std::snprintf(line, sizeof line, layout, "", "", "f64", "f32", "f64", "f32", "f64", "f32", "");
        out << line;
        out << std::string(100, '-') << "\n";
        for (const Shape& shape : shapes()) {
            for (const NormalizerCase& normalizer : normalizers()) {
                Verdict targets;
                std::vector<std::string> cells;
                bool any = false;
                for (const PrecisionCase& precision : precisions()) {
                    const Timing pipeline = lookup(pipelineName(precision, shape, normalizer));
                    const Timing bare = lookup(bareName(precision, shape));
                    const Timing softmax = lookup(pipelineName(precision, shape, normalizers().front()));
                    any = any || pipeline.real >= 0.0;
                    const double overBare = ratio(pipeline.real, bare.real);
                    const double overSoftmax = ratio(pipeline.real, softmax.real);
                    cells.push_back(number(pipeline.real * 1e3, 3));
                    cells.push_back(number(overBare, 2));
                    cells.push_back(number(overSoftmax, 2));
                    if (normalizer.label == "softmax") {
                        targets.check(overBare, overBare <= 1.3, precision.label + " > 1.3x bare");
                    } else if (isSparse(normalizer.label)) {
                        targets.check(overSoftmax, overSoftmax <= 3.0, precision.label + " > 3x softmax");
                    }
                }
                if (!any) {
                    continue; // filtered out or failed
                }
                const std::string verdict = targets.text();
                std::snprintf(line, sizeof line, layout, shape.label.c_str(), normalizer.label.c_str(),
                              cells[0].c_str(), cells[3].c_str(), cells[1].c_str(), cells[4].c_str(),
                              cells[2].c_str(), cells[5].c_str(), verdict.c_str());
                out << line;
            }
        }
        out.flush();
    }

private:
    struct Timing {
        double real = -1.0; ///< seconds per iteration
        double cpu = -1.0;  ///< process CPU seconds per iteration, all threads
        double othersLoad = 0.0;
    };

    /// Above this share of the machine taken by other processes a row is marked busy.
    static constexpr double busyLoad = 0.1;

    Timing lookup(const std::string& name) const
    {
        const auto found = m_timings.find(name);
        return found == m_timings.end() ? Timing{} : found->second;
    }

    bool anyNamed(const std::string& prefix) const
    {
        return std::any_of(m_timings.begin(), m_timings.end(),
                           [&](const auto& entry) { return entry.first.rfind(prefix, 0) == 0; });
    }

    static double ratio(double numerator, double denominator)
    {
        return numerator >= 0.0 && denominator > 0.0 ? numerator / denominator : -1.0;
    }

    static double gflops(double flops, double seconds)
    {
        return seconds > 0.0 ? flops / seconds * 1e-9 : -1.0;
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

    /// The targets of one row: "ok", "MISS: " and the missed ones, or nothing when none could be judged.
    class Verdict {
    public:
        /// A target judged on `value`, a ratio that is negative when a benchmark is missing (not judged).
        void check(double value, bool met, const std::string& miss)
        {
            if (value < 0.0) {
                return;
            }
            ++m_judged;
            if (!met) {
                m_misses.push_back(miss);
            }
        }

        std::string text() const
        {
            if (m_judged == 0) {
                return "";
            }
            std::string text = m_misses.empty() ? "ok" : "MISS: ";
            for (std::size_t i = 0; i < m_misses.size(); ++i) {
                text += (i > 0 ? ", " : "") + m_misses[i];
            }
            return text;
        }

    private:
        int m_judged = 0;
        std::vector<std::string> m_misses;
    };

    static std::string percent(double share) { return number(share * 100.0, 0) + "%"; }

    std::unique_ptr<benchmark::BenchmarkReporter> m_display;
    std::map<std::string, Timing> m_timings;
};

/// A child process that spins on one core until this process ends it (or dies): the load under which
/// the engine's threads must not make things slower than one thread.
class CompetingLoad {
public:
    CompetingLoad()
    {
        const pid_t parent = getpid();
        m_child = fork();
        if (m_child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the benchmark, however it ends
            if (getppid() != parent) {
                _exit(0);
            }
            volatile std::uint64_t spins = 0;
            for (;;) {
                spins = spins + 1;
            }
        }
        if (m_child < 0) {
            std::perror("qkv_bench: fork for --qkv_competing_load");
        }
    }

    ~CompetingLoad()
    {
        if (m_child > 0) {
            kill(m_child, SIGKILL);
            waitpid(m_child, nullptr, 0);
        }
    }

    CompetingLoad(const CompetingLoad&) = delete;
    CompetingLoad& operator=(const CompetingLoad&) = delete;

    bool running() const { return m_child > 0; }

private:
    pid_t m_child = -1;
};

void registerBenchmarks()
{
    // Process CPU time (all threads), real time for the rates: the engine runs on more than one thread.
    auto configure = [](benchmark::internal::Benchmark* benchmark) {
        benchmark->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
    };
    for (const PrecisionCase& precision : precisions()) {
        const bool isFloat = precision.precision == qkv::Precision::Float32;
        configure(benchmark::RegisterBenchmark(peakName(precision).c_str(),
                                               isFloat ? runGemmPeak<float> : runGemmPeak<double>));
    }
    for (const Shape& shape : shapes()) {
        for (const PrecisionCase& precision : precisions()) {
            const bool isFloat = precision.precision == qkv::Precision::Float32;
            configure(benchmark::RegisterBenchmark(bareName(precision, shape).c_str(),
                                                   [&shape, isFloat](benchmark::State& state) {
                                                       if (isFloat) {
                                                           runBareProducts<float>(state, shape);
                                                       } else {
                                                           runBareProducts<double>(state, shape);
                                                       }
                                                   }));
            for (const NormalizerCase& normalizer : normalizers()) {
                configure(
                    benchmark::RegisterBenchmark(pipelineName(precision, shape, normalizer).c_str(),
                                                 [&precision, &shape, &normalizer](benchmark::State& state) {
                                                     runPipeline(state, precision, shape, normalizer);
                                                 }));
            }
        }
    }
}

/// The value of --NAME=VALUE among the arguments, or `fallback`.
std::string flagValue(const std::vector<char*>& args, const std::string& name, const std::string& fallback)
{
    const std::string prefix = "--" + name + "=";
    std::string value = fallback;
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (std::strncmp(args[i], prefix.c_str(), prefix.size()) == 0) {
            value = args[i] + prefix.size(); // the last one wins, as in Google Benchmark
        }
    }
    return value;
}

std::unique_ptr<benchmark::BenchmarkReporter> reporterFor(bool json)
{
    if (json) {
        return std::make_unique<benchmark::JSONReporter>();
    }
    // Colours only for a terminal: a log file or a pipe gets plain text.
    return std::make_unique<benchmark::ConsoleReporter>(isatty(STDOUT_FILENO)
                                                            ? benchmark::ConsoleReporter::OO_ColorTabular
                                                            : benchmark::ConsoleReporter::OO_Tabular);
}

std::string environmentValue(const char* name)
{
    const char* value = std::getenv(name);
    return value ? value : "(not set)";
}

} // namespace

void registerCircuitBenchmarks();   // bench_circuits.cpp
void registerModelBenchmarks();     // bench_model.cpp
void registerPatchingBenchmarks();  // bench_patching.cpp
void registerRowKernelBenchmarks(); // bench_rowkernels.cpp

int main(int argc, char** argv)
{
    qkv::prepareMatrixProducts(); // OpenBLAS for this CPU; it calls setenv, so before any other thread
    std::vector<char*> args;
    bool competingLoadWanted = false;
    for (int i = 0; i < argc; ++i) {
        // Our own flag, taken out before Google Benchmark sees the arguments (it rejects unknown ones).
        if (i > 0 && std::strcmp(argv[i], "--qkv_competing_load") == 0) {
            competingLoadWanted = true;
        } else {
            args.push_back(argv[i]);
        }
    }
    // Default --benchmark_min_time=0.5 unless the caller chose one (keeps a full run to a few minutes).
    static char defaultMinTime[] = "--benchmark_min_time=0.5";
    if (flagValue(args, "benchmark_min_time", "").empty()) {
        args.insert(args.begin() + 1, defaultMinTime);
    }
    const bool json = flagValue(args, "benchmark_format", "console") == "json";
    // The model, patching and circuit benchmarks write a 500 MB checkpoint first: only when the filter names
    // them.
    const std::string filter = flagValue(args, "benchmark_filter", "");
    const bool modelWanted = filter.find("Model") != std::string::npos ||
                             filter.find("Predict") != std::string::npos ||
                             filter.find("AblationSweep") != std::string::npos;
    const bool patchingWanted = filter.find("Patch") != std::string::npos;
    const bool circuitsWanted =
        filter.find("Circuits") != std::string::npos || filter.find("Composition") != std::string::npos;
    int count = static_cast<int>(args.size());
    args.push_back(nullptr);

    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
        return 1;
    }
    registerBenchmarks();
    registerRowKernelBenchmarks();
    if (modelWanted)
        registerModelBenchmarks();
    if (patchingWanted)
        registerPatchingBenchmarks();
    if (circuitsWanted)
        registerCircuitBenchmarks();

    std::unique_ptr<CompetingLoad> competingLoad;
    if (competingLoadWanted) {
        competingLoad = std::make_unique<CompetingLoad>();
        if (!competingLoad->running()) {
            return 1;
        }
    }
    // What the numbers depend on, in the context block of every output format.
    benchmark::AddCustomContext("qkv_product_library", qkv::productLibrary());
    benchmark::AddCustomContext("qkv_engine_threads", std::to_string(qkv::engineThreads()));
    benchmark::AddCustomContext("qkv_row_kernels", qkv::rows::kernelLevelName(qkv::rows::kernelLevel()));
    benchmark::AddCustomContext("QKV_ROW_KERNELS", environmentValue("QKV_ROW_KERNELS"));
    benchmark::AddCustomContext("QKV_THREADS", environmentValue("QKV_THREADS"));
    benchmark::AddCustomContext("OPENBLAS_CORETYPE", environmentValue("OPENBLAS_CORETYPE"));
    benchmark::AddCustomContext("qkv_competing_load", competingLoad ? "one spinning process" : "none");

    TableReporter reporter(reporterFor(json));
    benchmark::RunSpecifiedBenchmarks(&reporter);
    competingLoad.reset();

    // JSON keeps stdout to itself; the tables go to stderr.
    std::ostream& tables = json ? std::cerr : std::cout;
    reporter.printPrecisionTable(tables);
    reporter.printNormalizerTable(tables);
    benchmark::Shutdown();
    return 0;
}
