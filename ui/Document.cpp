#include "Document.h"

#include "AttentionEngine.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "Examples.h"
#include "SessionFile.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUndoStack>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace qkv::ui {

namespace {

ComputeOutcome computeOutcome(const Session& session, quint64 generation)
{
    ComputeOutcome outcome;
    outcome.generation = generation;
    QElapsedTimer timer;
    timer.start();
    try {
        outcome.result = std::make_shared<const AttentionResult>(computeAttention(session));
    } catch (const Error& e) {
        outcome.error = QString::fromStdString(e.what());
    } catch (const std::bad_alloc&) {
        outcome.error = Document::tr("not enough memory for a session of this size");
    }
    outcome.milliseconds = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    return outcome;
}

QJsonObject viewObject(const Session& session)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(viewJson(session))).object();
}

double workOf(const Session& s)
{
    return static_cast<double>(s.n()) * static_cast<double>(s.m()) * static_cast<double>(s.dK() + s.dV()) *
           s.headCount();
}

} // namespace

Document::Document(QObject* parent) : QObject(parent), m_undoStack(new QUndoStack(this))
{
    m_initializer.seed = 1;
    connect(m_undoStack, &QUndoStack::cleanChanged, this,
            [this](bool clean) { emit modifiedChanged(!clean); });
    connect(&m_watcher, &QFutureWatcher<ComputeOutcome>::finished, this, &Document::onBackgroundFinished);
    reset(loadExample("love"));
}

Document::~Document()
{
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

bool Document::isComputing() const
{
    return m_watcher.isRunning() || m_backgroundPending;
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
    notifyChanged(Everything);
    emit modifiedChanged(false);
    // The head and cell saved with the session; else the key the first query attends to most, the cell a
    // person asks about first.
    const QJsonObject view = viewObject(m_session);
    const QJsonArray selection = view.value(QStringLiteral("selection")).toArray();
    Index key = 0;
    if (m_result && m_result->heads.front().weights.size() > 0)
        m_result->heads.front().weights.row(0).maxCoeff(&key);
    setCurrentHead(view.value(QStringLiteral("head")).toInt(0));
    if (selection.size() == 2)
        setSelection(selection.at(0).toInt(0), selection.at(1).toInt(0));
    else
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
            Session loaded = loadSession(text);
            reset(loaded, QFileInfo(source).absoluteFilePath());
        }
        return true;
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
}

bool Document::saveAs(const QString& path, QString* error)
{
    // The head and cell on show travel in the session's free-form `view` object, beside whatever it held.
    QJsonObject view = viewObject(m_session);
    view.insert(QStringLiteral("head"), m_currentHead);
    view.insert(QStringLiteral("selection"),
                QJsonArray{static_cast<qint64>(m_selectedQuery), static_cast<qint64>(m_selectedKey)});
    Session withView = m_session;
    try {
        setViewJson(withView, QJsonDocument(view).toJson(QJsonDocument::Compact).toStdString());
        saveSession(withView, path.toStdString());
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    m_session.preservedJson = withView.preservedJson; // view state only: nothing to recompute or undo
    m_undoStack->setClean();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    if (absolute != m_filePath) {
        m_filePath = absolute;
        emit filePathChanged(m_filePath);
    }
    return true;
}

void Document::edit(const QString& text, Changes changes, std::function<void(Session&)> edit)
{
    m_undoStack->push(new EditSessionCommand(this, text, changes, std::move(edit)));
}

void Document::push(QUndoCommand* command)
{
    m_undoStack->push(command);
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
    query = std::clamp<Index>(query, 0, m_session.n() - 1);
    key = std::clamp<Index>(key, 0, m_session.m() - 1);
    if (query == m_selectedQuery && key == m_selectedKey)
        return;
    m_selectedQuery = query;
    m_selectedKey = key;
    emit selectionChanged(query, key);
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
    emit sessionChanged(changes);
    recompute();
}

void Document::recompute()
{
    ++m_generation;
    if (workOf(m_session) < synchronousWorkLimit && !m_watcher.isRunning()) {
        m_backgroundPending = false;
        publish(computeOutcome(m_session, m_generation));
        return;
    }
    if (m_watcher.isRunning())
        m_backgroundPending = true; // started with the newest session when the running one finishes
    else
        startBackground();
}

void Document::startBackground()
{
    m_backgroundPending = false;
    const Session snapshot = m_session;
    const quint64 generation = m_generation;
    m_watcher.setFuture(
        QtConcurrent::run([snapshot, generation] { return computeOutcome(snapshot, generation); }));
}

void Document::onBackgroundFinished()
{
    if (!m_watcher.isFinished())
        return; // a late notification for a future that was already replaced
    publish(m_watcher.result());
    if (m_backgroundPending)
        startBackground();
}

void Document::publish(const ComputeOutcome& outcome)
{
    // An older session's result loses to the newest edit; a result already shown is not shown twice.
    if (outcome.generation != m_generation || outcome.generation == m_publishedGeneration)
        return;
    m_publishedGeneration = outcome.generation;
    m_result = outcome.result;
    m_resultError = outcome.error;
    m_lastMilliseconds = outcome.milliseconds;
    emit resultChanged();
}

void Document::waitForResult()
{
    while (m_watcher.isRunning() || m_backgroundPending) {
        m_watcher.waitForFinished();
        onBackgroundFinished();
    }
}

} // namespace qkv::ui
