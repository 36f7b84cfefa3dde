// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingRunFolders.h"

#include "FileWriting.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimeZone>

#include <exception>

namespace qkv::ui {

namespace {

const QString nameFormat = QStringLiteral("yyyyMMdd-HHmmss-zzz");
const QString lockName = QStringLiteral(".qkvlab-running.lock");
constexpr qint64 largestLog = qint64(1) << 30; // training.json of a very long run stays far below

bool isRunName(const QString& name)
{
    static const QRegularExpression pattern(QStringLiteral("^\\d{8}-\\d{6}-\\d{3}$"));
    return pattern.match(name).hasMatch();
}

QJsonObject readLog(const QString& folder)
{
    QFile file(QDir(folder).filePath(QStringLiteral("training.json")));
    if (file.size() > largestLog || !file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

QStringList readSavedTo(const QString& folder)
{
    QFile file(QDir(folder).filePath(TrainingRunFolders::savedMarkerName()));
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return lines;
}

} // namespace

TrainingRunFolders::TrainingRunFolders(QString root) : m_root(std::move(root)) {}

QString TrainingRunFolders::defaultRoot()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
        .filePath(QStringLiteral("training"));
}

QString TrainingRunFolders::savedMarkerName()
{
    return QStringLiteral(".qkvlab-saved-to");
}

QString TrainingRunFolders::createRun(QString* error)
{
    unlockRun();
    QDateTime now = QDateTime::currentDateTimeUtc();
    QString path = QDir(m_root).filePath(now.toString(nameFormat));
    while (QFileInfo::exists(path)) { // two runs in one millisecond
        now = now.addMSecs(1);
        path = QDir(m_root).filePath(now.toString(nameFormat));
    }
    if (!QDir().mkpath(path)) {
        if (error)
            *error = QObject::tr("Cannot create %1.").arg(QDir::toNativeSeparators(path));
        return {};
    }
    auto lock = std::make_shared<QLockFile>(QDir(path).filePath(lockName));
    lock->setStaleLockTime(0); // a run may go for hours: only a dead process makes the lock stale
    if (lock->tryLock(0))
        m_lock = std::move(lock);
    return path;
}

void TrainingRunFolders::unlockRun()
{
    m_lock.reset(); // the destructor unlocks and removes the file
}

bool TrainingRunFolders::isLocked(const QString& path)
{
    const QString file = QDir(path).filePath(lockName);
    if (!QFileInfo::exists(file))
        return false;
    QLockFile probe(file);
    probe.setStaleLockTime(0);
    if (probe.tryLock(0)) { // the lock of a process that is gone: removed
        probe.unlock();
        return false;
    }
    return probe.error() == QLockFile::LockFailedError;
}

bool TrainingRunFolders::isRunFolder(const QString& path) const
{
    const QFileInfo info(path);
    return info.isDir() && !info.isSymLink() && isRunName(info.fileName()) &&
           QFileInfo(info.absolutePath()).canonicalFilePath() == QFileInfo(m_root).canonicalFilePath();
}

QList<TrainingRunFolder> TrainingRunFolders::list() const
{
    QList<TrainingRunFolder> runs;
    const QDir root(m_root);
    for (const QFileInfo& info :
         root.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name | QDir::Reversed))
        if (isRunName(info.fileName()) && !info.isSymLink())
            runs.append(read(info.absoluteFilePath()));
    return runs;
}

TrainingRunFolder TrainingRunFolders::read(const QString& path) const
{
    TrainingRunFolder run;
    const QFileInfo info(path);
    run.path = info.absoluteFilePath();
    run.name = info.fileName();
    run.started = QDateTime::fromString(run.name, nameFormat);
    run.started.setTimeZone(QTimeZone::utc());
    run.hasModel = QFileInfo::exists(QDir(path).filePath(QStringLiteral("config.json")));
    run.running = isLocked(path);
    run.savedTo = readSavedTo(path);
    const QJsonObject log = readLog(path);
    if (log.contains(QStringLiteral("task")))
        run.task = log.value(QStringLiteral("task")).toObject().value(QStringLiteral("name")).toString();
    else if (log.contains(QStringLiteral("data_ids")))
        run.task = QObject::tr("token ids");
    const QJsonArray steps = log.value(QStringLiteral("steps")).toArray();
    if (!steps.isEmpty())
        run.steps = steps.last().toObject().value(QStringLiteral("step")).toInteger();
    return run;
}

std::optional<TrainingRunTask> TrainingRunFolders::readTask(const QString& path)
{
    const QJsonObject log = readLog(path);
    const QJsonObject task = log.value(QStringLiteral("task")).toObject();
    if (task.isEmpty())
        return std::nullopt;
    try {
        TrainingRunTask result;
        result.task.kind = training::taskKind(task.value(QStringLiteral("name")).toString().toStdString());
        result.task.vocab = task.value(QStringLiteral("vocab")).toInteger();
        result.task.length = task.value(QStringLiteral("length")).toInteger();
        result.task.minPeriod = task.value(QStringLiteral("min_period")).toInteger();
        result.seed = std::uint64_t(log.value(QStringLiteral("seed")).toInteger(1));
        return result;
    } catch (const std::exception&) { // a task this version does not know
        return std::nullopt;
    }
}

bool TrainingRunFolders::markSaved(const QString& path, const QString& destination, QString* error)
{
    QStringList saved = readSavedTo(path);
    saved.append(QDir::toNativeSeparators(QFileInfo(destination).absoluteFilePath()));
    try {
        writeFileAtomically(QDir(path).filePath(savedMarkerName()).toStdString(),
                            saved.join(QLatin1Char('\n')).toStdString() + "\n");
        return true;
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromUtf8(e.what());
        return false;
    }
}

bool TrainingRunFolders::remove(const QString& path, QString* error)
{
    const auto refuse = [error](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (!isRunFolder(path))
        return refuse(QObject::tr("%1 is not a training run's folder.").arg(QDir::toNativeSeparators(path)));
    if (isLocked(path))
        return refuse(
            QObject::tr("%1 is being trained; stop the run first.").arg(QDir::toNativeSeparators(path)));
    if (!QDir(path).removeRecursively())
        return refuse(QObject::tr("Cannot delete all of %1.").arg(QDir::toNativeSeparators(path)));
    return true;
}

QStringList TrainingRunFolders::prune(int keep)
{
    QStringList removed;
    int unsaved = 0;
    for (const TrainingRunFolder& run : list()) { // newest first
        if (run.running || run.isSaved())
            continue;
        if (++unsaved > keep && remove(run.path))
            removed.append(run.path);
    }
    return removed;
}

} // namespace qkv::ui
