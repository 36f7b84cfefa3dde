// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingRun.h"

#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace qkv::ui {

TrainingRun::TrainingRun(QObject* parent) : QObject(parent), m_watcher(new QFutureWatcher<void>(this))
{
    connect(m_watcher, &QFutureWatcher<void>::finished, this, &TrainingRun::finished);
}

TrainingRun::~TrainingRun()
{
    stop();
    m_watcher->waitForFinished();
}

void TrainingRun::start(const training::TrainSettings& settings, bool paused)
{
    if (isRunning())
        return;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_reports.clear();
        m_pause = paused;
        m_stop = m_waiting = false;
        m_stepsAllowed = 0;
        m_lastStep = 0;
        m_outcome = {};
        m_error.clear();
    }
    m_watcher->setFuture(QtConcurrent::run([this, settings] {
        try {
            const training::TrainOutcome outcome =
                training::train(settings, [this](const training::StepReport& r) { return progress(r); });
            std::lock_guard<std::mutex> lock(m_mutex);
            m_outcome = outcome;
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_error = QString::fromUtf8(e.what());
        }
    }));
}

bool TrainingRun::progress(const training::StepReport& report)
{
    std::unique_lock<std::mutex> lock(m_mutex);
    m_reports.push_back(report);
    m_lastStep = report.step;
    if (m_pause && m_stepsAllowed > 0) {
        --m_stepsAllowed;
    } else if (m_pause && !m_stop) {
        m_waiting = true;
        QMetaObject::invokeMethod(this, &TrainingRun::paused, Qt::QueuedConnection);
        m_wake.wait(lock, [this] { return !m_pause || m_stop || m_stepsAllowed > 0; });
        m_waiting = false;
        if (m_pause && m_stepsAllowed > 0)
            --m_stepsAllowed; // the step about to run
    }
    return !m_stop;
}

void TrainingRun::pause()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_pause = true;
    m_stepsAllowed = 0;
}

void TrainingRun::resume()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_pause = false;
        m_stepsAllowed = 0;
    }
    m_wake.notify_all();
}

void TrainingRun::step()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_pause)
            return;
        m_stepsAllowed = 1;
    }
    m_wake.notify_all();
}

void TrainingRun::stop()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
}

void TrainingRun::waitForEnd()
{
    m_watcher->waitForFinished();
}

bool TrainingRun::isPauseRequested() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_pause;
}

bool TrainingRun::isStopRequested() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_stop;
}

bool TrainingRun::isWaiting() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_waiting;
}

std::int64_t TrainingRun::lastReportedStep() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_lastStep;
}

std::vector<training::StepReport> TrainingRun::takeReports()
{
    std::vector<training::StepReport> reports;
    std::lock_guard<std::mutex> lock(m_mutex);
    reports.swap(m_reports);
    return reports;
}

training::TrainOutcome TrainingRun::outcome() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_outcome;
}

QString TrainingRun::error() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_error;
}

} // namespace qkv::ui
