// SPDX-License-Identifier: GPL-3.0-or-later
// The Patching tab of the Model workspace on a tiny GPT-2: the prompts' tokens side by side, the metric's
// tokens from the clean prompt's top predictions, grids equal to PatchingRun's computed here, Stop and the
// newest run winning, bad input refused in the panel with nothing changed, and a head's cell opening that
// head on the clean prompt.

#include "Document.h"
#include "Error.h"
#include "Heatmap.h"
#include "LessonPlayer.h"
#include "Lessons.h"
#include "MainWindow.h"
#include "Model.h"
#include "ModelLoading.h"
#include "ModelRun.h"
#include "PatchScatterView.h"
#include "Patching.h"
#include "PatchingPanel.h"
#include "PatchingPrompts.h"
#include "PatchingRunner.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QToolButton>
#include <QtTest>

#include <cmath>

using namespace qkv;
using namespace qkv::ui;

namespace {

constexpr int runTimeout = 60000; // ms: a grid of the tiny model, on a machine shared with other builds

const std::vector<std::int64_t> cleanIds{4, 8, 15, 16, 23, 4, 8, 15};
const std::vector<std::int64_t> corruptIds{4, 8, 15, 30, 23, 4, 8, 15}; // position 3 differs
const QString cleanPrompt = QStringLiteral("#4 8 15 16 23 4 8 15");
const QString corruptPrompt = QStringLiteral("#4 8 15 30 23 4 8 15");

} // namespace

class TestPatchingPanel : public QObject {
    Q_OBJECT
private slots:
    void init();
    void tokensSideBySide();
    void answerPickedFromTopPredictions();
    void gridEqualsPatchingRun_data();
    void gridEqualsPatchingRun();
    void stopAndNewestRunWins();
    void stopEndsTheComputation();
    void badInputChangesNothing_data();
    void badInputChangesNothing();
    void textPromptsThroughTheTokenizer();
    void refusedRunKeepsTheGrids();
    void clickingAHeadOpensIt();
    void lessonStepRunsAnExperiment();
    void viewMenuShowsThePanel();

private:
    /// A window with the tiny model open, the Patching dock on screen, the prompts typed and the answer and
    /// wrong tokens chosen.
    PatchingPanel* openPanel(MainWindow& window);
    /// Runs the panel and waits until every grid asked for is complete.
    static void runToTheEnd(PatchingPanel* panel);

    QTemporaryDir m_folder;
    std::shared_ptr<const Model> m_model;
};

void TestPatchingPanel::init()
{
    QVERIFY(m_folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, m_folder.path(), 3); // GPT-2 shaped: 3 layers, 2 heads, vocab 40
    m_model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
}

PatchingPanel* TestPatchingPanel::openPanel(MainWindow& window)
{
    window.resize(1280, 800);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window))
        return nullptr;
    ModelHeadRequest request;
    request.layer = 1;
    request.heads = {1};
    request.ids = cleanIds;
    QString error;
    if (!window.modelLoading()->open(m_model, request, &error, false))
        return nullptr;
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockPatching"));
    auto* panel = window.findChild<PatchingPanel*>(QStringLiteral("patchingPanel"));
    if (!dock || !panel)
        return nullptr;
    dock->show();
    dock->raise();
    panel->prompts()->setPrompts(cleanPrompt, corruptPrompt);
    panel->prompts()->setTokens(QStringLiteral("#5"), QStringLiteral("#7"));
    return panel;
}

void TestPatchingPanel::runToTheEnd(PatchingPanel* panel)
{
    const quint64 finished = panel->runner()->finishedCount();
    QVERIFY2(panel->run(), qPrintable(panel->message()));
    QVERIFY(panel->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(panel->runner()->finishedCount() == finished + 1 && !panel->isRunning(),
                             runTimeout);
}

void TestPatchingPanel::tokensSideBySide()
{
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    PatchingPrompts* prompts = panel->prompts();
    QVERIFY(prompts->cleanTokens().ids == cleanIds);
    QVERIFY(prompts->corruptTokens().ids == corruptIds);
    QCOMPARE(prompts->markedPositions(), QList<int>{3});
    auto* strip = panel->findChild<QLabel*>(QStringLiteral("patchingTokens"));
    QVERIFY(strip);
    QVERIFY(strip->text().contains(QStringLiteral("#30")));
    QVERIFY(prompts->countMessage().isEmpty());

    // A different count is told as it is typed, before any run.
    auto* corrupt = panel->findChild<QLineEdit*>(QStringLiteral("patchingCorrupt"));
    QVERIFY(corrupt);
    corrupt->clear();
    QTest::keyClicks(corrupt, QStringLiteral("#4 8 15"));
    QVERIFY(prompts->countMessage().contains(QStringLiteral("8")));
    QVERIFY(prompts->countMessage().contains(QStringLiteral("3")));
    auto* count = panel->findChild<QLabel*>(QStringLiteral("patchingTokenCount"));
    QVERIFY(count && count->isVisible());
    QTest::keyClicks(corrupt, QStringLiteral(" 16 23 4 8 15"));
    QVERIFY(prompts->countMessage().isEmpty());
    QVERIFY(!count->isVisible());
}

void TestPatchingPanel::answerPickedFromTopPredictions()
{
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->prompts()->setTokens(QString(), QString()); // nothing typed: the list's first two
    panel->prompts()->setPrompts(cleanPrompt + QStringLiteral(" 16"), corruptPrompt + QStringLiteral(" 16"));
    QTRY_VERIFY(!panel->prompts()->isPredicting());
    auto* answer = panel->findChild<QComboBox*>(QStringLiteral("patchingAnswer"));
    auto* wrong = panel->findChild<QComboBox*>(QStringLiteral("patchingWrong"));
    QVERIFY(answer && wrong);
    QTRY_COMPARE(answer->count(), 10);
    const ModelRun run(m_model, {4, 8, 15, 16, 23, 4, 8, 15, 16}, Precision::Float64);
    const std::vector<TokenProbability>& top = run.clean().positions.back().top;
    QCOMPARE(answer->itemData(0).toLongLong(), top[0].id);
    const PatchingInput input = panel->prompts()->input();
    QVERIFY(input.answer && input.wrong);
    QCOMPARE(*input.answer, top[0].id);
    QCOMPARE(*input.wrong, top[1].id);
    // Typed tokens win over the list.
    panel->prompts()->setTokens(QStringLiteral("#12"), QStringLiteral("#13"));
    QCOMPARE(*panel->prompts()->input().answer, std::int64_t(12));
    QCOMPARE(*panel->prompts()->input().wrong, std::int64_t(13));
}

void TestPatchingPanel::gridEqualsPatchingRun_data()
{
    QTest::addColumn<int>("site");
    QTest::addColumn<int>("methods");
    QTest::addColumn<int>("row");
    QTest::addColumn<int>("column");
    QTest::addColumn<int>("depth");
    QTest::newRow("resid_pre, both") << int(PatchSite::ResidPre) << int(PatchingPanel::Methods::Both) << 1
                                     << 3 << 0;
    QTest::newRow("head_out, exact") << int(PatchSite::HeadOut) << int(PatchingPanel::Methods::Exact) << 2
                                     << 1 << 0;
    QTest::newRow("head_out_pos, both")
        << int(PatchSite::HeadOutPos) << int(PatchingPanel::Methods::Both) << 0 << 1 << 3;
    QTest::newRow("head_v, attribution")
        << int(PatchSite::HeadV) << int(PatchingPanel::Methods::Attribution) << 2 << 0 << 0;
}

void TestPatchingPanel::gridEqualsPatchingRun()
{
    QFETCH(int, site);
    QFETCH(int, methods);
    QFETCH(int, row);
    QFETCH(int, column);
    QFETCH(int, depth);
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->setSite(PatchSite(site));
    panel->setMethods(PatchingPanel::Methods(methods));
    runToTheEnd(panel);
    QVERIFY2(panel->message().isEmpty(), qPrintable(panel->message()));
    panel->setShownPosition(depth);

    PatchingRun expected(*m_model, PatchPair{cleanIds, corruptIds, 5, 7});
    auto* metrics = panel->findChild<QLabel*>(QStringLiteral("patchingMetrics"));
    QVERIFY(metrics);
    QVERIFY(metrics->text().contains(Heatmap::formatValue(expected.cleanMetric())));
    QVERIFY(metrics->text().contains(Heatmap::formatValue(expected.corruptMetric())));
    const bool both = PatchingPanel::Methods(methods) == PatchingPanel::Methods::Both;
    for (PatchMethod method : {PatchMethod::Exact, PatchMethod::Attribution}) {
        const bool asked = both || (method == PatchMethod::Exact) ==
                                       (PatchingPanel::Methods(methods) == PatchingPanel::Methods::Exact);
        QCOMPARE(panel->grid(method)->isVisible(), asked);
        if (!asked)
            continue;
        const PatchGrid grid = expected.patch(PatchSite(site), method);
        const PatchGridSlice& slice = panel->shownSlice(method);
        QCOMPARE(slice.computedCells, grid.rows * grid.cols);
        QCOMPARE(slice.nonFiniteCells, Index(0));
        QKV_COMPARE_NEAR(slice.raw(row, column), grid.value(row, column, depth), 1e-9);
        QKV_COMPARE_NEAR(slice.normalized(row, column), grid.normalizedValue(row, column, depth), 1e-9);
        // What the heatmap draws and says is the normalized value, with the raw one on hover.
        Heatmap* heatmap = panel->grid(method);
        QCOMPARE(heatmap->values().rows(), grid.rows);
        QCOMPARE(heatmap->values().cols(), grid.cols);
        QKV_COMPARE_NEAR(heatmap->values()(row, column), grid.normalizedValue(row, column, depth), 1e-9);
        QVERIFY(!heatmap->isMasked(row, column));
        const QString hover = heatmap->cellDescription(row, column);
        QVERIFY2(hover.contains(Heatmap::formatValue(grid.value(row, column, depth))), qPrintable(hover));
        QVERIFY2(hover.contains(Heatmap::formatValue(grid.normalizedValue(row, column, depth))),
                 qPrintable(hover));
        QVERIFY(!hover.contains(QStringLiteral("nan"), Qt::CaseInsensitive));
        // 0 is white, the range symmetric about it and holding ±1.
        QCOMPARE(heatmap->colorRange().first, -heatmap->colorRange().second);
        QVERIFY(heatmap->colorRange().second >= 1.0);
    }
    QCOMPARE(panel->scatter()->isVisible(), both);
    if (both)
        QCOMPARE(panel->scatter()->pointCount(), int(panel->shownSlice(PatchMethod::Exact).computedCells));
}

void TestPatchingPanel::stopAndNewestRunWins()
{
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->setSite(PatchSite::HeadOutPos);
    panel->setMethods(PatchingPanel::Methods::Exact);
    auto* stopButton = panel->findChild<QToolButton*>(QStringLiteral("patchingStop"));
    QVERIFY(stopButton);
    QSignalSpy failed(panel->runner(), &PatchingRunner::failed);

    QVERIFY(panel->run());
    QVERIFY(panel->isRunning());
    QVERIFY(stopButton->isVisible());
    stopButton->click();
    QVERIFY(!panel->isRunning());
    QVERIFY(!stopButton->isVisible());
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.front().front().toString().isEmpty()); // stopped, not failed
    QVERIFY(panel->message().contains(QStringLiteral("Stopped")));
    // Whatever the stopped run computed is partial or complete, never more than the grid.
    const PatchGridSlice& stopped = panel->shownSlice(PatchMethod::Exact);
    QVERIFY(stopped.computedCells <= stopped.computed.size());

    // A run started while another runs replaces it: only the newest finishes and is shown.
    const quint64 finished = panel->runner()->finishedCount();
    panel->setSite(PatchSite::ResidPre);
    QVERIFY(panel->run());
    panel->setSite(PatchSite::HeadOut);
    QVERIFY(panel->run());
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isRunning(), runTimeout);
    QCOMPARE(panel->runner()->finishedCount(), finished + 1);
    QCOMPARE(panel->runner()->request().site, PatchSite::HeadOut);
    QCOMPARE(panel->shownSlice(PatchMethod::Exact).columnTitle, QStringLiteral("head"));
    QCOMPARE(panel->shownSlice(PatchMethod::Exact).computedCells, Index(3 * 2));
    QCOMPARE(failed.count(), 1);
}

void TestPatchingPanel::stopEndsTheComputation()
{
    // A model large enough that its head_out_pos grid takes many cells of real work.
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    qkv::test::Tiny tiny;
    tiny.d = 64;
    tiny.heads = 4;
    tiny.kvHeads = 4;
    tiny.layers = 6;
    tiny.inner = 128;
    tiny.positions = 64;
    qkv::test::writeModel(tiny, folder.path(), 6);
    auto model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    PatchingRunner runner;
    PatchingRequest request;
    request.model = model;
    for (std::int64_t k = 0; k < 60; ++k) {
        request.pair.clean.push_back(k % 37);
        request.pair.corrupt.push_back(k == 30 ? 38 : k % 37);
    }
    request.pair.answer = 5;
    request.pair.wrong = 7;
    request.site = PatchSite::HeadOutPos;
    QObject::connect(&runner, &PatchingRunner::progress, &runner, [&runner](PatchMethod, int done, int) {
        if (done >= 1)
            runner.stop(); // from the first cell on
    });
    QSignalSpy failed(&runner, &PatchingRunner::failed);
    runner.start(request);
    QTRY_VERIFY_WITH_TIMEOUT(!runner.isRunning() && !runner.isComputing(), runTimeout);
    QCOMPARE(failed.count(), 1);
    QCOMPARE(runner.finishedCount(), quint64(0));
    // The cells done before the stop are kept, and the computation ended well before the grid's end.
    QTRY_VERIFY(runner.grid(PatchMethod::Exact).has_value());
    const PatchGrid& grid = *runner.grid(PatchMethod::Exact);
    QVERIFY(grid.done >= 1);
    QVERIFY2(grid.done < grid.cells() / 2,
             qPrintable(QStringLiteral("%1 of %2").arg(grid.done).arg(grid.cells())));
}

void TestPatchingPanel::badInputChangesNothing_data()
{
    QTest::addColumn<QString>("clean");
    QTest::addColumn<QString>("corrupt");
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("wrong");
    QTest::addColumn<QStringList>("told");
    QTest::newRow("empty clean") << QString() << corruptPrompt << "#5"
                                 << "#7" << QStringList{QStringLiteral("clean prompt is empty")};
    QTest::newRow("empty corrupted") << cleanPrompt << QStringLiteral("  ") << "#5"
                                     << "#7" << QStringList{QStringLiteral("corrupted prompt is empty")};
    QTest::newRow("different lengths")
        << cleanPrompt << QStringLiteral("#4 8 15 30 23 4 8") << "#5"
        << "#7" << QStringList{QStringLiteral("8 tokens"), QStringLiteral("7")};
    QTest::newRow("same prompts") << cleanPrompt << cleanPrompt << "#5"
                                  << "#7" << QStringList{QStringLiteral("same tokens")};
    QTest::newRow("answer = wrong") << cleanPrompt << corruptPrompt << "#5"
                                    << "#5"
                                    << QStringList{QStringLiteral("same token"), QStringLiteral("#5")};
    QTest::newRow("answer of two tokens")
        << cleanPrompt << corruptPrompt << "#5 6"
        << "#7" << QStringList{QStringLiteral("Answer"), QStringLiteral("#5 6")};
    QTest::newRow("wrong outside the vocabulary")
        << cleanPrompt << corruptPrompt << "#5"
        << "#40" << QStringList{QStringLiteral("Wrong token"), QStringLiteral("#40")};
    QTest::newRow("text without a tokenizer")
        << QStringLiteral("The cat sat") << corruptPrompt << "#5"
        << "#7" << QStringList{QStringLiteral("clean prompt"), QStringLiteral("no tokenizer")};
    QTest::newRow("id outside the vocabulary")
        << cleanPrompt << QStringLiteral("#4 8 15 99 23 4 8 15") << "#5"
        << "#7" << QStringList{QStringLiteral("corrupted prompt"), QStringLiteral("99")};
}

void TestPatchingPanel::badInputChangesNothing()
{
    QFETCH(QString, clean);
    QFETCH(QString, corrupt);
    QFETCH(QString, answer);
    QFETCH(QString, wrong);
    QFETCH(QStringList, told);
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->setSite(PatchSite::HeadOut);
    panel->setMethods(PatchingPanel::Methods::Exact);
    runToTheEnd(panel);
    const Matrix before = panel->grid(PatchMethod::Exact)->values();
    const quint64 finished = panel->runner()->finishedCount();
    QSignalSpy started(panel->runner(), &PatchingRunner::started);

    panel->prompts()->setPrompts(clean, corrupt);
    panel->prompts()->setTokens(answer, wrong);
    QVERIFY(!panel->run());
    for (const QString& part : told)
        QVERIFY2(panel->message().contains(part),
                 qPrintable(panel->message() + QStringLiteral(" / ") + part));
    auto* status = panel->findChild<QLabel*>(QStringLiteral("patchingStatus"));
    QVERIFY(status && status->isVisible());
    QCOMPARE(started.count(), 0);
    QVERIFY(!panel->isRunning());
    QCOMPARE(panel->runner()->finishedCount(), finished);
    QVERIFY(panel->grid(PatchMethod::Exact)->values() == before);
    QVERIFY(before.allFinite());
}

void TestPatchingPanel::textPromptsThroughTheTokenizer()
{
    // GPT-2's file pair beside a tiny model: the byte characters (ids in byte order, "Ġ" the space) and one
    // merge chain, "the".
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    qkv::test::Tiny tiny;
    tiny.vocab = 258;
    qkv::test::writeModel(tiny, folder.path(), 4);
    QJsonObject vocabulary;
    for (int c = 33; c < 127; ++c)
        vocabulary.insert(QString(QChar(c)), c);
    vocabulary.insert(QStringLiteral("\u0120"), 32);
    vocabulary.insert(QStringLiteral("he"), 256);
    vocabulary.insert(QStringLiteral("the"), 257);
    QFile vocab(folder.filePath(QStringLiteral("vocab.json")));
    QVERIFY(vocab.open(QIODevice::WriteOnly));
    vocab.write(QJsonDocument(vocabulary).toJson());
    vocab.close();
    QFile merges(folder.filePath(QStringLiteral("merges.txt")));
    QVERIFY(merges.open(QIODevice::WriteOnly));
    merges.write("#version: 0.2\nh e\nt he\n");
    merges.close();
    m_model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    QVERIFY(m_model->tokenizer());

    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->prompts()->setPrompts(QStringLiteral("the cat"), QStringLiteral("the dog"));
    QVERIFY(panel->prompts()->cleanTokens().ids == (std::vector<std::int64_t>{257, 32, 99, 97, 116}));
    QCOMPARE(panel->prompts()->markedPositions(), (QList<int>{2, 3, 4}));
    QVERIFY(
        panel->findChild<QLabel*>(QStringLiteral("patchingTokens"))->text().contains(QStringLiteral("␣")));

    // An answer of two tokens is refused, naming the count; one token runs.
    panel->prompts()->setTokens(QStringLiteral(" a"), QStringLiteral("x"));
    QVERIFY(!panel->run());
    QVERIFY2(panel->message().contains(QStringLiteral("2 tokens")), qPrintable(panel->message()));
    panel->prompts()->setTokens(QStringLiteral("a"), QStringLiteral("x"));
    panel->setSite(PatchSite::AttnOut);
    panel->setMethods(PatchingPanel::Methods::Exact);
    panel->setPositionRange(std::pair{2, 4});
    runToTheEnd(panel);
    const PatchGrid grid =
        PatchingRun(*m_model, PatchPair{{257, 32, 99, 97, 116}, {257, 32, 100, 111, 103}, 97, 120})
            .patch(PatchSite::AttnOut, PatchMethod::Exact, 2, 4);
    const PatchGridSlice& slice = panel->shownSlice(PatchMethod::Exact);
    QCOMPARE(slice.columnLabels,
             (QStringList{QStringLiteral("2 c"), QStringLiteral("3 a"), QStringLiteral("4 t")}));
    QKV_COMPARE_NEAR(slice.normalized(2, 1), grid.normalizedValue(2, 1), 1e-9);
}

void TestPatchingPanel::refusedRunKeepsTheGrids()
{
    // Tokens 5 and 6 with equal logits everywhere: the core refuses their logit difference, after the run
    // has started; the grids and metrics shown stay those of the run before.
    qkv::test::Tiny tiny;
    tiny.repeatedRow = 5;
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    qkv::test::writeModel(tiny, folder.path(), 3);
    m_model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->setSite(PatchSite::HeadOut);
    panel->setMethods(PatchingPanel::Methods::Exact);
    runToTheEnd(panel);
    const Matrix before = panel->grid(PatchMethod::Exact)->values();
    auto* metrics = panel->findChild<QLabel*>(QStringLiteral("patchingMetrics"));
    QVERIFY(metrics);
    const QString shownMetrics = metrics->text();
    QVERIFY(!shownMetrics.isEmpty());

    panel->setSite(PatchSite::ResidPre);
    panel->prompts()->setTokens(QStringLiteral("#5"), QStringLiteral("#6"));
    QVERIFY(panel->run()); // nothing the panel can see is wrong
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isRunning(), runTimeout);
    QVERIFY2(panel->message().contains(QStringLiteral("same logit difference")),
             qPrintable(panel->message()));
    QCOMPARE(panel->runner()->request().site, PatchSite::HeadOut);
    QVERIFY(panel->grid(PatchMethod::Exact)->values() == before);
    QCOMPARE(metrics->text(), shownMetrics);
}

void TestPatchingPanel::clickingAHeadOpensIt()
{
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->setSite(PatchSite::HeadOut);
    panel->setMethods(PatchingPanel::Methods::Exact);
    runToTheEnd(panel);
    // Run keeps the experiment in the session, for Save, without a change to save before a head opens.
    QVERIFY(!window.document()->isModified());
    const std::optional<PatchExperiment> recorded = window.document()->session().model->patching;
    QVERIFY(recorded && recorded->clean == cleanIds && recorded->answer == 5 && recorded->wrong == 7);
    QCOMPARE(recorded->site, PatchSite::HeadOut);
    QCOMPARE(recorded->method, PatchMethod::Exact);
    QVERIFY(!recorded->positions);
    Heatmap* heatmap = panel->grid(PatchMethod::Exact);
    QTRY_VERIFY(heatmap->cellCentre(2, 0) != heatmap->cellCentre(0, 1)); // laid out by the queued replot
    const QPoint centre = heatmap->cellCentre(2, 0);
    QWidget* plot = heatmap->childAt(centre);
    QVERIFY(plot);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::KeyboardModifiers(), plot->mapFrom(heatmap, centre));
    QTRY_COMPARE(window.modelLoading()->request().layer, Index(2));
    const Session& session = window.document()->session();
    QVERIFY(session.model);
    QCOMPARE(session.model->layer, Index(2));
    QCOMPARE(session.model->head, Index(0));
    QVERIFY(session.model->ids == cleanIds);
    QVERIFY(session.model->patching == recorded); // the opened head keeps the experiment

    // A position's cell (resid_pre) opens nothing.
    panel->setSite(PatchSite::ResidPre);
    runToTheEnd(panel);
    QTRY_VERIFY(heatmap->cellCentre(1, 5) != heatmap->cellCentre(0, 0));
    const QPoint position = heatmap->cellCentre(1, 5);
    QWidget* positions = heatmap->childAt(position);
    QVERIFY(positions);
    QTest::mouseClick(positions, Qt::LeftButton, Qt::KeyboardModifiers(),
                      positions->mapFrom(heatmap, position));
    QCOMPARE(window.modelLoading()->request().layer, Index(2));
}

void TestPatchingPanel::lessonStepRunsAnExperiment()
{
    MainWindow window;
    PatchingPanel* panel = openPanel(window);
    QVERIFY(panel);
    panel->prompts()->setPrompts(QString(), QString());
    const std::string file = R"({"title": "Patching", "steps": [
        {"text": "<p>Training.</p>", "dock": "training"},
        {"text": "<p>The trained model (none here: the tiny model stays open).</p>", "training": "open"},
        {"text": "<p>Patch.</p>", "patching": {"clean_ids": [4, 8, 15, 16, 23, 4, 8, 15],
         "corrupt_ids": [4, 8, 15, 30, 23, 4, 8, 15], "answer_id": 5, "wrong_id": 7, "site": "head_out",
         "method": "attribution"}},
        {"text": "<p>Too large.</p>", "patching": {"clean_ids": [4, 99], "corrupt_ids": [4, 98],
         "answer_id": 5, "wrong_id": 7, "site": "resid_pre"}}]})";
    LessonPlayer* player = window.lessonPlayer();
    QVERIFY(player);
    std::vector<std::string> views;
    for (const QString& view : player->viewNames())
        views.push_back(view.toStdString());
    try {
        player->start(parseLesson("patching.lesson.json", file, views));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    const quint64 finished = panel->runner()->finishedCount();
    player->next();
    player->next();
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockPatching"));
    QTRY_VERIFY(dock->isVisible() && !dock->visibleRegion().isEmpty());
    QVERIFY2(player->notice().isEmpty(), qPrintable(player->notice()));
    QTRY_VERIFY_WITH_TIMEOUT(panel->runner()->finishedCount() == finished + 1 && !panel->isRunning(),
                             runTimeout);
    QVERIFY(panel->prompts()->cleanTokens().ids == cleanIds);
    QVERIFY(panel->prompts()->corruptTokens().ids == corruptIds);
    QCOMPARE(panel->runner()->request().site, PatchSite::HeadOut);
    QVERIFY(panel->grid(PatchMethod::Attribution)->isVisible());
    QVERIFY(!panel->grid(PatchMethod::Exact)->isVisible());
    const PatchGrid grid = PatchingRun(*m_model, PatchPair{cleanIds, corruptIds, 5, 7})
                               .patch(PatchSite::HeadOut, PatchMethod::Attribution);
    QKV_COMPARE_NEAR(panel->shownSlice(PatchMethod::Attribution).normalized(1, 1), grid.normalizedValue(1, 1),
                     1e-9);

    // Ids the model does not have: the step tells why nothing ran.
    player->next();
    QVERIFY2(player->notice().contains(QStringLiteral("99")), qPrintable(player->notice()));
    QCOMPARE(panel->runner()->finishedCount(), finished + 1);
}

void TestPatchingPanel::viewMenuShowsThePanel()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* action = window.findChild<QAction*>(QStringLiteral("viewAction_dockPatching"));
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockPatching"));
    QVERIFY(dock);
    action->trigger();
    QTRY_VERIFY(dock->isVisible());
    auto* panel = window.findChild<PatchingPanel*>(QStringLiteral("patchingPanel"));
    QVERIFY(panel);
    // Without a model: told in the panel, nothing runs.
    QVERIFY(!panel->run());
    QVERIFY(panel->message().contains(QStringLiteral("Open a model")));
    // Every control explains itself.
    for (QWidget* control : panel->findChildren<QWidget*>()) {
        if (control->objectName().startsWith(QStringLiteral("patching")) &&
            (qobject_cast<QComboBox*>(control) || qobject_cast<QLineEdit*>(control) ||
             qobject_cast<QToolButton*>(control)))
            QVERIFY2(!control->toolTip().isEmpty() && !control->whatsThis().isEmpty(),
                     qPrintable(control->objectName()));
    }
}

QKV_TEST_MAIN(TestPatchingPanel)
#include "tst_patchingpanel.moc"
