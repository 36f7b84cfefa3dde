// SPDX-License-Identifier: GPL-3.0-or-later
// The Circuits tab of the head's workbench: the open head's spectra follow every edit of its weights (and
// undo), the prompt's QK table is the engine's Q·Kᵀ, and for a head of a model the full OV circuit's copying
// score and the lists of what the selected token seeks and writes come from the model, off the GUI thread.

#include "CircuitSpectrumPlot.h"
#include "Circuits.h"
#include "CircuitsContent.h"
#include "CircuitsPanel.h"
#include "CircuitsView.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "EigenvaluePlot.h"
#include "Heatmap.h"
#include "MainWindow.h"
#include "Model.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "SessionModelHead.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QDockWidget>
#include <QLabel>
#include <QListWidget>
#include <QUndoStack>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;
using qkv::test::fuzzyMismatch;

class TestCircuitsPanel : public QObject {
    Q_OBJECT
private slots:
    void spectraFollowEdits_data();
    void spectraFollowEdits();
    void modelHeadShowsItsFullCircuits();
    void modelHeadOfTheSession_data();
    void modelHeadOfTheSession();

private:
    static void showWindow(MainWindow& window)
    {
        window.resize(1280, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
    }
    static void showCircuits(MainWindow& window)
    {
        auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockCircuits"));
        QVERIFY(dock);
        dock->show();
        dock->raise();
    }
    static CircuitsView* view(MainWindow& window)
    {
        return window.findChild<CircuitsView*>(QStringLiteral("circuitsView"));
    }
    static CircuitSpectra spectraOf(const Document& document)
    {
        return circuitSpectra(sessionHeadFactors(document.session(), document.currentHead()));
    }
    /// Each entry shown is the model's label of the id listed and its value.
    static void compareList(const QList<CircuitToken>& shown, const std::vector<TokenValue>& top,
                            const Model& model)
    {
        QCOMPARE(shown.size(), qsizetype(top.size()));
        for (std::size_t i = 0; i < top.size(); ++i) {
            const CircuitToken& entry = shown[qsizetype(i)];
            QCOMPARE(entry.label, QString::fromStdString(tokenLabels(model, {top[i].id}).front()));
            QKV_COMPARE_NEAR(entry.value, top[i].value, 1e-9);
        }
    }
    static std::vector<double> ovValues(const CircuitSpectra& spectra)
    {
        return spectra.ov ? spectra.ov->singularValues : std::vector<double>();
    }
};

void TestCircuitsPanel::spectraFollowEdits_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<int>("head");
    QTest::addColumn<bool>("hasOv");
    QTest::newRow("love: no W_O") << QStringLiteral("example:love") << 0 << false;
    QTest::newRow("multihead: W_O") << QStringLiteral("example:multihead") << 0 << true;
    QTest::newRow("multihead: second head") << QStringLiteral("example:multihead") << 1 << true;
}

void TestCircuitsPanel::spectraFollowEdits()
{
    QFETCH(QString, example);
    QFETCH(int, head);
    QFETCH(bool, hasOv);
    MainWindow window;
    showWindow(window);
    Document* document = window.document();
    QString error;
    QVERIFY2(document->open(example, &error), qPrintable(error));
    document->setCurrentHead(head);
    showCircuits(window);
    CircuitsView* circuits = view(window);
    QVERIFY(circuits);
    CircuitSpectrumPlot* plot = circuits->spectrumPlot();
    constexpr double tolerance = 1e-12;

    const CircuitSpectra before = spectraOf(*document);
    QCOMPARE(before.ov.has_value(), hasOv);
    QTRY_VERIFY_WITH_TIMEOUT(fuzzyMismatch(plot->plottedQk(), before.qk.singularValues, tolerance).isEmpty(),
                             5000);
    QKV_COMPARE_NEAR(plot->plottedOv(), ovValues(before), tolerance);
    QCOMPARE(circuits->eigenvaluePlot()->ovPointCount(), int(before.ovEigenvalues.size()));
    QCOMPARE(circuits->copyingText().isEmpty(), before.ovEigenvalues.empty());
    // Without a model the lists are not there, and a grey line says why.
    auto* listsMessage = circuits->findChild<QLabel*>(QStringLiteral("circuitListsMessage"));
    QVERIFY(listsMessage && listsMessage->isVisible() && !listsMessage->text().isEmpty());
    QVERIFY(!circuits->findChild<QListWidget*>(QStringLiteral("circuitTopKeys"))->isVisible());

    // The QK table is Q·Kᵀ of the engine (these examples have no bias and no positions).
    document->waitForResult();
    QKV_COMPARE_NEAR(circuits->qkTable()->values(), document->result()->heads[std::size_t(head)].scores,
                     1e-12);

    // One cell of W_Q, through the undo stack: the plotted spectrum moves with it.
    const double cell = document->session().heads[std::size_t(head)].W_Q(1, 0);
    document->push(makeCellCommand(document, {MatrixKind::W_Q, head}, 1, 0, cell + 1.75));
    const CircuitSpectra after = spectraOf(*document);
    QVERIFY(!fuzzyMismatch(after.qk.singularValues, before.qk.singularValues, 1e-6).isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(fuzzyMismatch(plot->plottedQk(), after.qk.singularValues, tolerance).isEmpty(),
                             5000);
    document->waitForResult();
    QKV_COMPARE_NEAR(circuits->qkTable()->values(), document->result()->heads[std::size_t(head)].scores,
                     1e-12);

    document->undoStack()->undo();
    QTRY_VERIFY_WITH_TIMEOUT(fuzzyMismatch(plot->plottedQk(), before.qk.singularValues, tolerance).isEmpty(),
                             5000);
    QKV_COMPARE_NEAR(plot->plottedOv(), ovValues(before), tolerance);
}

void TestCircuitsPanel::modelHeadShowsItsFullCircuits()
{
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny(), folder.path(), 5); // GPT-2 shaped: 3 layers, 2 heads, 40 tokens
    const auto model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    const std::vector<std::int64_t> ids{4, 8, 15, 16, 23};

    MainWindow window;
    showWindow(window);
    ModelHeadRequest request;
    request.layer = 1;
    request.heads = {1};
    request.ids = ids;
    QString error;
    QVERIFY2(window.modelLoading()->open(model, request, &error, false), qPrintable(error));
    window.document()->setSelection(2, 0);
    showCircuits(window);
    auto* panel = window.findChild<CircuitsPanel*>(QStringLiteral("circuitsPanel"));
    CircuitsView* circuits = view(window);
    QVERIFY(panel && circuits);

    const ModelCircuits expected(*model);
    const FullOvCircuit fullOv = expected.fullOv(1, 1);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy() && circuits->modelDisplay().fullOvCopyingScore, 20000);
    QKV_COMPARE_NEAR(*circuits->modelDisplay().fullOvCopyingScore, fullOv.copyingScore, 1e-9);
    QVERIFY2(circuits->fullOvCopyingText().endsWith(CircuitsView::formatNumber(fullOv.copyingScore)),
             qPrintable(circuits->fullOvCopyingText()));
    QCOMPARE(circuits->eigenvaluePlot()->fullOvPointCount(), int(fullOv.eigenvalues.size()));

    // The lists are for the selected query's token (position 2: id 15), named by the model's labels.
    const std::vector<TokenValue> keys = expected.topKeys(1, 1, 15, 8);
    const std::vector<TokenValue> writes = expected.ovTop(1, 1, {15}, 8).front();
    const CircuitsModelDisplay& shown = circuits->modelDisplay();
    QCOMPARE(shown.lookupToken, 2);
    compareList(shown.topKeys, keys, *model);
    compareList(shown.topWrites, writes, *model);
    if (QTest::currentTestFailed())
        return;
    auto* listed = circuits->findChild<QListWidget*>(QStringLiteral("circuitTopKeys"));
    QVERIFY(listed->isVisible());
    QCOMPARE(listed->count(), 8);
    QCOMPARE(listed->item(0)->text(), shown.topKeys.front().label);

    // Another selected query: the lists follow it, the full OV circuit stays.
    window.document()->setSelection(4, 0);
    const std::vector<TokenValue> keysOf23 = expected.topKeys(1, 1, 23, 8);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy() && circuits->modelDisplay().lookupToken == 4 &&
                                 circuits->modelDisplay().topKeys.size() == 8,
                             20000);
    compareList(circuits->modelDisplay().topKeys, keysOf23, *model);
    QKV_COMPARE_NEAR(*circuits->modelDisplay().fullOvCopyingScore, fullOv.copyingScore, 1e-9);

    // The session's own head spectra are those of its head as edited (unfolded, as the pipeline holds it).
    const CircuitSpectra sessionSpectra = circuitSpectra(sessionHeadFactors(window.document()->session(), 0));
    QKV_COMPARE_NEAR(circuits->spectrumPlot()->plottedQk(), sessionSpectra.qk.singularValues, 1e-12);
    QKV_COMPARE_NEAR(circuits->spectrumPlot()->plottedOv(), sessionSpectra.ov->singularValues, 1e-12);

    // A session without a model opened while the lists of another token are on their way: they never show.
    window.document()->setSelection(1, 0);
    QVERIFY(panel->isBusy());
    QString openError;
    QVERIFY2(window.document()->open(QStringLiteral("example:love"), &openError), qPrintable(openError));
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), 20000);
    QVERIFY(!circuits->modelDisplay().fullOvCopyingScore);
    QVERIFY(circuits->modelDisplay().topKeys.isEmpty());
    QVERIFY(!circuits->modelDisplay().listsMessage.isEmpty());
    QVERIFY(!circuits->isBusy());
}

void TestCircuitsPanel::modelHeadOfTheSession_data()
{
    QTest::addColumn<QList<int>>("requestedHeads"); // of the request the model's session was cut with
    QTest::addColumn<bool>("sameIds");              // the request's ids are the link's
    QTest::addColumn<int>("sessionHead");
    QTest::addColumn<int>("expected"); // −1: not known
    QTest::newRow("one head asked, the first") << QList<int>{1} << true << 0 << 1;
    QTest::newRow("heads asked in order") << QList<int>{1, 0} << true << 1 << 0;
    QTest::newRow("every head") << QList<int>{} << true << 1 << 1;
    QTest::newRow("beyond the heads asked") << QList<int>{1} << true << 1 << -1;
    QTest::newRow("another text: the link's head") << QList<int>{1, 0} << false << 0 << 1;
    QTest::newRow("another text: others unknown") << QList<int>{1, 0} << false << 1 << -1;
}

void TestCircuitsPanel::modelHeadOfTheSession()
{
    QFETCH(QList<int>, requestedHeads);
    QFETCH(bool, sameIds);
    QFETCH(int, sessionHead);
    QFETCH(int, expected);
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny(), folder.path(), 7);
    const Model model = Model::open(folder.path().toStdString());
    ModelHeadRequest cut;
    cut.layer = 2;
    cut.ids = {3, 1, 4};
    for (int head : requestedHeads)
        cut.heads.push_back(head);
    Session session = sessionFromModel(model, cut);
    session.model = modelLinkFor(model, cut); // as the window links a head it opens
    QCOMPARE(session.model->head, cut.heads.empty() ? Index(0) : cut.heads.front());
    ModelHeadRequest open = cut;
    if (!sameIds)
        open.ids = {2, 7};
    const std::optional<Index> head = modelHeadOf(session, sessionHead, model, open);
    QCOMPARE(head.has_value(), expected >= 0);
    if (head)
        QCOMPARE(*head, Index(expected));
    // A session without a model link has no model head.
    Session unlinked = session;
    unlinked.model.reset();
    QVERIFY(!modelHeadOf(unlinked, sessionHead, model, open));
}

QKV_TEST_MAIN(TestCircuitsPanel)

#include "tst_circuitspanel.moc"
