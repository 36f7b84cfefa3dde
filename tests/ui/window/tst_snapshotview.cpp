// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshots in the window: taking and deleting them are undo steps that recompute nothing, the difference of
// a one-cell edit shows exactly the affected cells, shapes that differ are reported, and the session file
// keeps them.

#include "Document.h"
#include "DocumentCommands.h"
#include "Heatmap.h"
#include "SessionEdits.h"
#include "SnapshotDiffView.h"
#include "SnapshotPrompt.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QApplication>
#include <QImage>
#include <QInputDialog>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

void openLove(Document& document)
{
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    document.waitForResult();
}

void takeSnapshot(Document& document, const std::string& name)
{
    document.push(makeAddSnapshotCommand(&document, makeSnapshot(document.session(), name)));
}

} // namespace

class TestSnapshotView : public QObject {
    Q_OBJECT
private slots:
    void takingIsOneUndoStepAndRecomputesNothing();
    void noSnapshotSaysHowToTakeOne();
    void oneCellEditChangesOnlyItsCells_data();
    void oneCellEditChangesOnlyItsCells();
    void inputCellIsTheLargestChange();
    void shapesThatDifferAreReported();
    void deleteIsUndoable();
    void savedWithTheSession();
    void promptAsksForAName();
    void rendersAsAFigure();
};

void TestSnapshotView::takingIsOneUndoStepAndRecomputesNothing()
{
    Document document;
    openLove(document);
    const std::shared_ptr<const AttentionResult> result = document.result();
    QVERIFY(!document.isModified());
    takeSnapshot(document, "first");
    QCOMPARE(document.session().snapshots.size(), std::size_t(1));
    QCOMPARE(document.undoStack()->count(), 1);
    QVERIFY(document.isModified());
    QVERIFY(!document.isComputing());
    QCOMPARE(document.result(), result); // the same result object: nothing recomputed
    document.undoStack()->undo();
    QVERIFY(document.session().snapshots.empty());
    QVERIFY(!document.isModified());
    document.undoStack()->redo();
    QCOMPARE(document.session().snapshots.front().name, std::string("first"));
}

void TestSnapshotView::noSnapshotSaysHowToTakeOne()
{
    Document document;
    openLove(document);
    SnapshotDiffView view(&document);
    QVERIFY2(view.message().contains(QStringLiteral("Take Snapshot")), qPrintable(view.message()));
    QVERIFY(!view.findChild<QPushButton*>(QStringLiteral("deleteSnapshot"))->isEnabled());
    takeSnapshot(document, "first");
    view.waitForSnapshot();
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.snapshot(), 0);
    QCOMPARE(view.difference().changedCells, Index(0)); // nothing edited since
}

// W_V[0][1] changes column 1 of V and of the output, and nothing before V.
void TestSnapshotView::oneCellEditChangesOnlyItsCells_data()
{
    QTest::addColumn<int>("which");
    QTest::addColumn<bool>("changes");
    QTest::newRow("V") << int(ComparedMatrix::V) << true;
    QTest::newRow("head output") << int(ComparedMatrix::HeadOutput) << true;
    QTest::newRow("final output") << int(ComparedMatrix::FinalOutput) << true;
    QTest::newRow("weights") << int(ComparedMatrix::Weights) << false;
    QTest::newRow("scores") << int(ComparedMatrix::Scores) << false;
    QTest::newRow("Q") << int(ComparedMatrix::Q) << false;
}

void TestSnapshotView::oneCellEditChangesOnlyItsCells()
{
    QFETCH(int, which);
    QFETCH(bool, changes);
    Document document;
    openLove(document);
    takeSnapshot(document, "before");
    const double old = document.session().heads[0].W_V(0, 1);
    document.push(makeCellCommand(&document, {MatrixKind::W_V, 0}, 0, 1, old + 1.0));
    document.waitForResult();
    SnapshotDiffView view(&document);
    view.setComparedMatrix(static_cast<ComparedMatrix>(which));
    view.waitForSnapshot();
    QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
    const MatrixDifference& difference = view.difference();
    const Matrix& delta = difference.delta;
    QVERIFY(delta.size() > 0);
    for (Index r = 0; r < delta.rows(); ++r)
        for (Index c = 0; c < delta.cols(); ++c)
            if (!changes || c != 1)
                QVERIFY2(delta(r, c) == 0.0,
                         qPrintable(QStringLiteral("(%1, %2): %3").arg(r).arg(c).arg(delta(r, c))));
    if (changes) {
        QVERIFY(difference.changedCells > 0);
        QCOMPARE(difference.largest.front().column, Index(1));
        // The heatmap shows the same numbers, on a diverging scale centred at 0.
        QKV_COMPARE_NEAR(view.differenceMap()->values(), delta, 0.0);
        QCOMPARE(view.differenceMap()->colorMode(), Heatmap::ColorMode::Diverging);
        const auto [lower, upper] = view.differenceMap()->colorRange();
        QCOMPARE(lower, -upper);
    } else {
        QCOMPARE(difference.changedCells, Index(0));
    }
}

void TestSnapshotView::inputCellIsTheLargestChange()
{
    Document document;
    openLove(document);
    takeSnapshot(document, "before");
    const double old = document.session().X(1, 2);
    document.push(makeCellCommand(&document, {MatrixKind::X, 0}, 1, 2, old - 0.75));
    SnapshotDiffView view(&document);
    view.setComparedMatrix(ComparedMatrix::X);
    view.waitForSnapshot();
    QCOMPARE(view.difference().changedCells, Index(1));
    const CellChange& change = view.difference().largest.front();
    QCOMPARE(change.row, Index(1));
    QCOMPARE(change.column, Index(2));
    QCOMPARE(change.before, old);
    QCOMPARE(change.after, old - 0.75);
    QKV_COMPARE_NEAR(change.delta, -0.75, 1e-15);
    auto* table = view.findChild<QTableWidget*>(QStringLiteral("largestChanges"));
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("love, 2"));
    QCOMPARE(table->item(0, 3)->text(), QStringLiteral("-0.75"));
    // Undo the edit: nothing differs any more.
    document.undoStack()->undo();
    document.waitForResult();
    view.waitForSnapshot();
    QCOMPARE(view.difference().changedCells, Index(0));
}

void TestSnapshotView::shapesThatDifferAreReported()
{
    Document document;
    openLove(document);
    takeSnapshot(document, "three tokens");
    pushEdit(&document, QStringLiteral("Insert token"), Document::Shape | Document::Values | Document::Tokens,
             [](Session& s) { insertToken(s, Side::Query, 3, "again", InitializerSpec{}); });
    document.waitForResult();
    SnapshotDiffView view(&document);
    view.setComparedMatrix(ComparedMatrix::Weights);
    view.waitForSnapshot();
    QVERIFY2(view.message().contains(QStringLiteral("shape differs")), qPrintable(view.message()));
    QVERIFY2(view.message().contains(QStringLiteral("4 × 4 now, 3 × 3 in the snapshot")),
             qPrintable(view.message()));
    QCOMPARE(view.difference().delta.size(), Index(0));
    QCOMPARE(view.findChild<QTableWidget*>(QStringLiteral("largestChanges"))->rowCount(), 0);
    // A matrix whose shape did not change still compares: V has 4 rows now, W_V is unchanged.
    view.setComparedMatrix(ComparedMatrix::Q);
    QVERIFY(!view.message().isEmpty()); // Q has a row more
}

void TestSnapshotView::deleteIsUndoable()
{
    Document document;
    openLove(document);
    takeSnapshot(document, "one");
    takeSnapshot(document, "two");
    SnapshotDiffView view(&document);
    QCOMPARE(view.snapshot(), 1);
    view.setSnapshot(0);
    auto* remove = view.findChild<QPushButton*>(QStringLiteral("deleteSnapshot"));
    QVERIFY(remove->isEnabled());
    remove->click();
    QCOMPARE(document.session().snapshots.size(), std::size_t(1));
    QCOMPARE(document.session().snapshots.front().name, std::string("two"));
    document.undoStack()->undo();
    QCOMPARE(document.session().snapshots.size(), std::size_t(2));
    QCOMPARE(document.session().snapshots.front().name, std::string("one"));
}

void TestSnapshotView::savedWithTheSession()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("kept.qkv.json"));
    {
        Document document;
        openLove(document);
        takeSnapshot(document, "kept");
        document.push(makeCellCommand(&document, {MatrixKind::X, 0}, 0, 0, 9.0));
        QString error;
        QVERIFY2(document.saveAs(path, &error), qPrintable(error));
    }
    // The view exists before the file is opened (as in the window and in command-line export).
    Document document;
    SnapshotDiffView view(&document);
    QVERIFY(!view.message().isEmpty());
    QString error;
    QVERIFY2(document.open(path, &error), qPrintable(error));
    document.waitForResult();
    view.setComparedMatrix(ComparedMatrix::X);
    view.waitForSnapshot();
    QCOMPARE(document.session().snapshots.front().name, std::string("kept"));
    QCOMPARE(view.difference().changedCells, Index(1));
    QCOMPARE(view.difference().largest.front().after, 9.0);
}

void TestSnapshotView::promptAsksForAName()
{
    Document document;
    openLove(document);
    takeSnapshot(document, "Snapshot 1");
    QString offered;
    QTimer::singleShot(0, this, [&offered] {
        auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
        QVERIFY(dialog);
        QCOMPARE(dialog->objectName(), QStringLiteral("snapshotNameDialog"));
        offered = dialog->textValue();
        dialog->setTextValue(QStringLiteral("  after the edit "));
        dialog->accept();
    });
    QVERIFY(promptForSnapshot(nullptr, &document));
    QCOMPARE(offered, QStringLiteral("Snapshot 2"));
    QCOMPARE(document.session().snapshots.back().name, std::string("after the edit"));
    QCOMPARE(document.undoStack()->count(), 2);
    // Cancelled: nothing.
    QTimer::singleShot(0, this, [] { QApplication::activeModalWidget()->close(); });
    QVERIFY(!promptForSnapshot(nullptr, &document));
    QCOMPARE(document.session().snapshots.size(), std::size_t(2));
}

void TestSnapshotView::rendersAsAFigure()
{
    Document document;
    openLove(document);
    takeSnapshot(document, "before");
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 2.0));
    SnapshotDiffView view(&document);
    QCOMPARE(view.figureName(), QStringLiteral("diff"));
    QVERIFY2(view.figureTitle().contains(QStringLiteral("before")), qPrintable(view.figureTitle()));
    QImage image(view.defaultFigureSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    view.renderFigure(&image, image.size());
    for (int third = 0; third < 3; ++third) {
        int coloured = 0;
        for (int y = 0; y < image.height(); y += 3)
            for (int x = image.width() * third / 3; x < image.width() * (third + 1) / 3; x += 3)
                coloured += image.pixelColor(x, y).saturation() > 60 ? 1 : 0;
        QVERIFY2(coloured > 50, qPrintable(QStringLiteral("third %1: %2").arg(third).arg(coloured)));
    }
}

QKV_TEST_MAIN(TestSnapshotView)
#include "tst_snapshotview.moc"
