// SPDX-License-Identifier: GPL-3.0-or-later
// Temperature and α sweeps: known limits, and agreement with the engine at the session's own settings.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "Sweeps.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <atomic>
#include <cmath>
#include <stdexcept>

using namespace qkv;

Q_DECLARE_METATYPE(qkv::NormalizerType)

namespace {

/// A head with only what a sweep reads: scaled scores and the mask.
HeadResult headOf(const Matrix& scaled, const MaskMatrix& allowed)
{
    HeadResult head;
    head.scaled = scaled;
    head.allowed = allowed;
    return head;
}

Matrix scores()
{
    Matrix s(3, 4);
    s << 2.0, 1.0, 0.5, -1.0, //
        0.3, -0.2, 1.7, 0.9,  //
        5.0, 5.0, 5.0, 5.0;
    return s;
}

MaskMatrix mask()
{
    MaskMatrix a(3, 4);
    a << 1, 1, 1, 0, //
        1, 1, 1, 1,  //
        0, 0, 0, 0;
    return a;
}

std::size_t curveOf(const SweepResult& result, NormalizerType type)
{
    for (std::size_t k = 0; k < result.row.size(); ++k)
        if (result.row[k].spec.type == type)
            return k;
    return result.row.size();
}

} // namespace

class TestSweeps : public QObject {
    Q_OBJECT
private slots:
    void grids();
    void limits_data();
    void limits();
    void meanIsTheAverageOfTheNonEmptyRows();
    void sessionPointIsTheEngines_data();
    void sessionPointIsTheEngines();
    void alphaEndsAreSoftmaxAndSparsemax();
    void badArgumentsThrow();
    void cancelStops();
    void sampledMean();
};

void TestSweeps::grids()
{
    const std::vector<double> tau = logGrid(1e-3, 1e3, 61);
    QCOMPARE(tau.size(), std::size_t(61));
    QCOMPARE(tau.front(), 1e-3);
    QCOMPARE(tau.back(), 1e3);
    QKV_COMPARE_NEAR(tau[30], 1.0, 1e-12);
    QKV_COMPARE_NEAR(tau[40] / tau[30], std::pow(10.0, 1.0), 1e-9);
    const std::vector<double> alpha = linearGrid(1.0, 4.0, 31);
    QCOMPARE(alpha.size(), std::size_t(31));
    QCOMPARE(alpha.front(), 1.0);
    QCOMPARE(alpha.back(), 4.0);
    QKV_COMPARE_NEAR(alpha[10], 2.0, 1e-12);
}

// Row 0 has a unique maximum and three allowed keys; row 1 four allowed keys. Hot rows are within 1e-3 of
// uniform (the scores spread over 3/1000 of a unit).
void TestSweeps::limits_data()
{
    QTest::addColumn<NormalizerType>("type");
    QTest::addColumn<int>("row");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<double>("entropy");
    QTest::addColumn<double>("support");
    QTest::addColumn<double>("top");
    QTest::addColumn<double>("tolerance");
    const double cold = 1e-3, hot = 1e3;
    QTest::newRow("softmax cold row 0") << NormalizerType::Softmax << 0 << cold << 0.0 << 1.0 << 1.0 << 1e-12;
    QTest::newRow("softmax cold row 1") << NormalizerType::Softmax << 1 << cold << 0.0 << 1.0 << 1.0 << 1e-12;
    QTest::newRow("softmax hot row 0 (3 allowed)")
        << NormalizerType::Softmax << 0 << hot << std::log(3.0) << 3.0 << 1.0 / 3.0 << 1e-3;
    QTest::newRow("softmax hot row 1 (4 allowed)")
        << NormalizerType::Softmax << 1 << hot << std::log(4.0) << 4.0 << 0.25 << 1e-3;
    QTest::newRow("sparsemax cold") << NormalizerType::Sparsemax << 0 << cold << 0.0 << 1.0 << 1.0 << 1e-12;
    QTest::newRow("sparsemax hot") << NormalizerType::Sparsemax << 1 << hot << std::log(4.0) << 4.0 << 0.25
                                   << 2e-3; // linear in the scores: (1.7 − 0.675)/1000 above uniform
    QTest::newRow("entmax cold") << NormalizerType::Entmax << 1 << cold << 0.0 << 1.0 << 1.0 << 1e-12;
    QTest::newRow("entmax hot") << NormalizerType::Entmax << 0 << hot << std::log(3.0) << 3.0 << 1.0 / 3.0
                                << 1e-3;
    QTest::newRow("hardmax hot") << NormalizerType::Hardmax << 1 << hot << 0.0 << 1.0 << 1.0 << 0.0;
    // Sigmoid: every allowed key at 1/2 when hot, each contributing −½ ln ½.
    QTest::newRow("sigmoid hot") << NormalizerType::Sigmoid << 0 << hot << 1.5 * std::log(2.0) << 3.0 << 0.5
                                 << 1e-3;
}

void TestSweeps::limits()
{
    QFETCH(NormalizerType, type);
    QFETCH(int, row);
    QFETCH(double, temperature);
    QFETCH(double, entropy);
    QFETCH(double, support);
    QFETCH(double, top);
    QFETCH(double, tolerance);
    const HeadResult head = headOf(scores(), mask());
    const SweepResult result = sweepTemperature(head, row, sweepNormalizers({}), logGrid(1e-3, 1e3, 61));
    const std::size_t k = curveOf(result, type);
    QVERIFY(k < result.row.size());
    const std::size_t p = temperature < 1 ? 0 : result.parameter.size() - 1;
    QCOMPARE(result.parameter[p], temperature);
    QKV_COMPARE_NEAR(result.row[k].entropy[p], entropy, tolerance);
    QCOMPARE(result.row[k].support[p], support);
    QKV_COMPARE_NEAR(result.row[k].topWeight[p], top, tolerance);
}

void TestSweeps::meanIsTheAverageOfTheNonEmptyRows()
{
    const HeadResult head = headOf(scores(), mask());
    const std::vector<double> grid = logGrid(0.01, 100.0, 9);
    const SweepResult first = sweepTemperature(head, 0, sweepNormalizers({}), grid);
    const SweepResult second = sweepTemperature(head, 1, sweepNormalizers({}), grid);
    QCOMPARE(first.nonEmptyRows, Index(2)); // row 2 is fully masked
    QCOMPARE(first.row.size(), std::size_t(5));
    for (std::size_t k = 0; k < first.row.size(); ++k)
        for (std::size_t p = 0; p < grid.size(); ++p) {
            QKV_COMPARE_NEAR(first.mean[k].entropy[p],
                             (first.row[k].entropy[p] + second.row[k].entropy[p]) / 2, 1e-14);
            QKV_COMPARE_NEAR(first.mean[k].support[p],
                             (first.row[k].support[p] + second.row[k].support[p]) / 2, 0.0);
            QKV_COMPARE_NEAR(first.mean[k].topWeight[p],
                             (first.row[k].topWeight[p] + second.row[k].topWeight[p]) / 2, 1e-14);
        }
    // The empty row's own curves are zeros, not NaN.
    const SweepResult empty = sweepTemperature(head, 2, sweepNormalizers({}), grid);
    QCOMPARE(empty.row[0].entropy[3], 0.0);
    QCOMPARE(empty.row[0].support[3], 0.0);
}

// At the session's τ the sweep's point under the session's normalizer is what the engine computed.
void TestSweeps::sessionPointIsTheEngines_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<NormalizerType>("type");
    QTest::addColumn<double>("temperature");
    QTest::newRow("love softmax τ=1") << QStringLiteral("love") << NormalizerType::Softmax << 1.0;
    QTest::newRow("love sparsemax τ=0.5") << QStringLiteral("love") << NormalizerType::Sparsemax << 0.5;
    QTest::newRow("causal entmax τ=2") << QStringLiteral("causal") << NormalizerType::Entmax << 2.0;
    QTest::newRow("multihead sigmoid τ=1") << QStringLiteral("multihead") << NormalizerType::Sigmoid << 1.0;
}

void TestSweeps::sessionPointIsTheEngines()
{
    QFETCH(QString, example);
    QFETCH(NormalizerType, type);
    QFETCH(double, temperature);
    Session session = loadExample(example.toStdString());
    session.normalizer = {type, 1.7};
    session.temperature = temperature;
    const AttentionResult result = computeAttention(session);
    const HeadResult& head = result.heads[0];
    const SweepResult sweep =
        sweepTemperature(head, 0, sweepNormalizers(session.normalizer), {temperature / 10, temperature});
    const std::size_t k = curveOf(sweep, type);
    QVERIFY(k < sweep.row.size());
    if (type == NormalizerType::Entmax)
        QCOMPARE(sweep.row[k].spec.alpha, 1.7);
    double meanEntropy = 0;
    Index rows = 0;
    for (Index i = 0; i < head.weights.rows(); ++i) {
        const RowStats& stats = head.rowStats[static_cast<std::size_t>(i)];
        if (i == 0) {
            QKV_COMPARE_NEAR(sweep.row[k].entropy[1], stats.entropy, 1e-12);
            QCOMPARE(sweep.row[k].support[1], static_cast<double>(stats.support));
            QKV_COMPARE_NEAR(sweep.row[k].topWeight[1], stats.max, 1e-12);
        }
        if (head.allowed.row(i).any()) {
            meanEntropy += stats.entropy;
            ++rows;
        }
    }
    QCOMPARE(sweep.nonEmptyRows, rows);
    QKV_COMPARE_NEAR(sweep.mean[k].entropy[1], meanEntropy / static_cast<double>(rows), 1e-12);
}

void TestSweeps::alphaEndsAreSoftmaxAndSparsemax()
{
    const HeadResult head = headOf(scores(), mask());
    const std::vector<double> alphas = linearGrid(1.0, 4.0, 31);
    const SweepResult alpha = sweepAlpha(head, 1, 0.7, alphas);
    QCOMPARE(alpha.row.size(), std::size_t(1));
    QCOMPARE(alpha.parameter, alphas);
    const SweepResult tau = sweepTemperature(head, 1, sweepNormalizers({}), {0.7});
    const std::size_t softmax = curveOf(tau, NormalizerType::Softmax);
    const std::size_t sparsemax = curveOf(tau, NormalizerType::Sparsemax);
    QKV_COMPARE_NEAR(alpha.row[0].entropy.front(), tau.row[softmax].entropy[0], 1e-9);
    QKV_COMPARE_NEAR(alpha.row[0].entropy[10], tau.row[sparsemax].entropy[0], 1e-9);
    QCOMPARE(alpha.row[0].support[10], tau.row[sparsemax].support[0]);
    // Larger α is sparser: the support never grows along the sweep.
    for (std::size_t p = 1; p < alphas.size(); ++p)
        QVERIFY2(alpha.row[0].support[p] <= alpha.row[0].support[p - 1], qPrintable(QString::number(p)));
}

void TestSweeps::badArgumentsThrow()
{
    const HeadResult head = headOf(scores(), mask());
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, sweepTemperature(head, 3, sweepNormalizers({}), {1.0}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, sweepTemperature(head, -1, sweepNormalizers({}), {1.0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepTemperature(head, 0, sweepNormalizers({}), {0.0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             sweepTemperature(head, 0, sweepNormalizers({}), {std::nan("")}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepAlpha(head, 0, 1.0, {0.5}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sweepAlpha(head, 0, -1.0, {1.5}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, logGrid(0.0, 1.0, 5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, logGrid(1.0, 10.0, 1));
}

void TestSweeps::cancelStops()
{
    const HeadResult head = headOf(scores(), mask());
    const std::atomic<bool> stop{true};
    QVERIFY_THROWS_EXCEPTION(Cancelled, sweepTemperature(head, 0, sweepNormalizers({}), {1.0}, 0, &stop));
}

// Over a row limit the mean is over evenly spread rows: with a limit of 2 of 4 rows, rows 0 and 2.
void TestSweeps::sampledMean()
{
    Matrix s(4, 3);
    s << 1, 2, 3, //
        0, 0, 9,  //
        4, 4, 4,  //
        -5, 0, 5;
    const HeadResult head = headOf(s, MaskMatrix::Ones(4, 3));
    const SweepResult sampled = sweepTemperature(head, 0, sweepNormalizers({}), {1.0}, 2);
    QVERIFY(sampled.sampledRows);
    QCOMPARE(sampled.nonEmptyRows, Index(2));
    const SweepResult first = sweepTemperature(head, 0, sweepNormalizers({}), {1.0});
    const SweepResult third = sweepTemperature(head, 2, sweepNormalizers({}), {1.0});
    QVERIFY(!first.sampledRows);
    QCOMPARE(first.nonEmptyRows, Index(4));
    QKV_COMPARE_NEAR(sampled.mean[0].entropy[0], (first.row[0].entropy[0] + third.row[0].entropy[0]) / 2,
                     1e-14);
}

QKV_TEST_APPLESS_MAIN(TestSweeps)
#include "tst_sweeps.moc"
