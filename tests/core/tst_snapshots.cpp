// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshots: kept in the session file (round trip, validation of hostile files), named, and compared cell by
// cell with compareMatrices.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "MatrixDifference.h"
#include "SessionFile.h"
#include "Snapshots.h"

#include "TestMatrices.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <string>

using namespace qkv;

namespace {

using test::fromRows;

/// "love" with two snapshots: as loaded, and after a change of X[1][2] and τ.
Session withSnapshots()
{
    Session session = loadExample("love");
    session.snapshots.push_back(makeSnapshot(session, "before"));
    Session edited = session;
    edited.X(1, 2) += 0.5;
    edited.temperature = 0.7;
    session.snapshots.push_back(makeSnapshot(edited, "X[1][2] + 0.5, τ = 0.7"));
    return session;
}

/// The session file of withSnapshots() with `from` replaced by `to` (once).
QByteArray edited(const std::string& from, const std::string& to)
{
    std::string text = serializeSession(withSnapshots());
    const auto at = text.find(from);
    if (at == std::string::npos)
        return QByteArray::fromStdString("not found: " + from);
    return QByteArray::fromStdString(text.replace(at, from.size(), to));
}

} // namespace

class TestSnapshots : public QObject {
    Q_OBJECT
private slots:
    void roundTripThroughTheSessionFile();
    void snapshotRecomputesExactly();
    void fileWithoutSnapshotsHasNoKey();
    void hostileSnapshotsAreRefused_data();
    void hostileSnapshotsAreRefused();
    void names();
    void oneCellDifference();
    void largestChangesFirst();
    void shapesThatDiffer();
    void comparedMatrices_data();
    void comparedMatrices();
};

void TestSnapshots::roundTripThroughTheSessionFile()
{
    const Session session = withSnapshots();
    QVERIFY(validate(session).empty());
    const std::string text = serializeSession(session);
    QVERIFY(text.find("\"snapshots\"") != std::string::npos);
    const Session back = parseSession(text);
    QCOMPARE(back.snapshots.size(), std::size_t(2));
    QVERIFY(back == session);
    QCOMPARE(back.snapshots[1].name, std::string("X[1][2] + 0.5, τ = 0.7"));
    QCOMPARE(back.snapshots[1].session->temperature, 0.7);
    QVERIFY(back.snapshots[1].session->snapshots.empty());
    QCOMPARE(serializeSession(back), text); // written back byte for byte
}

void TestSnapshots::snapshotRecomputesExactly()
{
    Session session = loadExample("multihead");
    const AttentionResult original = computeAttention(session);
    session.snapshots.push_back(makeSnapshot(session, "original"));
    session.heads[1].W_V(0, 0) = 3.0;
    const Session back = parseSession(serializeSession(session));
    QVERIFY(computeAttention(*back.snapshots[0].session) == original); // every matrix, bit for bit
    QVERIFY(!(computeAttention(back) == original));
}

void TestSnapshots::fileWithoutSnapshotsHasNoKey()
{
    const std::string text = serializeSession(loadExample("love"));
    QVERIFY(text.find("snapshots") == std::string::npos);
}

void TestSnapshots::hostileSnapshotsAreRefused_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("not an array") << edited("\"snapshots\": [", "\"snapshots\": 3, \"x\": [")
                                  << QStringLiteral(
                                         "snapshots: expected an array of snapshots, found a number");
    QTest::newRow("no name") << edited("\"name\": \"before\"", "\"nom\": \"before\"")
                             << QStringLiteral("snapshots[0].name: missing");
    QTest::newRow("empty name") << edited("\"name\": \"before\"", "\"name\": \"\"")
                                << QStringLiteral("snapshots[0].name: expected 1 to 200 characters");
    QTest::newRow("long name") << edited("\"name\": \"before\"",
                                         "\"name\": \"" + std::string(201, 'a') + "\"")
                               << QStringLiteral("snapshots[0].name: expected 1 to 200 characters");
    QTest::newRow("bad inner matrix")
        << edited("\"temperature\": 0.7", "\"temperature\": -1")
        << QStringLiteral("snapshots[1].session.temperature: expected a number > 0");
    QTest::newRow("nested snapshots")
        << edited("\"temperature\": 0.7", "\"temperature\": 0.7, \"snapshots\": []")
        << QStringLiteral("snapshots[1].session.snapshots: a snapshot cannot hold snapshots");
    QTest::newRow("session not an object")
        << edited("\"session\": {", "\"session\": 5, \"other\": {")
        << QStringLiteral("snapshots[0].session: expected an object, found a number");
}

void TestSnapshots::hostileSnapshotsAreRefused()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QVERIFY(!text.startsWith("not found"));
    try {
        parseSession(text.toStdString());
        QFAIL("accepted");
    } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.what()).startsWith(message), e.what());
    }
}

void TestSnapshots::names()
{
    Session session = loadExample("love");
    QCOMPARE(nextSnapshotName(session), std::string("Snapshot 1"));
    session.snapshots.push_back(makeSnapshot(session, "Snapshot 2"));
    QCOMPARE(nextSnapshotName(session), std::string("Snapshot 3"));
    session.snapshots.push_back(makeSnapshot(session, "mine"));
    QCOMPARE(nextSnapshotName(session), std::string("Snapshot 3"));
    // A snapshot has the inputs, not the snapshots or the view.
    session.view.selection = std::make_pair(Index(1), Index(2));
    const Snapshot snapshot = makeSnapshot(session, "third");
    QVERIFY(snapshot.session->snapshots.empty());
    QVERIFY(!snapshot.session->view.selection);
    QVERIFY(sameMatrix(snapshot.session->X, session.X));
    QVERIFY(snapshot.session->heads == session.heads);
}

void TestSnapshots::oneCellDifference()
{
    const Matrix before = fromRows({{1, 2, 3}, {4, 5, 6}});
    Matrix after = before;
    after(1, 0) = 4.25;
    const MatrixDifference difference = compareMatrices(before, after);
    QVERIFY(difference.shapeProblem.empty());
    QCOMPARE(difference.changedCells, Index(1));
    Matrix expected = Matrix::Zero(2, 3);
    expected(1, 0) = 0.25;
    QKV_COMPARE_NEAR(difference.delta, expected, 0.0);
    QCOMPARE(difference.largest.size(), std::size_t(1));
    QCOMPARE(difference.largest[0].row, Index(1));
    QCOMPARE(difference.largest[0].column, Index(0));
    QCOMPARE(difference.largest[0].before, 4.0);
    QCOMPARE(difference.largest[0].after, 4.25);
    QCOMPARE(difference.largestChange, 0.25);
    QCOMPARE(compareMatrices(before, before).changedCells, Index(0));
}

void TestSnapshots::largestChangesFirst()
{
    const Matrix before = Matrix::Zero(3, 3);
    const Matrix after = fromRows({{0.1, -0.5, 0}, {0, 0.3, 0}, {-0.3, 0, 2}});
    const MatrixDifference difference = compareMatrices(before, after, 3);
    QCOMPARE(difference.changedCells, Index(5));
    QCOMPARE(difference.largest.size(), std::size_t(3));
    QCOMPARE(difference.largest[0].delta, 2.0);
    QCOMPARE(difference.largest[1].delta, -0.5);
    // Equal |Δ| in row-major order.
    QCOMPARE(difference.largest[2].row, Index(1));
    QCOMPARE(difference.largest[2].delta, 0.3);
}

void TestSnapshots::shapesThatDiffer()
{
    const MatrixDifference difference = compareMatrices(Matrix::Zero(3, 4), Matrix::Zero(3, 5));
    QCOMPARE(difference.shapeProblem, std::string("3 × 5 now, 3 × 4 in the snapshot"));
    QCOMPARE(difference.delta.size(), Index(0));
    QVERIFY(difference.largest.empty());
}

void TestSnapshots::comparedMatrices_data()
{
    QTest::addColumn<int>("which");
    for (ComparedMatrix which : qkv::comparedMatrices())
        QTest::newRow(comparedMatrixName(which).c_str()) << static_cast<int>(which);
}

void TestSnapshots::comparedMatrices()
{
    QFETCH(int, which);
    const auto matrix = static_cast<ComparedMatrix>(which);
    const Session session = loadExample("multihead");
    const AttentionResult result = computeAttention(session);
    const Matrix* shown = comparedMatrix(session, result, matrix, 1);
    QVERIFY(shown);
    const HeadResult& head = result.heads[1];
    const Matrix* expected[] = {&session.X,   &head.Q,       &head.K,      &head.V,        &head.scores,
                                &head.scaled, &head.weights, &head.output, &result.concat, &result.output};
    QCOMPARE(shown, expected[which]);
    QCOMPARE(comparedMatrix(session, result, matrix, 7) == nullptr, isPerHead(matrix));
}

QKV_TEST_APPLESS_MAIN(TestSnapshots)
#include "tst_snapshots.moc"
