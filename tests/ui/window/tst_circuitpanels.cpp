// SPDX-License-Identifier: GPL-3.0-or-later
// The circuits of a head cut from a model in the window: the Score Terms tab takes the selected cell's score
// apart (off the GUI thread, following the selection), and the composition grid under the Model workspace's
// thumbnails shows how much the open head reads each earlier head, with arrows on the strongest.

#include "CompositionPanel.h"
#include "DecompositionPanel.h"
#include "DecompositionView.h"
#include "Document.h"
#include "Heatmap.h"
#include "MainWindow.h"
#include "ModelLoading.h"
#include "ModelOverview.h"
#include "ModelView.h"
#include "TrainingModel.h"
#include "Workspaces.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QComboBox>
#include <QDockWidget>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace qkv;
using namespace qkv::ui;

class TestCircuitPanels : public QObject {
    Q_OBJECT
private slots:
    void init();
    void scoreTermsFollowTheSelection();
    void scoreTermsFollowTheCurrentHead();
    void scoreTermsOfASavedSession();
    void scoreTermsNeedAModel();
    void compositionGridShowsTheScores_data();
    void compositionGridShowsTheScores();
    void firstLayerReadsNoEarlierHead();

private:
    /// A window at 1280 × 720 with `layer`, head `head` of the tiny model open (−1: every head).
    void openModel(MainWindow& window, Index layer, Index head);
    static void showScoreTerms(MainWindow& window)
    {
        auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockScoreTerms"));
        QVERIFY(dock);
        window.findChild<Workspaces*>()->reveal(dock);
    }
    /// Waits until the tab shows the terms of query `query`, key `key`; they must equal decomposeScore's.
    void checkTerms(MainWindow& window, Index layer, Index head, Index query, Index key);

    QTemporaryDir m_folder;
    std::shared_ptr<const Model> m_model;
    const std::vector<std::int64_t> m_ids{4, 8, 15, 16, 23, 4, 8, 15};
};

void TestCircuitPanels::init()
{
    QVERIFY(m_folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, m_folder.path(), 3); // GPT-2 shaped: 3 layers, 2 heads
    m_model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
}

void TestCircuitPanels::openModel(MainWindow& window, Index layer, Index head)
{
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ModelHeadRequest request;
    request.layer = layer;
    if (head >= 0)
        request.heads = {head};
    request.ids = m_ids;
    QString error;
    QVERIFY2(window.modelLoading()->open(m_model, request, &error, false), qPrintable(error));
}

void TestCircuitPanels::checkTerms(MainWindow& window, Index layer, Index head, Index query, Index key)
{
    auto* panel = window.findChild<DecompositionPanel*>();
    QVERIFY(panel);
    DecompositionView* view = panel->view();
    const ScoreDecomposition expected = decomposeScore(*m_model, {layer, head, m_ids, query, key});
    const auto count = Index(expected.components.size());
    QTRY_VERIFY2_WITH_TIMEOUT(!panel->isBusy() && view->display().decomposition &&
                                  view->heatmap()->values().rows() == count + 1 &&
                                  std::abs(view->display().decomposition->score - expected.score) < 1e-12,
                              qPrintable(view->message()), 10000);
    const Matrix& shown = view->heatmap()->values();
    QKV_COMPARE_NEAR(shown.topLeftCorner(count, count), expected.terms, 1e-12);
    QKV_COMPARE_NEAR(shown(count, count), expected.score, 1e-12);
    for (Index c = 0; c < count; ++c) {
        QKV_COMPARE_NEAR(shown(c, count), expected.query[std::size_t(c)], 1e-12);
        QKV_COMPARE_NEAR(shown(count, c), expected.key[std::size_t(c)], 1e-12);
        QCOMPARE(view->heatmap()->rowLabels().at(int(c)),
                 QString::fromStdString(expected.components[std::size_t(c)]));
    }
    QVERIFY(shown.allFinite());
    const QString corner = view->heatmap()->cellDescription(count, count);
    QVERIFY2(corner.contains(QStringLiteral("the score")), qPrintable(corner));
    const QString term = view->heatmap()->cellDescription(0, count - 1);
    QVERIFY2(term.contains(QStringLiteral("query side ‘embed’ × key side ‘%1’")
                               .arg(QString::fromStdString(expected.components.back()))),
             qPrintable(term));
    const QString score = QString::number(expected.score, 'f', 3);
    QVERIFY2(view->scoreText().contains(score),
             qPrintable(view->scoreText() + QStringLiteral(" ≠ ") + score));

    // The ten largest terms in words, the largest first.
    const QString terms = view->termsText();
    QCOMPARE(terms.count(QStringLiteral("<br>")), DecompositionPanel::largestTermCount);
    Index row = 0, column = 0;
    expected.terms.cwiseAbs().maxCoeff(&row, &column);
    const QString first = terms.section(QStringLiteral("<br>"), 1, 1);
    const QString words = QStringLiteral("1. query side %1, key side %2: %3")
                              .arg(QString::fromStdString(expected.components[std::size_t(row)]),
                                   QString::fromStdString(expected.components[std::size_t(column)]))
                              .arg((expected.terms(row, column) >= 0 ? QStringLiteral("+") : QString()) +
                                   QString::number(expected.terms(row, column), 'f', 3));
    QVERIFY2(first.startsWith(words), qPrintable(first + QStringLiteral(" ≠ ") + words));
}

void TestCircuitPanels::scoreTermsFollowTheSelection()
{
    MainWindow window;
    openModel(window, 2, 1);
    showScoreTerms(window);
    window.document()->setSelection(5, 2);
    checkTerms(window, 2, 1, 5, 2);
    window.document()->setSelection(7, 7); // a newer cell replaces the terms
    checkTerms(window, 2, 1, 7, 7);
}

void TestCircuitPanels::scoreTermsFollowTheCurrentHead()
{
    MainWindow window;
    openModel(window, 1, -1); // both heads of layer 1
    showScoreTerms(window);
    window.document()->setSelection(6, 3);
    checkTerms(window, 1, 0, 6, 3);
    window.document()->setCurrentHead(1);
    checkTerms(window, 1, 1, 6, 3);
}

// A saved session of every head of a layer reopens its model in the background: the terms follow once it is
// open, of the head shown (the link names the first head only).
void TestCircuitPanels::scoreTermsOfASavedSession()
{
    QTemporaryDir saved;
    const QString path = saved.filePath(QStringLiteral("linked.qkv.json"));
    {
        MainWindow window;
        openModel(window, 2, -1);
        QString error;
        QVERIFY2(window.document()->saveAs(path, &error), qPrintable(error));
    }
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openSession(path));
    // Reopened in the background; the window then brings the Model workspace forward, and the tab computes
    // once it is shown again.
    QTRY_VERIFY_WITH_TIMEOUT(window.modelLoading()->model(), 10000);
    showScoreTerms(window);
    window.document()->setSelection(4, 1);
    checkTerms(window, 2, 0, 4, 1);
    window.document()->setCurrentHead(1);
    checkTerms(window, 2, 1, 4, 1);
}

void TestCircuitPanels::scoreTermsNeedAModel()
{
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    showScoreTerms(window);
    auto* panel = window.findChild<DecompositionPanel*>();
    QVERIFY(panel);
    window.document()->setSelection(1, 0);
    QTRY_VERIFY_WITH_TIMEOUT(
        panel->view()->message().contains(QStringLiteral("needs a head cut from a model")), 5000);
    QVERIFY(!panel->view()->display().decomposition);
    QVERIFY(panel->view()->heatmap()->isHidden());
}

void TestCircuitPanels::compositionGridShowsTheScores_data()
{
    QTest::addColumn<int>("kind");
    QTest::newRow("Q") << int(CompositionKind::Query);
    QTest::newRow("K") << int(CompositionKind::Key);
    QTest::newRow("V") << int(CompositionKind::Value);
}

void TestCircuitPanels::compositionGridShowsTheScores()
{
    QFETCH(int, kind);
    MainWindow window;
    openModel(window, 2, 1);
    auto* panel = window.findChild<CompositionPanel*>();
    QVERIFY(panel);
    panel->setKind(CompositionKind(kind));
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy() && panel->shownHead() == std::make_pair(Index(2), Index(1)),
                             10000);
    QCOMPARE(panel->heatmap()->title(), QStringLiteral("into layer 2, head 1"));
    const CompositionScores expected =
        compositionScores<double>(*training::sharedWeights<double>(*m_model), 2, 1);
    const Matrix grid = expected.into(CompositionKind(kind), 2, 1);
    QCOMPARE(panel->heatmap()->values().rows(), 2);
    QCOMPARE(panel->heatmap()->values().cols(), 2);
    QKV_COMPARE_NEAR(panel->heatmap()->values(), grid, 1e-12);
    QCOMPARE(panel->heatmap()->rowLabels(), (QStringList{QStringLiteral("L0"), QStringLiteral("L1")}));

    // The arrows: the strongest earlier heads, as strong as their scores relative to the largest.
    ModelView* thumbnails = window.findChild<ModelOverview*>()->view();
    const QList<HeadArrow>& arrows = thumbnails->arrows();
    QCOMPARE(arrows.size(), std::min<int>(CompositionPanel::arrowCount, int((grid.array() > 0).count())));
    QVERIFY(!arrows.isEmpty());
    Index layer = 0, head = 0;
    grid.maxCoeff(&layer, &head);
    QCOMPARE(arrows.front().fromLayer, int(layer));
    QCOMPARE(arrows.front().fromHead, int(head));
    for (const HeadArrow& arrow : arrows)
        QKV_COMPARE_NEAR(arrow.strength, grid(arrow.fromLayer, arrow.fromHead) / grid(layer, head), 1e-15);
}

void TestCircuitPanels::firstLayerReadsNoEarlierHead()
{
    MainWindow window;
    openModel(window, 0, 1);
    auto* panel = window.findChild<CompositionPanel*>();
    QVERIFY(panel);
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains(QStringLiteral("reads no earlier head")), 5000);
    QCOMPARE(panel->heatmap()->values().size(), Index(0));
    QVERIFY(window.findChild<ModelOverview*>()->view()->arrows().isEmpty());
}

QKV_TEST_MAIN(TestCircuitPanels)
#include "tst_circuitpanels.moc"
