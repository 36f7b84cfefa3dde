// SPDX-License-Identifier: GPL-3.0-or-later
// Autosave and recovery in process: when the recovery files are written and removed, which files count as
// orphaned, and what restoring, discarding and keeping do. tests/app/tst_recovery.cpp kills a real qkvlab.

#include "Autosave.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "Examples.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "RecoveryPrompt.h"
#include "SessionEdits.h"
#include "SessionFile.h"

#include "TestMain.h"
#include <QAbstractButton>
#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QtTest>

#include <unistd.h>

using namespace qkv;
using namespace qkv::ui;

namespace {

constexpr qint64 deadPid = 999999999; // above any kernel's pid_max

std::string native(const QString& path)
{
    return QFile::encodeName(path).toStdString();
}

QJsonObject readJson(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

bool writeJson(const QString& path, const QJsonObject& object)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(QJsonDocument(object).toJson()) > 0;
}

void appendToken(Document& document, const std::string& text)
{
    pushEdit(&document, QStringLiteral("Add token"), Document::Shape | Document::Tokens,
             [text](Session& s) { insertToken(s, Side::Query, s.n(), text, InitializerSpec{}); });
}

void changeValue(Document& document)
{
    pushEdit(&document, QStringLiteral("Change X"), Document::Values, [](Session& s) { s.X(0, 0) += 1.0; });
}

/// Plants the files a killed instance `pid` would have left: a session and, unless `sidecar` is empty, its
/// sidecar.
bool plantRecovery(const QString& folder, qint64 pid, const Session& session, QJsonObject sidecar)
{
    QDir().mkpath(folder);
    saveSession(session, native(QDir(folder).filePath(QStringLiteral("recovery-%1.qkv.json").arg(pid))));
    if (sidecar.isEmpty())
        return true;
    sidecar.insert(QStringLiteral("format"), QStringLiteral("qkvlab-recovery"));
    sidecar.insert(QStringLiteral("version"), 1);
    sidecar.insert(QStringLiteral("pid"), pid);
    return writeJson(QDir(folder).filePath(QStringLiteral("recovery-%1.info.json").arg(pid)), sidecar);
}

QJsonObject sidecarAt(const QDateTime& time, const QString& title, const QString& originalPath)
{
    return {{QStringLiteral("time"), time.toString(Qt::ISODateWithMs)},
            {QStringLiteral("title"), title},
            {QStringLiteral("originalPath"), originalPath}};
}

Session editedCausal()
{
    Session session = loadExample("causal");
    insertToken(session, Side::Query, session.n(), "recovered", InitializerSpec{});
    return session;
}

} // namespace

Q_DECLARE_METATYPE(qkv::ui::RecoveryChoice)

class TestAutosave : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();
    void structuralEditIsWrittenAtOnce();
    void valueEditIsWrittenByTheTimer();
    void intervalZeroTurnsAutosaveOff();
    void burstOfEditsEndsWithTheLastSession();
    void discardDuringABackgroundWriteLeavesNothing();
    void cleanDocumentHasNoRecoveryFile_data();
    void cleanDocumentHasNoRecoveryFile();
    void orphansAreFilesOfStoppedProcesses_data();
    void orphansAreFilesOfStoppedProcesses();
    void orphansAreOfferedNewestFirst();
    void loneSidecarOfAStoppedProcessIsRemoved();
    void restoreOpensAsModifiedWithTheOriginalPath();
    void discardDeletesAndKeepLeaves_data();
    void discardDeletesAndKeepLeaves();
    void windowRestoresFromTheEnvironment();
    void windowClosedWithoutSavingLeavesNothing();
    void dialogNamesTheSessionAndAnswers_data();
    void dialogNamesTheSessionAndAnswers();
    void environmentAnswers_data();
    void environmentAnswers();
    void intervalPreference();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_folder;
};

void TestAutosave::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true); // Preferences and the default folder stay out of the user's
}

void TestAutosave::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    m_folder = m_dir->filePath(QStringLiteral("recovery"));
    qunsetenv("QKV_RECOVERY");
}

void TestAutosave::cleanup()
{
    qunsetenv("QKV_RECOVERY");
    m_dir.reset();
}

void TestAutosave::structuralEditIsWrittenAtOnce()
{
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.setIntervalSeconds(3600); // the timer cannot be what writes it
    autosave.start();
    QSignalSpy saved(&autosave, &Autosave::saved);
    QVERIFY(!QFileInfo::exists(autosave.sessionPath())); // nothing while unmodified

    const QDateTime before = QDateTime::currentDateTimeUtc().addSecs(-1);
    appendToken(document, "new");
    QTRY_COMPARE(saved.count(), 1);
    QCOMPARE(saved.front().front().toString(), autosave.sessionPath());
    QVERIFY(loadSession(native(autosave.sessionPath())) == document.session());

    const QJsonObject info = readJson(autosave.infoPath());
    QCOMPARE(info.value(QStringLiteral("title")).toString(), document.displayName());
    QCOMPARE(info.value(QStringLiteral("originalPath")).toString(), QString());
    QCOMPARE(info.value(QStringLiteral("pid")).toInteger(), QCoreApplication::applicationPid());
    const QDateTime time =
        QDateTime::fromString(info.value(QStringLiteral("time")).toString(), Qt::ISODateWithMs);
    QVERIFY2(time >= before && time <= QDateTime::currentDateTimeUtc(), qPrintable(time.toString()));
    // Only the two files, nothing temporary.
    QCOMPARE(QDir(m_folder).entryList(QDir::Files | QDir::Hidden).size(), 2);

    // An undo of a structural edit is one too.
    appendToken(document, "newer");
    QTRY_COMPARE(saved.count(), 2);
    document.undoStack()->undo();
    QTRY_COMPARE(saved.count(), 3);
    QVERIFY(loadSession(native(autosave.sessionPath())) == document.session());
}

void TestAutosave::valueEditIsWrittenByTheTimer()
{
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.setIntervalSeconds(1);
    autosave.start();
    changeValue(document);
    QCoreApplication::processEvents();
    QVERIFY(!QFileInfo::exists(autosave.sessionPath())); // a value edit waits for the timer
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(autosave.infoPath()), 10000);
    QVERIFY(loadSession(native(autosave.sessionPath())) == document.session());
}

void TestAutosave::intervalZeroTurnsAutosaveOff()
{
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.setIntervalSeconds(0);
    autosave.start();
    QSignalSpy saved(&autosave, &Autosave::saved);
    appendToken(document, "new");
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
    QCOMPARE(saved.count(), 0);
    QVERIFY(!QFileInfo::exists(autosave.sessionPath()));
}

void TestAutosave::burstOfEditsEndsWithTheLastSession()
{
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.setIntervalSeconds(3600);
    autosave.start();
    for (int i = 0; i < 5; ++i) {
        appendToken(document, "t" + std::to_string(i));
        QCoreApplication::processEvents(); // starts a write while the previous may still run
    }
    // In the end: the last session, and no temporary file (once the writes in flight are done).
    QTRY_VERIFY(QFileInfo::exists(autosave.sessionPath()) &&
                loadSession(native(autosave.sessionPath())) == document.session() &&
                QDir(m_folder).entryList(QDir::Files | QDir::Hidden).size() == 2);
}

void TestAutosave::discardDuringABackgroundWriteLeavesNothing()
{
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.start();
    QSignalSpy saved(&autosave, &Autosave::saved);
    appendToken(document, "new");
    QCoreApplication::processEvents(); // the write starts on a worker
    autosave.discard();                // waits for it, then removes what it wrote
    QCoreApplication::processEvents(); // its report arrives, and is ignored
    QCOMPARE(saved.count(), 0);
    QVERIFY(!QFileInfo::exists(autosave.sessionPath()));
    QVERIFY(!QFileInfo::exists(autosave.infoPath()));
}

void TestAutosave::cleanDocumentHasNoRecoveryFile_data()
{
    QTest::addColumn<QString>("how");
    QTest::newRow("saved") << QStringLiteral("save");
    QTest::newRow("undone to the saved state") << QStringLiteral("undo");
    QTest::newRow("another session opened") << QStringLiteral("open");
    QTest::newRow("closed without saving") << QStringLiteral("discard");
}

void TestAutosave::cleanDocumentHasNoRecoveryFile()
{
    QFETCH(QString, how);
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    autosave.start();
    appendToken(document, "new");
    QTRY_VERIFY(QFileInfo::exists(autosave.infoPath()));

    QString error;
    if (how == QLatin1String("save"))
        QVERIFY2(document.saveAs(m_dir->filePath(QStringLiteral("s.qkv.json")), &error), qPrintable(error));
    else if (how == QLatin1String("undo"))
        document.undoStack()->undo();
    else if (how == QLatin1String("open"))
        QVERIFY2(document.open(QStringLiteral("example:causal"), &error), qPrintable(error));
    else
        autosave.discard();
    QVERIFY(!QFileInfo::exists(autosave.sessionPath()));
    QVERIFY(!QFileInfo::exists(autosave.infoPath()));
}

void TestAutosave::orphansAreFilesOfStoppedProcesses_data()
{
    QTest::addColumn<qint64>("pid");
    QTest::addColumn<QJsonObject>("identity"); // merged into the sidecar
    QTest::addColumn<bool>("withSidecar");
    QTest::addColumn<bool>("orphaned");
    const qint64 parent = static_cast<qint64>(::getppid()); // running for as long as this test
    QTest::newRow("stopped process") << deadPid << QJsonObject() << true << true;
    QTest::newRow("stopped process, no sidecar") << deadPid << QJsonObject() << false << true;
    QTest::newRow("this process") << QCoreApplication::applicationPid() << QJsonObject() << true << false;
    QTest::newRow("running process") << parent << QJsonObject() << true << false;
    QTest::newRow("running process, no sidecar") << parent << QJsonObject() << false << false;
    QTest::newRow("its PID reused by a later process")
        << parent << QJsonObject{{QStringLiteral("processStart"), QStringLiteral("1")}} << true << true;
    QTest::newRow("written before a reboot")
        << parent << QJsonObject{{QStringLiteral("bootId"), QStringLiteral("another-boot")}} << true << true;
}

void TestAutosave::orphansAreFilesOfStoppedProcesses()
{
    QFETCH(qint64, pid);
    QFETCH(QJsonObject, identity);
    QFETCH(bool, withSidecar);
    QFETCH(bool, orphaned);
    QJsonObject sidecar;
    if (withSidecar) {
        sidecar = sidecarAt(QDateTime::currentDateTimeUtc(), QStringLiteral("Title"), QString());
        for (auto it = identity.begin(); it != identity.end(); ++it)
            sidecar.insert(it.key(), it.value());
    }
    QVERIFY(plantRecovery(m_folder, pid, loadExample("love"), sidecar));
    const QList<RecoveryInfo> orphans = Autosave::orphans(m_folder);
    QCOMPARE(orphans.size(), orphaned ? 1 : 0);
    if (orphaned) {
        QCOMPARE(orphans.front().pid, pid);
        QCOMPARE(orphans.front().title, withSidecar ? QStringLiteral("Title") : QString());
        QVERIFY(orphans.front().time.isValid()); // from the sidecar, else the file's time
    }
}

void TestAutosave::orphansAreOfferedNewestFirst()
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    QVERIFY(plantRecovery(m_folder, deadPid, loadExample("love"),
                          sidecarAt(now.addSecs(-3600), QStringLiteral("older"), QString())));
    QVERIFY(plantRecovery(m_folder, deadPid - 1, loadExample("causal"),
                          sidecarAt(now.addSecs(-60), QStringLiteral("newer"), QString())));
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    QStringList offered;
    QVERIFY(!autosave.recover([&](const RecoveryInfo& info) {
        offered << info.title;
        return RecoveryChoice::Keep;
    }));
    QCOMPARE(offered, (QStringList{QStringLiteral("newer"), QStringLiteral("older")}));
    QCOMPARE(Autosave::orphans(m_folder).size(), 2);
}

void TestAutosave::loneSidecarOfAStoppedProcessIsRemoved()
{
    QVERIFY(QDir().mkpath(m_folder));
    const QJsonObject sidecar{{QStringLiteral("format"), QStringLiteral("qkvlab-recovery")}};
    const QString dead = QDir(m_folder).filePath(QStringLiteral("recovery-%1.info.json").arg(deadPid));
    const QString live = QDir(m_folder).filePath(QStringLiteral("recovery-%1.info.json").arg(::getppid()));
    QVERIFY(writeJson(dead, sidecar));
    QVERIFY(writeJson(live, sidecar)); // a running instance between its two writes
    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    QVERIFY(!autosave.recover([](const RecoveryInfo&) { return RecoveryChoice::Restore; }));
    QVERIFY(!QFileInfo::exists(dead));
    QVERIFY(QFileInfo::exists(live));
}

void TestAutosave::restoreOpensAsModifiedWithTheOriginalPath()
{
    const QString original = m_dir->filePath(QStringLiteral("causal.qkv.json"));
    saveSession(loadExample("causal"), native(original));
    const Session edited = editedCausal();
    const QDateTime time = QDateTime::currentDateTimeUtc().addSecs(-120);
    QVERIFY(plantRecovery(m_folder, deadPid, edited,
                          sidecarAt(time, QStringLiteral("causal.qkv.json"), original)));

    Document document;
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    QSignalSpy modified(&document, &Document::modifiedChanged);
    QList<RecoveryInfo> offered;
    QVERIFY(autosave.recover([&](const RecoveryInfo& info) {
        offered << info;
        return RecoveryChoice::Restore;
    }));
    QCOMPARE(offered.size(), 1);
    QCOMPARE(offered.front().title, QStringLiteral("causal.qkv.json"));
    QCOMPARE(offered.front().originalPath, original);
    QCOMPARE(offered.front().time, time);

    QVERIFY(document.session() == edited);
    QVERIFY(document.isModified());
    QVERIFY(!modified.isEmpty());
    QCOMPARE(modified.back().front().toBool(), true);
    QCOMPARE(document.filePath(), original);
    QVERIFY(loadSession(native(original)) == loadExample("causal")); // the file on disk is untouched

    // Taken over: the dead process's files are gone, this process's name holds the session.
    QVERIFY(!QFileInfo::exists(offered.front().sessionPath));
    QVERIFY(!QFileInfo::exists(offered.front().infoPath));
    QVERIFY(loadSession(native(autosave.sessionPath())) == edited);
    const QJsonObject info = readJson(autosave.infoPath());
    QCOMPARE(info.value(QStringLiteral("pid")).toInteger(), QCoreApplication::applicationPid());
    QCOMPARE(info.value(QStringLiteral("originalPath")).toString(), original);
    QVERIFY(Autosave::orphans(m_folder).isEmpty());

    // Saving it is a clean save: the recovery files go.
    QString error;
    QVERIFY2(document.saveAs(original, &error), qPrintable(error));
    QVERIFY(!QFileInfo::exists(autosave.sessionPath()));
    QVERIFY(!QFileInfo::exists(autosave.infoPath()));
}

void TestAutosave::discardDeletesAndKeepLeaves_data()
{
    QTest::addColumn<RecoveryChoice>("choice");
    QTest::addColumn<bool>("remains");
    QTest::newRow("discard") << RecoveryChoice::Discard << false;
    QTest::newRow("keep") << RecoveryChoice::Keep << true;
}

void TestAutosave::discardDeletesAndKeepLeaves()
{
    QFETCH(RecoveryChoice, choice);
    QFETCH(bool, remains);
    QVERIFY(plantRecovery(m_folder, deadPid, editedCausal(),
                          sidecarAt(QDateTime::currentDateTimeUtc(), QStringLiteral("t"), QString())));
    Document document;
    const Session before = document.session();
    Autosave autosave(&document);
    autosave.setFolder(m_folder);
    QVERIFY(!autosave.recover([&](const RecoveryInfo&) { return choice; }));
    QVERIFY(document.session() == before);
    QVERIFY(!document.isModified());
    QCOMPARE(Autosave::orphans(m_folder).size(), remains ? 1 : 0);
    QCOMPARE(QDir(m_folder).entryList(QDir::Files).size(), remains ? 2 : 0);
}

void TestAutosave::windowRestoresFromTheEnvironment()
{
    const QString original = m_dir->filePath(QStringLiteral("causal.qkv.json"));
    QVERIFY(plantRecovery(
        m_folder, deadPid, editedCausal(),
        sidecarAt(QDateTime::currentDateTimeUtc(), QStringLiteral("causal.qkv.json"), original)));
    qputenv("QKV_RECOVERY", "restore");
    MainWindow window;
    window.autosave()->setFolder(m_folder);
    QVERIFY(window.recoverUnsavedWork());
    QVERIFY(window.document()->session() == editedCausal());
    QVERIFY(window.isWindowModified());
    QVERIFY2(window.windowTitle().startsWith(QStringLiteral("causal.qkv.json")),
             qPrintable(window.windowTitle()));
    window.autosave()->discard();
}

void TestAutosave::windowClosedWithoutSavingLeavesNothing()
{
    MainWindow window;
    window.autosave()->setFolder(m_folder);
    window.startAutosave();
    window.show();
    appendToken(*window.document(), "new");
    QTRY_VERIFY(QFileInfo::exists(window.autosave()->infoPath()));
    // Closing asks first; answer Discard.
    bool answered = false;
    QTimer::singleShot(0, &window, [&answered] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (box && box->button(QMessageBox::Discard)) {
            box->button(QMessageBox::Discard)->click();
            answered = true;
        }
    });
    QVERIFY(window.close());
    QVERIFY(answered);
    QVERIFY(!QFileInfo::exists(window.autosave()->sessionPath()));
    QVERIFY(!QFileInfo::exists(window.autosave()->infoPath()));
}

void TestAutosave::dialogNamesTheSessionAndAnswers_data()
{
    QTest::addColumn<QString>("button");
    QTest::addColumn<RecoveryChoice>("expected");
    QTest::newRow("Restore") << QStringLiteral("Restore") << RecoveryChoice::Restore;
    QTest::newRow("Discard") << QStringLiteral("Discard") << RecoveryChoice::Discard;
    QTest::newRow("Not Now") << QStringLiteral("Not Now") << RecoveryChoice::Keep;
    QTest::newRow("Esc") << QString() << RecoveryChoice::Keep;
}

void TestAutosave::dialogNamesTheSessionAndAnswers()
{
    QFETCH(QString, button);
    QFETCH(RecoveryChoice, expected);
    qputenv("QKV_RECOVERY", "ask");
    RecoveryInfo info;
    info.title = QStringLiteral("<b>my session</b>");
    info.originalPath = QStringLiteral("/data/my.qkv.json");
    info.time = QDateTime::currentDateTimeUtc();
    QString text;
    QTimer::singleShot(0, this, [&] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box)
            return;
        text = box->text() + QLatin1Char('\n') + box->informativeText();
        if (button.isEmpty()) {
            QTest::keyClick(box, Qt::Key_Escape);
            return;
        }
        for (QAbstractButton* candidate : box->buttons())
            if (candidate->text() == button)
                candidate->click();
    });
    QCOMPARE(askToRecover(info, nullptr), expected);
    QVERIFY2(text.contains(info.title) && text.contains(info.originalPath), qPrintable(text));
}

void TestAutosave::environmentAnswers_data()
{
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<int>("expected"); // -1: ask
    QTest::newRow("restore") << QByteArray("restore") << int(RecoveryChoice::Restore);
    QTest::newRow("DISCARD") << QByteArray("DISCARD") << int(RecoveryChoice::Discard);
    QTest::newRow("keep") << QByteArray("keep") << int(RecoveryChoice::Keep);
    QTest::newRow("ask") << QByteArray("ask") << -1;
    QTest::newRow("empty") << QByteArray() << -1;
}

void TestAutosave::environmentAnswers()
{
    QFETCH(QByteArray, value);
    QFETCH(int, expected);
    qputenv("QKV_RECOVERY", value);
    const std::optional<RecoveryChoice> choice = recoveryChoiceFromEnvironment();
    QCOMPARE(choice ? int(*choice) : -1, expected);
}

void TestAutosave::intervalPreference()
{
    QSettings().remove(QStringLiteral("recovery/autosaveSeconds"));
    QCOMPARE(Preferences::autosaveIntervalSeconds(), 30);
    Preferences::setAutosaveIntervalSeconds(0);
    QCOMPARE(Preferences::autosaveIntervalSeconds(), 0);
    Preferences::setAutosaveIntervalSeconds(-5);
    QCOMPARE(Preferences::autosaveIntervalSeconds(), 0);
    Preferences::setAutosaveIntervalSeconds(120);
    QCOMPARE(Preferences::autosaveIntervalSeconds(), 120);
    QSettings().remove(QStringLiteral("recovery/autosaveSeconds"));
}

QKV_TEST_MAIN(TestAutosave)
#include "tst_autosave.moc"
