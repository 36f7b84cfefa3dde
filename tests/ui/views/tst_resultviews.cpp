// SPDX-License-Identifier: GPL-3.0-or-later
// The result views: the heatmap shows a matrix with its labels, values and mask, and the tabs of the result
// views follow the document's edits, its refusals and its current head (a tab shown later catches up).

#include "Document.h"
#include "DocumentCommands.h"
#include "Heatmap.h"
#include "ResultViews.h"
#include "SessionEdits.h"

#include "FuzzyCompare.h"
#include "QueuedReplots.h"
#include "TestMain.h"
#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTabWidget>
#include <QToolTip>
#include <QUndoStack>

#include <QtTest>

#include <memory>

using namespace qkv;
using namespace qkv::ui;

namespace {

// Session and AttentionResult compare shape-safely (core/kernels/EigenTypes.h sameMatrix).
template <typename T> bool sameValue(const T& a, const T& b)
{
    return a == b;
}

QStringList loveTokens()
{
    return {QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")};
}

} // namespace

class TestResultViews : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();

    void heatmapShowsTheMatrix();
    void heatmapHidesValuesInSmallCells();
    void resultViewsFollowEdits();
    void resultViewsShowTheEngineError();
    void resultViewsFollowTheCurrentHead();

private:
    /// The heatmap `name` on show: only the tab on screen follows edits, the others catch up when shown.
    Heatmap* showTab(const char* name)
    {
        auto* map = find<Heatmap>(name);
        m_views->tabs()->setCurrentWidget(map);
        return map;
    }
    template <typename T> T* find(const char* name)
    {
        T* widget = m_window->findChild<T*>(QLatin1String(name));
        if (!widget)
            qFatal("no widget named %s", name);
        return widget;
    }

    std::unique_ptr<Document> m_document;
    std::unique_ptr<QWidget> m_window;
    ResultViews* m_views = nullptr;
};

void TestResultViews::init()
{
    m_document = std::make_unique<Document>();
    m_window = std::make_unique<QWidget>();
    auto* layout = new QHBoxLayout(m_window.get());
    m_views = new ResultViews(m_document.get(), m_window.get());
    layout->addWidget(m_views);
    m_window->resize(1000, 600);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

void TestResultViews::cleanup()
{
    m_window.reset();
    m_document.reset();
}

void TestResultViews::heatmapShowsTheMatrix()
{
    Heatmap map;
    map.resize(420, 320);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    const Matrix weights = m_document->result()->heads[0].weights;
    map.setAxisTitles(QStringLiteral("query"), QStringLiteral("key"));
    map.setFixedRange(0.0, 1.0);
    map.setMatrix(weights, loveTokens(), loveTokens());
    QTRY_VERIFY(map.showsCellValues());
    QVERIFY(sameValue(map.values(), weights));
    QCOMPARE(map.rowLabels(), loveTokens());
    QCOMPARE(map.cellText(0, 0), QStringLiteral("0.070"));
    QCOMPARE(map.cellText(0, 1), QStringLiteral("0.707"));
    QCOMPARE(map.cellText(0, 2), QStringLiteral("0.223"));
    QCOMPARE(map.cellDescription(0, 1), QStringLiteral("query ‘I’ → key ‘love’: 0.707"));

    // Hovering a cell names it.
    QWidget* plot = map.childAt(map.cellCentre(0, 1));
    QVERIFY(plot);
    const QPointF inPlot = plot->mapFrom(&map, map.cellCentre(0, 1));
    QMouseEvent move(QEvent::MouseMove, inPlot, plot->mapToGlobal(inPlot), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(plot, &move);
    QTRY_COMPARE(QToolTip::text(), QStringLiteral("query ‘I’ → key ‘love’: 0.707"));

    MaskMatrix allowed = MaskMatrix::Ones(3, 3);
    allowed(0, 2) = 0;
    map.setMasked(&allowed);
    QVERIFY(map.isMasked(0, 2));
    QVERIFY(!map.isMasked(0, 1));
    QTRY_VERIFY(map.showsCellValues());
    QCOMPARE(map.cellText(0, 2), QString());
    QCOMPARE(map.cellDescription(0, 2), QStringLiteral("query ‘I’ → key ‘AI’: masked"));

    map.clearFixedRange();
    map.setColorMode(Heatmap::ColorMode::Diverging);
    Matrix signedValues(2, 2);
    signedValues << -1, 0.5, 2, 0;
    map.setMatrix(signedValues, {}, {});
    QCOMPARE(map.rowLabels(), (QStringList{QStringLiteral("0"), QStringLiteral("1")}));
    QCOMPARE(map.colorRange(), std::make_pair(-2.0, 2.0)); // symmetric about 0
    map.setColorMode(Heatmap::ColorMode::Sequential);
    QCOMPARE(map.colorRange(), std::make_pair(-1.0, 2.0));
    QCOMPARE(Heatmap::formatValue(-0.0001), QStringLiteral("0.000"));

    // A click on a cell names it.
    map.setMatrix(weights, loveTokens(), loveTokens());
    QTRY_VERIFY(map.showsCellValues());
    QSignalSpy clicked(&map, &Heatmap::cellClicked);
    const QPoint centre = map.cellCentre(2, 1);
    QTest::mouseClick(plot, Qt::LeftButton, {}, plot->mapFrom(&map, centre));
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).toInt(), 2);
    QCOMPARE(clicked.at(0).at(1).toInt(), 1);
}

void TestResultViews::heatmapHidesValuesInSmallCells()
{
    Heatmap map;
    map.resize(320, 260);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix(Matrix::Constant(20, 20, 0.5), {}, {});
    int replots = 0;
    QVERIFY(test::settleReplots(&map, &replots));
    QVERIFY(replots > 0); // the replot that decides has been done
    QVERIFY(!map.showsCellValues());
    QCOMPARE(map.cellText(0, 0), QString());
    map.setMatrix(Matrix::Constant(3, 3, 0.5), {}, {});
    QTRY_VERIFY(map.showsCellValues());
}

void TestResultViews::resultViewsFollowEdits()
{
    QVERIFY(find<QWidget>("resultViews"));
    auto* weights = showTab("heatmap_weights"); // the pipeline canvas is the first tab
    for (const char* name : {"heatmap_Q", "heatmap_K", "heatmap_V", "heatmap_scores", "heatmap_scaled",
                             "heatmap_mask", "heatmap_output", "heatmap_finalOutput"})
        QVERIFY(find<Heatmap>(name));
    QVERIFY(sameValue(weights->values(), m_document->result()->heads[0].weights));
    QCOMPARE(weights->rowLabels(), loveTokens());
    QCOMPARE(weights->columnLabels(), loveTokens());
    QCOMPARE(weights->colorRange(), std::make_pair(0.0, 1.0));
    QKV_COMPARE_NEAR(weights->values()(0, 1), 0.707, 5e-4);

    const Matrix old = weights->values();
    pushEdit(m_document.get(), QStringLiteral("temperature"), Document::Options,
             [](Session& s) { s.temperature = 10.0; });
    QVERIFY(!sameValue(weights->values(), old));
    QVERIFY(sameValue(weights->values(), m_document->result()->heads[0].weights));
    QVERIFY(sameValue(showTab("heatmap_Q")->values(), m_document->result()->heads[0].Q));
    QVERIFY(sameValue(showTab("heatmap_finalOutput")->values(), m_document->result()->output));
    showTab("heatmap_weights");
    m_document->undoStack()->undo();
    QVERIFY(sameValue(weights->values(), old));
    QTRY_VERIFY(weights->showsCellValues());
    QCOMPARE(weights->cellText(0, 1), QStringLiteral("0.707"));

    // A tab shown later draws the newest numbers.
    auto* q = find<Heatmap>("heatmap_Q");
    QVERIFY(!q->showsCellValues());
    m_views->tabs()->setCurrentWidget(q);
    QTRY_VERIFY(q->showsCellValues());
    QCOMPARE(q->cellText(0, 0), QStringLiteral("2.000"));
    QCOMPARE(q->colorRange(), std::make_pair(-2.0, 2.0));

    // Masked weights are grey, not 0.
    pushEdit(m_document.get(), QStringLiteral("causal"), Document::Options | Document::Values,
             [](Session& s) { setMaskType(s, MaskType::Causal); });
    showTab("heatmap_weights");
    QVERIFY(weights->isMasked(0, 1));
    QVERIFY(!weights->isMasked(1, 0));
    QCOMPARE(showTab("heatmap_mask")->values()(0, 1), 0.0);
    showTab("heatmap_weights");

    // Token labels follow token edits; the key side follows cross-attention.
    pushEdit(m_document.get(), QStringLiteral("rename"), Document::Tokens,
             [](Session& s) { s.tokens[1] = "like"; });
    QCOMPARE(weights->rowLabels().at(1), QStringLiteral("like"));
    pushEdit(m_document.get(), QStringLiteral("cross-attention"), Document::Shape | Document::Tokens,
             [](Session& s) { setCrossAttention(s, true); });
    pushEdit(m_document.get(), QStringLiteral("rename key"), Document::Tokens,
             [](Session& s) { s.context->tokens[2] = "ML"; });
    QCOMPARE(weights->columnLabels().at(2), QStringLiteral("ML"));
    QCOMPARE(weights->rowLabels().at(2), QStringLiteral("AI"));
    QCOMPARE(showTab("heatmap_K")->rowLabels().at(2), QStringLiteral("ML"));
}

void TestResultViews::resultViewsShowTheEngineError()
{
    auto* error = find<QLabel>("resultError");
    auto* weights = showTab("heatmap_weights");
    QVERIFY(error->isHidden());
    const Matrix shown = weights->values();
    pushEdit(m_document.get(), QStringLiteral("overflow"), Document::Values,
             [](Session& s) { s.X *= 1e200; });
    QVERIFY(!m_document->result());
    QVERIFY(!error->isHidden());
    QVERIFY(error->text().contains(m_document->resultError()));
    QCOMPARE(weights->values().size(), Index(0)); // no stale numbers
    m_document->undoStack()->undo();
    QVERIFY(error->isHidden());
    QVERIFY(sameValue(weights->values(), shown));
}

void TestResultViews::resultViewsFollowTheCurrentHead()
{
    pushEdit(m_document.get(), QStringLiteral("two heads"), Document::Shape,
             [init = m_document->initializer()](Session& s) { setHeadCount(s, 2, init); });
    auto* weights = showTab("heatmap_weights");
    QVERIFY(sameValue(weights->values(), m_document->result()->heads[0].weights));
    m_document->setCurrentHead(1);
    QVERIFY(sameValue(weights->values(), m_document->result()->heads[1].weights));
    QVERIFY(weights->title().contains(QStringLiteral("head 2 of 2")));
    QVERIFY(sameValue(showTab("heatmap_V")->values(), m_document->result()->heads[1].V));
}

QKV_TEST_MAIN(TestResultViews)
#include "tst_resultviews.moc"
