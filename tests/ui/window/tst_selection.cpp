// SPDX-License-Identifier: GPL-3.0-or-later
// Linked selection: a cell chosen in one view is the selection of every other.

#include "Document.h"
#include "Heatmap.h"
#include "MainWindow.h"
#include "MathPanel.h"
#include "PipelineView.h"
#include "QueryKeySpaceView.h"
#include "ValueSpaceView.h"

#include "QueuedReplots.h"
#include "TestMain.h"
#include <QDockWidget>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

class TestSelection : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear(); // an earlier run's window state would change this one's layout
    }
    void startsOnTheStrongestKeyOfTheFirstQuery();
    void clickingAHeatmapCellSelectsEverywhere();
    void clickingAnEditorRowSelectsTheQuery();
};

void TestSelection::startsOnTheStrongestKeyOfTheFirstQuery()
{
    MainWindow window;
    QCOMPARE(window.document()->selectedQuery(), Index(0));
    QCOMPARE(window.document()->selectedKey(), Index(1)); // "I" attends to "love" most (0.707)
}

void TestSelection::clickingAHeatmapCellSelectsEverywhere()
{
    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* weights = window.findChild<Heatmap*>(QStringLiteral("heatmap_weights"));
    QVERIFY(weights);
    // The pipeline canvas is the first tab: bring the weights' tab forward.
    window.findChild<QTabWidget*>(QStringLiteral("resultTabs"))->setCurrentWidget(weights);
    QVERIFY(test::settleReplots(weights)); // the queued replot lays out the cells
    const QPoint centre = weights->cellCentre(2, 0);
    QWidget* plot = weights->childAt(centre); // the plot fills the heatmap widget
    QVERIFY(plot);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, plot->mapFrom(weights, centre));
    // The click reached the plot: query "AI", key "I".
    QTRY_COMPARE(window.document()->selectedQuery(), Index(2));
    QCOMPARE(window.document()->selectedKey(), Index(0));
    // Every heatmap outlines it, each in its own terms (a hidden tab when it is shown).
    QCOMPARE(weights->highlight(), std::make_pair(2, 0));
    auto* tabs = window.findChild<QTabWidget*>(QStringLiteral("resultTabs"));
    const auto shown = [tabs, &window](const char* name) {
        auto* map = window.findChild<Heatmap*>(QLatin1String(name));
        tabs->setCurrentWidget(map);
        return map;
    };
    QCOMPARE(shown("heatmap_scores")->highlight(), std::make_pair(2, 0));
    QCOMPARE(shown("heatmap_Q")->highlight(), std::make_pair(2, -1));
    QCOMPARE(shown("heatmap_K")->highlight(), std::make_pair(0, -1));
    tabs->setCurrentWidget(weights);
    // So does the pipeline canvas, in every stage.
    auto* pipeline = window.findChild<PipelineView*>(QStringLiteral("pipelineView"));
    QVERIFY(pipeline);
    QCOMPARE(pipeline->stageHighlight(QStringLiteral("weights")), std::make_pair(2, 0));
    QCOMPARE(pipeline->stageHighlight(QStringLiteral("K")), std::make_pair(0, -1));
    // The embeddings editor moves to the query's row.
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("editor_X"))->currentIndex().row(), 2);
    // The math panel explains the new cell.
    auto* math = window.findChild<MathPanel*>(QStringLiteral("mathPanel"));
    QVERIFY2(math->plainText().contains(QStringLiteral("query i = 2 \"AI\", key j = 0 \"I\"")),
             qPrintable(math->plainText().left(120)));
    // The space plot emphasises the selected query.
    auto* space = window.findChild<QueryKeySpaceView*>();
    QVERIFY(space);
    QCOMPARE(space->emphasisedQuery(), Index(2));
}

void TestSelection::clickingAnEditorRowSelectsTheQuery()
{
    MainWindow window;
    auto* editor = window.findChild<QTableView*>(QStringLiteral("editor_X"));
    editor->setCurrentIndex(editor->model()->index(1, 2));
    QCOMPARE(window.document()->selectedQuery(), Index(1));
    QCOMPARE(window.findChild<Heatmap*>(QStringLiteral("heatmap_weights"))->highlight().first, 1);
}

QKV_TEST_MAIN(TestSelection)
#include "tst_selection.moc"
