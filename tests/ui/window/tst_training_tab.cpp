// SPDX-License-Identifier: GPL-3.0-or-later
// The Training workspace: laid out for the room it has (a low bottom dock at 1280 × 720 keeps a usable plot
// and every control whole; a large area shows the plots together and the form); a short run on a tiny model
// started from the form finishes on its worker thread, draws a loss point per step, the probe's loss per
// position and its attention thumbnails, and writes the model folder; Pause, Step, Reset and a second Start
// during a run; the attention normalizer; a thumbnail opens its head; closing the window during a run asks
// first and saves the model.

#include "MainWindow.h"
#include "ModelLoading.h"
#include "ModelView.h"
#include "TestMain.h"
#include "TrainingCurveView.h"
#include "TrainingPanel.h"
#include "TrainingPanelTesting.h"
#include "TrainingPlots.h"
#include "TrainingProbeView.h"

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
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

using namespace qkv::ui;
using qkv::test::child;
using qkv::test::setTinyShape;

class TestTrainingTab : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void shortRunFinishes();
    void lowDockKeepsAPlotAndTheControls_data();
    void lowDockKeepsAPlotAndTheControls();
    void largeAreaShowsThePlotsTogether();
    void formCollapsesToASummary();
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

void click(TrainingPanel* panel, const char* button)
{
    auto* b = child<QAbstractButton>(panel, button);
    QVERIFY2(b->isEnabled(), button);
    QTest::mouseClick(b, Qt::LeftButton);
}

int drawnSteps(TrainingPanel* panel)
{
    return child<TrainingCurveView>(panel, "lossPlot")->pointCount(0);
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
    auto* open = child<QAbstractButton>(panel, "trainingOpen");
    QVERIFY(!open->isEnabled());
    setTinyShape(panel, 30);
    click(panel, "trainingStart");
    QTRY_VERIFY_WITH_TIMEOUT(panel->isFinished(), 60000);
    auto* loss = child<TrainingCurveView>(panel, "lossPlot");
    QVERIFY2(loss->pointCount(0) == 30, qPrintable(status(panel)));
    QVERIFY(loss->pointCount(1) > 0);
    QCOMPARE(child<TrainingCurveView>(panel, "previousPlot")->seriesCount(), 4);
    QCOMPARE(child<TrainingCurveView>(panel, "inductionPlot")->seriesCount(), 2);
    QCOMPARE(child<TrainingCurveView>(panel, "inductionPlot")->seriesName(1), QStringLiteral("L1 H1"));
    QCOMPARE(child<TrainingCurveView>(panel, "previousPlot")->seriesName(2), QStringLiteral("L1 H0"));
    // The probe: a bar per position, the repeated half among the scored ones, and 2 × 2 thumbnails.
    auto* probe = child<TrainingProbeView>(panel, "probePlot");
    QVERIFY(probe->barCount() > 4);
    QVERIFY(probe->scoredBarCount() > 0 && probe->scoredBarCount() < probe->barCount());
    // A window never shown keeps one plot a tab; the probe's tab names the step it shows.
    QCOMPARE(child<TrainingPlots>(panel, "trainingPlots")->arrangement(),
             TrainingPlots::Arrangement::OnePerTab);
    auto* tabs = child<QTabWidget>(panel, "trainingTabs");
    QCOMPARE(tabs->tabText(tabs->indexOf(probe)), QStringLiteral("Probe loss, step 30"));
    auto* thumbnails = child<ModelView>(panel, "trainingThumbnails");
    QCOMPARE(thumbnails->layerCount(), 2);
    QCOMPARE(thumbnails->headCount(), 2);
    QVERIFY(!thumbnails->thumbnail(1, 1).isNull());
    QVERIFY(QDir(panel->folder()).exists(QStringLiteral("config.json")));
    QVERIFY(open->isEnabled());
    QVERIFY(panel->openInModelView());
    QDir(panel->folder()).removeRecursively();
}

namespace {

/// The application's font scaled by `scale` while it lives: the fonts of another machine.
class ScaledFont {
public:
    explicit ScaledFont(double scale) : m_original(QApplication::font())
    {
        QFont font = m_original;
        font.setPointSizeF(m_original.pointSizeF() * scale);
        QApplication::setFont(font);
    }
    ~ScaledFont() { QApplication::setFont(m_original); }

private:
    QFont m_original;
};

QString rectText(const QRect& r)
{
    return QStringLiteral("%1×%2 at (%3, %4)").arg(r.width()).arg(r.height()).arg(r.x()).arg(r.y());
}

} // namespace

void TestTrainingTab::lowDockKeepsAPlotAndTheControls_data()
{
    QTest::addColumn<int>("dockHeight");
    QTest::addColumn<double>("fontScale");
    QTest::newRow("dock 230 px") << 230 << 1.0;
    QTest::newRow("dock 230 px, larger font") << 230 << 1.25;
    QTest::newRow("dock 230 px, smaller font") << 230 << 0.85;
}

// A low dock (the panel docked beside other views, a floating dock made small, the Training workspace at
// a scale factor of 2 on a small screen) is a third of a 720-pixel window or less, depending on the machine's
// fonts: the panel keeps one plot of a usable height, with ticks apart, and every control whole inside it,
// without asking for more room.
void TestTrainingTab::lowDockKeepsAPlotAndTheControls()
{
    QFETCH(int, dockHeight);
    QFETCH(double, fontScale);
    const ScaledFont font(fontScale);
    QTemporaryDir runs;
    QScrollArea area; // as a dock holds it: the panel gets the area's size, or its minimum and scrolls
    area.setWidgetResizable(true);
    auto* panel = new TrainingPanel(nullptr, nullptr, runs.path());
    area.setWidget(panel);
    area.resize(1280, dockHeight);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QWidget* viewport = area.viewport();
    auto* plots = child<TrainingPlots>(panel, "trainingPlots");
    auto* loss = child<TrainingCurveView>(panel, "lossPlot");
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::OnePerTab);
    plots->showPlot(loss);
    QTRY_VERIFY(loss->isVisible());
    // The whole tab fits the dock: nothing is scrolled out of sight.
    QTRY_VERIFY2(
        panel->height() <= viewport->height(),
        qPrintable(QStringLiteral("panel %1, dock viewport %2; header %3, plots at least %4, runs %5")
                       .arg(panel->height())
                       .arg(viewport->height())
                       .arg(child<QWidget>(panel, "trainingHeader")->height())
                       .arg(plots->minimumSizeHint().height())
                       .arg(child<QWidget>(panel, "trainingRuns")->minimumSizeHint().height())));
    const auto where = [&] {
        return QStringLiteral("area %1 px, loss plot %2, data %3, label %4 px")
            .arg(area.height())
            .arg(rectText(loss->geometry()), rectText(loss->dataArea()))
            .arg(loss->tickLabelHeight());
    };
    // A usable plot: at least 100 pixels, the data at least four tick labels high, ticks apart.
    QTRY_VERIFY2(loss->height() >= 100, qPrintable(where()));
    QTRY_VERIFY2(loss->dataArea().height() >= 4 * loss->tickLabelHeight(), qPrintable(where()));
    QVERIFY2(QRect(loss->mapTo(viewport, QPoint(0, 0)), loss->size()).bottom() <= viewport->height(),
             qPrintable(where()));
    const QVector<double> ticks = loss->yTickPixels();
    for (int i = 1; i < ticks.size(); ++i)
        QVERIFY2(std::abs(ticks[i] - ticks[i - 1]) >= loss->tickLabelHeight(), qPrintable(where()));
    for (const char* name :
         {"trainingStart", "trainingPause", "trainingStep", "trainingStop", "trainingReset"}) {
        auto* button = child<QAbstractButton>(panel, name);
        QVERIFY2(button->isVisible(), name);
        const QRect inViewport(button->mapTo(viewport, QPoint(0, 0)), button->size());
        QVERIFY2(viewport->rect().contains(inViewport),
                 qPrintable(QStringLiteral("%1 at %2 in %3")
                                .arg(QLatin1String(name), rectText(inViewport), rectText(viewport->rect()))));
        QTRY_VERIFY2(button->width() >= button->minimumSizeHint().width() &&
                         button->height() >= button->minimumSizeHint().height(),
                     qPrintable(QStringLiteral("%1 is %2, needs %3×%4")
                                    .arg(QLatin1String(name), rectText(button->geometry()))
                                    .arg(button->minimumSizeHint().width())
                                    .arg(button->minimumSizeHint().height())));
    }
}

// The panel alone in a large area (a workspace of its own): the plots share one page, the form is open; as
// the area shrinks they go to two tabs, then one plot a tab.
void TestTrainingTab::largeAreaShowsThePlotsTogether()
{
    QTemporaryDir runs;
    QScrollArea area; // as a dock holds it: the panel gets the area's size, or its minimum and scrolls
    area.setWidgetResizable(true);
    auto* panel = new TrainingPanel(nullptr, nullptr, runs.path());
    area.setWidget(panel);
    area.resize(1280, 680);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    auto* plots = child<TrainingPlots>(panel, "trainingPlots");
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::OnePage);
    QTRY_VERIFY(panel->isFormExpanded());
    QVERIFY(child<QWidget>(panel, "trainingForm")->isVisible());
    for (const char* name :
         {"lossPlot", "previousPlot", "inductionPlot", "probePlot", "trainingThumbnails"}) {
        auto* plot = child<QWidget>(panel, name);
        QTRY_VERIFY2(plot->isVisible(), name);
        QVERIFY2(plot->height() >= 150 && plot->width() >= 200, qPrintable(rectText(plot->geometry())));
    }
    area.resize(1000, 360);
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::Grouped);
    QTRY_VERIFY(child<QWidget>(panel, "previousPlot")->isVisible());
    QVERIFY(child<QWidget>(panel, "lossPlot")->isVisible()); // side by side
    area.resize(1000, 240);
    QTRY_VERIFY(!panel->isFormExpanded()); // twelve rows of fields do not fit: the summary only
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::OnePerTab);
    area.resize(600, 400); // narrow: one plot a tab too
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::OnePerTab);
    QTRY_VERIFY(panel->width() <= area.viewport()->width()); // and nothing wider than the area
    panel->setFormExpanded(false);                           // the user's choice stands at any size
    area.resize(1280, 680);
    QTRY_COMPARE(plots->arrangement(), TrainingPlots::Arrangement::OnePage);
    QVERIFY(!panel->isFormExpanded());
}

void TestTrainingTab::formCollapsesToASummary()
{
    QTemporaryDir runs;
    QScrollArea area; // a low dock
    area.setWidgetResizable(true);
    auto* panel = new TrainingPanel(nullptr, nullptr, runs.path());
    area.setWidget(panel);
    area.resize(1280, 230);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QTRY_VERIFY(panel->isVisible());
    auto* form = child<QWidget>(panel, "trainingForm");
    auto* summary = child<QLabel>(panel, "trainingSummary");
    QTRY_VERIFY(!panel->isFormExpanded());
    QVERIFY(!form->isVisible());
    QVERIFY(summary->isVisible());
    QVERIFY2(summary->toolTip().contains(QStringLiteral("2000 steps")) ||
                 summary->text().contains(QStringLiteral("2000 steps")),
             qPrintable(summary->text()));
    auto* toggle = child<QToolButton>(panel, "trainingFormToggle");
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(panel->isFormExpanded());
    QTRY_VERIFY(form->isVisible());
    child<QSpinBox>(panel, "trainingSteps")->setValue(30);
    QTRY_VERIFY(summary->text().contains(QStringLiteral("30 steps")) ||
                summary->toolTip().contains(QStringLiteral("30 steps")));
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(!panel->isFormExpanded());
    QTRY_VERIFY(!form->isVisible());
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
    // The worker waits before the window hears of it (a queued signal): the status follows.
    QTRY_VERIFY_WITH_TIMEOUT(status(panel).startsWith(QStringLiteral("Paused after step %1").arg(paused)),
                             30000);
    QVERIFY(panel->isPaused());
    QCOMPARE(panel->reportedStep(), paused);
    QCOMPARE(child<QAbstractButton>(panel, "trainingPause")->text(), QStringLiteral("Resume"));

    click(panel, "trainingStep");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() == paused + 1 && panel->isPaused(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(drawnSteps(panel), int(paused + 1), 30000);
    QCOMPARE(panel->reportedStep(), paused + 1);
    click(panel, "trainingStep");
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() == paused + 2 && panel->isPaused(), 30000);

    click(panel, "trainingPause"); // resume
    QTRY_VERIFY_WITH_TIMEOUT(panel->reportedStep() > paused + 3, 30000);
    QVERIFY(!panel->isPaused());
    QCOMPARE(child<QAbstractButton>(panel, "trainingPause")->text(), QStringLiteral("Pause"));

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
    QVERIFY(!child<QAbstractButton>(panel, "trainingOpen")->isEnabled());
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
    // The stopped run's worker may already have ended (it stops at its next step) before the window hears of
    // it and starts the new settings: in between, the panel says it is restarting.
    QVERIFY2(panel->isRunning() ||
                 status(panel) == QStringLiteral("Stopping the run to start the new settings…"),
             qPrintable(status(panel)));
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
    QVERIFY(child<QAbstractButton>(panel, "trainingSaveAs")->isEnabled());
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
    child<TrainingPlots>(panel, "trainingPlots")->showPlot(thumbnails); // a low tab shows one plot at a time
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
