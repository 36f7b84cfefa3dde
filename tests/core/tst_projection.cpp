// SPDX-License-Identifier: GPL-3.0-or-later
// PCA and raw-coordinate projections against hand-computed clouds, the special cases and sign determinism.

#include "Initializers.h"
#include "Projection.h"

#include "TestMatrices.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <Eigen/SVD>

#include <cmath>
#include <stdexcept>

Q_DECLARE_METATYPE(qkv::Matrix)

using namespace qkv;

namespace {

using test::fromRows;

/// Checks what every projection promises: orthonormal (or zero) axes, points = (rows − mean) · axes, the
/// explained fractions in [0, 1] and summing to at most 1.
void checkInvariants(const Matrix& rows, const Projection2D& p)
{
    QCOMPARE(p.points.rows(), rows.rows());
    QCOMPARE(p.points.cols(), Index(2));
    QCOMPARE(p.axes.rows(), rows.cols());
    QCOMPARE(p.axes.cols(), Index(2));
    QCOMPARE(p.mean.size(), rows.cols());
    QKV_COMPARE_NEAR(projectRows(p, rows), p.points, 1e-12);
    QKV_COMPARE_NEAR(p.axes.col(0).norm(), 1.0, 1e-12);
    if (rows.cols() >= 2) {
        QKV_COMPARE_NEAR(p.axes.col(1).norm(), 1.0, 1e-12);
        QVERIFY(std::abs(p.axes.col(0).dot(p.axes.col(1))) < 1e-12);
    } else {
        QCOMPARE(p.axes.col(1).norm(), 0.0);
    }
    for (double e : p.explained)
        QVERIFY(e >= 0.0 && e <= 1.0);
    QVERIFY(p.explained[0] + p.explained[1] <= 1.0 + 1e-12);
}

} // namespace

class TestProjection : public QObject {
    Q_OBJECT
private slots:
    void lineInThreeDimensions_data();
    void lineInThreeDimensions();
    void rectangle_data();
    void rectangle();
    void explainedMatchesSingularValues_data();
    void explainedMatchesSingularValues();
    void signIsDeterministic();
    void oneDimension();
    void identicalPoints_data();
    void identicalPoints();
    void twoDimensionsIsStillPca();
    void pickDimensions();
    void pickDimensionsRejectsBadIndices();
    void stackRows();
    void projectRowsChecksWidth();
};

void TestProjection::lineInThreeDimensions_data()
{
    QTest::addColumn<Matrix>("rows");
    // y = 2x in 3-D with an offset: one direction, (1, 2, 0)/√5; the second axis is the completion (0, 0, 1).
    QTest::newRow("covariance path (n >= d)")
        << fromRows({{-2, -4 + 1, 5}, {-1, -2 + 1, 5}, {0, 1, 5}, {1, 2 + 1, 5}, {3, 6 + 1, 5}});
    QTest::newRow("Gram path (n < d)") << fromRows({{1, 2, 0}, {-2, -4, 0}});
    QTest::newRow("mirrored") << fromRows({{2, 4, 0}, {-1, -2, 0}, {0.5, 1, 0}, {-3, -6, 0}});
}

void TestProjection::lineInThreeDimensions()
{
    QFETCH(Matrix, rows);
    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);
    QVERIFY2(std::abs(p.explained[0] - 1.0) < 1e-12, qPrintable(QString::number(p.explained[0], 'g', 17)));
    QVERIFY(std::abs(p.explained[1]) < 1e-12);
    Matrix expected(3, 2);
    expected << 1 / std::sqrt(5.0), 0, 2 / std::sqrt(5.0), 0, 0, 1;
    QKV_COMPARE_NEAR(p.axes, expected, 1e-12);
    // The coordinate along the line is the signed distance from the mean.
    for (Index r = 0; r < rows.rows(); ++r) {
        const Eigen::RowVectorXd d = rows.row(r) - p.mean.transpose();
        QKV_COMPARE_NEAR(std::abs(p.points(r, 0)), d.norm(), 1e-12);
        QVERIFY(std::abs(p.points(r, 1)) < 1e-12);
    }
}

void TestProjection::rectangle_data()
{
    QTest::addColumn<double>("angle");
    for (double degrees : {0.0, 30.0, 60.0, 120.0, -45.0})
        QTest::addRow("rotated %g deg", degrees) << degrees * M_PI / 180.0;
}

void TestProjection::rectangle()
{
    // The corners (±3, ±1) and the centre, rotated and shifted: variances along the sides are 4·9/5 and
    // 4·1/5, so explained = [0.9, 0.1] and the axes are the rotated side directions.
    QFETCH(double, angle);
    const Matrix base = fromRows({{3, 1}, {-3, 1}, {-3, -1}, {3, -1}, {0, 0}});
    Matrix rotation(2, 2);
    rotation << std::cos(angle), std::sin(angle), -std::sin(angle), std::cos(angle);
    Matrix rows = base * rotation;
    rows.rowwise() += Eigen::RowVector2d(10, -7);

    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);
    QKV_COMPARE_NEAR(p.explained[0], 0.9, 1e-12);
    QKV_COMPARE_NEAR(p.explained[1], 0.1, 1e-12);
    QKV_COMPARE_NEAR(p.mean.transpose(), Eigen::RowVector2d(10, -7), 1e-12);
    // Each axis is ± the rotated side, with its larger component positive.
    for (Index k = 0; k < 2; ++k) {
        Eigen::Vector2d side = rotation.row(k).transpose();
        Index largest = 0;
        side.cwiseAbs().maxCoeff(&largest);
        if (side(largest) < 0)
            side = -side;
        QKV_COMPARE_NEAR(p.axes.col(k), side, 1e-12);
    }
}

void TestProjection::explainedMatchesSingularValues_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("d");
    QTest::newRow("tall 40x5") << 40 << 5;
    QTest::newRow("wide 4x9") << 4 << 9;
    QTest::newRow("square 6x6") << 6 << 6;
    QTest::newRow("two rows in 3-D") << 2 << 3;
}

void TestProjection::explainedMatchesSingularValues()
{
    QFETCH(int, n);
    QFETCH(int, d);
    Matrix rows = initializeMatrix({Initializer::Normal, 1.0, std::uint64_t(100 + n * d)}, n, d);
    rows.col(0) *= 4.0; // a clear leading direction
    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);

    const Matrix centred = rows.rowwise() - rows.colwise().mean();
    const Eigen::JacobiSVD<Matrix> svd(centred, Eigen::ComputeThinV);
    const Eigen::VectorXd s2 = svd.singularValues().array().square();
    const double total = s2.sum();
    QKV_COMPARE_NEAR(p.explained[0], s2(0) / total, 1e-12);
    const double second = s2.size() > 1 ? s2(1) / total : 0.0;
    QKV_COMPARE_NEAR(p.explained[1], second, 1e-12);
    // The first axis is ± the first right singular vector.
    QKV_COMPARE_NEAR(std::abs(p.axes.col(0).dot(svd.matrixV().col(0))), 1.0, 1e-10);
}

void TestProjection::signIsDeterministic()
{
    const Matrix rows = initializeMatrix({Initializer::Normal, 1.0, 7}, 12, 4);
    const Projection2D p = pcaProjection(rows);
    for (Index k = 0; k < 2; ++k) {
        Index largest = 0;
        p.axes.col(k).cwiseAbs().maxCoeff(&largest);
        QVERIFY(p.axes(largest, k) > 0);
    }
    // Mirrored, shifted or reordered rows give the same axes.
    const Projection2D mirrored = pcaProjection(-rows);
    QKV_COMPARE_NEAR(mirrored.axes, p.axes, 1e-12);
    QKV_COMPARE_NEAR(mirrored.points, -p.points, 1e-12);
    Matrix shifted = rows;
    shifted.rowwise() += Eigen::RowVector4d(5, -3, 2, 100);
    QKV_COMPARE_NEAR(pcaProjection(shifted).axes, p.axes, 1e-10);
    const Matrix reversed = rows.colwise().reverse();
    QKV_COMPARE_NEAR(pcaProjection(reversed).axes, p.axes, 1e-12);
    // And the same input twice gives the same bits.
    const Projection2D again = pcaProjection(rows);
    QVERIFY(again.axes == p.axes);
    QVERIFY(again.points == p.points);
}

void TestProjection::oneDimension()
{
    const Matrix rows = fromRows({{1}, {3}, {-2}});
    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);
    QCOMPARE(p.explained[0], 1.0);
    QCOMPARE(p.explained[1], 0.0);
    QCOMPARE(p.axes(0, 0), 1.0);
    QCOMPARE(p.axes(0, 1), 0.0);
    QKV_COMPARE_NEAR(p.points.col(0), Eigen::Vector3d(1, 3, -2).array() - 2.0 / 3.0, 1e-12);
    QVERIFY(p.points.col(1).isZero());
}

void TestProjection::identicalPoints_data()
{
    QTest::addColumn<Matrix>("rows");
    QTest::newRow("three identical rows") << fromRows({{0.1, 0.2, 0.3}, {0.1, 0.2, 0.3}, {0.1, 0.2, 0.3}});
    QTest::newRow("one row") << fromRows({{4, -1, 2}});
    QTest::newRow("no rows") << Matrix(0, 3);
    QTest::newRow("identical, d = 1") << fromRows({{0.7}, {0.7}});
}

void TestProjection::identicalPoints()
{
    QFETCH(Matrix, rows);
    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);
    QCOMPARE(p.explained[0], 0.0);
    QCOMPARE(p.explained[1], 0.0);
    Matrix expected = Matrix::Zero(rows.cols(), 2);
    expected(0, 0) = 1;
    if (rows.cols() > 1)
        expected(1, 1) = 1;
    QVERIFY(p.axes == expected);
    QVERIFY(p.points.isZero(0.0)); // exactly at the origin
}

void TestProjection::twoDimensionsIsStillPca()
{
    // Points on the diagonal of the plane: PCA rotates them onto the first axis.
    const Matrix rows = fromRows({{0, 0}, {1, 1}, {2, 2}, {3, 3.0001}});
    const Projection2D p = pcaProjection(rows);
    checkInvariants(rows, p);
    QVERIFY(p.explained[0] > 0.999999);
    QKV_COMPARE_NEAR(p.explained[0] + p.explained[1], 1.0, 1e-12); // a rotation keeps all variance
    QKV_COMPARE_NEAR(p.axes(0, 0), M_SQRT1_2, 1e-4);
    QKV_COMPARE_NEAR(p.axes(1, 0), M_SQRT1_2, 1e-4);
    QVERIFY(p.points.col(1).cwiseAbs().maxCoeff() < 1e-4);
}

void TestProjection::pickDimensions()
{
    const Matrix rows = fromRows({{1, 10, 0}, {2, 10, 3}, {3, 10, 6}});
    // Column 0: mean 2, Σ(x − mean)² = 2; column 1: 0; column 2: mean 3, Σ = 18; total 20.
    const Projection2D p = qkv::pickDimensions(rows, 2, 0);
    checkInvariants(rows, p);
    QVERIFY(p.points.col(0) == rows.col(2));
    QVERIFY(p.points.col(1) == rows.col(0));
    QVERIFY(p.mean.isZero(0.0));
    QKV_COMPARE_NEAR(p.explained[0], 0.9, 1e-15);
    QKV_COMPARE_NEAR(p.explained[1], 0.1, 1e-15);
    QCOMPARE(p.axes(2, 0), 1.0);
    QCOMPARE(p.axes(0, 1), 1.0);
    QCOMPARE(p.axes.sum(), 2.0);

    const Projection2D constant = qkv::pickDimensions(rows, 1, 1);
    QCOMPARE(constant.explained[0], 0.0);
    QVERIFY(constant.points.col(0).isConstant(10.0));

    const Projection2D none = qkv::pickDimensions(fromRows({{1, 2}, {1, 2}}), 0, 1);
    QCOMPARE(none.explained[0], 0.0);
    QCOMPARE(none.explained[1], 0.0);
}

void TestProjection::pickDimensionsRejectsBadIndices()
{
    const Matrix rows = Matrix::Ones(3, 2);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, qkv::pickDimensions(rows, 0, 2));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, qkv::pickDimensions(rows, -1, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, pcaProjection(Matrix(3, 0)));
}

void TestProjection::stackRows()
{
    const Matrix q = fromRows({{1, 2}, {3, 4}});
    const Matrix k = fromRows({{5, 6}});
    const Matrix both = qkv::stackRows(q, k);
    QVERIFY(both == fromRows({{1, 2}, {3, 4}, {5, 6}}));
    QVERIFY(qkv::stackRows(Matrix(0, 2), k) == k);
    QVERIFY(qkv::stackRows(q, Matrix(0, 7)) == q);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qkv::stackRows(q, Matrix::Ones(1, 3)));
}

void TestProjection::projectRowsChecksWidth()
{
    const Projection2D p = pcaProjection(Matrix::Identity(3, 3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, projectRows(p, Matrix::Ones(2, 4)));
    QCOMPARE(projectRows(p, Matrix::Ones(5, 3)).rows(), Index(5));
}

QKV_TEST_APPLESS_MAIN(TestProjection)
#include "tst_projection.moc"
