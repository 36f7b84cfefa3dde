// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One training run on a worker thread that can be paused, stepped and stopped: while paused the worker waits
// inside the trainer's progress function (the model stays as the last reported step left it), and a stop
// makes that function return false, so the trainer saves the model trained so far.

#include "Trainer.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace qkv::ui {

class TrainingRun : public QObject {
    Q_OBJECT
public:
    explicit TrainingRun(QObject* parent = nullptr);
    /// Stops a run that goes and waits for it to end (its model is saved).
    ~TrainingRun() override;

    bool isRunning() const { return m_watcher->isRunning(); }
    /// Starts `settings` on a worker thread; ignored while a run goes. With `paused`, the run pauses after
    /// its first step.
    void start(const training::TrainSettings& settings, bool paused = false);
    /// The run waits after the step it is on until resume(), step() or stop().
    void pause();
    void resume();
    /// While paused: exactly one more step, then paused again.
    void step();
    /// The run ends after the step it is on (also when paused); the trainer saves the model.
    void stop();
    /// Blocks until the run has ended (returns at once when none goes).
    void waitForEnd();
    bool isPauseRequested() const;
    bool isStopRequested() const;
    /// True while the worker waits in a pause.
    bool isWaiting() const;
    /// The step reported last (0 before the first).
    std::int64_t lastReportedStep() const;
    /// The reports not taken yet, oldest first.
    std::vector<training::StepReport> takeReports();
    /// How the run ended, once finished() was emitted; error() is the trainer's refusal, if any.
    training::TrainOutcome outcome() const;
    QString error() const;

signals:
    /// The worker began to wait in a pause.
    void paused();
    void finished();

private:
    bool progress(const training::StepReport& report); // on the worker thread

    QFutureWatcher<void>* m_watcher;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<training::StepReport> m_reports;
    bool m_pause = false, m_stop = false, m_waiting = false;
    int m_stepsAllowed = 0; // steps that may run while paused
    std::int64_t m_lastStep = 0;
    training::TrainOutcome m_outcome;
    QString m_error;
};

} // namespace qkv::ui
