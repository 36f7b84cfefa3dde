// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The real qkvlab executable run by the command-line suites: its exit, standard output and standard error,
// with a deadline that ends a run that hangs (it then counts as not finished).

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <QtTest>

#include <cstdint>
#include <vector>

namespace qkv::test {

struct QkvlabRun {
    bool finished = false; ///< exited on its own before the deadline
    QProcess::ExitStatus status = QProcess::CrashExit;
    int exitCode = -1;
    QByteArray out;
    QByteArray err;

    QString describe() const
    {
        return QStringLiteral("exit %1 (%2)\nstdout: %3\nstderr: %4")
            .arg(exitCode)
            .arg(status == QProcess::NormalExit ? QStringLiteral("normal") : QStringLiteral("crashed"))
            .arg(QString::fromUtf8(out.left(600)), QString::fromUtf8(err.right(2000)));
    }
};

/// This process's environment with Qt's offscreen platform.
inline QProcessEnvironment offscreenEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    return environment;
}

/// This process's environment as on a machine without a display: no platform named, no X or Wayland.
inline QProcessEnvironment headlessEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"})
        environment.remove(QLatin1String(name));
    return environment;
}

/// Runs qkvlab with `arguments` and `input` on standard input (then closed), killed after `timeoutMs`.
inline QkvlabRun runQkvlabWith(const QProcessEnvironment& environment, const QStringList& arguments,
                               const QByteArray& input, int timeoutMs)
{
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(QKVLAB_EXECUTABLE), arguments);
    QkvlabRun run;
    if (!process.waitForStarted(timeoutMs))
        return run;
    if (!input.isEmpty())
        process.write(input);
    process.closeWriteChannel(); // standard input ends here, so `compute -` never waits for more
    run.finished = process.waitForFinished(timeoutMs);
    if (!run.finished) {
        process.kill();
        process.waitForFinished(timeoutMs);
    }
    run.status = process.exitStatus();
    run.finished = run.finished && run.status == QProcess::NormalExit;
    run.exitCode = process.exitCode();
    run.out = process.readAllStandardOutput();
    run.err = process.readAllStandardError();
    return run;
}

/// The JSON keys appear in this order in a command's printed text, from `from` on.
inline bool keysInOrder(const QByteArray& text, const QStringList& keys, qsizetype from = 0)
{
    for (const QString& key : keys) {
        from = text.indexOf(QByteArray("\"") + key.toUtf8() + "\":", from);
        if (from < 0)
            return false;
    }
    return true;
}

/// Token ids as a command line writes them: "5,17,3".
inline QString idList(const std::vector<std::int64_t>& ids)
{
    QStringList parts;
    for (std::int64_t id : ids)
        parts.append(QString::number(id));
    return parts.join(QLatin1Char(','));
}

} // namespace qkv::test

/// Verifies that `run` finished and `condition` holds; otherwise shows its exit and output.
#define QVERIFY_RUN(run, condition) QVERIFY2((run).finished && (condition), qPrintable((run).describe()))
