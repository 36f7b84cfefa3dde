// SPDX-License-Identifier: GPL-3.0-or-later
// The Training tab: a short run on a tiny model started from the form finishes on its worker thread, draws
// a loss point per step, the probe's loss per position and its attention thumbnails, and writes the model
// folder; Pause, Step, Reset and a second Start during a run; the attention normalizer; a thumbnail opens its
// head; closing the window during a run asks first and saves the model.

#include "MainWindow.h"
#include "ModelLoading.h"
#include "ModelView.h"
#include "TestMain.h"
#include "TrainingPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

using namespace qkv::ui;

class TestTrainingTab : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void shortRunFinishes();
    void firstShowGrowsTheDock();
    void pauseHoldsAndStepRunsOne();
    void stepWithoutARunStartsPaused();
    void resetStopsAndClears();
    void newestSettingsWin();
    void sparsemaxIsTrainedAndSaved();
    void thumbnailOpensItsHead();
    void closingAsksAndSaves();
    void closingAsksWithADialog();
    void closingDuringARunIsSafe();
};

namespace {

template <typename T> T* child(QObject* parent, const char* name)
{
    auto* found = parent->findChild<T*>(QLatin1String(name));
    if (!found)
        qFatal("no %s", name);
    return found;
}

void setTinyShape(TrainingPanel* panel, int steps, int layers = 2)
{
    child<QSpinBox>(panel, "trainingLayers")->setValue(layers);
    child<QSpinBox>(panel, "trainingHeads")->setValue(2);
    child<QSpinBox>(panel, "trainingDModel")->setValue(16);
    child<QCheckBox>(panel, "trainingMlp")->setChecked(false);
    child<QSpinBox>(panel, "trainingBatch")->setValue(4);
    child<QSpinBox>(panel, "trainingSteps")->setValue(steps);
}

void click(TrainingPanel* panel, const char* button)
{
    auto* b = child<QPushButton>(panel, button);
    QVERIFY2(b->isEnabled(), button);
    QTest::mouseClick(b, Qt::LeftButton);
}

int drawnSteps(TrainingPanel* panel)
{
    return child<QCustomPlot>(panel, "lossPlot")->graph(0)->dataCount();
}

QJsonObject readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

QString status(TrainingPanel* panel)
{
    return panel->status();
}

} // namespace

void TestTrainingTab::shortRunFinishes()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    QVERIFY(panel);
    auto* open = child<QPushButton>(panel, "trainingOpen");
    QVERIFY(!open->isEnabled());
    setTinyShape(panel, 30);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    auto* loss = child<QCustomPlot>(panel, "lossPlot");
    QVERIFY2(loss->graph(0)->dataCount() == 30, qPrintable(status(panel)));
    QVERIFY(loss->graph(1)->dataCount() > 0);
    QCOMPARE(child<QCustomPlot>(panel, "previousPlot")->graphCount(), 4);
    QCOMPARE(child<QCustomPlot>(panel, "inductionPlot")->graphCount(), 2);
    QCOMPARE(child<QCustomPlot>(panel, "inductionPlot")->graph(1)->name(), QStringLiteral("L1 H1"));
    QCOMPARE(child<QCustomPlot>(panel, "previousPlot")->graph(2)->name(), QStringLiteral("L1 H0"));
    // The probe: a bar per position, the repeated half among the scored ones, and 2 × 2 thumbnails.
    auto* probe = child<QCustomPlot>(panel, "probePlot");
    int bars = 0, scored = 0;
    for (int i = 0; i < probe->plottableCount(); ++i)
        if (auto* b = qobject_cast<QCPBars*>(probe->plottable(i))) {
            bars += b->dataCount();
            if (b->name() == QStringLiteral("scored"))
                scored = b->dataCount();
        }
    QVERIFY(bars > 4);
    QVERIFY(scored > 0 && scored < bars);
    auto* thumbnails = child<ModelView>(panel, "trainingThumbnails");
    QCOMPARE(thumbnails->layerCount(), 2);
    QCOMPARE(thumbnails->headCount(), 2);
    QVERIFY(!thumbnails->thumbnail(1, 1).isNull());
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QVERIFY(open->isEnabled());
    QVERIFY(panel->openInModelView());
    QDir(panel->folder()).removeRecursively();
}

// At 1280 × 720 the bottom docks share about a quarter of the height; the Training tab asks for more the
// first time it is shown, and keeps the user's size after that.
void TestTrainingTab::firstShowGrowsTheDock()
{
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockTraining"));
    QVERIFY(dock);
    const int before = dock->height();
    dock->show();
    dock->raise();
    QTRY_VERIFY(window.findChild<TrainingPanel*>()->isVisible());
    QTRY_VERIFY2(dock->height() >= 720 * 40 / 100, qPrintable(QString::number(dock->height())));
    QVERIFY(dock->height() > before);
}

void TestTrainingTab::pauseHoldsAndStepRunsOne()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    setTinyShape(panel, 100000);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() >= 2, 30000);
    click(panel, "trainingPause");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isPaused(), 30000);
    const auto paused = panel->reportedStep();
    // The worker waits inside the step it reported: every report is drawn and no other comes.
    QTRY_COMPARE_WITH_TIMEOUT(drawnSteps(panel), int(paused), 30000);
    QVERIFY(panel->isPaused());
    QCOMPARE(panel->reportedStep(), paused);
    QCOMPARE(child<QPushButton>(panel, "trainingPause")->text(), QStringLiteral("Resume"));
    QVERIFY(status(panel).startsWith(QStringLiteral("Paused after step %1").arg(paused)));

    click(panel, "trainingStep");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() == paused + 1 && panel->isPaused(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(drawnSteps(panel), int(paused + 1), 30000);
    QCOMPARE(panel->reportedStep(), paused + 1);
    click(panel, "trainingStep");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() == paused + 2 && panel->isPaused(), 30000);

    click(panel, "trainingPause"); // resume
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() > paused + 3, 30000);
    QVERIFY(!panel->isPaused());
    QCOMPARE(child<QPushButton>(panel, "trainingPause")->text(), QStringLiteral("Pause"));

    click(panel, "trainingPause");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isPaused(), 30000);
    click(panel, "trainingStop"); // a paused run stops too, and its model is saved
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 30000);
    QVERIFY(!panel->isRunning());
    QVERIFY(status(panel).startsWith(QStringLiteral("Stopped")));
    const QJsonObject log = readJson(QDir(panel->folder()).filePath(QStringLiteral("training.json")));
    QCOMPARE(log.value(QStringLiteral("steps")).toArray().size(), qsizetype(panel->reportedStep()));
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::stepWithoutARunStartsPaused()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    setTinyShape(panel, 100000);
    click(panel, "trainingStep");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isPaused(), 30000);
    QCOMPARE(panel->reportedStep(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(drawnSteps(panel), 1, 30000);
    panel->stop();
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 30000);
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::resetStopsAndClears()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    setTinyShape(panel, 100000);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(drawnSteps(panel) >= 1, 30000);
    const QString folder = panel->folder();
    click(panel, "trainingReset");
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isRunning(), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 30000);
    QCOMPARE(drawnSteps(panel), 0);
    QCOMPARE(child<ModelView>(panel, "trainingThumbnails")->thumbnailCount(), 0);
    QCOMPARE(child<QSpinBox>(panel, "trainingDModel")->value(), 64); // the induction recipe's
    QCOMPARE(child<QSpinBox>(panel, "trainingSteps")->value(), 2000);
    QCOMPARE(status(panel), QStringLiteral("Ready"));
    QVERIFY(!child<QPushButton>(panel, "trainingOpen")->isEnabled());
    QVERIFY(QDir(folder).exists(QStringLiteral("config.json"))); // the stopped run was saved
    QDir(folder).removeRecursively();
}

void TestTrainingTab::newestSettingsWin()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    int finished = 0;
    connect(panel, &TrainingPanel::runFinished, this, [&finished] { ++finished; });
    setTinyShape(panel, 100000);
    child<QSpinBox>(panel, "trainingSeed")->setValue(3);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() >= 1, 30000);
    const QString first = panel->folder();
    child<QSpinBox>(panel, "trainingSteps")->setValue(12);
    child<QSpinBox>(panel, "trainingSeed")->setValue(7);
    click(panel, "trainingStart");
    QVERIFY(panel->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    QCOMPARE(finished, 1); // the replaced run is not reported as a run of its own
    QVERIFY(panel->folder() != first);
    const QJsonObject log = readJson(QDir(panel->folder()).filePath(QStringLiteral("training.json")));
    QCOMPARE(log.value(QStringLiteral("seed")).toInt(), 7);
    QCOMPARE(log.value(QStringLiteral("steps")).toArray().size(), 12);
    QCOMPARE(drawnSteps(panel), 12);
    QVERIFY(QDir(first).exists(QStringLiteral("config.json"))); // the stopped run was saved
    QDir(first).removeRecursively();
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::sparsemaxIsTrainedAndSaved()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    auto* normalizer = child<QComboBox>(panel, "trainingNormalizer");
    auto* alpha = child<QDoubleSpinBox>(panel, "trainingAlpha");
    QVERIFY(alpha->isHidden());
    normalizer->setCurrentIndex(normalizer->findText(QStringLiteral("α-entmax")));
    QVERIFY(!alpha->isHidden());
    QCOMPARE(alpha->minimum(), 1.0);
    QCOMPARE(alpha->maximum(), 2.0);
    normalizer->setCurrentIndex(normalizer->findText(QStringLiteral("sparsemax")));
    QVERIFY(alpha->isHidden());
    setTinyShape(panel, 10);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    QVERIFY2(status(panel).startsWith(QStringLiteral("Finished")), qPrintable(status(panel)));
    const QJsonObject config = readJson(QDir(panel->folder()).filePath(QStringLiteral("config.json")));
    QCOMPARE(config.value(QStringLiteral("qkvlab_attention_normalizer")).toString(),
             QStringLiteral("sparsemax"));

    // Save As copies the whole folder; a folder that holds a model already is refused.
    QTemporaryDir elsewhere;
    const QString copy = elsewhere.filePath(QStringLiteral("my-model"));
    QVERIFY(child<QPushButton>(panel, "trainingSaveAs")->isEnabled());
    QVERIFY2(panel->saveModelAs(copy), qPrintable(status(panel)));
    QCOMPARE(QDir(copy).entryList(QDir::Files), QDir(panel->folder()).entryList(QDir::Files));
    QCOMPARE(readJson(QDir(copy).filePath(QStringLiteral("config.json"))), config);
    QVERIFY(!panel->saveModelAs(copy));
    QVERIFY2(status(panel).contains(QStringLiteral("already holds a model")), qPrintable(status(panel)));
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::thumbnailOpensItsHead()
{
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* dock = child<QDockWidget>(&window, "dockTraining");
    dock->show();
    dock->raise();
    auto* panel = window.findChild<TrainingPanel*>();
    auto* loading = window.findChild<ModelLoading*>();
    QVERIFY(loading);
    setTinyShape(panel, 100000);
    click(panel, "trainingStart");
    auto* thumbnails = child<ModelView>(panel, "trainingThumbnails");
    if (auto* tabs = child<QTabWidget>(panel, "trainingTabs"); tabs->count() == 2)
        tabs->setCurrentIndex(1); // a narrow tab shows the probe on a tab of its own
    QTRY_VERIFY_WITH_TIMEOUT(thumbnails->thumbnailCount() == 4 && thumbnails->isVisible(), 30000);
    // During the run the model is not saved yet: the click says so and opens nothing.
    QTest::mouseClick(thumbnails, Qt::LeftButton, {}, thumbnails->thumbnailRect(1, 1).center());
    QVERIFY(status(panel).contains(QStringLiteral("saved when the run ends")));
    QVERIFY(!loading->model());
    click(panel, "trainingStop");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 30000);
    dock->raise();
    QTRY_VERIFY_WITH_TIMEOUT(thumbnails->isVisible(), 10000);
    QTest::mouseClick(thumbnails, Qt::LeftButton, {}, thumbnails->thumbnailRect(1, 1).center());
    QTRY_VERIFY_WITH_TIMEOUT(loading->model() != nullptr, 30000);
    QCOMPARE(loading->request().layer, 1);
    QCOMPARE(loading->request().heads, std::vector<qkv::Index>{1});
    QVERIFY(!loading->request().ids.empty());
    QCOMPARE(QDir(QString::fromStdString(loading->model()->folder())), QDir(panel->folder()));
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::closingAsksAndSaves()
{
    MainWindow window;
    window.show();
    auto* panel = window.findChild<TrainingPanel*>();
    QString asked;
    bool answer = false;
    panel->setCloseQuestion([&](const QString& question) {
        asked = question;
        return answer;
    });
    QVERIFY(panel->confirmClose()); // nothing runs: nothing to ask
    QVERIFY(asked.isEmpty());
    setTinyShape(panel, 100000);
    panel->start();
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() >= 1, 30000);
    QVERIFY(!window.close()); // Cancel: the window and the run stay
    QVERIFY(asked.contains(QDir::toNativeSeparators(panel->folder())));
    QVERIFY(panel->isRunning());
    answer = true;
    asked.clear();
    QVERIFY(window.close());
    QVERIFY(!asked.isEmpty());
    QVERIFY(!panel->isRunning());
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::closingAsksWithADialog()
{
    MainWindow window;
    window.show();
    auto* panel = window.findChild<TrainingPanel*>();
    setTinyShape(panel, 100000);
    panel->start();
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() >= 1, 30000);
    QString text;
    QTimer::singleShot(0, this, [&text] {
        QTRY_VERIFY(qobject_cast<QMessageBox*>(QApplication::activeModalWidget()));
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        text = box->text();
        for (QAbstractButton* button : box->buttons())
            if (button->text() == QStringLiteral("Stop and Close"))
                button->click();
    });
    QVERIFY(panel->confirmClose()); // the timer above presses Stop and Close
    QVERIFY(text.contains(QDir::toNativeSeparators(panel->folder())));
    QVERIFY(!panel->isRunning());
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QDir(panel->folder()).removeRecursively();
}

void TestTrainingTab::closingDuringARunIsSafe()
{
    QString folder;
    {
        auto window = std::make_unique<MainWindow>();
        auto* panel = window->findChild<TrainingPanel*>();
        setTinyShape(panel, 100000);
        panel->start();
        QVERIFY(panel->isRunning());
        folder = panel->folder();
    } // the destructor stops the run and waits for it
    QVERIFY(!folder.isEmpty());
    QDir(folder).removeRecursively();
}

QKV_TEST_MAIN(TestTrainingTab)
#include "tst_training_tab.moc"
