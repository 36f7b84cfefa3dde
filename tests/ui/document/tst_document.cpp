// SPDX-License-Identifier: GPL-3.0-or-later
// The document: undo/redo of edits, files, the modified flag and the background recompute.

#include "AttentionEngine.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "Examples.h"
#include "ResourceLimits.h"
#include "SessionEdits.h"
#include "SessionFile.h"

#include "FuzzyCompare.h"
#include "ResultBits.h"
#include "TestMain.h"
#include "TestSessions.h"
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QUndoStack>

#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

/// A session computed in the background (above Document::synchronousWorkLimit).
Session backgroundSession(Index tokens = 300)
{
    return test::largeLoveSession(tokens, 5);
}

} // namespace

class TestDocument : public QObject {
    Q_OBJECT
private slots:
    void startsWithTheDefaultExample();
    void cellEditUndoRedo();
    void structuralEditUndoRedo();
    void slidersMergeIntoOneStep();
    void saveCloseReopen();
    void viewStateTravelsWithTheFile();
    void badFileChangesNothing();
    void largeSessionsComputeInTheBackgroundNewestWins();
    void waitPublishesTheNewestEvenWhenItsJobEndedFirst();
    void eventLoopPublishesTheNewestOnce();
    void resultArrivesJustBeforeItChanges();
    void backgroundResultsAreTheEnginesBits();
    void resetSelectsFromItsOwnResult();
    void stopCancelsTheRunningComputation();
    void memoryLimitRefusesWithAMessage();
    void refusedSessionShowsTheMessage();
};

void TestDocument::startsWithTheDefaultExample()
{
    Document document;
    QCOMPARE(document.session(), loadExample("love"));
    QVERIFY(document.result());
    QKV_COMPARE_NEAR(document.result()->heads[0].weights(0, 1), 0.707, 5e-4);
    QVERIFY(!document.isModified());
    QCOMPARE(document.displayName(), QStringLiteral("I love AI"));
}

void TestDocument::cellEditUndoRedo()
{
    Document document;
    QSignalSpy modified(&document, &Document::modifiedChanged);
    const Matrix before = document.result()->heads[0].weights;
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 3.0));
    QCOMPARE(document.session().heads[0].W_Q(0, 0), 3.0);
    QCOMPARE(document.result()->heads[0].Q(0, 0), 4.0); // x_I = [1,0,1,0]: 3 + 1
    QVERIFY(document.result()->heads[0].weights != before);
    QVERIFY(document.isModified());
    QCOMPARE(modified.count(), 1);
    document.undoStack()->undo();
    QCOMPARE(document.session(), loadExample("love"));
    QCOMPARE(document.result()->heads[0].weights, before);
    QVERIFY(!document.isModified());
    document.undoStack()->redo();
    QCOMPARE(document.result()->heads[0].Q(0, 0), 4.0);
}

void TestDocument::structuralEditUndoRedo()
{
    Document document;
    pushEdit(&document, QStringLiteral("Three heads"), Document::Shape,
             [](Session& s) { setHeadCount(s, 3, InitializerSpec{}); });
    QCOMPARE(document.session().headCount(), 3);
    QCOMPARE(document.result()->heads.size(), std::size_t(3));
    QCOMPARE(document.result()->output.cols(), Index(9));
    document.setCurrentHead(2);
    document.undoStack()->undo();
    QCOMPARE(document.session(), loadExample("love"));
    QCOMPARE(document.currentHead(), 0); // clamped to the heads that exist
    document.undoStack()->redo();
    QCOMPARE(document.session().headCount(), 3);
}

void TestDocument::slidersMergeIntoOneStep()
{
    Document document;
    const auto access = [](Session& s) -> double& { return s.temperature; };
    for (double t : {0.9, 0.7, 0.5})
        document.push(new ChangeValueCommand<double>(&document, QStringLiteral("Temperature"),
                                                     Document::Options, access, t, MergeId::Temperature));
    QCOMPARE(document.undoStack()->count(), 1);
    QCOMPARE(document.session().temperature, 0.5);
    document.undoStack()->undo();
    QCOMPARE(document.session().temperature, 1.0);
}

void TestDocument::saveCloseReopen()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("love.qkv.json"));
    Session expected;
    {
        Document document;
        document.push(makeCellCommand(&document, {MatrixKind::X, 0}, 1, 2, -1.25));
        pushEdit(&document, QStringLiteral("Causal"), Document::Options,
                 [](Session& s) { s.mask.type = MaskType::Causal; });
        QString error;
        QVERIFY2(document.saveAs(path, &error), qPrintable(error));
        QVERIFY(!document.isModified());
        QCOMPARE(document.displayName(), QStringLiteral("love.qkv.json"));
        expected = document.session();
    }
    Document reopened;
    QString error;
    QVERIFY2(reopened.open(path, &error), qPrintable(error));
    QCOMPARE(reopened.session(), expected);
    QCOMPARE(reopened.filePath(), QFileInfo(path).absoluteFilePath());
    QCOMPARE(reopened.undoStack()->count(), 0);
}

void TestDocument::viewStateTravelsWithTheFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("view.qkv.json"));
    {
        Document document;
        QString error;
        QVERIFY(document.open(QStringLiteral("example:multihead"), &error));
        document.setCurrentHead(1);
        document.setSelection(2, 3);
        QVERIFY2(document.saveAs(path, &error), qPrintable(error));
        QVERIFY(!document.isModified());
    }
    Document reopened;
    QString error;
    QVERIFY2(reopened.open(path, &error), qPrintable(error));
    QCOMPARE(reopened.currentHead(), 1);
    QCOMPARE(reopened.selectedQuery(), Index(2));
    QCOMPARE(reopened.selectedKey(), Index(3));
    // What the view object held before (the example's own keys) is kept beside the new ones.
    Document love;
    QVERIFY(love.saveAs(dir.filePath(QStringLiteral("love.qkv.json")), &error));
    QVERIFY(QString::fromStdString(viewJson(love.session())).contains(QStringLiteral("Amit Shekhar")));
    QVERIFY(QString::fromStdString(viewJson(love.session())).contains(QStringLiteral("\"selection\":[0,1]")));
}

void TestDocument::badFileChangesNothing()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.qkv.json"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"format": "qkvlab-session", "version": 1, "title": "t", "tokens": ["a"], "X": [[1, 2]],
                  "heads": [{"W_Q": [[1], [2]], "W_K": [[1]], "W_V": [[1], [2]]}], "score": "dot"})");
    file.close();
    Document document;
    document.push(makeCellCommand(&document, {MatrixKind::X, 0}, 0, 0, 7.0));
    const Session before = document.session();
    QString error;
    QVERIFY(!document.open(path, &error));
    QVERIFY2(error.startsWith(QStringLiteral("heads[0].W_K: expected 2 rows, found 1")), qPrintable(error));
    QCOMPARE(document.session(), before);
    QCOMPARE(document.undoStack()->count(), 1);
    QVERIFY(!document.open(dir.filePath(QStringLiteral("missing.qkv.json")), &error));
    QVERIFY(error.contains(QStringLiteral("missing.qkv.json")));
    QCOMPARE(document.session(), before);
}

void TestDocument::largeSessionsComputeInTheBackgroundNewestWins()
{
    Document document;
    document.reset(backgroundSession());
    QSignalSpy results(&document, &Document::resultChanged);
    for (double value : {2.0, 3.0, 4.0})
        document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, value));
    document.waitForResult();
    QVERIFY(!document.isComputing());
    // Only the newest edit's result is published, and it matches the engine on the newest session.
    const AttentionResult expected = computeAttention(document.session());
    QCOMPARE(document.result()->heads[0].weights, expected.heads[0].weights);
    QVERIFY(results.count() >= 1);
    QVERIFY(results.count() <= 2); // the first edit's run may publish before the newest one starts
}

void TestDocument::waitPublishesTheNewestEvenWhenItsJobEndedFirst()
{
    // Deterministic: after each push the thread pool is drained, so every job has ended (and isRunning()
    // is false) before its finished() is delivered. The newest must still be published, exactly once.
    Document document;
    document.reset(backgroundSession());
    document.waitForResult();
    QSignalSpy results(&document, &Document::resultChanged);
    for (double value : {2.0, 3.0, 4.0}) {
        document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, value));
        QThreadPool::globalInstance()->waitForDone();
    }
    QVERIFY(document.isComputing()); // nothing delivered yet: result() is an older session's
    document.waitForResult();
    QVERIFY(!document.isComputing());
    QCOMPARE(results.count(), 1);
    QCOMPARE(document.session().heads[0].W_Q(0, 0), 4.0);
    QVERIFY(*document.result() == computeAttention(document.session()));
    // The late finished() notifications publish nothing more.
    QCoreApplication::processEvents();
    QCoreApplication::sendPostedEvents();
    QCOMPARE(results.count(), 1);
}

void TestDocument::eventLoopPublishesTheNewestOnce()
{
    Document document;
    document.reset(backgroundSession());
    QTRY_VERIFY_WITH_TIMEOUT(!document.isComputing(), 60000);
    QSignalSpy results(&document, &Document::resultChanged);
    for (double value : {2.0, 3.0, 4.0, 5.0})
        document.push(makeCellCommand(&document, {MatrixKind::W_K, 0}, 2, 3, value));
    QTRY_VERIFY_WITH_TIMEOUT(!document.isComputing(), 60000);
    QVERIFY(results.count() >= 1);
    QVERIFY(*document.result() == computeAttention(document.session()));
    const auto published = results.count();
    QCoreApplication::processEvents();
    QCOMPARE(results.count(), published);
}

// Views that start background work from a result hear of it first (resultArrived), with the new result
// already in place, and every other view right after (resultChanged): once each per published result, small
// sessions (computed at once) and large ones (in the background) alike.
void TestDocument::backgroundResultsAreTheEnginesBits()
{
    // A background job copies from the shown result the projections that an edit left alone (it is given
    // the copy of the session that result came from): through edits of each input, options, undo, redo and
    // edits that come while a job runs, every result is the bits of computing its session afresh.
    Document document;
    document.reset(backgroundSession());
    document.waitForResult();
    QVERIFY(document.result());
    const auto check = [&document](const char* after) {
        document.waitForResult();
        QVERIFY2(document.result(), after);
        QVERIFY2(test::sameResultBits(*document.result(), computeAttention(document.session())), after);
    };
    const auto cell = [&document](MatrixKind kind, Index row, Index column, double value) {
        document.push(makeCellCommand(&document, {kind, 0}, row, column, value));
    };
    cell(MatrixKind::W_Q, 1, 2, 0.75);
    check("W_Q");
    cell(MatrixKind::W_K, 0, 0, -1.5);
    check("W_K");
    cell(MatrixKind::W_V, 3, 1, 2.0);
    check("W_V");
    cell(MatrixKind::X, 5, 0, 0.5);
    check("X");
    cell(MatrixKind::W_Q, 0, 0, 0.0);
    check("W_Q 0");
    cell(MatrixKind::W_Q, 0, 0, -0.0);
    check("W_Q -0");
    pushEdit(&document, QStringLiteral("Causal"), Document::Options,
             [](Session& s) { s.mask.type = MaskType::Causal; });
    check("mask");
    pushEdit(&document, QStringLiteral("float32"), Document::Options,
             [](Session& s) { s.precision = Precision::Float32; });
    check("float32");
    cell(MatrixKind::W_V, 0, 3, 0.125);
    check("W_V in float32");
    pushEdit(&document, QStringLiteral("RoPE"), Document::Options,
             [](Session& s) { s.positions.type = PositionType::Rope; });
    check("RoPE");
    document.undoStack()->undo();
    check("undo");
    document.undoStack()->undo();
    check("undo again");
    document.undoStack()->redo();
    check("redo");
    for (int i = 0; i < 4; ++i) // the newest edit wins over the running job
        cell(i % 2 ? MatrixKind::W_K : MatrixKind::W_Q, i, 1, 0.1 * i);
    check("edits while computing");
}

void TestDocument::resultArrivesJustBeforeItChanges()
{
    Document document;
    QStringList heard;
    std::shared_ptr<const AttentionResult> arrived;
    connect(&document, &Document::resultArrived, &document, [&] {
        heard << QStringLiteral("arrived");
        arrived = document.result();
    });
    connect(&document, &Document::resultChanged, &document, [&] {
        heard << QStringLiteral("changed");
        QVERIFY(document.result() == arrived);
    });
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 2.0)); // the example: at once
    QCOMPARE(heard, QStringList({QStringLiteral("arrived"), QStringLiteral("changed")}));
    QVERIFY(*arrived == computeAttention(document.session()));
    document.reset(backgroundSession());
    document.waitForResult();
    heard.clear();
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 3.0));
    QVERIFY(heard.isEmpty()); // still computing
    document.waitForResult();
    QCOMPARE(heard, QStringList({QStringLiteral("arrived"), QStringLiteral("changed")}));
    QVERIFY(*arrived == computeAttention(document.session()));
}

void TestDocument::resetSelectsFromItsOwnResult()
{
    // The default cell is the first query's strongest key of the session being opened, even when its
    // result arrives from the background after reset() returns.
    Document document;
    Session big = backgroundSession();
    big.heads[0].W_K.setZero();
    big.heads[0].W_Q.setZero();
    big.X.row(0).setZero();
    big.X(0, 0) = 1.0;
    big.heads[0].W_Q(0, 0) = 1.0;
    big.heads[0].W_K(0, 0) = 1.0; // query 0 attends to the keys whose x_0 is largest
    document.reset(big);
    document.waitForResult();
    Index strongest = 0;
    document.result()->heads[0].weights.row(0).maxCoeff(&strongest);
    QVERIFY(strongest != 1); // the love example would have chosen key 1
    QCOMPARE(document.selectedQuery(), Index(0));
    QCOMPARE(document.selectedKey(), strongest);
}

void TestDocument::stopCancelsTheRunningComputation()
{
    Document document;
    document.reset(backgroundSession(3000));
    QVERIFY(document.isComputing());
    document.cancelComputation();
    document.waitForResult();
    QVERIFY(!document.isComputing());
    // Either it had finished already (a result) or it stopped (a message, and no stale result shown).
    if (!document.result())
        QVERIFY2(document.resultError().startsWith(QStringLiteral("Stopped")),
                 qPrintable(document.resultError()));
    // Any edit computes again.
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 2.0));
    document.waitForResult();
    QVERIFY(document.result());
}

void TestDocument::memoryLimitRefusesWithAMessage()
{
    Document document;
    document.setMemoryLimit(1000);
    QVERIFY(!document.result());
    QVERIFY2(document.resultError().contains(QStringLiteral("more than the limit of 1.0 KB")),
             qPrintable(document.resultError()));
    document.setMemoryLimit(defaultMemoryLimit());
    QVERIFY(document.result());
}

void TestDocument::refusedSessionShowsTheMessage()
{
    Document document;
    pushEdit(&document, QStringLiteral("Huge"), Document::Values, [](Session& s) { s.X *= 1e200; });
    QVERIFY(!document.result());
    QVERIFY2(document.resultError().contains(QStringLiteral("overflows")),
             qPrintable(document.resultError()));
    document.undoStack()->undo();
    QVERIFY(document.result());
    QVERIFY(document.resultError().isEmpty());
}

QKV_TEST_MAIN(TestDocument)
#include "tst_document.moc"
