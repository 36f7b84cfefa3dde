// SPDX-License-Identifier: GPL-3.0-or-later
#include "Document.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "ResourceLimits.h"
#include "SessionFile.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QUndoStack>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <new>

namespace qkv::ui {

namespace {

QString stoppedMessage()
{
    return Document::tr("Stopped before it finished: undo, or make any edit, to compute again.");
}

ComputeOutcome computeOutcome(const Session& session, quint64 generation, const ComputeOptions& options,
                              std::shared_ptr<AttentionResult> buffer)
{
    ComputeOutcome outcome;
    outcome.generation = generation;
    outcome.buffer = std::move(buffer);
    QElapsedTimer timer;
    timer.start();
    try {
        computeAttention(session, *outcome.buffer, options);
        outcome.result = outcome.buffer;
    } catch (const Cancelled&) {
        outcome.error = stoppedMessage();
    } catch (const Error& e) {
        outcome.error = QString::fromStdString(e.what());
    } catch (const std::bad_alloc&) {
        outcome.error = Document::tr("not enough memory for a session of this size");
    }
    outcome.milliseconds = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    return outcome;
}

double workOf(const Session& s)
{
    return static_cast<double>(s.n()) * static_cast<double>(s.m()) * static_cast<double>(s.dK() + s.dV()) *
           s.headCount();
}

} // namespace

Document::Document(QObject* parent)
    : QObject(parent), m_undoStack(new QUndoStack(this)), m_memoryLimit(defaultMemoryLimit())
{
    m_initializer.seed = 1;
    connect(m_undoStack, &QUndoStack::cleanChanged, this,
            [this](bool clean) { emit modifiedChanged(!clean); });
    connect(&m_watcher, &QFutureWatcher<ComputeOutcome>::finished, this, &Document::onBackgroundFinished);
    reset(loadExample("love"));
}

Document::~Document()
{
    if (m_cancelJob)
        m_cancelJob->store(true);
    m_watcher.waitForFinished();
}

QString Document::displayName() const
{
    if (!m_filePath.isEmpty())
        return QFileInfo(m_filePath).fileName();
    return m_session.title.empty() ? tr("Untitled") : QString::fromStdString(m_session.title);
}

bool Document::isModified() const
{
    return !m_undoStack->isClean();
}

void Document::cancelComputation()
{
    if (!isComputing())
        return;
    if (m_cancelJob)
        m_cancelJob->store(true);
    if (m_backgroundPending) {
        // The running job is an older session's (already told to stop): the newest never starts.
        m_backgroundPending = false;
        publish(ComputeOutcome{nullptr, stoppedMessage(), 0.0, m_generation, nullptr, nullptr});
    }
    // Otherwise the running job is the newest: its outcome ("stopped", or its result if it had already
    // finished) is published when it ends.
}

void Document::setMemoryLimit(std::uint64_t bytes)
{
    if (bytes == m_memoryLimit)
        return;
    m_memoryLimit = bytes;
    recompute();
}

void Document::reset(const Session& session, const QString& filePath)
{
    m_session = session;
    m_undoStack->clear();
    m_undoStack->setClean();
    m_currentHead = 0;
    if (m_filePath != filePath) {
        m_filePath = filePath;
        emit filePathChanged(m_filePath);
    }
    emit currentHeadChanged(0);
    m_selectOnPublish = false;
    notifyChanged(Everything);
    emit modifiedChanged(false);
    // The head and cell saved with the session; else the key the first query attends to most (the cell a
    // person asks about first), from this session's result: now, or when the background job publishes it.
    const ViewState view = m_session.view;
    setCurrentHead(view.head.value_or(0));
    if (view.selection) {
        setSelection(view.selection->first, view.selection->second);
    } else if (!isComputing()) {
        selectStrongestKeyOfFirstQuery();
    } else {
        setSelection(0, 0);
        m_selectOnPublish = true;
    }
    emit sessionReset();
}

void Document::selectStrongestKeyOfFirstQuery()
{
    Index key = 0;
    if (m_result && m_result->heads.front().weights.size() > 0)
        m_result->heads.front().weights.row(0).maxCoeff(&key);
    setSelection(0, key);
}

bool Document::open(const QString& source, QString* error)
{
    try {
        const std::string text = source.toStdString();
        const std::string prefix = examplePrefix;
        if (text.rfind(prefix, 0) == 0) {
            reset(loadExample(text.substr(prefix.size())));
        } else {
            Session loaded = loadSession(text, sessionFileSizeLimit(m_memoryLimit));
            reset(loaded, QFileInfo(source).absoluteFilePath());
        }
        return true;
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    } catch (const std::bad_alloc&) {
        if (error)
            *error = tr("%1: not enough memory to open this session").arg(source);
        return false;
    }
}

bool Document::saveAs(const QString& path, QString* error)
{
    // The head and cell on show travel in the session's `view` object, beside whatever else it held: view
    // state, so nothing to recompute or undo.
    Session withView = m_session;
    withView.view.head = m_currentHead;
    withView.view.selection = std::make_pair(m_selectedQuery, m_selectedKey);
    try {
        saveSession(withView, path.toStdString());
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    m_session.view = withView.view;
    m_undoStack->setClean();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    if (absolute != m_filePath) {
        m_filePath = absolute;
        emit filePathChanged(m_filePath);
    }
    return true;
}

void Document::push(QUndoCommand* command)
{
    m_undoStack->push(command);
}

CurrentHeadResult Document::currentHeadResult() const
{
    CurrentHeadResult current;
    if (!m_result || m_result->heads.empty()) {
        current.error = tr("Cannot compute attention: %1").arg(m_resultError);
        return current;
    }
    current.result = m_result;
    current.count = static_cast<int>(m_result->heads.size());
    current.index = std::clamp(m_currentHead, 0, current.count - 1);
    current.head = &m_result->heads[static_cast<std::size_t>(current.index)];
    return current;
}

void Document::setCurrentHead(int head)
{
    head = std::clamp(head, 0, m_session.headCount() - 1);
    if (head == m_currentHead)
        return;
    m_currentHead = head;
    emit currentHeadChanged(head);
}

void Document::setSelection(Index query, Index key)
{
    m_selectOnPublish = false; // a cell chosen before the result arrived stays chosen
    query = std::clamp<Index>(query, 0, m_session.n() - 1);
    key = std::clamp<Index>(key, 0, m_session.m() - 1);
    if (query == m_selectedQuery && key == m_selectedKey)
        return;
    m_selectedQuery = query;
    m_selectedKey = key;
    emit selectionChanged(query, key);
}

bool Document::recordPatchExperiment(const PatchExperiment& experiment)
{
    if (!m_session.model)
        return false;
    m_session.model->patching = experiment;
    return true;
}

void Document::notifyChanged(Changes changes)
{
    if (m_currentHead >= m_session.headCount()) {
        m_currentHead = m_session.headCount() - 1;
        emit currentHeadChanged(m_currentHead);
    }
    if (m_selectedQuery >= m_session.n() || m_selectedKey >= m_session.m())
        setSelection(std::min(m_selectedQuery, m_session.n() - 1),
                     std::min(m_selectedKey, m_session.m() - 1));
    const bool recomputes = changes & Everything; // snapshots or the model link alone change no result
    // A result computed at once follows the change the views have taken in; one computed in the background
    // is started first, so that it runs while they take in the edit.
    const bool atOnce = computesAtOnce();
    if (recomputes && !atOnce)
        recompute();
    emit sessionChanged(changes);
    if (recomputes && atOnce)
        recompute();
}

bool Document::computesAtOnce() const
{
    return workOf(m_session) < synchronousWorkLimit;
}

void Document::recompute()
{
    ++m_generation;
    if (m_watcher.isRunning()) {
        // The running job computes an older session: stop it, and start the newest when it ends.
        m_backgroundPending = true;
        m_cancelJob->store(true);
    } else if (computesAtOnce()) {
        m_backgroundPending = false;
        publish(
            computeOutcome(m_session, m_generation, ComputeOptions{nullptr, m_memoryLimit}, takeBuffer()));
    } else {
        startBackground();
    }
    announceComputing();
}

void Document::announceComputing()
{
    if (isComputing() == m_announcedComputing)
        return;
    m_announcedComputing = isComputing();
    emit computingChanged(m_announcedComputing);
}

void Document::startBackground()
{
    m_backgroundPending = false;
    m_jobHandled = false;
    m_cancelJob = std::make_shared<std::atomic<bool>>(false);
    const quint64 generation = m_generation;
    const std::uint64_t memoryLimit = m_memoryLimit;
    const std::shared_ptr<std::atomic<bool>> cancel = m_cancelJob;
    m_watcher.setFuture(
        QtConcurrent::run([snapshot = takeSnapshot(), generation, memoryLimit, cancel, buffer = takeBuffer(),
                           previousSession = m_resultSession, previousResult = m_result] {
            ComputeOptions options{cancel.get(), memoryLimit};
            if (previousSession && previousResult) {
                options.previousSession = previousSession.get();
                options.previousResult = previousResult.get();
            }
            ComputeOutcome outcome = computeOutcome(*snapshot, generation, options, buffer);
            outcome.session = snapshot;
            return outcome;
        }));
}

std::shared_ptr<const Session> Document::takeSnapshot()
{
    for (std::shared_ptr<Session>& snapshot : m_snapshots)
        if (snapshot && snapshot.use_count() == 1) {
            // The job's last reads came before its release.
            std::atomic_thread_fence(std::memory_order_acquire);
            *snapshot = m_session;
            return snapshot;
        }
    std::shared_ptr<Session>& fresh = m_snapshots[m_snapshots[0] ? 1 : 0];
    fresh = std::make_shared<Session>(m_session); // (both held: the one replaced lives on with its holder)
    return fresh;
}

void Document::onBackgroundFinished()
{
    // Called by the watcher's finished() and by waitForResult(), whichever comes first; the job is handled
    // once.
    if (m_jobHandled || !m_watcher.isFinished())
        return;
    m_jobHandled = true;
    publish(m_watcher.result());
    if (m_backgroundPending)
        startBackground();
}

std::shared_ptr<AttentionResult> Document::takeBuffer()
{
    std::shared_ptr<AttentionResult> buffer = std::move(m_spareBuffer);
    if (buffer && buffer.use_count() == 1)
        return buffer;
    return std::make_shared<AttentionResult>(); // the spare is still shown somewhere (or there is none)
}

void Document::recycle(std::shared_ptr<AttentionResult> buffer)
{
    if (buffer && buffer != m_resultBuffer)
        m_spareBuffer = std::move(buffer);
}

void Document::publish(const ComputeOutcome& outcome)
{
    // An older session's result loses to the newest edit.
    if (outcome.generation != m_generation || outcome.generation == m_publishedGeneration) {
        recycle(outcome.buffer);
        return;
    }
    m_publishedGeneration = outcome.generation;
    std::shared_ptr<AttentionResult> previous = std::move(m_resultBuffer);
    m_resultBuffer = outcome.result ? outcome.buffer : nullptr;
    m_result = outcome.result;
    m_resultSession = outcome.result ? outcome.session : nullptr;
    m_resultError = outcome.error;
    m_lastMilliseconds = outcome.milliseconds;
    if (m_selectOnPublish)
        selectStrongestKeyOfFirstQuery();
    emit resultArrived();
    emit resultChanged();
    // The views have moved to the new result: the one before is the next computation's buffer (an
    // engine refusal's buffer holds nothing worth showing either).
    recycle(outcome.result ? std::move(previous) : outcome.buffer);
    announceComputing();
}

void Document::waitForResult()
{
    while (isComputing()) {
        if (m_jobHandled && !m_backgroundPending)
            startBackground(); // cannot happen: every unpublished generation has a job or a pending start
        m_watcher.waitForFinished();
        onBackgroundFinished();
    }
}

} // namespace qkv::ui
