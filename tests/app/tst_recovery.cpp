// SPDX-License-Identifier: GPL-3.0-or-later
// Crash recovery with real qkvlab processes: a window that made an edit is killed (SIGKILL), and the next
// start restores exactly the edited session; a discarded recovery is gone; a running window keeps its own.
// Each test has its own XDG_DATA_HOME and XDG_CONFIG_HOME. The edit and the read-out use the hidden hooks of
// app/TestHooks.h (QKV_TEST_EDIT, QKV_TEST_REPORT); the answer to the recovery question is QKV_RECOVERY.

#include "Examples.h"
#include "SessionFile.h"

#include "TestMain.h"
#include <QtTest>

#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <memory>

using namespace qkv;

namespace {

constexpr int timeoutMs = 60000;

std::string native(const QString& path)
{
    return QFile::encodeName(path).toStdString();
}

QJsonObject readJson(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

} // namespace

class TestRecovery : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void killedWindowGivesItsEditBack();
    void discardedRecoveryIsGone();
    void runningWindowKeepsItsRecoveryFile();

private:
    QProcessEnvironment environment(const QString& recovery) const;
    /// Starts a window that opens `session` and appends a token (one structural edit).
    std::unique_ptr<QProcess> startEditingWindow(const QString& session);
    /// Runs a window to its end with QKV_RECOVERY=`answer` and QKV_TEST_REPORT; returns its state report.
    QJsonObject runAndReport(const QString& answer, const QString& reportPath);
    /// recovery-PID.qkv.json anywhere under XDG_DATA_HOME ("" when absent).
    QString recoveryFileOf(qint64 pid) const;
    QStringList recoveryFiles() const;

    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_original; // causal.qkv.json, the file the editing window opens
};

void TestRecovery::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    m_original = m_dir->filePath(QStringLiteral("causal.qkv.json"));
    saveSession(loadExample("causal"), native(m_original));
}

void TestRecovery::cleanup()
{
    m_dir.reset();
}

QProcessEnvironment TestRecovery::environment(const QString& recovery) const
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir->filePath(QStringLiteral("data")));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir->filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("QKV_RECOVERY"), recovery);
    env.remove(QStringLiteral("QKV_TEST_EDIT"));
    env.remove(QStringLiteral("QKV_TEST_REPORT"));
    return env;
}

std::unique_ptr<QProcess> TestRecovery::startEditingWindow(const QString& session)
{
    auto process = std::make_unique<QProcess>();
    QProcessEnvironment env = environment(QStringLiteral("keep"));
    env.insert(QStringLiteral("QKV_TEST_EDIT"), QStringLiteral("append-token"));
    process->setProcessEnvironment(env);
    process->setProcessChannelMode(QProcess::ForwardedErrorChannel);
    process->start(QStringLiteral(QKVLAB_EXECUTABLE), {session});
    if (!process->waitForStarted(timeoutMs))
        qWarning("qkvlab did not start: %s", qPrintable(process->errorString()));
    return process;
}

QJsonObject TestRecovery::runAndReport(const QString& answer, const QString& reportPath)
{
    QProcess process;
    QProcessEnvironment env = environment(answer);
    env.insert(QStringLiteral("QKV_TEST_REPORT"), reportPath);
    process.setProcessEnvironment(env);
    process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    process.start(QStringLiteral(QKVLAB_EXECUTABLE), QStringList());
    if (!process.waitForFinished(timeoutMs) || process.exitStatus() != QProcess::NormalExit ||
        process.exitCode() != 0) {
        qWarning("qkvlab with QKV_TEST_REPORT failed: exit %d, %s", process.exitCode(),
                 qPrintable(process.errorString()));
        process.kill();
        process.waitForFinished(timeoutMs);
        return QJsonObject();
    }
    return readJson(reportPath + QStringLiteral(".state.json"));
}

QStringList TestRecovery::recoveryFiles() const
{
    QStringList files;
    QDirIterator it(m_dir->filePath(QStringLiteral("data")), {QStringLiteral("recovery-*")}, QDir::Files,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        files << it.next();
    files.sort();
    return files;
}

QString TestRecovery::recoveryFileOf(qint64 pid) const
{
    const QString name = QStringLiteral("/recovery-%1.qkv.json").arg(pid);
    for (const QString& file : recoveryFiles())
        if (file.endsWith(name))
            return file;
    return QString();
}

void TestRecovery::killedWindowGivesItsEditBack()
{
    const std::unique_ptr<QProcess> window = startEditingWindow(m_original);
    const qint64 pid = window->processId();
    QVERIFY(pid > 0);
    // Written right after the structural edit; the sidecar is written second.
    QTRY_VERIFY_WITH_TIMEOUT(recoveryFiles().size() == 2 && !recoveryFileOf(pid).isEmpty(), timeoutMs);
    const QString recovery = recoveryFileOf(pid);
    const Session edited = loadSession(native(recovery));
    const Session causal = loadExample("causal");
    QCOMPARE(edited.n(), causal.n() + 1); // the window's edit, not the file it opened
    for (Index i = 0; i < causal.n(); ++i)
        QCOMPARE(edited.tokens[static_cast<std::size_t>(i)], causal.tokens[static_cast<std::size_t>(i)]);

    window->kill(); // SIGKILL: no clean-up runs
    QVERIFY(window->waitForFinished(timeoutMs));
    QCOMPARE(window->exitStatus(), QProcess::CrashExit);
    QVERIFY(QFileInfo::exists(recovery));

    const QString report = m_dir->filePath(QStringLiteral("restored.qkv.json"));
    const QJsonObject state = runAndReport(QStringLiteral("restore"), report);
    QVERIFY(!state.isEmpty());
    QVERIFY(loadSession(native(report)) == edited); // exactly the edited session
    QCOMPARE(state.value(QStringLiteral("modified")).toBool(), true);
    QCOMPARE(state.value(QStringLiteral("filePath")).toString(), m_original);
    QCOMPARE(state.value(QStringLiteral("title")).toString(), QStringLiteral("causal.qkv.json"));
    QVERIFY(loadSession(native(m_original)) == causal); // the file itself was never written
    QVERIFY(!QFileInfo::exists(recovery));              // taken over by the restoring window
}

void TestRecovery::discardedRecoveryIsGone()
{
    const std::unique_ptr<QProcess> window = startEditingWindow(m_original);
    const qint64 pid = window->processId();
    QTRY_VERIFY_WITH_TIMEOUT(recoveryFiles().size() == 2 && !recoveryFileOf(pid).isEmpty(), timeoutMs);
    window->kill();
    QVERIFY(window->waitForFinished(timeoutMs));

    const QString report = m_dir->filePath(QStringLiteral("after-discard.qkv.json"));
    const QJsonObject state = runAndReport(QStringLiteral("discard"), report);
    QVERIFY(!state.isEmpty());
    QCOMPARE(state.value(QStringLiteral("modified")).toBool(), false);
    QVERIFY(loadSession(native(report)) == loadExample("love")); // the usual start
    QCOMPARE(recoveryFiles(), QStringList());
}

void TestRecovery::runningWindowKeepsItsRecoveryFile()
{
    const std::unique_ptr<QProcess> window = startEditingWindow(m_original);
    const qint64 pid = window->processId();
    QTRY_VERIFY_WITH_TIMEOUT(recoveryFiles().size() == 2 && !recoveryFileOf(pid).isEmpty(), timeoutMs);
    const QStringList files = recoveryFiles();

    // A second instance started meanwhile is not offered the first one's work.
    const QString report = m_dir->filePath(QStringLiteral("second.qkv.json"));
    const QJsonObject state = runAndReport(QStringLiteral("restore"), report);
    QVERIFY(!state.isEmpty());
    QCOMPARE(state.value(QStringLiteral("modified")).toBool(), false);
    QCOMPARE(recoveryFiles(), files);
    QVERIFY(window->state() == QProcess::Running);

    window->kill();
    QVERIFY(window->waitForFinished(timeoutMs));
}

QKV_TEST_GUILESS_MAIN(TestRecovery)
#include "tst_recovery.moc"
