// SPDX-License-Identifier: GPL-3.0-or-later
// The Training workspace's runs: every run's folder listed newest first with its task, steps and whether Save
// Model As copied it; deleting asks first and removes only run folders whose run does not go; when a run
// starts, unsaved runs beyond the limit go, never a saved or running one; Open opens a listed run's model.

#include "MainWindow.h"
#include "Model.h"
#include "ModelLoading.h"
#include "TestMain.h"
#include "TrainingPanel.h"
#include "TrainingPanelTesting.h"
#include "TrainingRunFolders.h"
#include "TrainingRunList.h"

#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

using namespace qkv::ui;
using qkv::test::child;
using qkv::test::setTinyShape;

class TestTrainingRuns : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void foldersAreListedNewestFirst();
    void pruneKeepsSavedAndRunningRuns();
    void removeRefusesWhatIsNotARun();
    void runIsListedSavedAndDeleted();
    void startingARunMakesRoom();
    void listedRunOpens();
};

namespace {

/// A finished run's folder as the trainer leaves it (the files the list reads), started `name`.
QString fakeRun(const QString& root, const QString& name, const QString& task = QStringLiteral("copy"),
                int steps = 12)
{
    const QString path = QDir(root).filePath(name);
    QDir().mkpath(path);
    QFile config(QDir(path).filePath(QStringLiteral("config.json")));
    config.open(QIODevice::WriteOnly);
    config.write("{}");
    QFile log(QDir(path).filePath(QStringLiteral("training.json")));
    log.open(QIODevice::WriteOnly);
    log.write(QStringLiteral(R"({"steps": [{"step": 1}, {"step": %1}], "task": {"name": "%2"}, "seed": 3})")
                  .arg(steps)
                  .arg(task)
                  .toUtf8());
    return path;
}

} // namespace

void TestTrainingRuns::foldersAreListedNewestFirst()
{
    QTemporaryDir root;
    fakeRun(root.path(), QStringLiteral("20260101-100000-000"), QStringLiteral("sort"), 40);
    const QString newest = fakeRun(root.path(), QStringLiteral("20260301-100000-000"));
    fakeRun(root.path(), QStringLiteral("20260201-100000-000"));
    QDir(root.path()).mkpath(QStringLiteral("my-notes")); // not a run's name: not listed, never deleted
    TrainingRunFolders folders(root.path());
    QVERIFY(folders.markSaved(newest, root.filePath(QStringLiteral("elsewhere"))));
    const QList<TrainingRunFolder> runs = folders.list();
    QCOMPARE(runs.size(), 3);
    QCOMPARE(runs[0].name, QStringLiteral("20260301-100000-000"));
    QCOMPARE(runs[1].name, QStringLiteral("20260201-100000-000"));
    QCOMPARE(runs[2].task, QStringLiteral("sort"));
    QCOMPARE(runs[2].steps, 40);
    QCOMPARE(runs[2].started, QDateTime(QDate(2026, 1, 1), QTime(10, 0), Qt::UTC));
    QVERIFY(runs[0].isSaved() && !runs[1].isSaved());
    QVERIFY(runs[0].savedTo.first().endsWith(QStringLiteral("elsewhere")));
    QVERIFY(runs[0].hasModel && !runs[0].running);
}

void TestTrainingRuns::pruneKeepsSavedAndRunningRuns()
{
    QTemporaryDir root;
    QStringList paths; // oldest first
    for (int day = 1; day <= 6; ++day)
        paths << fakeRun(root.path(),
                         QStringLiteral("202601%1-100000-000").arg(day, 2, 10, QLatin1Char('0')));
    TrainingRunFolders folders(root.path());
    QVERIFY(folders.markSaved(paths[0], root.filePath(QStringLiteral("copy"))));
    const QString running = folders.createRun(); // the newest, and locked while "its run goes"
    QVERIFY(!running.isEmpty());
    QVERIFY(folders.read(running).running);
    const QStringList removed = folders.prune(2);
    // Unsaved and not running, newest first: days 6, 5 kept; 4, 3, 2 deleted; day 1 saved.
    QCOMPARE(removed, (QStringList{paths[3], paths[2], paths[1]}));
    for (int day = 0; day < 6; ++day)
        QCOMPARE(QFileInfo::exists(paths[day]), day == 0 || day >= 4);
    QVERIFY(QFileInfo::exists(running));
    QVERIFY(folders.prune(0).size() == 2); // even keeping none: the saved and the running stay
    QVERIFY(QFileInfo::exists(paths[0]) && QFileInfo::exists(running));
    folders.unlockRun();
    QVERIFY(!folders.read(running).running);
    QCOMPARE(folders.prune(0), QStringList{running});
}

void TestTrainingRuns::removeRefusesWhatIsNotARun()
{
    QTemporaryDir root, outside;
    TrainingRunFolders folders(root.path());
    QString error;
    const QString notes = QDir(root.path()).filePath(QStringLiteral("my-notes"));
    QDir().mkpath(notes);
    QVERIFY(!folders.remove(notes, &error));
    QVERIFY2(error.contains(QStringLiteral("not a training run")), qPrintable(error));
    QVERIFY(QFileInfo::exists(notes));
    const QString elsewhere = fakeRun(outside.path(), QStringLiteral("20260101-100000-000"));
    QVERIFY(!folders.remove(elsewhere, &error)); // a run's name, but not in the runs' folder
    QVERIFY(QFileInfo::exists(elsewhere));
    const QString running = folders.createRun();
    QVERIFY(!folders.remove(running, &error));
    QVERIFY2(error.contains(QStringLiteral("being trained")), qPrintable(error));
    QVERIFY(QFileInfo::exists(running));
    TrainingRunFolders another(root.path()); // another window's list: the lock is seen all the same
    QVERIFY(another.read(running).running);
    QVERIFY(!another.remove(running, &error));
    folders.unlockRun();
    QVERIFY2(another.remove(running, &error), qPrintable(error));
    QVERIFY(!QFileInfo::exists(running));
}

void TestTrainingRuns::runIsListedSavedAndDeleted()
{
    QTemporaryDir root, elsewhere;
    TrainingPanel panel(nullptr, nullptr, root.path());
    panel.resize(1000, 500);
    panel.show();
    setTinyShape(&panel, 8);
    panel.start();
    auto* list = child<TrainingRunList>(&panel, "trainingRuns");
    QCOMPARE(list->runCount(), 1); // listed while it goes
    QTRY_VERIFY_WITH_TIMEOUT(panel.isFinished(), 60000);
    QVERIFY(list->select(panel.folder()));
    TrainingRunFolders folders(root.path());
    TrainingRunFolder run = folders.read(panel.folder());
    QCOMPARE(run.task, QStringLiteral("induction"));
    QCOMPARE(run.steps, 8);
    QVERIFY(!run.isSaved() && !run.running);
    QVERIFY2(panel.saveModelAs(elsewhere.filePath(QStringLiteral("kept"))), qPrintable(panel.status()));
    QVERIFY(folders.read(panel.folder()).isSaved());
    // The copy holds the model and nothing of the list's bookkeeping.
    QVERIFY(!QFileInfo::exists(
        elsewhere.filePath(QStringLiteral("kept/") + TrainingRunFolders::savedMarkerName())));
    QString asked;
    bool answer = false;
    list->setDeleteQuestion([&](const QString& question) {
        asked = question;
        return answer;
    });
    QVERIFY(list->select(panel.folder()));
    QVERIFY(!list->deleteSelected()); // "Cancel"
    QVERIFY(asked.contains(QStringLiteral("cannot be undone")));
    QVERIFY(asked.contains(QStringLiteral("kept"))); // the copy is named, and left alone
    QVERIFY(QFileInfo::exists(panel.folder()));
    answer = true;
    QVERIFY(list->select(panel.folder()));
    QVERIFY(list->deleteSelected());
    QVERIFY(!QFileInfo::exists(panel.folder()));
    QVERIFY(QFileInfo::exists(elsewhere.filePath(QStringLiteral("kept/config.json"))));
    QCOMPARE(list->runCount(), 0);
    QVERIFY(!child<QAbstractButton>(&panel, "trainingOpen")->isEnabled()); // its model is gone
    QVERIFY(panel.status().contains(QStringLiteral("Deleted")));
}

void TestTrainingRuns::startingARunMakesRoom()
{
    QTemporaryDir root;
    const int keep = TrainingRunFolders::keptUnsavedRuns;
    QStringList old; // oldest first
    for (int i = 0; i < keep + 3; ++i)
        old << fakeRun(root.path(), QStringLiteral("20250101-10%1-000").arg(i, 4, 10, QLatin1Char('0')));
    TrainingRunFolders folders(root.path());
    QVERIFY(folders.markSaved(old[0], root.filePath(QStringLiteral("copy"))));
    TrainingPanel panel(nullptr, nullptr, root.path());
    setTinyShape(&panel, 100000);
    panel.start();
    QVERIFY(panel.isRunning());
    // The running run does not count: the newest `keep` unsaved others stay, and the saved one.
    QCOMPARE(folders.list().size(), keep + 2);
    QVERIFY(QFileInfo::exists(old[0]));                                // saved
    QVERIFY(!QFileInfo::exists(old[1]) && !QFileInfo::exists(old[2])); // the oldest unsaved
    QVERIFY(QFileInfo::exists(old[3]));
    panel.stop();
    QTRY_VERIFY_WITH_TIMEOUT(panel.isFinished(), 30000);
}

void TestTrainingRuns::listedRunOpens()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    auto* loading = window.findChild<ModelLoading*>();
    QVERIFY(panel && loading);
    setTinyShape(panel, 6);
    panel->start();
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    auto* list = child<TrainingRunList>(panel, "trainingRuns");
    QVERIFY(list->select(panel->folder()));
    auto* open = child<QPushButton>(panel, "trainingRunOpen");
    QVERIFY(open->isEnabled());
    open->click();
    QTRY_VERIFY_WITH_TIMEOUT(loading->model() != nullptr, 30000);
    QCOMPARE(QDir(QString::fromStdString(loading->model()->folder())), QDir(panel->folder()));
    QCOMPARE(loading->request().layer, 0);
    QVERIFY(!loading->request().ids.empty());
    QDir(panel->folder()).removeRecursively();
}

QKV_TEST_MAIN(TestTrainingRuns)
#include "tst_training_runs.moc"
