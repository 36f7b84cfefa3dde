// SPDX-License-Identifier: GPL-3.0-or-later
// The Q/K/V planes: raw coordinates, PCA of Q ∪ K with its labels, picked dimensions, the value plane's
// hull and the outputs inside it, and the shapes of every case.

#include "AttentionEngine.h"
#include "Examples.h"
#include "Geometry.h"
#include "Projection.h"
#include "SpaceLayout.h"

#include "TestMatrices.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace qkv;

namespace {

using test::fromRows;

HeadResult headOf(const std::string& example, NormalizerType normalizer = NormalizerType::Softmax,
                  bool keepNormalizer = true)
{
    Session session = loadExample(example);
    if (!keepNormalizer)
        session.normalizer.type = normalizer;
    return computeAttention(session).heads.front();
}

/// The percentage written in a "PCk (p% of variance)" label.
double percentIn(const std::string& label)
{
    const auto open = label.find('(');
    const auto percent = label.find('%');
    if (open == std::string::npos || percent == std::string::npos)
        return -1.0;
    return std::stod(label.substr(open + 1, percent - open - 1));
}

} // namespace

class TestSpaceLayout : public QObject {
    Q_OBJECT
private slots:
    void twoDimensionsAreRaw();
    void pcaOfQueriesAndKeys();
    void pcaModeInTwoDimensionsIsARotation();
    void pickedDimensions();
    void pickedDimensionOutOfRangeThrows();
    void oneDimension();
    void outputsInsideTheHull_data();
    void outputsInsideTheHull();
    void hullOfTheLoveExample();
    void shapes_data();
    void shapes();
    void threeSpacesInTwoDimensionsAreRaw();
    void threeSpacesArePcaOfEachMatrixAlone_data();
    void threeSpacesArePcaOfEachMatrixAlone();
    void threeSpacesPickedDimensions();
};

void TestSpaceLayout::twoDimensionsAreRaw()
{
    HeadResult head;
    head.Q = fromRows({{1, 2}, {-3, 0.5}});
    head.K = fromRows({{0, 0}, {4, -1}, {2, 2}});
    const QueryKeyPlane plane = queryKeyPlane(head, PlaneOptions{});
    QKV_COMPARE_NEAR(plane.queries, head.Q, 0.0);
    QKV_COMPARE_NEAR(plane.keys, head.K, 0.0);
    QCOMPARE(plane.xLabel, std::string("q/k dimension 0"));
    QCOMPARE(plane.yLabel, std::string("q/k dimension 1"));
}

void TestSpaceLayout::pcaOfQueriesAndKeys()
{
    const HeadResult head = headOf("love"); // d_k = 3: PCA
    const QueryKeyPlane plane = queryKeyPlane(head, PlaneOptions{});
    // The same map as a PCA of the stacked rows, split back into queries and keys.
    const Projection2D expected = pcaProjection(stackRows(head.Q, head.K));
    QKV_COMPARE_NEAR(plane.queries, expected.points.topRows(3), 1e-12);
    QKV_COMPARE_NEAR(plane.keys, expected.points.bottomRows(3), 1e-12);
    QVERIFY(plane.xLabel.rfind("PC1 (", 0) == 0);
    QVERIFY(plane.yLabel.rfind("PC2 (", 0) == 0);
    QVERIFY(plane.xLabel.find("% of variance)") != std::string::npos);
    QKV_COMPARE_NEAR(percentIn(plane.xLabel), 100.0 * expected.explained[0], 0.05 + 1e-9);
    QKV_COMPARE_NEAR(percentIn(plane.yLabel), 100.0 * expected.explained[1], 0.05 + 1e-9);
    QVERIFY(percentIn(plane.xLabel) >= percentIn(plane.yLabel));

    // Pca asked for explicitly gives the same.
    const QueryKeyPlane asked = queryKeyPlane(head, PlaneOptions{PlaneMode::Pca, 0, 1});
    QKV_COMPARE_NEAR(asked.queries, plane.queries, 0.0);
    QCOMPARE(asked.xLabel, plane.xLabel);
}

void TestSpaceLayout::pcaModeInTwoDimensionsIsARotation()
{
    HeadResult head;
    head.Q = fromRows({{1, 2}, {-3, 0.5}});
    head.K = fromRows({{0, 0}, {4, -1}, {2, 2}});
    const QueryKeyPlane plane = queryKeyPlane(head, PlaneOptions{PlaneMode::Pca, 0, 1});
    QVERIFY(plane.xLabel.rfind("PC1 (", 0) == 0);
    // Distances between all five points are kept, and the two shares add up to 100%.
    const Matrix raw = stackRows(head.Q, head.K);
    const Matrix projected = stackRows(plane.queries, plane.keys);
    for (Index a = 0; a < raw.rows(); ++a)
        for (Index b = 0; b < raw.rows(); ++b)
            QVERIFY(std::abs((raw.row(a) - raw.row(b)).norm() -
                             (projected.row(a) - projected.row(b)).norm()) < 1e-12);
    QKV_COMPARE_NEAR(percentIn(plane.xLabel) + percentIn(plane.yLabel), 100.0, 0.1 + 1e-9);
}

void TestSpaceLayout::pickedDimensions()
{
    HeadResult head;
    head.Q = fromRows({{1, 2, 3, 4}, {5, 6, 7, 8}});
    head.K = fromRows({{-1, -2, -3, -4}});
    const QueryKeyPlane plane = queryKeyPlane(head, PlaneOptions{PlaneMode::PickedDimensions, 2, 0});
    QKV_COMPARE_NEAR(plane.queries, fromRows({{3, 1}, {7, 5}}), 0.0);
    QKV_COMPARE_NEAR(plane.keys, fromRows({{-3, -1}}), 0.0);
    QCOMPARE(plane.xLabel, std::string("q/k dimension 2"));
    QCOMPARE(plane.yLabel, std::string("q/k dimension 0"));

    head.V = fromRows({{1, 0, 9}});
    head.output = fromRows({{1, 0, 9}, {1, 0, 9}});
    const ValuePlane values = valuePlane(head, PlaneOptions{PlaneMode::PickedDimensions, 2, 1});
    QKV_COMPARE_NEAR(values.values, fromRows({{9, 0}}), 0.0);
    QKV_COMPARE_NEAR(values.outputs, fromRows({{9, 0}, {9, 0}}), 0.0);
    QCOMPARE(values.xLabel, std::string("v dimension 2"));
    QCOMPARE(values.yLabel, std::string("v dimension 1"));
}

void TestSpaceLayout::pickedDimensionOutOfRangeThrows()
{
    const HeadResult head = headOf("love");
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             queryKeyPlane(head, PlaneOptions{PlaneMode::PickedDimensions, 0, 3}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             valuePlane(head, PlaneOptions{PlaneMode::PickedDimensions, -1, 0}));
}

void TestSpaceLayout::oneDimension()
{
    HeadResult head;
    head.Q = fromRows({{1}, {3}});
    head.K = fromRows({{-2}, {0}, {5}});
    head.V = fromRows({{1}, {2}, {4}});
    head.output = fromRows({{2.5}, {3}});
    for (PlaneMode mode : {PlaneMode::Automatic, PlaneMode::Pca, PlaneMode::PickedDimensions}) {
        const QueryKeyPlane plane = queryKeyPlane(head, PlaneOptions{mode, 0, 0});
        QCOMPARE(plane.queries.cols(), Index(2));
        QCOMPARE(plane.queries.col(1).cwiseAbs().maxCoeff(), 0.0);
        QCOMPARE(plane.keys.col(1).cwiseAbs().maxCoeff(), 0.0);
        // Raw or centred, the order along x is the order of the coordinate.
        QVERIFY(plane.keys(0, 0) < plane.queries(0, 0) && plane.queries(1, 0) < plane.keys(2, 0));
        const ValuePlane values = valuePlane(head, PlaneOptions{mode, 0, 0});
        QCOMPARE(values.outputs.col(1).cwiseAbs().maxCoeff(), 0.0);
        QCOMPARE(values.hull.size(), std::size_t(2)); // the two ends of the segment
    }
    const QueryKeyPlane raw = queryKeyPlane(head, PlaneOptions{});
    QKV_COMPARE_NEAR(raw.queries.col(0), head.Q.col(0), 0.0);
    QCOMPARE(raw.xLabel, std::string("q/k dimension 0"));
}

void TestSpaceLayout::outputsInsideTheHull_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<int>("mode");
    // The sparsemax example has d_v = 2: the raw plane.
    QTest::newRow("softmax, d_v = 2, raw")
        << "sparsemax" << int(NormalizerType::Softmax) << int(PlaneMode::Automatic);
    QTest::newRow("sparsemax, d_v = 2, raw")
        << "sparsemax" << int(NormalizerType::Sparsemax) << int(PlaneMode::Automatic);
    QTest::newRow("softmax, d_v = 2, PCA")
        << "sparsemax" << int(NormalizerType::Softmax) << int(PlaneMode::Pca);
    QTest::newRow("entmax, d_v = 2, raw")
        << "sparsemax" << int(NormalizerType::Entmax) << int(PlaneMode::Automatic);
    QTest::newRow("softmax, d_v = 3, PCA")
        << "love" << int(NormalizerType::Softmax) << int(PlaneMode::Automatic);
    QTest::newRow("softmax, d_v = 4, cross")
        << "translation" << int(NormalizerType::Softmax) << int(PlaneMode::Automatic);
}

void TestSpaceLayout::outputsInsideTheHull()
{
    QFETCH(QString, example);
    QFETCH(int, normalizer);
    QFETCH(int, mode);
    const HeadResult head = headOf(example.toStdString(), static_cast<NormalizerType>(normalizer), false);
    const ValuePlane plane = valuePlane(head, PlaneOptions{static_cast<PlaneMode>(mode), 0, 1});
    if (example == QLatin1String("sparsemax") && mode == int(PlaneMode::Automatic))
        QKV_COMPARE_NEAR(plane.values, head.V, 0.0); // d_v = 2: raw coordinates
    QVERIFY(plane.hull.size() >= 3);
    for (Index i = 0; i < plane.outputs.rows(); ++i)
        QVERIFY2(insideOrOnHull(plane.values, plane.hull, plane.outputs.row(i), 1e-9),
                 qPrintable(QStringLiteral("output %1 is outside the hull").arg(i)));
}

void TestSpaceLayout::hullOfTheLoveExample()
{
    // V = X · W_V = [[1, 0, 1], [1, 2, 0], [1, 1, 0]]: three points spanning a plane, so PCA keeps all the
    // variance and the hull is the triangle of all three.
    const HeadResult head = headOf("love");
    QKV_COMPARE_NEAR(head.V, fromRows({{1, 0, 1}, {1, 2, 0}, {1, 1, 0}}), 1e-12);
    const ValuePlane plane = valuePlane(head, PlaneOptions{});
    std::vector<Index> hull = plane.hull;
    std::sort(hull.begin(), hull.end());
    QCOMPARE(hull, (std::vector<Index>{0, 1, 2}));
    QKV_COMPARE_NEAR(percentIn(plane.xLabel) + percentIn(plane.yLabel), 100.0, 0.1 + 1e-9);
    // Distances within V are kept by a projection that keeps all the variance.
    for (Index a = 0; a < 3; ++a)
        for (Index b = 0; b < 3; ++b)
            QVERIFY(std::abs((head.V.row(a) - head.V.row(b)).norm() -
                             (plane.values.row(a) - plane.values.row(b)).norm()) < 1e-12);
    // Softmax gives every key a positive weight: each output is strictly inside the triangle, so it is
    // not one of the hull's vertices.
    for (Index i = 0; i < 3; ++i)
        for (Index j : plane.hull)
            QVERIFY((plane.outputs.row(i) - plane.values.row(j)).norm() > 1e-6);
}

void TestSpaceLayout::shapes_data()
{
    QTest::addColumn<QString>("example");
    QTest::newRow("love") << "love";
    QTest::newRow("translation (n = 3, m = 4)") << "translation";
    QTest::newRow("sparsemax") << "sparsemax";
    QTest::newRow("causal") << "causal";
    QTest::newRow("multihead") << "multihead";
}

void TestSpaceLayout::shapes()
{
    QFETCH(QString, example);
    const AttentionResult result = computeAttention(loadExample(example.toStdString()));
    for (const HeadResult& head : result.heads) {
        for (PlaneMode mode : {PlaneMode::Automatic, PlaneMode::Pca, PlaneMode::PickedDimensions}) {
            const QueryKeyPlane qk =
                queryKeyPlane(head, PlaneOptions{mode, 0, std::min<Index>(1, head.Q.cols() - 1)});
            QCOMPARE(qk.queries.rows(), head.Q.rows());
            QCOMPARE(qk.queries.cols(), Index(2));
            QCOMPARE(qk.keys.rows(), head.K.rows());
            QCOMPARE(qk.keys.cols(), Index(2));
            QVERIFY(!qk.xLabel.empty() && !qk.yLabel.empty());
            const ValuePlane v =
                valuePlane(head, PlaneOptions{mode, 0, std::min<Index>(1, head.V.cols() - 1)});
            QCOMPARE(v.values.rows(), head.V.rows());
            QCOMPARE(v.values.cols(), Index(2));
            QCOMPARE(v.outputs.rows(), head.output.rows());
            QCOMPARE(v.outputs.cols(), Index(2));
            QVERIFY(!v.hull.empty());
            QVERIFY(isAllFinite(qk.queries) && isAllFinite(qk.keys) && isAllFinite(v.values) &&
                    isAllFinite(v.outputs));
        }
    }
}

// Q, K and V as three spaces, as Brenndoerfer's article draws them (docs/references.md): with d = 2, each
// plot is the raw rows of its own matrix.
void TestSpaceLayout::threeSpacesInTwoDimensionsAreRaw()
{
    HeadResult head;
    head.Q = fromRows({{1, 2}, {-3, 0.5}});
    head.K = fromRows({{0, 0}, {4, -1}, {2, 2}});
    head.V = fromRows({{7, -7}, {0.25, 3}, {-1, -2}});
    const struct {
        HeadRows which;
        const Matrix& rows;
        const char* prefix;
    } cases[] = {
        {HeadRows::Queries, head.Q, "q"}, {HeadRows::Keys, head.K, "k"}, {HeadRows::Values, head.V, "v"}};
    for (const auto& c : cases) {
        const RowPlane plane = rowPlane(head, c.which, PlaneOptions{});
        QKV_COMPARE_NEAR(plane.points, c.rows, 0.0);
        QCOMPARE(plane.xLabel, std::string(c.prefix) + " dimension 0");
        QCOMPARE(plane.yLabel, std::string(c.prefix) + " dimension 1");
    }
}

void TestSpaceLayout::threeSpacesArePcaOfEachMatrixAlone_data()
{
    QTest::addColumn<int>("which");
    QTest::newRow("Q") << int(HeadRows::Queries);
    QTest::newRow("K") << int(HeadRows::Keys);
    QTest::newRow("V") << int(HeadRows::Values);
}

void TestSpaceLayout::threeSpacesArePcaOfEachMatrixAlone()
{
    QFETCH(int, which);
    const HeadResult head = headOf("love"); // d_k = d_v = 3: PCA
    const auto rows = static_cast<HeadRows>(which);
    const Matrix& matrix = rows == HeadRows::Queries ? head.Q : rows == HeadRows::Keys ? head.K : head.V;
    const RowPlane plane = rowPlane(head, rows, PlaneOptions{});
    const Projection2D expected = pcaProjection(matrix);
    QKV_COMPARE_NEAR(plane.points, expected.points, 1e-12);
    QVERIFY(plane.xLabel.rfind("PC1 (", 0) == 0);
    QKV_COMPARE_NEAR(percentIn(plane.xLabel), 100.0 * expected.explained[0], 0.05 + 1e-9);
}

void TestSpaceLayout::threeSpacesPickedDimensions()
{
    const HeadResult head = headOf("love");
    const RowPlane plane = rowPlane(head, HeadRows::Values, PlaneOptions{PlaneMode::PickedDimensions, 2, 0});
    QKV_COMPARE_NEAR(plane.points.col(0), head.V.col(2), 0.0);
    QKV_COMPARE_NEAR(plane.points.col(1), head.V.col(0), 0.0);
    QCOMPARE(plane.xLabel, std::string("v dimension 2"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             rowPlane(head, HeadRows::Keys, PlaneOptions{PlaneMode::PickedDimensions, 0, 3}));
}

QKV_TEST_APPLESS_MAIN(TestSpaceLayout)
#include "tst_spacelayout.moc"
