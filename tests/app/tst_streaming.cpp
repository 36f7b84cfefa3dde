// SPDX-License-Identifier: GPL-3.0-or-later
// `qkvlab compute` holds no more than its session and its result: the JSON output is written as it goes and a
// session file is parsed as it is read. Each case runs the real executable and reads the child's peak
// resident memory from wait4(); a failed write of the output is an error, never a success.

#include "TestMain.h"
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

struct Run {
    bool started = false;
    bool exited = false; ///< false: killed by a signal
    int exitCode = -1;
    int signal = 0;
    double peakBytes = 0; ///< the child's peak resident set
    QByteArray err;

    QString describe() const
    {
        return QStringLiteral("exit %1, signal %2, peak %3 MB, stderr: %4")
            .arg(exitCode)
            .arg(signal)
            .arg(peakBytes / 1e6, 0, 'f', 1)
            .arg(QString::fromUtf8(err.left(2000)));
    }
};

/// Runs qkvlab with standard output on `stdoutFd` (closed here) and standard error in `errPath`.
Run runQkvlab(const std::vector<std::string>& arguments, int stdoutFd, const QString& errPath)
{
    std::vector<std::string> argv{QKVLAB_EXECUTABLE};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    std::vector<char*> pointers;
    for (std::string& a : argv)
        pointers.push_back(a.data());
    pointers.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stdoutFd, STDOUT_FILENO);
    const QByteArray errFile = QFile::encodeName(errPath);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errFile.constData(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    Run run;
    pid_t pid = 0;
    run.started = posix_spawn(&pid, pointers.front(), &actions, nullptr, pointers.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
    ::close(stdoutFd);
    if (!run.started)
        return run;
    int status = 0;
    struct rusage usage {};
    while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    run.exited = WIFEXITED(status);
    run.exitCode = run.exited ? WEXITSTATUS(status) : -1;
    run.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    run.peakBytes = static_cast<double>(usage.ru_maxrss) * 1024.0; // KiB on Linux
    QFile err(errPath);
    if (err.open(QIODevice::ReadOnly))
        run.err = err.readAll();
    return run;
}

Run runQkvlab(const std::vector<std::string>& arguments, const QString& stdoutPath, const QString& errPath)
{
    const int fd =
        ::open(QFile::encodeName(stdoutPath).constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return {};
    return runQkvlab(arguments, fd, errPath);
}

/// A session file written as it goes: n tokens of d_model numbers, cross-attention to m tokens when m > 0,
/// one head of d_k = d_v. Numbers come from a short list (whole and fractional), so the text stays small.
bool writeSession(const QString& path, int n, int m, int dModel, int dK)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return false;
    const char* numbers[] = {"0.5", "-1", "2", "0.25", "-0.75", "3", "-0.125"};
    std::size_t next = 0;
    QByteArray text;
    const auto flush = [&] {
        const bool ok = file.write(text) == text.size();
        text.clear();
        return ok;
    };
    const auto matrix = [&](int rows, int cols) {
        text += "[";
        for (int r = 0; r < rows; ++r) {
            text += r > 0 ? ",\n    [" : "\n    [";
            for (int c = 0; c < cols; ++c) {
                if (c > 0)
                    text += ", ";
                text += numbers[next++ % std::size(numbers)];
            }
            text += "]";
            if (text.size() > (1 << 20) && !flush())
                return false;
        }
        text += "\n  ]";
        return true;
    };
    const auto tokens = [&](int count, const char* prefix) {
        text += "[";
        for (int i = 0; i < count; ++i)
            text += (i > 0 ? ", \"" : "\"") + QByteArray(prefix) + QByteArray::number(i) + "\"";
        text += "]";
    };
    text += "{\n  \"format\": \"qkvlab-session\",\n  \"version\": 1,\n  \"tokens\": ";
    tokens(n, "t");
    text += ",\n  \"X\": ";
    bool ok = matrix(n, dModel);
    if (m > 0) {
        text += ",\n  \"context\": {\"tokens\": ";
        tokens(m, "c");
        text += ", \"Z\": ";
        ok = ok && matrix(m, dModel);
        text += "}";
    }
    text += ",\n  \"heads\": [{\"W_Q\": ";
    ok = ok && matrix(dModel, dK);
    text += ", \"W_K\": ";
    ok = ok && matrix(dModel, dK);
    text += ", \"W_V\": ";
    ok = ok && matrix(dModel, dK);
    text += "}]\n}\n";
    return ok && flush();
}

constexpr double mib = 1024.0 * 1024.0;

} // namespace

class TestStreaming : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void computeHoldsTheResultOnly();
    void loadHoldsTheMatricesOnly();
    void failedOutputIsAnError();
    void closedPipeIsAnError();

private:
    QTemporaryDir dir_;
};

void TestStreaming::initTestCase()
{
    QVERIFY(dir_.isValid());
}

void TestStreaming::computeHoldsTheResultOnly()
{
#ifdef QKV_SANITIZE
    QSKIP("the sanitizers' shadow memory and quarantine inflate the resident set");
#endif
    // 4096 tokens, d_model = d_k = d_v = 4: the result is the n × n scores, scaled scores and weights
    // (doubles) and the mask (bytes); everything else is n × 4.
    constexpr double n = 4096, d = 4;
    const double resultBytes = 3 * n * n * 8 + n * n + (3 * n * d + n * d) * 8 + 2 * n * d * 8 + n * 32;
    const QString session = dir_.filePath(QStringLiteral("n4096.qkv.json"));
    QVERIFY(writeSession(session, 4096, 0, 4, 4));
    const Run run = runQkvlab({"compute", session.toStdString()}, QStringLiteral("/dev/null"),
                              dir_.filePath(QStringLiteral("err.txt")));
    QVERIFY(run.started);
    if (run.exitCode == 2 && run.err.contains("needs about"))
        QSKIP("this machine's memory limit refuses a 4096-token session");
    QVERIFY2(run.exited && run.exitCode == 0, qPrintable(run.describe()));
    qInfo("peak resident set %.1f MiB for a result of %.1f MiB (%.2f ×)", run.peakBytes / mib,
          resultBytes / mib, run.peakBytes / resultBytes);
    QVERIFY2(run.peakBytes <= 1.5 * resultBytes, qPrintable(run.describe()));
}

void TestStreaming::loadHoldsTheMatricesOnly()
{
#ifdef QKV_SANITIZE
    QSKIP("the sanitizers' shadow memory and quarantine inflate the resident set");
#endif
    // One query attending to a 4096 × 4096 context: the session's Z is the only large matrix, the result is
    // 1 × 4096 rows, so the peak is the loading of the file.
    constexpr double m = 4096, dModel = 4096;
    const double matrixBytes = (m * dModel + dModel + 3 * dModel) * 8;
    const QString session = dir_.filePath(QStringLiteral("z4096.qkv.json"));
    QVERIFY(writeSession(session, 1, 4096, 4096, 1));
    const QString out = dir_.filePath(QStringLiteral("z4096.out.json"));
    const Run run =
        runQkvlab({"compute", session.toStdString()}, out, dir_.filePath(QStringLiteral("err.txt")));
    QFile::remove(session);
    QVERIFY(run.started);
    if (run.exitCode == 2 && (run.err.contains("needs about") || run.err.contains("too large")))
        QSKIP("this machine's memory limit refuses the session");
    QVERIFY2(run.exited && run.exitCode == 0, qPrintable(run.describe()));
    QVERIFY(QFileInfo(out).size() > 4096);
    qInfo("peak resident set %.1f MiB for matrices of %.1f MiB (%.2f ×)", run.peakBytes / mib,
          matrixBytes / mib, run.peakBytes / matrixBytes);
    // The executable and its libraries take ~20 MiB before reading anything.
    QVERIFY2(run.peakBytes <= 1.5 * matrixBytes + 32 * mib, qPrintable(run.describe()));
}

void TestStreaming::failedOutputIsAnError()
{
    const Run run = runQkvlab({"compute", "example:multihead"}, QStringLiteral("/dev/full"),
                              dir_.filePath(QStringLiteral("err.txt")));
    QVERIFY(run.started);
    QVERIFY2(run.exited && run.exitCode == 2, qPrintable(run.describe()));
    QCOMPARE(QString::fromUtf8(run.err),
             QStringLiteral("qkvlab compute: (standard output): cannot write: No space left on device\n"));
}

void TestStreaming::closedPipeIsAnError()
{
    // With SIGPIPE ignored (inherited through exec), a closed pipe is EPIPE, reported like a full disk.
    // Otherwise SIGPIPE ends the process, as it ends any Unix filter: a failure all the same.
    for (const bool ignoreSigpipe : {true, false}) {
        int fds[2];
        QVERIFY(::pipe2(fds, O_CLOEXEC) == 0);
        ::close(fds[0]); // nobody reads
        const auto previous = std::signal(SIGPIPE, ignoreSigpipe ? SIG_IGN : SIG_DFL);
        const Run run =
            runQkvlab({"compute", "example:multihead"}, fds[1], dir_.filePath(QStringLiteral("err.txt")));
        std::signal(SIGPIPE, previous);
        QVERIFY(run.started);
        if (ignoreSigpipe) {
            QVERIFY2(run.exited && run.exitCode == 2, qPrintable(run.describe()));
            QCOMPARE(QString::fromUtf8(run.err),
                     QStringLiteral("qkvlab compute: (standard output): cannot write: Broken pipe\n"));
        } else {
            QVERIFY2(!run.exited && run.signal == SIGPIPE, qPrintable(run.describe()));
        }
    }
}

QKV_TEST_GUILESS_MAIN(TestStreaming)
#include "tst_streaming.moc"
