// The Training tab: a short run on a tiny model started from the form finishes on its worker thread, draws
// a loss point per step, writes the model folder, and opens in the model view.

#include "MainWindow.h"
#include "TestMain.h"
#include "TrainingPanel.h"

#include <QCheckBox>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QtTest>

#include <qcustomplot.h>

using namespace qkv::ui;

class TestTrainingTab : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void shortRunFinishes();
    void closingDuringARunIsSafe();
};

static void setTinyShape(TrainingPanel* panel, int steps)
{
    panel->findChild<QSpinBox*>(QStringLiteral("trainingLayers"))->setValue(2);
    panel->findChild<QSpinBox*>(QStringLiteral("trainingHeads"))->setValue(2);
    panel->findChild<QSpinBox*>(QStringLiteral("trainingDModel"))->setValue(16);
    panel->findChild<QCheckBox*>(QStringLiteral("trainingMlp"))->setChecked(false);
    panel->findChild<QSpinBox*>(QStringLiteral("trainingBatch"))->setValue(4);
    panel->findChild<QSpinBox*>(QStringLiteral("trainingSteps"))->setValue(steps);
}

void TestTrainingTab::shortRunFinishes()
{
    MainWindow window;
    auto* panel = window.findChild<TrainingPanel*>();
    QVERIFY(panel);
    auto* open = panel->findChild<QPushButton*>(QStringLiteral("trainingOpen"));
    QVERIFY(open && !open->isEnabled());
    setTinyShape(panel, 30);
    QTest::mouseClick(panel->findChild<QPushButton*>(QStringLiteral("trainingStart")), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    auto* loss = panel->findChild<QCustomPlot*>(QStringLiteral("lossPlot"));
    QVERIFY(loss);
    QVERIFY2(loss->graph(0)->dataCount() == 30,
             qPrintable(panel->findChild<QLabel*>(QStringLiteral("trainingStatus"))->text()));
    QVERIFY(loss->graph(1)->dataCount() > 0);
    QVERIFY(panel->findChild<QCustomPlot*>(QStringLiteral("previousPlot"))->graphCount() == 4);
    QVERIFY(panel->findChild<QCustomPlot*>(QStringLiteral("inductionPlot"))->graphCount() == 2);
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QVERIFY(open->isEnabled());
    QVERIFY(panel->openInModelView());
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
