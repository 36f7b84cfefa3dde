// SPDX-License-Identifier: GPL-3.0-or-later
#include "Autosave.h"

#include "Document.h"
#include "Error.h"
#include "FileWriting.h"
#include "SessionFile.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QUndoStack>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cstdio>
#include <new>

namespace qkv::ui {

namespace {

const QString sidecarFormat = QStringLiteral("qkvlab-recovery");

std::string nativePath(const QString& path)
{
    return QFile::encodeName(path).toStdString();
}

QString readTrimmed(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromLatin1(file.readAll()).trimmed() : QString();
}

// Identifies this boot of the machine (Linux); empty where unknown.
QString bootId()
{
    static const QString id = readTrimmed(QStringLiteral("/proc/sys/kernel/random/boot_id"));
    return id;
}

// The fields of /proc/PID/stat after the command name (field 3, the state, first); empty where unknown.
QStringList processStat(qint64 pid)
{
    const QString stat = readTrimmed(QStringLiteral("/proc/%1/stat").arg(pid));
    const qsizetype nameEnd = stat.lastIndexOf(QLatin1Char(')')); // the command name may hold spaces
    return nameEnd < 0 ? QStringList() : stat.mid(nameEnd + 2).split(QLatin1Char(' '));
}

// When the process started, in clock ticks since boot (field 22 of /proc/PID/stat); empty where unknown.
// With the boot id it tells a running owner from an unrelated process that was given the same id later.
QString processStart(qint64 pid)
{
    const QStringList fields = processStat(pid);
    constexpr int startTimeField = 22 - 3;
    return fields.size() > startTimeField ? fields.at(startTimeField) : QString();
}

bool isOwnerRunning(qint64 pid, const QJsonObject& info)
{
    if (!isProcessRunning(static_cast<long>(pid)))
        return false;
    const QStringList stat = processStat(pid);
    if (!stat.isEmpty() && stat.front() == QLatin1String("Z")) // killed, not yet reaped by its parent
        return false;
    const QString boot = info.value(QStringLiteral("bootId")).toString();
    if (!boot.isEmpty() && !bootId().isEmpty() && boot != bootId())
        return false;
    const QString start = info.value(QStringLiteral("processStart")).toString();
    const QString current = processStart(pid);
    return start.isEmpty() || current.isEmpty() || start == current;
}

QJsonObject readSidecar(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QJsonObject();
    const QJsonObject info = QJsonDocument::fromJson(file.read(1 << 20)).object();
    return info.value(QStringLiteral("format")).toString() == sidecarFormat ? info : QJsonObject();
}

// Everything one write needs, copied on the GUI thread so the write can run on a worker.
struct RecoveryWrite {
    Session session;
    QString sessionPath;
    QString infoPath;
    QByteArray info;
};

// "" on success, else the message.
QString writeRecovery(const RecoveryWrite& job)
{
    try {
        saveSession(job.session, nativePath(job.sessionPath));
        writeFileAtomically(nativePath(job.infoPath), job.info.toStdString());
    } catch (const Error& e) {
        return Autosave::tr("Autosave: %1").arg(QString::fromStdString(e.what()));
    } catch (const std::bad_alloc&) {
        return Autosave::tr("Autosave: not enough memory to write the session");
    }
    return QString();
}

QString sessionFileName(qint64 pid)
{
    return QStringLiteral("recovery-%1.qkv.json").arg(pid);
}

QString sidecarFileName(qint64 pid)
{
    return QStringLiteral("recovery-%1.info.json").arg(pid);
}

} // namespace

Autosave::Autosave(Document* document, QObject* parent)
    : QObject(parent), m_document(document), m_folder(defaultFolder())
{
    m_soon.setSingleShot(true);
    m_soon.setInterval(0);
    connect(&m_timer, &QTimer::timeout, this, &Autosave::writeInBackground);
    connect(&m_soon, &QTimer::timeout, this, &Autosave::writeInBackground);
    // Listening from the start: a restored file is removed on a clean save even before start().
    connect(m_document, &Document::sessionChanged, this,
            [this](Document::Changes changes) { onSessionChanged(static_cast<int>(changes)); });
    connect(m_document, &Document::modifiedChanged, this, &Autosave::onModifiedChanged);
    connect(m_document, &Document::filePathChanged, this, [this] { m_dirty = true; });
}

Autosave::~Autosave()
{
    m_running.waitForFinished();
}

QString Autosave::defaultFolder()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/recovery");
}

void Autosave::setIntervalSeconds(int seconds)
{
    m_intervalSeconds = std::max(seconds, 0);
    if (!m_started)
        return;
    if (m_intervalSeconds > 0) {
        m_timer.start(m_intervalSeconds * 1000);
    } else {
        m_timer.stop();
        m_soon.stop();
    }
}

void Autosave::start()
{
    if (m_started)
        return;
    m_started = true;
    setIntervalSeconds(m_intervalSeconds);
    if (m_document->isModified()) {
        m_dirty = true;
        if (m_intervalSeconds > 0)
            m_soon.start();
    }
}

QString Autosave::sessionPath() const
{
    return QDir(m_folder).filePath(sessionFileName(QCoreApplication::applicationPid()));
}

QString Autosave::infoPath() const
{
    return QDir(m_folder).filePath(sidecarFileName(QCoreApplication::applicationPid()));
}

void Autosave::onSessionChanged(int changes)
{
    m_dirty = true;
    if (m_started && (changes & Document::Shape) && m_intervalSeconds > 0)
        m_soon.start();
}

void Autosave::onModifiedChanged(bool modified)
{
    if (m_restoring)
        return;
    if (modified) {
        m_dirty = true;
        return;
    }
    m_dirty = false;
    discard(); // saved, undone to the saved state, or another session opened: nothing left to recover
}

bool Autosave::prepareFolder(QString* problem)
{
    if (!QDir().mkpath(m_folder)) {
        *problem = tr("Autosave: cannot create the folder %1").arg(QDir::toNativeSeparators(m_folder));
        return false;
    }
    // Unsaved work is private: the folder is the owner's only.
    QFile::setPermissions(m_folder, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    return true;
}

QByteArray Autosave::sidecar() const
{
    const qint64 pid = QCoreApplication::applicationPid();
    const QJsonObject info{
        {QStringLiteral("format"), sidecarFormat},
        {QStringLiteral("version"), 1},
        {QStringLiteral("time"), QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs)},
        {QStringLiteral("title"), m_document->displayName()},
        {QStringLiteral("originalPath"), m_document->filePath()},
        {QStringLiteral("pid"), pid},
        {QStringLiteral("processStart"), processStart(pid)},
        {QStringLiteral("bootId"), bootId()}};
    return QJsonDocument(info).toJson();
}

void Autosave::writeInBackground()
{
    if (!m_dirty || !m_document->isModified())
        return;
    if (m_running.isRunning()) {
        m_pending = true; // written again when the running write ends: two writes never overlap
        return;
    }
    QString problem;
    if (!prepareFolder(&problem)) {
        emit failed(problem);
        return;
    }
    m_dirty = false;
    m_pending = false;
    const quint64 id = ++m_writeId;
    // Serializing a large session takes a while: a copy is written on a worker thread, which reports back
    // through the event loop (the destructor waits for it, so `this` outlives it).
    m_running = QtConcurrent::run(
        [this, id, job = RecoveryWrite{m_document->session(), sessionPath(), infoPath(), sidecar()}] {
            const QString outcome = writeRecovery(job);
            QMetaObject::invokeMethod(
                this, [this, id, outcome] { onWriteFinished(id, outcome); }, Qt::QueuedConnection);
        });
}

void Autosave::onWriteFinished(quint64 id, const QString& problem)
{
    if (id <= m_overtakenWrites) {
        // saveNow() or discard() waited for it and took over
    } else if (!problem.isEmpty()) {
        m_dirty = true;
        emit failed(problem);
    } else {
        emit saved(sessionPath());
    }
    if (m_pending && id == m_writeId) {
        m_running.waitForFinished(); // its last statement posted this report: it is ending
        m_pending = false;
        writeInBackground();
    }
}

bool Autosave::saveNow(QString* error)
{
    waitForWrite();
    if (!m_document->isModified()) {
        discard();
        return true;
    }
    QString problem;
    if (prepareFolder(&problem))
        problem = writeRecovery(RecoveryWrite{m_document->session(), sessionPath(), infoPath(), sidecar()});
    if (!problem.isEmpty()) {
        if (error)
            *error = problem;
        emit failed(problem);
        return false;
    }
    m_dirty = false;
    emit saved(sessionPath());
    return true;
}

void Autosave::waitForWrite()
{
    m_running.waitForFinished();
    m_overtakenWrites = m_writeId;
}

void Autosave::discard()
{
    waitForWrite(); // else a write in flight would bring the files back
    QFile::remove(sessionPath());
    QFile::remove(infoPath());
}

QList<RecoveryInfo> Autosave::orphans(const QString& folder)
{
    static const QRegularExpression name(QStringLiteral("^recovery-(\\d+)\\.qkv\\.json$"));
    const QDir dir(folder);
    QList<RecoveryInfo> found;
    for (const QString& file : dir.entryList({QStringLiteral("recovery-*.qkv.json")}, QDir::Files)) {
        const QRegularExpressionMatch match = name.match(file);
        if (!match.hasMatch())
            continue;
        RecoveryInfo entry;
        entry.pid = match.captured(1).toLongLong();
        entry.sessionPath = dir.filePath(file);
        entry.infoPath = dir.filePath(sidecarFileName(entry.pid));
        const QJsonObject info = readSidecar(entry.infoPath);
        if (entry.pid == QCoreApplication::applicationPid() || isOwnerRunning(entry.pid, info))
            continue;
        entry.time = QDateTime::fromString(info.value(QStringLiteral("time")).toString(), Qt::ISODateWithMs);
        if (!entry.time.isValid()) // no sidecar: killed between the two writes
            entry.time = QFileInfo(entry.sessionPath).lastModified();
        entry.title = info.value(QStringLiteral("title")).toString();
        entry.originalPath = info.value(QStringLiteral("originalPath")).toString();
        found.append(entry);
    }
    std::sort(found.begin(), found.end(),
              [](const RecoveryInfo& a, const RecoveryInfo& b) { return a.time > b.time; });
    return found;
}

bool Autosave::recover(const std::function<RecoveryChoice(const RecoveryInfo&)>& choose)
{
    // A sidecar alone is what a kill between removing the two files leaves: nothing to offer.
    static const QRegularExpression sidecarName(QStringLiteral("^recovery-(\\d+)\\.info\\.json$"));
    const QDir dir(m_folder);
    for (const QString& file : dir.entryList({QStringLiteral("recovery-*.info.json")}, QDir::Files)) {
        const QRegularExpressionMatch match = sidecarName.match(file);
        const qint64 pid = match.hasMatch() ? match.captured(1).toLongLong() : 0;
        if (pid > 0 && !QFileInfo::exists(dir.filePath(sessionFileName(pid))) &&
            !isOwnerRunning(pid, readSidecar(dir.filePath(file))))
            QFile::remove(dir.filePath(file));
    }
    for (const RecoveryInfo& orphan : orphans(m_folder)) {
        switch (choose(orphan)) {
        case RecoveryChoice::Keep:
            continue;
        case RecoveryChoice::Discard:
            QFile::remove(orphan.sessionPath);
            QFile::remove(orphan.infoPath);
            continue;
        case RecoveryChoice::Restore:
            break;
        }
        // Take the file over in one rename, so that of two instances starting at once only one gets it.
        if (std::rename(nativePath(orphan.sessionPath).c_str(), nativePath(sessionPath()).c_str()) != 0)
            continue;
        QFile::remove(orphan.infoPath);
        QString error;
        if (restore(orphan, &error))
            return true;
        emit failed(error);
    }
    return false;
}

bool Autosave::restore(const RecoveryInfo& orphan, QString* error)
{
    Session session;
    try {
        session = loadSession(nativePath(sessionPath()));
    } catch (const Error& e) {
        *error = tr("Cannot restore the unsaved session: %1").arg(QString::fromStdString(e.what()));
        return false;
    }
    m_restoring = true;
    m_document->reset(session, orphan.originalPath);
    m_document->undoStack()->resetClean(); // modified: it differs from the file on disk, if there is one
    m_restoring = false;
    m_dirty = true;
    saveNow(); // the sidecar now names this process
    return true;
}

} // namespace qkv::ui
