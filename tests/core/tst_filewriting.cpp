// SPDX-License-Identifier: GPL-3.0-or-later
// Atomic saves (core/io/FileWriting.h): symbolic links kept and their targets written, permissions and owner
// kept, new files created as editors do, temporary files never left behind, stale ones cleaned up, and a
// full disk reported by path and reason for every writer in core.

#include "Error.h"
#include "ErrorMessage.h"
#include "Examples.h"
#include "FileWriting.h"
#include "FullDisk.h"
#include "MatrixFile.h"
#include "SessionEdits.h"
#include "SessionFile.h"
#include "TestMain.h"

#include <QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <functional>
#include <string>

#include <csignal>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace qkv;
using qkv::test::errorOf;

namespace {

QByteArray readFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray("<unreadable>");
}

bool writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

/// Every name in a folder, hidden ones included (temporary files start with a dot).
QStringList entries(const QString& folder)
{
    return QDir(folder).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                                  QDir::Name);
}

void save(const QString& path, const QByteArray& bytes)
{
    writeFileAtomically(QFile::encodeName(path).toStdString(), bytes.toStdString());
}

mode_t modeOf(const QString& path)
{
    struct stat info {};
    return ::stat(QFile::encodeName(path).constData(), &info) == 0 ? (info.st_mode & 07777) : 0;
}

bool setAge(const QString& path, int seconds)
{
    struct timeval times[2]{};
    ::gettimeofday(&times[0], nullptr);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    return ::lutimes(QFile::encodeName(path).constData(), times) == 0;
}

QString linkText(const QString& path)
{
    char buffer[4096];
    const ssize_t length = ::readlink(QFile::encodeName(path).constData(), buffer, sizeof buffer);
    return length < 0 ? QString() : QFile::decodeName(QByteArray(buffer, static_cast<int>(length)));
}

// A PID no process can have (above the kernel's largest pid_max).
constexpr long deadPid = 999999999;

class Umask {
public:
    explicit Umask(mode_t mask) : m_old(::umask(mask)) {}
    ~Umask() { ::umask(m_old); }

private:
    mode_t m_old;
};

} // namespace

class TestFileWriting : public QObject {
    Q_OBJECT
private slots:
    void newFileGetsTheUmaskedMode_data();
    void newFileGetsTheUmaskedMode();
    void replacedFileKeepsItsMode_data();
    void replacedFileKeepsItsMode();
    void replacedFileKeepsItsOwner();
    void symbolicLinkStaysALink_data();
    void symbolicLinkStaysALink();
    void linkLoopIsRefused();
    void notARegularFileIsRefused_data();
    void notARegularFileIsRefused();
    void longNameSaves();
    void staleTemporariesAreRemoved_data();
    void staleTemporariesAreRemoved();
    void killedMidSaveLeavesTheOldFileAndTheNextSaveCleansUp();
    void fullDiskKeepsTheOldFileAndLeavesNoTemporary_data();
    void fullDiskKeepsTheOldFileAndLeavesNoTemporary();
};

void TestFileWriting::newFileGetsTheUmaskedMode_data()
{
    QTest::addColumn<uint>("mask");
    QTest::addColumn<uint>("expected");
    QTest::newRow("umask 022") << 022u << 0644u;
    QTest::newRow("umask 002") << 002u << 0664u;
    QTest::newRow("umask 077") << 077u << 0600u;
}

void TestFileWriting::newFileGetsTheUmaskedMode()
{
    QFETCH(uint, mask);
    QFETCH(uint, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("new.csv"));
    {
        const Umask umask(static_cast<mode_t>(mask));
        save(path, "1,2\n");
    }
    QCOMPARE(readFile(path), QByteArray("1,2\n"));
    QCOMPARE(uint(modeOf(path)), expected);
    QCOMPARE(entries(dir.path()), QStringList{QStringLiteral("new.csv")});
}

void TestFileWriting::replacedFileKeepsItsMode_data()
{
    QTest::addColumn<uint>("mode");
    QTest::newRow("private 0600") << 0600u;
    QTest::newRow("group 0640") << 0640u;
    QTest::newRow("read-only 0444") << 0444u;
    QTest::newRow("executable 0755") << 0755u;
}

void TestFileWriting::replacedFileKeepsItsMode()
{
    QFETCH(uint, mode);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
    QVERIFY(writeFile(path, "old"));
    QCOMPARE(::chmod(QFile::encodeName(path).constData(), static_cast<mode_t>(mode)), 0);
    const Umask umask(022); // must not matter when a file is replaced
    save(path, "new");
    QCOMPARE(readFile(path), QByteArray("new"));
    QCOMPARE(uint(modeOf(path)), mode);
}

void TestFileWriting::replacedFileKeepsItsOwner()
{
    if (::geteuid() != 0)
        QSKIP("only root may give a file to another owner");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
    QVERIFY(writeFile(path, "old"));
    const QByteArray native = QFile::encodeName(path);
    QCOMPARE(::chown(native.constData(), 1234, 5678), 0);
    save(path, "new");
    struct stat info {};
    QCOMPARE(::stat(native.constData(), &info), 0);
    QCOMPARE(uint(info.st_uid), 1234u);
    QCOMPARE(uint(info.st_gid), 5678u);
    QCOMPARE(readFile(path), QByteArray("new"));
}

void TestFileWriting::symbolicLinkStaysALink_data()
{
    // Paths relative to the test folder: links are made in order, `saveTo` is written, `target` must then
    // hold the new bytes while every link still reads the same.
    QTest::addColumn<QStringList>("links"); // "name=>points-to" (points-to as stored in the link)
    QTest::addColumn<QString>("saveTo");
    QTest::addColumn<QString>("target");
    QTest::addColumn<bool>("targetExists");
    QTest::newRow("relative link") << QStringList{QStringLiteral("link.json=>real.json")}
                                   << QStringLiteral("link.json") << QStringLiteral("real.json") << true;
    QTest::newRow("link into another folder")
        << QStringList{QStringLiteral("link.json=>sub/real.json")} << QStringLiteral("link.json")
        << QStringLiteral("sub/real.json") << true;
    QTest::newRow("link from another folder")
        << QStringList{QStringLiteral("sub/link.json=>../real.json")} << QStringLiteral("sub/link.json")
        << QStringLiteral("real.json") << true;
    QTest::newRow("chain of two links")
        << QStringList{QStringLiteral("b.json=>sub/real.json"), QStringLiteral("a.json=>b.json")}
        << QStringLiteral("a.json") << QStringLiteral("sub/real.json") << true;
    QTest::newRow("dangling link") << QStringList{QStringLiteral("link.json=>sub/new.json")}
                                   << QStringLiteral("link.json") << QStringLiteral("sub/new.json") << false;
    QTest::newRow("dangling chain") << QStringList{QStringLiteral("b.json=>new.json"),
                                                   QStringLiteral("sub/a.json=>../b.json")}
                                    << QStringLiteral("sub/a.json") << QStringLiteral("new.json") << false;
}

void TestFileWriting::symbolicLinkStaysALink()
{
    QFETCH(QStringList, links);
    QFETCH(QString, saveTo);
    QFETCH(QString, target);
    QFETCH(bool, targetExists);
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("sub")));
    if (targetExists) {
        QVERIFY(writeFile(dir.filePath(target), "old"));
        QCOMPARE(::chmod(QFile::encodeName(dir.filePath(target)).constData(), 0640), 0);
    }
    for (const QString& link : links) {
        const QStringList parts = link.split(QStringLiteral("=>"));
        QCOMPARE(::symlink(QFile::encodeName(parts[1]).constData(),
                           QFile::encodeName(dir.filePath(parts[0])).constData()),
                 0);
    }
    const QStringList before = entries(dir.path()) + entries(dir.filePath(QStringLiteral("sub")));

    save(dir.filePath(saveTo), "new");

    QCOMPARE(readFile(dir.filePath(target)), QByteArray("new"));
    QVERIFY(!QFileInfo(dir.filePath(target)).isSymLink());
    if (targetExists)
        QCOMPARE(uint(modeOf(dir.filePath(target))), 0640u);
    for (const QString& link : links) {
        const QStringList parts = link.split(QStringLiteral("=>"));
        const QFileInfo info(dir.filePath(parts[0]));
        QVERIFY2(info.isSymLink(), qPrintable(parts[0]));
        QCOMPARE(linkText(dir.filePath(parts[0])), parts[1]);
    }
    // Nothing else appeared: no temporary file in either folder, and only the target when it was new.
    QStringList after = entries(dir.path()) + entries(dir.filePath(QStringLiteral("sub")));
    if (!targetExists)
        after.removeOne(QFileInfo(target).fileName());
    QCOMPARE(after, before);
}

void TestFileWriting::linkLoopIsRefused()
{
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.json"));
    QCOMPARE(::symlink("b.json", QFile::encodeName(a).constData()), 0);
    QCOMPARE(::symlink("a.json", QFile::encodeName(dir.filePath(QStringLiteral("b.json"))).constData()), 0);
    const QString message = errorOf([&] { save(a, "x"); });
    QVERIFY2(message.startsWith(a + QStringLiteral(": cannot follow the symbolic link")),
             qPrintable(message));
    QCOMPARE(entries(dir.path()), (QStringList{QStringLiteral("a.json"), QStringLiteral("b.json")}));
}

void TestFileWriting::notARegularFileIsRefused_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("folder") << QStringLiteral("folder") << QStringLiteral(": is a folder, not a file");
    QTest::newRow("FIFO") << QStringLiteral("fifo") << QStringLiteral(": is not a regular file");
    QTest::newRow("link to a folder")
        << QStringLiteral("link") << QStringLiteral(": is a folder, not a file");
}

void TestFileWriting::notARegularFileIsRefused()
{
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("thing"));
    if (kind == QLatin1String("folder"))
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("thing")));
    else if (kind == QLatin1String("fifo"))
        QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0644), 0);
    else
        QCOMPARE(::symlink(QFile::encodeName(dir.path()).constData(), QFile::encodeName(path).constData()),
                 0);
    const QStringList before = entries(dir.path());
    const QString message = errorOf([&] { save(path, "x"); });
    QVERIFY2(message.startsWith(path + expected), qPrintable(message));
    QCOMPARE(entries(dir.path()), before);
}

void TestFileWriting::longNameSaves()
{
    QTemporaryDir dir;
    const QString name = QString(250, QLatin1Char('n')) + QStringLiteral(".csv");
    save(dir.filePath(name), "1\n");
    QCOMPARE(readFile(dir.filePath(name)), QByteArray("1\n"));
    QCOMPARE(entries(dir.path()), QStringList{name});
}

void TestFileWriting::staleTemporariesAreRemoved_data()
{
    QTest::addColumn<QString>("name"); // beside the target "s.qkv.json"; "PID" is replaced
    QTest::addColumn<long>("pid");
    QTest::addColumn<int>("ageSeconds");
    QTest::addColumn<bool>("removed");
    const QString ours = QStringLiteral(".s.qkv.json.qkvlab-save-PID-abc123");
    const long self = static_cast<long>(::getpid());
    QTest::newRow("dead owner, two minutes old") << ours << deadPid << 120 << true;
    QTest::newRow("dead owner, just written") << ours << deadPid << 0 << false;
    QTest::newRow("live owner, just written") << ours << self << 0 << false;
    QTest::newRow("live owner, ten minutes old") << ours << self << 600 << false;
    QTest::newRow("live owner, two hours old") << ours << self << 7200 << true;
    QTest::newRow("no PID, two hours old")
        << QStringLiteral(".s.qkv.json.qkvlab-save-garbage") << 0L << 7200 << true;
    QTest::newRow("another file's temporary")
        << QStringLiteral(".t.qkv.json.qkvlab-save-PID-abc123") << deadPid << 7200 << false;
    QTest::newRow("not one of ours") << QStringLiteral("s.qkv.json.abc123") << deadPid << 7200 << false;
}

void TestFileWriting::staleTemporariesAreRemoved()
{
    QFETCH(QString, name);
    QFETCH(long, pid);
    QFETCH(int, ageSeconds);
    QFETCH(bool, removed);
    QCOMPARE(QString::fromStdString(temporaryFilePrefix("s.qkv.json")),
             QStringLiteral(".s.qkv.json.qkvlab-save-"));
    QTemporaryDir dir;
    const QString target = dir.filePath(QStringLiteral("s.qkv.json"));
    const QString leftOver = dir.filePath(QString(name).replace(QStringLiteral("PID"), QString::number(pid)));
    QVERIFY(writeFile(leftOver, QByteArray(1000, 'x')));
    QVERIFY(setAge(leftOver, ageSeconds));
    save(target, "new");
    QCOMPARE(readFile(target), QByteArray("new"));
    QCOMPARE(QFileInfo::exists(leftOver), !removed);
}

void TestFileWriting::killedMidSaveLeavesTheOldFileAndTheNextSaveCleansUp()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
    QVERIFY(writeFile(path, "old"));
    // A child process saves 1 MB with a file size limit of 64 KiB: the kernel kills it (SIGXFSZ) mid-write,
    // as a crash or kill -9 would, with a partial temporary file on disk.
    const pid_t child = ::fork();
    QVERIFY(child >= 0);
    if (child == 0) {
        const struct rlimit limit {
            64 * 1024, 64 * 1024
        };
        ::setrlimit(RLIMIT_FSIZE, &limit);
        ::signal(SIGXFSZ, SIG_DFL);
        try {
            save(path, QByteArray(1 << 20, 'n'));
        } catch (...) {
        }
        ::_exit(0);
    }
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ, qPrintable(QString::number(status)));

    QCOMPARE(readFile(path), QByteArray("old"));
    const QString prefix = QStringLiteral(".s.qkv.json.qkvlab-save-%1-").arg(child);
    QStringList names = entries(dir.path());
    QCOMPARE(names.size(), 2);
    names.removeOne(QStringLiteral("s.qkv.json"));
    QVERIFY2(names.front().startsWith(prefix) && names.front().size() == prefix.size() + 6,
             qPrintable(names.front()));
    const QString leftOver = dir.filePath(names.front());
    QCOMPARE(QFileInfo(leftOver).size(), 64 * 1024);

    // Within a minute of the crash it is left alone (its owner might be another machine's process on a
    // shared folder); older, the next save removes it.
    save(path, "newer");
    QVERIFY(QFileInfo::exists(leftOver));
    QVERIFY(setAge(leftOver, 120));
    save(path, "newest");
    QCOMPARE(readFile(path), QByteArray("newest"));
    QCOMPARE(entries(dir.path()), QStringList{QStringLiteral("s.qkv.json")});
}

void TestFileWriting::fullDiskKeepsTheOldFileAndLeavesNoTemporary_data()
{
    QTest::addColumn<QString>("writer");
    QTest::addColumn<QString>("name");
    QTest::newRow("bytes") << QStringLiteral("bytes") << QStringLiteral("data.bin");
    QTest::newRow("session file") << QStringLiteral("session") << QStringLiteral("s.qkv.json");
    QTest::newRow("matrix CSV") << QStringLiteral("matrix") << QStringLiteral("x.csv");
    QTest::newRow("matrix .npy") << QStringLiteral("matrix") << QStringLiteral("x.npy");
}

void TestFileWriting::fullDiskKeepsTheOldFileAndLeavesNoTemporary()
{
    QFETCH(QString, writer);
    QFETCH(QString, name);
    const QByteArray old("old content");
    const test::FullDisk disk(
        [&](const QString& folder) { writeFile(folder + QLatin1Char('/') + name, old); });
    if (!disk.isMounted())
        QSKIP(qPrintable(disk.reason()));
    const QString path = disk.filePath(name);
    const std::string native = QFile::encodeName(path).toStdString();
    // Big enough that no file system keeps it inline in the inode.
    const Session session = blankSession(40, 16, 8, 8, InitializerSpec{});
    const QString message = errorOf([&] {
        if (writer == QLatin1String("bytes"))
            save(path, QByteArray(20000, 'b'));
        else if (writer == QLatin1String("session"))
            saveSession(session, native);
        else
            saveMatrixFile(session.X, native);
    });
    QCOMPARE(message, path + QStringLiteral(": cannot write: No space left on device"));
    QCOMPARE(readFile(path), old);
    QCOMPARE(disk.entries(), QStringList{name});
}

QKV_TEST_GUILESS_MAIN(TestFileWriting)
#include "tst_filewriting.moc"
