// SPDX-License-Identifier: GPL-3.0-or-later
// The model's prediction in the window: a head opened from a model is live in the model (its edits reach the
// Prediction tab, computed off the GUI thread, the newest edit winning), interventions are undo steps saved
// with the session, and the Head Scores tab shows the scores, the ablation sweep and the attribution.

#include "Document.h"
#include "DocumentCommands.h"
#include "HeadsPanel.h"
#include "Heatmap.h"
#include "InterventionModel.h"
#include "InterventionsPanel.h"
#include "MainWindow.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "ModelView.h"
#include "PredictionPanel.h"
#include "PredictionView.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TinyModels.h"
#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDockWidget>
#include <QMenu>
#include <QStatusBar>
#include <QUndoStack>
#include <QtTest>

#include <cmath>

using namespace qkv;
using namespace qkv::ui;

class TestPrediction : public QObject {
    Q_OBJECT
private slots:
    void init();
    void openHeadLinksTheSession();
    void temperatureChangesThePrediction();
    void newestEditWins();
    void deltasFollowThePosition();
    void interventionsAreUndoSteps();
    void thumbnailMenuAblates();
    void tokenPick_data();
    void tokenPick();
    void logitDifferenceForBothRuns();
    void headGridModes();
    void sweepStops();
    void savedSessionReopensItsModel();
    void missingModelFolderKeepsTheSession();

private:
    /// A window with layer 1, head 1 of the tiny model open on `ids`, its Prediction tab on screen and
    /// the first prediction shown.
    void openModel(MainWindow& window, const std::vector<std::int64_t>& ids = {4, 8, 15, 16, 23, 4, 8, 15});
    static ModelRunner* runner(MainWindow& window) { return window.findChild<ModelRunner*>(); }
    static PredictionPanel* panel(MainWindow& window) { return window.findChild<PredictionPanel*>(); }
    static void setTemperature(Document* document, double temperature)
    {
        pushEdit(document, QStringLiteral("τ"), Document::Options,
                 [temperature](Session& s) { s.temperature = temperature; });
    }

    QTemporaryDir m_folder;
    std::shared_ptr<const Model> m_model;
};

void TestPrediction::init()
{
    QVERIFY(m_folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, m_folder.path(), 3); // GPT-2 shaped: 3 layers, 2 heads, vocab 40
    m_model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
}

void TestPrediction::openModel(MainWindow& window, const std::vector<std::int64_t>& ids)
{
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ModelHeadRequest request;
    request.layer = 1;
    request.heads = {1};
    request.ids = ids;
    QString error;
    QVERIFY2(window.modelLoading()->open(m_model, request, &error, false), qPrintable(error));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockPrediction"));
    QVERIFY(dock);
    dock->show();
    dock->raise();
    QTRY_VERIFY(runner(window)->run() && runner(window)->prediction());
    QTRY_VERIFY(panel(window)->view()->display().modified.meanLoss.has_value());
}

void TestPrediction::openHeadLinksTheSession()
{
    MainWindow window;
    openModel(window);
    const Session& session = window.document()->session();
    QVERIFY(session.model);
    QCOMPARE(session.model->folder, m_model->folder());
    QCOMPARE(session.model->ids, (std::vector<std::int64_t>{4, 8, 15, 16, 23, 4, 8, 15}));
    QCOMPARE(session.model->layer, Index(1));
    QCOMPARE(session.model->head, Index(1));
    QCOMPARE(session.model->interventions.size(), std::size_t(1));
    const HeadIntervention& own = session.model->interventions.front();
    QCOMPARE(own.kind, HeadIntervention::Kind::Session);
    QVERIFY(own.enabled);
    QCOMPARE(own.layer, Index(1));
    QCOMPARE(own.head, Index(1));
    // The head unedited is the model's own: both runs agree.
    const PredictionDisplay& display = panel(window)->view()->display();
    QVERIFY(display.message.isEmpty());
    QVERIFY(std::abs(*display.modified.meanLoss - *display.clean.meanLoss) < 1e-9);
    QCOMPARE(display.tokens.size(), 8);
    QVERIFY(!display.clean.top.isEmpty());
}

void TestPrediction::temperatureChangesThePrediction()
{
    MainWindow window;
    openModel(window);
    PredictionView* view = panel(window)->view();
    const double clean = *view->display().clean.meanLoss;
    const double before = *view->display().modified.meanLoss;
    const quint64 shown = panel(window)->displayCount();
    const std::shared_ptr<const ModelRun> unmodified = runner(window)->run();
    setTemperature(window.document(), 4.0);
    QTRY_VERIFY(panel(window)->displayCount() > shown && !runner(window)->isPredicting() &&
                !panel(window)->isBusy());
    QCOMPARE(runner(window)->run(), unmodified); // an edit of the head never runs the unmodified pass again
    const double after = *view->display().modified.meanLoss;
    QVERIFY2(std::abs(after - before) > 1e-6, qPrintable(QString::number(after - before)));
    QCOMPARE(*view->display().clean.meanLoss, clean); // the unmodified model stays
    QVERIFY(!view->summaryText().contains(QStringLiteral("nan"), Qt::CaseInsensitive));
    QVERIFY(view->summaryText().contains(QStringLiteral("Δ")));
    // The probability axes tick at probabilities only (their room past 1 is for the bars' labels).
    auto* plot = view->findChild<QCustomPlot*>();
    QVERIFY(plot);
    int probabilityAxes = 0;
    for (QCPAxisRect* rect : plot->axisRects()) {
        QCPAxis* axis = rect->axis(QCPAxis::atBottom);
        if (!axis->label().startsWith(QStringLiteral("probability")))
            continue;
        ++probabilityAxes;
        const auto ticker = axis->ticker().dynamicCast<QCPAxisTickerText>();
        QVERIFY(ticker && !ticker->ticks().isEmpty());
        QVERIFY(ticker->ticks().lastKey() <= 1.0);
    }
    QVERIFY(probabilityAxes > 0);
    QVERIFY(view->display().modified.top.front().delta.has_value());
    // The loss strip of the run with the edited head changed too; its last position has no next token.
    QVERIFY(std::isnan(view->display().modified.loss.back()));
    // Undo: the head as the model has it again.
    window.document()->undoStack()->undo();
    QTRY_VERIFY(std::abs(*view->display().modified.meanLoss - before) < 1e-9);
}

void TestPrediction::newestEditWins()
{
    MainWindow window;
    openModel(window);
    for (double temperature : {0.5, 2.0, 3.0, 0.25, 7.0})
        setTemperature(window.document(), temperature);
    QTRY_VERIFY(!runner(window)->isPredicting() && !panel(window)->isBusy());
    const std::shared_ptr<const ModelRun> run = runner(window)->run();
    const Prediction expected = run->predict(sessionInterventions(window.document()->session()));
    QTRY_COMPARE(*panel(window)->view()->display().modified.meanLoss, expected.meanLoss);
    QCOMPARE(runner(window)->appliedInterventions().front().session->temperature, 7.0);
}

// Each bar's Δ log p is the change of that token's log-probability at the position shown, wherever the
// position moves after an edit (the unmodified run's row is kept between edits, never for another position).
void TestPrediction::deltasFollowThePosition()
{
    MainWindow window;
    openModel(window);
    setTemperature(window.document(), 3.0);
    QTRY_VERIFY(!runner(window)->isPredicting() && !panel(window)->isBusy());
    const std::shared_ptr<const ModelRun> run = runner(window)->run();
    const Prediction modified = run->predict(sessionInterventions(window.document()->session()));
    for (int position : {2, 5, 0, 5}) {
        const quint64 shown = panel(window)->displayCount();
        const bool moves = panel(window)->position() != position;
        panel(window)->setPosition(position);
        QTRY_VERIFY((!moves || panel(window)->displayCount() > shown) && !panel(window)->isBusy());
        const PredictionDisplay& display = panel(window)->view()->display();
        QCOMPARE(display.position, position);
        const std::vector<TokenProbability>& top = modified.positions[std::size_t(position)].top;
        QCOMPARE(display.modified.top.size(), qsizetype(top.size()));
        for (std::size_t k = 0; k < top.size(); ++k) {
            const double expected = modified.logProbability(position, top[k].id) -
                                    run->clean().logProbability(position, top[k].id);
            QKV_COMPARE_NEAR(*display.modified.top[qsizetype(k)].delta, expected, 1e-9);
        }
    }
}

void TestPrediction::interventionsAreUndoSteps()
{
    MainWindow window;
    openModel(window);
    auto* interventions = window.findChild<InterventionsPanel*>(QStringLiteral("interventionsPanel"));
    QVERIFY(interventions);
    InterventionModel* model = interventions->model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model->rowCount(), 1);
    QUndoStack* undo = window.document()->undoStack();
    const int steps = undo->count();
    const double before = *panel(window)->view()->display().modified.meanLoss;

    HeadIntervention zero;
    zero.layer = 0;
    zero.head = 0;
    zero.kind = HeadIntervention::Kind::Zero;
    QVERIFY(model->addIntervention(zero));
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(model->rowCount(), 2);
    QCOMPARE(model->data(model->index(1, InterventionModel::KindColumn)).toString(), QStringLiteral("Zero"));
    QTRY_VERIFY(std::abs(*panel(window)->view()->display().modified.meanLoss - before) > 1e-6);
    QVERIFY(panel(window)->view()->display().interventions.contains(QStringLiteral("L0.H0")));

    // Switched off: one step, and the prediction is the head's alone again.
    QVERIFY(
        model->setData(model->index(1, InterventionModel::EnabledColumn), Qt::Unchecked, Qt::CheckStateRole));
    QCOMPARE(undo->count(), steps + 2);
    QVERIFY(!window.document()->session().model->interventions[1].enabled);
    QTRY_VERIFY(std::abs(*panel(window)->view()->display().modified.meanLoss - before) < 1e-9);

    HeadIntervention scale = zero;
    scale.kind = HeadIntervention::Kind::Scale;
    scale.factor = qInf();
    QSignalSpy rejected(model, &InterventionModel::inputRejected);
    QVERIFY(!model->addIntervention(scale));
    QCOMPARE(rejected.count(), 1);
    QCOMPARE(undo->count(), steps + 2);

    QVERIFY(model->removeInterventions({1}));
    QCOMPARE(model->rowCount(), 1);
    undo->undo();
    QCOMPARE(model->rowCount(), 2);
    undo->undo();
    QVERIFY(window.document()->session().model->interventions[1].enabled);
    undo->undo();
    QCOMPARE(model->rowCount(), 1);
}

// Right-click a thumbnail of the model view: Ablate (Mean) adds that head's intervention as one undo step.
void TestPrediction::thumbnailMenuAblates()
{
    MainWindow window;
    openModel(window);
    auto* view = window.findChild<ModelView*>(QStringLiteral("modelView"));
    QVERIFY(view);
    const int steps = window.document()->undoStack()->count();
    bool triggered = false;
    QTimer::singleShot(0, &window, [&triggered] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        QAction* mean = menu ? menu->findChild<QAction*>(QStringLiteral("ablateMean")) : nullptr;
        if (mean) {
            mean->trigger();
            triggered = true;
        }
        if (menu)
            menu->close();
    });
    emit view->thumbnailMenuRequested(2, 1, view->mapToGlobal(QPoint(10, 10)));
    QVERIFY(triggered);
    QCOMPARE(window.document()->undoStack()->count(), steps + 1);
    const HeadIntervention& added = window.document()->session().model->interventions.back();
    QCOMPARE(added.kind, HeadIntervention::Kind::Mean);
    QCOMPARE(added.layer, Index(2));
    QCOMPARE(added.head, Index(1));
}

void TestPrediction::tokenPick_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<qlonglong>("id"); // −1: none
    QTest::addColumn<QString>("error");
    QTest::newRow("empty") << QString() << -1LL << QString();
    QTest::newRow("id") << QStringLiteral("#7") << 7LL << QString();
    QTest::newRow("id out of range") << QStringLiteral("#40") << -1LL << QStringLiteral("not a token id");
    QTest::newRow("not a number") << QStringLiteral("#x") << -1LL << QStringLiteral("not a token id");
    QTest::newRow("no tokenizer") << QStringLiteral(" Mary") << -1LL << QStringLiteral("no tokenizer");
}

void TestPrediction::tokenPick()
{
    QFETCH(QString, text);
    QFETCH(qlonglong, id);
    QFETCH(QString, error);
    QString problem;
    const std::optional<std::int64_t> picked = parseTokenPick(*m_model, text, &problem);
    QCOMPARE(picked.has_value(), id >= 0);
    if (picked)
        QCOMPARE(qlonglong(*picked), id);
    QVERIFY2(error.isEmpty() ? problem.isEmpty() : problem.contains(error), qPrintable(problem));
}

void TestPrediction::logitDifferenceForBothRuns()
{
    MainWindow window;
    openModel(window);
    PredictionPanel* prediction = panel(window);
    prediction->setPosition(3);
    prediction->setTokenPair(QStringLiteral("#5"), QStringLiteral("#9"));
    QTRY_VERIFY(prediction->view()->display().clean.logitDifference.has_value() && !prediction->isBusy());
    const PredictionDisplay& display = prediction->view()->display();
    QCOMPARE(display.position, 3);
    const RowVector logits = runner(window)->run()->clean().logitsAt(3);
    QVERIFY(std::abs(*display.clean.logitDifference - (logits[5] - logits[9])) < 1e-9);
    QVERIFY(display.modified.logitDifference.has_value());
    QVERIFY(prediction->view()->summaryText().contains(QStringLiteral("logit(")));
    prediction->setTokenPair(QStringLiteral("#99"), QStringLiteral("#9"));
    QVERIFY(prediction->tokenError().contains(QStringLiteral("not a token id")));
    QVERIFY(!prediction->tokenA());
}

void TestPrediction::headGridModes()
{
    MainWindow window;
    openModel(window);
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockHeadScores"));
    QVERIFY(dock);
    dock->show();
    dock->raise();
    auto* heads = window.findChild<HeadsPanel*>(QStringLiteral("headsPanel"));
    QVERIFY(heads);
    const std::shared_ptr<const ModelRun> run = runner(window)->run();

    heads->setMode(HeadsPanel::Mode::Scores);
    heads->setScore(int(HeadScore::Induction));
    QTRY_COMPARE(heads->values().rows(), Index(3));
    QCOMPARE(heads->values().cols(), Index(2));
    QVERIFY(heads->values() == run->scores()[HeadScore::Induction]);
    QVERIFY(heads->grid()->whatsThis().contains(QString::fromUtf8(formula(HeadScore::Induction))));
    QCOMPARE(heads->grid()->figureName(), QStringLiteral("scores"));
    QVERIFY(heads->csv().startsWith(QStringLiteral("layer,H0,H1\n0,")));

    heads->setMode(HeadsPanel::Mode::Sweep);
    QCOMPARE(heads->values().size(), Index(0)); // nothing until it runs
    heads->runSweep();
    QTRY_VERIFY(!runner(window)->isSweeping() && heads->values().size() > 0);
    const Matrix expected = run->ablationSweep(Intervention::Kind::Zero, SweepMetric{});
    QVERIFY(heads->values().isApprox(expected, 1e-12) || heads->values() == expected);
    QCOMPARE(heads->grid()->figureName(), QStringLiteral("sweep"));

    heads->setMode(HeadsPanel::Mode::Attribution);
    QTRY_VERIFY(!heads->isBusy() && heads->values().size() > 0);
    QCOMPARE(heads->values().rows(), Index(3));
    QCOMPARE(heads->grid()->figureName(), QStringLiteral("attribution"));

    // A click on a cell opens that head.
    heads->setMode(HeadsPanel::Mode::Scores);
    QTRY_VERIFY(heads->values().size() > 0);
    emit heads->grid()->cellClicked(2, 0);
    QTRY_COMPARE(window.modelLoading()->request().layer, Index(2));
    QCOMPARE(window.document()->session().model->layer, Index(2));
}

void TestPrediction::sweepStops()
{
    MainWindow window;
    openModel(window);
    ModelRunner* models = runner(window);
    QSignalSpy failed(models, &ModelRunner::sweepFailed);
    QSignalSpy finished(models, &ModelRunner::sweepFinished);
    models->startSweep(Intervention::Kind::Mean, SweepMetric{});
    QVERIFY(models->isSweeping());
    models->stopSweep();
    QVERIFY(!models->isSweeping());
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.front().front().toString().isEmpty()); // stopped, not failed
    // What the stopped sweep still reports is dropped; a new one finishes.
    models->startSweep(Intervention::Kind::Mean, SweepMetric{});
    QTRY_COMPARE(finished.count(), 1);
}

void TestPrediction::savedSessionReopensItsModel()
{
    QTemporaryDir saved;
    const QString path = saved.filePath(QStringLiteral("linked.qkv.json"));
    {
        MainWindow window;
        openModel(window);
        HeadIntervention mean;
        mean.layer = 2;
        mean.head = 1;
        mean.kind = HeadIntervention::Kind::Mean;
        QVERIFY(window.findChild<InterventionsPanel*>()->model()->addIntervention(mean));
        QString error;
        QVERIFY2(window.document()->saveAs(path, &error), qPrintable(error));
    }
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openSession(path));
    QVERIFY(window.document()->session().model);
    QCOMPARE(window.document()->session().model->interventions.size(), std::size_t(2));
    QTRY_VERIFY(runner(window)->run() != nullptr);
    QCOMPARE(runner(window)->run()->ids(), window.document()->session().model->ids);
    QTRY_VERIFY(runner(window)->prediction() && !runner(window)->isPredicting());
    QCOMPARE(runner(window)->appliedInterventions().size(), std::size_t(2));
}

void TestPrediction::missingModelFolderKeepsTheSession()
{
    QTemporaryDir saved;
    const QString path = saved.filePath(QStringLiteral("orphan.qkv.json"));
    const QString folder = saved.filePath(QStringLiteral("model"));
    QVERIFY(QDir().mkpath(folder));
    qkv::test::writeModel(qkv::test::Tiny{}, folder, 5);
    m_model = std::make_shared<const Model>(Model::open(folder.toStdString()));
    {
        MainWindow window;
        openModel(window);
        QString error;
        QVERIFY2(window.document()->saveAs(path, &error), qPrintable(error));
    }
    // The model folder goes away.
    QVERIFY(QDir(folder).removeRecursively());
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openSession(path));
    const Session kept = window.document()->session();
    QTRY_VERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("Cannot reopen the model")));
    QVERIFY(window.document()->session() == kept);
    QVERIFY(!runner(window)->run());
}

QKV_TEST_MAIN(TestPrediction)
#include "tst_predictionpanel.moc"
