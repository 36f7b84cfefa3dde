// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingRunner.h"

#include "Error.h"

#include <QElapsedTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <new>

namespace qkv::ui {

namespace {

// How often a filling grid is handed to the GUI thread: often enough to watch it fill, seldom enough that
// redrawing never holds the computation back.
constexpr qint64 partialGridInterval = 120; // ms
constexpr qint64 progressInterval = 50;     // ms

} // namespace

PatchingRunner::PatchingRunner(QObject* parent) : QObject(parent) {}

PatchingRunner::~PatchingRunner()
{
    if (m_cancel)
        m_cancel->store(true);
    for (QFuture<void>& future : m_futures)
        future.waitForFinished(); // their queued results die with this object
}

bool PatchingRunner::isComputing() const
{
    return std::any_of(m_futures.begin(), m_futures.end(),
                       [](const QFuture<void>& future) { return !future.isFinished(); });
}

const std::optional<PatchGrid>& PatchingRunner::grid(PatchMethod method) const
{
    return method == PatchMethod::Exact ? m_exact : m_attribution;
}

void PatchingRunner::start(const PatchingRequest& request)
{
    if (m_cancel)
        m_cancel->store(true); // the newest request wins
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    const quint64 generation = ++m_generation;
    m_pending = request;
    m_running = true;
    emit started();
    m_futures.removeIf([](const QFuture<void>& future) { return future.isFinished(); });
    m_futures.append(QtConcurrent::run([this, request, cancel, generation] {
        const auto post = [this](auto call) { QMetaObject::invokeMethod(this, call, Qt::QueuedConnection); };
        QString error;
        bool cancelled = false;
        try {
            PatchingRun run(*request.model, request.pair, request.precision);
            const double clean = run.cleanMetric(), corrupt = run.corruptMetric();
            post([this, generation, clean, corrupt] { receiveMetrics(generation, clean, corrupt); });
            for (PatchMethod method : request.methods) {
                PatchGrid partial;
                Index posted = 0;
                QElapsedTimer sinceGrid, sinceProgress;
                sinceGrid.start();
                sinceProgress.start();
                // A grid of thousands of cheap cells (attribution) would otherwise queue more progress and
                // grids than the GUI thread can draw: at most one grid waits to be drawn, and the progress
                // is told a few times a second.
                auto gridWaiting = std::make_shared<std::atomic<bool>>(false);
                const PatchProgress report = [&](Index done, Index total) {
                    if (done == total || sinceProgress.elapsed() >= progressInterval) {
                        sinceProgress.restart();
                        post([this, generation, method, done, total] {
                            if (generation == m_generation)
                                emit progress(method, int(done), int(total));
                        });
                    }
                    if (partial.done > posted && sinceGrid.elapsed() >= partialGridInterval &&
                        !gridWaiting->exchange(true)) {
                        posted = partial.done;
                        sinceGrid.restart();
                        post([this, generation, partial, gridWaiting] {
                            gridWaiting->store(false);
                            receiveGrid(generation, partial);
                        });
                    }
                    return !cancel->load();
                };
                try {
                    const PatchGrid grid = run.patch(request.site, method, request.firstPosition,
                                                     request.lastPosition, report, &partial);
                    post([this, generation, grid] { receiveGrid(generation, grid); });
                } catch (const Cancelled&) {
                    post(
                        [this, generation, partial] { receiveGrid(generation, partial); }); // Stop keeps them
                    throw;
                }
            }
        } catch (const Cancelled&) {
            cancelled = true;
        } catch (const Error& e) {
            error = QString::fromStdString(e.what());
        } catch (const std::bad_alloc&) {
            error = tr("not enough memory for this patching grid");
        }
        post([this, generation, error, cancelled] { receiveEnd(generation, error, cancelled); });
    }));
}

void PatchingRunner::stop()
{
    if (!m_running)
        return;
    if (m_cancel)
        m_cancel->store(true);
    m_running = false;
    emit failed(QString());
}

void PatchingRunner::receiveMetrics(quint64 generation, double clean, double corrupt)
{
    if (generation != m_generation)
        return;
    // Both prompts ran: the grids shown from now on are this request's (a refused one leaves the old ones).
    m_request = m_pending;
    m_cleanMetric = clean;
    m_corruptMetric = corrupt;
    m_exact.reset();
    m_attribution.reset();
    emit metricsReady(clean, corrupt);
}

void PatchingRunner::receiveGrid(quint64 generation, const PatchGrid& grid)
{
    if (generation != m_generation)
        return; // an older request's
    std::optional<PatchGrid>& held = grid.method == PatchMethod::Exact ? m_exact : m_attribution;
    if (held && held->done > grid.done)
        return; // a partial grid overtaken by a fuller one
    held = grid;
    emit gridChanged(grid.method);
}

void PatchingRunner::receiveEnd(quint64 generation, const QString& error, bool cancelled)
{
    if (generation != m_generation || !m_running)
        return; // an older request's, or stopped already (stop() said so)
    m_running = false;
    if (cancelled || !error.isEmpty()) {
        emit failed(error);
        return;
    }
    ++m_finished;
    emit finished();
}

} // namespace qkv::ui
