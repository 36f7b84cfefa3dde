// SPDX-License-Identifier: GPL-3.0-or-later
// qkv_gui_bench: edit-to-repaint latency of the real main window, offscreen (docs/performance.md).
//
//   BM_EditToRepaint/<N>/<D>  one cell edit of W_Q pushed as the undo command a person's edit pushes, then
//                             the wait for its result (a condition: the document stops computing, the event
//                             loop runs meanwhile), pending events processed (queued replots) and the window
//                             grabbed (every visible widget painted). Counters: engine_ms, the engine's own
//                             time for that edit (Document::lastComputeMilliseconds); gui_block_ms, the
//                             longest time the GUI thread went without returning to its event loop during
//                             any timed edit (a 1 ms heartbeat timer: the largest gap between its ticks).
//   BM_EngineOnly/<N>/<D>     qkv::computeAttention on the same session, as the document calls it (a fresh
//                             result each time): what no view can make faster.
//   BM_EditToPrediction/f32/gpt2_small/n:64
//                             one change of τ of the open head (layer 5, head 0 of a GPT-2-small-shaped
//                             random F32 checkpoint on 64 token ids, float32), pushed as the Attention
//                             panel pushes it, until the Prediction tab shows the model's prediction with
//                             the edited head (computed off the GUI thread), then the window grabbed.
//                             Counters: shown_ms, from the edit to the prediction drawn; gui_block_ms, the
//                             longest time the GUI thread did not return to its event loop meanwhile;
//                             grab_ms, the grab of the whole window after it. Registered only when the filter
//                             names it
//                             (--benchmark_filter=Prediction): the checkpoint takes 500 MB of disk and a few
//                             seconds to write.
//
// Sessions: n = N tokens (self-attention, no mask), d_model = D, one head with d_k = d_v = D / 2, no W_O,
// softmax, float64. N ∈ {256, 1024, 4096}, D ∈ {64, 512}. The window is 1400 × 900 in its default layout
// (weights tab, Q/K plane, step by step), settings and recovery files in a temporary test location.
//
// Every wait is on a condition with a deadline: an edit whose result never comes ends the run with a message
// naming what it waited for, instead of hanging it. Each τ edit moves τ away from its current value, so
// repetitions (which start where the last one left τ) always have something to recompute.
//
// Not run by ctest. Build the dev or release preset and run by hand, e.g.
//   build/dev/tests/benchmark/qkv_gui_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// `qkv_gui_bench --write-model=DIR` writes the GPT-2-small-shaped checkpoint into DIR and exits (for
// screenshots of the window on a model of that size).
// QT_QPA_PLATFORM is set to offscreen unless it is set already.

#include "AttentionEngine.h"
#include "BenchmarkMatrices.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "Figure.h"
#include "Gpt2SmallCheckpoint.h"
#include "Initializers.h"
#include "MainWindow.h"
#include "MatrixProduct.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "ModelSession.h"
#include "OnScreenRefresh.h"
#include "PredictionPanel.h"
#include "RasterFills.h"
#include "Session.h"
#include "SpaceView.h"

#include <benchmark/benchmark.h>

#include <QApplication>
#include <QDeadlineTimer>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPixmap>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using qkv::Index;

struct Shape {
    Index n = 0;
    Index dModel = 0;
};

const std::vector<Shape>& shapes()
{
    static const std::vector<Shape> all = {{256, 64},   {256, 512}, {1024, 64},
                                           {1024, 512}, {4096, 64}, {4096, 512}};
    return all;
}

std::string suffix(const Shape& shape)
{
    return std::to_string(shape.n) + "/" + std::to_string(shape.dModel);
}

qkv::Session makeSession(const Shape& shape)
{
    qkv::Session session;
    session.title = "gui benchmark " + suffix(shape);
    session.X = initialize(qkv::Initializer::Normal, 1, shape.n, shape.dModel);
    for (Index i = 0; i < shape.n; ++i)
        session.tokens.push_back("t" + std::to_string(i));
    session.pad.assign(static_cast<std::size_t>(shape.n), false);
    const Index half = shape.dModel / 2;
    qkv::Head head;
    head.W_Q = initialize(qkv::Initializer::XavierNormal, 100, shape.dModel, half);
    head.W_K = initialize(qkv::Initializer::XavierNormal, 101, shape.dModel, half);
    head.W_V = initialize(qkv::Initializer::XavierNormal, 102, shape.dModel, half);
    session.heads.push_back(std::move(head));
    session.score = qkv::ScoreFunction::Dot;
    session.scale = qkv::Scale{qkv::Scale::Kind::SqrtDk, 1.0};
    session.temperature = 1.0;
    session.mask.type = qkv::MaskType::None;
    return session;
}

/// The longest stretch between two heartbeats of the GUI thread's event loop, measured while armed.
class Heartbeat {
public:
    Heartbeat()
    {
        m_timer.setTimerType(Qt::PreciseTimer);
        m_timer.setInterval(1);
        QObject::connect(&m_timer, &QTimer::timeout, [this] { beat(); });
        m_timer.start();
    }
    void arm()
    {
        m_clock.start();
        m_last = 0;
    }
    /// Ends a measured stretch: the gap to now counts too, what follows does not.
    void disarm()
    {
        beat();
        m_clock.invalidate();
    }
    double longestMilliseconds() const { return static_cast<double>(m_longest) / 1e6; }
    void resetLongest() { m_longest = 0; }

private:
    void beat()
    {
        if (!m_clock.isValid())
            return;
        const qint64 now = m_clock.nsecsElapsed();
        m_longest = std::max(m_longest, now - m_last);
        m_last = now;
    }

    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    qint64 m_longest = 0;
};

/// How long any wait of the benchmark may take: an edit that never shows its result fails the run loudly
/// instead of hanging it.
constexpr int waitDeadlineMilliseconds = 60000;

/// Runs the event loop until `done()`; false when the deadline passes first.
bool waitUntil(const std::function<bool()>& done, int timeoutMilliseconds = waitDeadlineMilliseconds)
{
    const QDeadlineTimer deadline(timeoutMilliseconds);
    QTimer wake; // wakes the event loop so that the deadline is checked even when no event comes
    wake.start(20);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return true;
}

/// Ends the run with a message naming what never happened.
[[noreturn]] void failWaiting(const std::string& what)
{
    std::cerr << "qkv_gui_bench: FAILED: waited " << waitDeadlineMilliseconds / 1000 << " s for " << what
              << "\n";
    std::exit(1);
}

/// Waits for `done()`, or fails the run naming `what`.
void waitOrFail(const std::function<bool()>& done, const std::string& what)
{
    if (!waitUntil(done))
        failWaiting(what);
}

/// The open windows, closed before the application object goes.
std::map<std::pair<Index, Index>, std::unique_ptr<qkv::ui::MainWindow>>& openWindows()
{
    static std::map<std::pair<Index, Index>, std::unique_ptr<qkv::ui::MainWindow>> windows;
    return windows;
}

/// One window per shape, opened on first use and kept for the repetitions.
qkv::ui::MainWindow& windowFor(const Shape& shape)
{
    auto& windows = openWindows();
    const std::pair<Index, Index> key{shape.n, shape.dModel};
    if (windows.count(key) == 0)
        windows.clear(); // one large session at a time
    auto& slot = windows[key];
    if (!slot) {
        qkv::ui::RasterFills::keepOnPaintingThread(); // as qkvlab's main() does
        slot = std::make_unique<qkv::ui::MainWindow>();
        slot->resize(1400, 900);
        slot->show();
        if (!QTest::qWaitForWindowExposed(slot.get(), waitDeadlineMilliseconds))
            failWaiting("the window to be exposed");
        slot->document()->reset(makeSession(shape));
        qkv::ui::Document* document = slot->document();
        waitOrFail([document] { return !document->isComputing(); }, "the session's first result");
        QCoreApplication::processEvents();
        slot->grab();
        static bool listed = false;
        if (!std::exchange(listed, true)) { // what the benchmark repaints, once
            QStringList shown, hidden;
            for (const qkv::ui::Figure* figure : slot->figures())
                (qkv::ui::OnScreenRefresh::isOffScreen(dynamic_cast<const QWidget*>(figure)) ? hidden : shown)
                    << figure->figureName();
            std::cerr << "qkv_gui_bench: views on screen: " << shown.join(QLatin1String(", ")).toStdString()
                      << "; hidden: " << hidden.join(QLatin1String(", ")).toStdString() << "\n";
        }
    }
    return *slot;
}

/// One edit of W_Q[0][0], to `value`, until the window shows its result.
void editAndRepaint(qkv::ui::MainWindow& window, const QList<qkv::ui::SpaceView*>& planes, double value)
{
    qkv::ui::Document* document = window.document();
    document->push(qkv::ui::makeCellCommand(document, {qkv::ui::MatrixKind::W_Q, 0}, 0, 0, value));
    waitOrFail([document] { return !document->isComputing(); }, "the result of an edit of W_Q");
    // A plane projected in the background is part of the repaint too.
    const auto projecting = [&planes] {
        for (const qkv::ui::SpaceView* view : planes)
            if (!qkv::ui::OnScreenRefresh::isOffScreen(view) && view->isProjecting())
                return true;
        return false;
    };
    waitOrFail([&projecting] { return !projecting(); }, "the planes' projections");
    QCoreApplication::processEvents(); // queued replots
    QCoreApplication::processEvents(); // and those a relayout queued
    // Objects deleted later are deleted by an event loop's exec(), which a benchmark has not: left queued,
    // every later edit went through them again (a run of edits slowed down by the hundreds it left).
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    const QPixmap shot = window.grab();
    benchmark::DoNotOptimize(shot.cacheKey());
}

void editToRepaint(benchmark::State& state, const Shape& shape)
{
    qkv::ui::MainWindow& window = windowFor(shape);
    const double original = window.document()->session().heads.front().W_Q(0, 0);
    // Looked up once: a search of the whole widget tree took 0.6 ms of each 256/512 edit's GUI time.
    const QList<qkv::ui::SpaceView*> planes = window.findChildren<qkv::ui::SpaceView*>();
    editAndRepaint(window, planes, original + 0.25); // warm-up: first layouts, caches
    Heartbeat heartbeat;
    double engine = 0.0;
    int edits = 0;
    for (auto _ : state) {
        heartbeat.arm();
        editAndRepaint(window, planes, original + ((edits % 2) != 0 ? 0.25 : -0.25));
        heartbeat.disarm();
        engine += window.document()->lastComputeMilliseconds();
        ++edits;
    }
    if (!window.document()->resultError().isEmpty())
        state.SkipWithError(window.document()->resultError().toStdString().c_str());
    state.counters["engine_ms"] = edits > 0 ? engine / edits : 0.0;
    state.counters["gui_block_ms"] = heartbeat.longestMilliseconds();
}

void engineOnly(benchmark::State& state, const Shape& shape)
{
    const qkv::Session session = makeSession(shape);
    for (auto _ : state) {
        const qkv::AttentionResult result = qkv::computeAttention(session);
        benchmark::DoNotOptimize(result.output.data());
    }
}

/// The window with layer 5, head 0 of the checkpoint open on 64 ids and its Prediction tab in front.
std::unique_ptr<qkv::ui::MainWindow>& predictionWindowSlot()
{
    static std::unique_ptr<qkv::ui::MainWindow> window;
    return window;
}

qkv::ui::MainWindow& predictionWindow()
{
    std::unique_ptr<qkv::ui::MainWindow>& window = predictionWindowSlot();
    if (window)
        return *window;
    static const std::filesystem::path folder =
        std::filesystem::temp_directory_path() /
        ("qkv_gui_bench_gpt2_" + std::to_string(QCoreApplication::applicationPid()));
    gpt2small::writeCheckpoint(folder);
    std::atexit([] { std::filesystem::remove_all(folder); });
    qkv::ui::RasterFills::keepOnPaintingThread();
    window = std::make_unique<qkv::ui::MainWindow>();
    window->resize(1400, 900);
    window->show();
    if (!QTest::qWaitForWindowExposed(window.get(), waitDeadlineMilliseconds))
        failWaiting("the window to be exposed");
    auto model = std::make_shared<const qkv::Model>(qkv::Model::open(folder.string()));
    qkv::ModelHeadRequest request;
    request.layer = 5;
    request.heads = {0};
    request.precision = qkv::Precision::Float32;
    request.ids = gpt2small::someIds(64);
    QString error;
    if (!window->modelLoading()->open(model, request, &error, false)) {
        std::cerr << "qkv_gui_bench: FAILED: " << error.toStdString() << "\n";
        std::exit(1);
    }
    auto* dock = window->findChild<QDockWidget*>(QStringLiteral("dockPrediction"));
    dock->show();
    dock->raise();
    auto* runner = window->findChild<qkv::ui::ModelRunner*>();
    auto* panel = window->findChild<qkv::ui::PredictionPanel*>();
    waitOrFail(
        [runner, panel] { return runner->prediction() && panel->displayCount() > 0 && !panel->isBusy(); },
        "the model's first prediction");
    return *window;
}

void editToPrediction(benchmark::State& state)
{
    qkv::ui::MainWindow& window = predictionWindow();
    auto* runner = window.findChild<qkv::ui::ModelRunner*>();
    auto* panel = window.findChild<qkv::ui::PredictionPanel*>();
    qkv::ui::Document* document = window.document();
    Heartbeat heartbeat;
    QElapsedTimer clock;
    double shownMs = 0.0, grabMs = 0.0;
    // The heartbeat watches the GUI thread from the edit until the prediction is drawn; the grab of the whole
    // window after it (every view painted at once, which no edit asks for) is timed apart.
    const auto edit = [&](double temperature) {
        const quint64 shown = panel->displayCount();
        heartbeat.arm();
        clock.start();
        document->push(new qkv::ui::ChangeValueCommand<double>(
            document, QStringLiteral("τ"), qkv::ui::Document::Options,
            [](qkv::Session& s) -> double& { return s.temperature; }, temperature));
        waitOrFail(
            [&] {
                return panel->displayCount() != shown && !runner->isPredicting() && !panel->isBusy() &&
                       !document->isComputing();
            },
            "the prediction after an edit of τ");
        QCoreApplication::processEvents(); // queued replots
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        heartbeat.disarm();
        shownMs += double(clock.nsecsElapsed()) / 1e6;
        clock.start();
        const QPixmap shot = window.grab();
        benchmark::DoNotOptimize(shot.cacheKey());
        grabMs += double(clock.nsecsElapsed()) / 1e6;
    };
    // Every edit changes τ from whatever it is now (a repetition starts where the last one left it): an
    // edit to the same value would change nothing, and nothing would be shown.
    const auto nextTemperature = [document] { return document->session().temperature == 1.5 ? 0.5 : 1.5; };
    edit(nextTemperature()); // warm-up
    heartbeat.resetLongest();
    shownMs = grabMs = 0.0;
    int edits = 0;
    for (auto _ : state) {
        edit(nextTemperature());
        ++edits;
    }
    state.counters["shown_ms"] = edits > 0 ? shownMs / edits : 0.0;
    state.counters["grab_ms"] = edits > 0 ? grabMs / edits : 0.0;
    if (!runner->predictionError().isEmpty())
        state.SkipWithError(runner->predictionError().toStdString().c_str());
    state.counters["gui_block_ms"] = heartbeat.longestMilliseconds();
}

} // namespace

int main(int argc, char** argv)
{
    qkv::prepareMatrixProducts(); // OpenBLAS for this CPU; it calls setenv, so before any other thread
    for (int k = 1; k < argc; ++k) {
        const std::string argument = argv[k];
        if (argument.rfind("--write-model=", 0) == 0) {
            gpt2small::writeCheckpoint(argument.substr(14));
            return 0;
        }
    }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    // Settings, recent files and recovery files of a throwaway location, never the user's.
    QTemporaryDir home;
    qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_DATA_HOME", home.filePath(QStringLiteral("data")).toLocal8Bit());
    qputenv("XDG_CACHE_HOME", home.filePath(QStringLiteral("cache")).toLocal8Bit());
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("QKV Lab Benchmarks"));

    for (const Shape& shape : shapes()) {
        // The largest cases take seconds an edit before the fixes: a few iterations are enough.
        const double minTime = shape.n >= 4096 ? 0.2 : 0.5;
        benchmark::RegisterBenchmark(("BM_EditToRepaint/" + suffix(shape)).c_str(),
                                     [shape](benchmark::State& state) { editToRepaint(state, shape); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(minTime);
        benchmark::RegisterBenchmark(("BM_EngineOnly/" + suffix(shape)).c_str(),
                                     [shape](benchmark::State& state) { engineOnly(state, shape); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(minTime);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    if (benchmark::GetBenchmarkFilter().find("Prediction") != std::string::npos)
        benchmark::RegisterBenchmark("BM_EditToPrediction/f32/gpt2_small/n:64", editToPrediction)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.5);
    benchmark::RunSpecifiedBenchmarks();
    openWindows().clear();
    predictionWindowSlot().reset();
    benchmark::Shutdown();
    return 0;
}
