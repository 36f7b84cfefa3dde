// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs the newest of a series of computations for a view, off the GUI thread when it is heavy, and hands
// its value back on the GUI thread. Older runs still in flight are dropped, never shown.

#include <QFutureWatcher>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include <functional>
#include <optional>
#include <utility>

namespace qkv::ui {

template <typename T> class LatestJob {
public:
    using Work = std::function<T()>;
    using Done = std::function<void(T)>;

    /// `context` is the view: values are delivered in its thread, and never after it is destroyed.
    explicit LatestJob(QObject* context)
    {
        QObject::connect(&m_watcher, &QFutureWatcherBase::finished, context, [this] { deliver(); });
    }
    ~LatestJob() { m_watcher.waitForFinished(); }
    LatestJob(const LatestJob&) = delete;
    LatestJob& operator=(const LatestJob&) = delete;

    /// Runs `work` now when `background` is false, else on the thread pool (after the running one, if any,
    /// ends); `done` receives the value of the newest run only. `work` must own what it reads.
    void run(bool background, Work work, Done done)
    {
        ++m_generation;
        m_done = std::move(done);
        m_pending.reset();
        if (!background) {
            m_delivered = m_generation;
            m_done(work());
        } else if (m_watcher.isRunning()) {
            m_pending = std::move(work);
        } else {
            start(std::move(work));
        }
    }

    /// True until the newest run's value has been delivered.
    bool isBusy() const { return m_delivered != m_generation; }

    /// Blocks until the newest run's value has been delivered (for export and tests).
    void wait()
    {
        while (isBusy()) {
            m_watcher.waitForFinished();
            deliver();
        }
    }

private:
    struct Outcome {
        quint64 generation = 0;
        std::optional<T> value;
    };

    void start(Work work)
    {
        m_handled = false;
        const quint64 generation = m_generation;
        m_watcher.setFuture(QtConcurrent::run([work = std::move(work), generation] {
            return Outcome{generation, work()};
        }));
    }

    // From finished() or wait(), whichever comes first: each run is handled once.
    void deliver()
    {
        if (m_handled || !m_watcher.isFinished())
            return;
        m_handled = true;
        Outcome outcome = m_watcher.result();
        if (outcome.generation == m_generation) {
            m_delivered = m_generation;
            m_done(std::move(*outcome.value));
        } else if (m_pending) {
            Work next = std::move(*m_pending);
            m_pending.reset();
            start(std::move(next));
        }
    }

    QFutureWatcher<Outcome> m_watcher;
    quint64 m_generation = 0;
    quint64 m_delivered = 0;
    bool m_handled = true;
    std::optional<Work> m_pending;
    Done m_done;
};

} // namespace qkv::ui
