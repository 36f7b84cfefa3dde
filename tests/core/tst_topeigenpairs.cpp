// SPDX-License-Identifier: GPL-3.0-or-later
// The two leading eigenpairs of a scatter matrix by the block Krylov iteration, against the full
// eigendecomposition: random clouds (scatter and Gram paths), repeated eigenvalues, rank 0 and 1, d = 2.

#include "Projection.h"
#include "TopEigenpairs.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <Eigen/QR>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

Q_DECLARE_METATYPE(qkv::Matrix)

using namespace qkv;

namespace {

/// Centred rows whose scatter matrix has the eigenvalues `variances` (padded with zeros to d) along random
/// orthogonal directions: n rows of a random orthonormal basis scaled so that column k carries √variance_k.
Matrix cloudWithSpectrum(Index n, Index d, const std::vector<double>& variances, std::uint64_t seed)
{
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    const auto gaussian = [&](Index rows, Index cols) {
        Eigen::MatrixXd m(rows, cols);
        for (Index c = 0; c < cols; ++c)
            for (Index r = 0; r < rows; ++r)
                m(r, c) = normal(generator);
        return m;
    };
    const auto k = static_cast<Index>(variances.size());
    // U: n × k orthonormal with columns orthogonal to the ones vector (so the rows stay centred).
    Eigen::MatrixXd u = gaussian(n, k);
    u.rowwise() -= u.colwise().mean();
    u = Eigen::HouseholderQR<Eigen::MatrixXd>(u).householderQ() * Eigen::MatrixXd::Identity(n, k);
    const Eigen::MatrixXd v = Eigen::HouseholderQR<Eigen::MatrixXd>(gaussian(d, k)).householderQ() *
                              Eigen::MatrixXd::Identity(d, k);
    Eigen::VectorXd scale(k);
    for (Index i = 0; i < k; ++i)
        scale(i) = std::sqrt(variances[static_cast<std::size_t>(i)]);
    const Eigen::MatrixXd rows = u * scale.asDiagonal() * v.transpose();
    Matrix out = rows;
    return out;
}

/// A cloud of Gaussian rows (a spectrum without large gaps), centred.
Matrix gaussianCloud(Index n, Index d, std::uint64_t seed)
{
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    Matrix rows(n, d);
    for (Index i = 0; i < rows.size(); ++i)
        rows.data()[i] = normal(generator) * (1.0 + 0.01 * static_cast<double>(i % d));
    Matrix centred = rows.rowwise() - rows.colwise().mean();
    return centred;
}

std::vector<double> geometric(double first, double ratio, int count)
{
    std::vector<double> values;
    for (int i = 0; i < count; ++i)
        values.push_back(first * std::pow(ratio, i));
    return values;
}

/// ‖C v − λ v‖ for the scatter matrix C of `centred`.
double residual(const Matrix& centred, const Eigen::VectorXd& v, double lambda)
{
    const Eigen::VectorXd image = centred.transpose() * (centred * v);
    return (image - lambda * v).norm();
}

enum class Expect {
    Unique,   ///< both eigenvectors unique up to sign
    Plane,    ///< λ₁ = λ₂: only the plane they span is unique
    FirstOnly ///< λ₂ = λ₃: only the first eigenvector is unique
};

} // namespace

Q_DECLARE_METATYPE(Expect)

class TestTopEigenpairs : public QObject {
    Q_OBJECT
private slots:
    void matchesTheFullDecomposition_data();
    void matchesTheFullDecomposition();
    void rankZero();
    void rankOneAndTwoDimensions_data();
    void rankOneAndTwoDimensions();
    void isDeterministic();
    void rejectsTooFewColumns();
    void pcaUsesTheLeadingPlane();
};

void TestTopEigenpairs::matchesTheFullDecomposition_data()
{
    QTest::addColumn<Matrix>("centred");
    QTest::addColumn<Expect>("expect");
    QTest::newRow("tall 400 x 60, spiked (scatter)")
        << cloudWithSpectrum(400, 60, geometric(50.0, 0.8, 60), 1) << Expect::Unique;
    QTest::newRow("wide 40 x 300, spiked (Gram)")
        << cloudWithSpectrum(40, 300, geometric(9.0, 0.85, 39), 2) << Expect::Unique;
    QTest::newRow("Gaussian 600 x 120 (close eigenvalues)") << gaussianCloud(600, 120, 3) << Expect::Unique;
    QTest::newRow("Gaussian 90 x 400 (Gram, close eigenvalues)")
        << gaussianCloud(90, 400, 4) << Expect::Unique;
    QTest::newRow("repeated leading eigenvalue")
        << cloudWithSpectrum(200, 30, {5, 5, 1, 1, 0.5, 0.25}, 5) << Expect::Plane;
    QTest::newRow("repeated second eigenvalue")
        << cloudWithSpectrum(200, 30, {7, 3, 3, 3, 1}, 6) << Expect::FirstOnly;
    QTest::newRow("all equal eigenvalues but two")
        << cloudWithSpectrum(150, 40, {4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 7) << Expect::Unique;
    QTest::newRow("three dimensions") << cloudWithSpectrum(20, 3, {3, 2, 1}, 8) << Expect::Unique;
}

void TestTopEigenpairs::matchesTheFullDecomposition()
{
    QFETCH(Matrix, centred);
    QFETCH(Expect, expect);
    const TopEigenpairs exact = topScatterEigenpairs(centred, EigenMethod::Exact);
    const TopEigenpairs iterated = topScatterEigenpairs(centred, EigenMethod::Iterative);
    QVERIFY(iterated.iterative);
    const double lambda1 = exact.values[0];
    QVERIFY(lambda1 > 0);
    for (int k = 0; k < 2; ++k)
        QKV_COMPARE_NEAR(iterated.values[k], exact.values[k], 1e-9 * lambda1);
    // Orthonormal, and eigenvectors of the scatter matrix.
    QKV_COMPARE_NEAR(Matrix(iterated.vectors.transpose() * iterated.vectors), Matrix::Identity(2, 2), 1e-12);
    for (int k = 0; k < 2; ++k)
        QVERIFY2(residual(centred, iterated.vectors.col(k), iterated.values[k]) <= 1e-6 * lambda1,
                 qPrintable(QString::number(residual(centred, iterated.vectors.col(k), iterated.values[k]))));

    // The same projections up to sign where the eigenvectors are unique; the same plane where only it is.
    const auto sameUpToSign = [&](Index k) {
        const Matrix a = centred * iterated.vectors.col(k);
        Matrix b = centred * exact.vectors.col(k);
        if (a.col(0).dot(b.col(0)) < 0)
            b = -b;
        QKV_COMPARE_NEAR(a, b, 1e-6 * std::sqrt(lambda1));
    };
    if (expect != Expect::Plane)
        sameUpToSign(0);
    if (expect == Expect::Unique)
        sameUpToSign(1);
    if (expect == Expect::Plane) {
        const Matrix a = iterated.vectors * iterated.vectors.transpose();
        const Matrix b = exact.vectors * exact.vectors.transpose();
        QKV_COMPARE_NEAR(a, b, 1e-6);
    }
}

void TestTopEigenpairs::rankZero()
{
    for (Index d : {2, 5, 40}) {
        const TopEigenpairs pairs = topScatterEigenpairs(Matrix::Zero(10, d), EigenMethod::Iterative);
        QCOMPARE(pairs.values[0], 0.0);
        QCOMPARE(pairs.values[1], 0.0);
        QKV_COMPARE_NEAR(Matrix(pairs.vectors.transpose() * pairs.vectors), Matrix::Identity(2, 2), 1e-12);
    }
}

void TestTopEigenpairs::rankOneAndTwoDimensions_data()
{
    QTest::addColumn<Matrix>("centred");
    QTest::newRow("rank 1 in 50-D") << cloudWithSpectrum(80, 50, {6}, 9);
    QTest::newRow("rank 1, Gram (n < d)") << cloudWithSpectrum(12, 70, {2}, 10);
    QTest::newRow("rank 2 in 30-D") << cloudWithSpectrum(60, 30, {3, 1}, 11);
    QTest::newRow("d = 2") << cloudWithSpectrum(30, 2, {2, 0.5}, 12);
    QTest::newRow("d = 2, rank 1") << cloudWithSpectrum(30, 2, {2}, 13);
    QTest::newRow("d = 2, equal variances") << cloudWithSpectrum(30, 2, {1, 1}, 14);
}

void TestTopEigenpairs::rankOneAndTwoDimensions()
{
    QFETCH(Matrix, centred);
    const TopEigenpairs exact = topScatterEigenpairs(centred, EigenMethod::Exact);
    const TopEigenpairs iterated = topScatterEigenpairs(centred, EigenMethod::Iterative);
    const double lambda1 = exact.values[0];
    for (int k = 0; k < 2; ++k)
        QKV_COMPARE_NEAR(iterated.values[k], exact.values[k], 1e-9 * lambda1);
    QKV_COMPARE_NEAR(Matrix(iterated.vectors.transpose() * iterated.vectors), Matrix::Identity(2, 2), 1e-12);
    for (int k = 0; k < 2; ++k)
        QVERIFY(residual(centred, iterated.vectors.col(k), iterated.values[k]) <= 1e-6 * lambda1);
    // The first direction is unique (λ₁ > λ₂ in all but the equal-variance plane, where any is right).
    if (exact.values[0] > 1.001 * exact.values[1])
        QVERIFY(std::abs(iterated.vectors.col(0).dot(exact.vectors.col(0))) > 1 - 1e-9);
}

void TestTopEigenpairs::isDeterministic()
{
    const Matrix centred = gaussianCloud(300, 80, 15);
    const TopEigenpairs a = topScatterEigenpairs(centred, EigenMethod::Iterative);
    const TopEigenpairs b = topScatterEigenpairs(centred, EigenMethod::Iterative);
    QVERIFY(a.vectors == b.vectors);
    QCOMPARE(a.values[0], b.values[0]);
    QCOMPARE(a.values[1], b.values[1]);
    QCOMPARE(a.steps, b.steps);
}

void TestTopEigenpairs::rejectsTooFewColumns()
{
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, topScatterEigenpairs(Matrix::Ones(4, 1)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, topScatterEigenpairs(Matrix(0, 3)));
}

void TestTopEigenpairs::pcaUsesTheLeadingPlane()
{
    // A cloud too large for the exact path: the PCA plane is the leading eigenvectors' one, signs fixed.
    Matrix rows = cloudWithSpectrum(500, 64, geometric(20.0, 0.7, 64), 16);
    rows.rowwise() += RowVector::LinSpaced(64, -3.0, 3.0);
    const Projection2D p = pcaProjection(rows);
    const Matrix centred = rows.rowwise() - rows.colwise().mean();
    const TopEigenpairs exact = topScatterEigenpairs(centred, EigenMethod::Exact);
    for (Index k = 0; k < 2; ++k)
        QVERIFY(std::abs(p.axes.col(k).dot(exact.vectors.col(k))) > 1 - 1e-9);
    const double total = centred.squaredNorm();
    QKV_COMPARE_NEAR(p.explained[0], exact.values[0] / total, 1e-9);
    QKV_COMPARE_NEAR(p.explained[1], exact.values[1] / total, 1e-9);
}

QKV_TEST_APPLESS_MAIN(TestTopEigenpairs)
#include "tst_topeigenpairs.moc"
