// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Patching panel's computation off the GUI thread: both prompts run once (PatchingRun), then the grid of
// one site by each method asked for (attribution first: it is one backward pass), the cells computed so far
// handed to the GUI thread as the grid fills. The newest request wins: starting one stops the one running,
// through its progress callback.

#include "Patching.h"

#include <QFuture>
#include <QList>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

namespace qkv::ui {

/// One patching experiment: the model, the prompts and tokens, the site and the methods.
struct PatchingRequest {
    std::shared_ptr<const Model> model;
    PatchPair pair;
    PatchSite site = PatchSite::ResidPre;
    std::vector<PatchMethod> methods{PatchMethod::Exact};
    Index firstPosition = 0, lastPosition = -1; ///< −1: the last token
    Precision precision = Precision::Float64;
};

class PatchingRunner : public QObject {
    Q_OBJECT
public:
    explicit PatchingRunner(QObject* parent = nullptr);
    ~PatchingRunner() override;

    /// Starts `request` on a worker thread, stopping the one running (its results are dropped).
    void start(const PatchingRequest& request);
    /// Stops the running request; its grids keep the cells computed so far.
    void stop();
    bool isRunning() const { return m_running; }
    /// True while a worker thread still computes, a stopped or replaced request too (until its next cell).
    bool isComputing() const;

    /// The request of the grids shown: the newest whose prompts have run (one refused or still running its
    /// prompts leaves the grids before it).
    const PatchingRequest& request() const { return m_request; }
    /// m_clean and m_corrupt of the grids shown.
    std::optional<double> cleanMetric() const { return m_cleanMetric; }
    std::optional<double> corruptMetric() const { return m_corruptMetric; }
    /// The grid of `method` as far as it is computed (nothing before its first cells arrive).
    const std::optional<PatchGrid>& grid(PatchMethod method) const;
    /// Requests finished completely since the runner was made (for tests).
    quint64 finishedCount() const { return m_finished; }

signals:
    void started();
    /// Both prompts of the newest request ran: its grids replace the ones shown, empty at first.
    void metricsReady(double clean, double corrupt);
    /// More cells of `method`'s grid, or all of them.
    void gridChanged(qkv::PatchMethod method);
    /// Cells done of the grid being computed.
    void progress(qkv::PatchMethod method, int done, int total);
    void finished();
    /// The request failed (`message`) or was stopped (empty message).
    void failed(const QString& message);

private:
    void receiveMetrics(quint64 generation, double clean, double corrupt);
    void receiveGrid(quint64 generation, const PatchGrid& grid);
    void receiveEnd(quint64 generation, const QString& error, bool cancelled);

    PatchingRequest m_request; // of the grids shown
    PatchingRequest m_pending; // the newest started
    quint64 m_generation = 0;
    bool m_running = false;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::optional<double> m_cleanMetric, m_corruptMetric;
    std::optional<PatchGrid> m_exact, m_attribution;
    quint64 m_finished = 0;
    QList<QFuture<void>> m_futures; // waited for when the runner is destroyed
};

} // namespace qkv::ui
