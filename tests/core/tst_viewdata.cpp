// SPDX-License-Identifier: GPL-3.0-or-later
// The numbers behind the multi-head overview and the normalizer comparison, checked against the engine.

#include "AttentionEngine.h"
#include "Examples.h"
#include "ViewData.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace qkv;

Q_DECLARE_METATYPE(qkv::NormalizerType)

namespace {

constexpr double tolerance = 1e-12;

/// Index of a normalizer's row in the comparison.
Index rowOf(const NormalizerComparison& comparison, const std::string& name)
{
    for (std::size_t k = 0; k < comparison.names.size(); ++k)
        if (comparison.names[k] == name)
            return static_cast<Index>(k);
    return -1;
}

} // namespace

class TestViewData : public QObject {
    Q_OBJECT
private slots:
    void comparisonNamesAndShape();
    void softmaxRowIsTheEngines_data();
    void softmaxRowIsTheEngines();
    void everyRowIsTheEngineUnderThatNormalizer_data();
    void everyRowIsTheEngineUnderThatNormalizer();
    void distributionsSumToOne_data();
    void distributionsSumToOne();
    void maskedKeysAreZero();
    void badArgumentsThrow();
    void headSummaryByHand();
    void headSummaryOfAnExample();
};

void TestViewData::comparisonNamesAndShape()
{
    const AttentionResult result = computeAttention(loadExample("love"));
    const NormalizerComparison comparison = compareNormalizers(result.heads[0], 0, 1.0);
    const std::vector<std::string> names{"softmax", "sparsemax", "1.5-entmax", "sigmoid", "hardmax"};
    QCOMPARE(comparison.names, names);
    QCOMPARE(comparison.specs.size(), names.size());
    QCOMPARE(comparison.specs[2].type, NormalizerType::Entmax);
    QCOMPARE(comparison.specs[2].alpha, 1.5);
    QCOMPARE(comparison.weights.rows(), Index(5));
    QCOMPARE(comparison.weights.cols(), Index(3));
}

void TestViewData::softmaxRowIsTheEngines_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<int>("head");
    QTest::addColumn<int>("row");
    QTest::newRow("love row 0") << QStringLiteral("love") << 0 << 0;
    QTest::newRow("love row 2") << QStringLiteral("love") << 0 << 2;
    QTest::newRow("multihead head 1 row 3") << QStringLiteral("multihead") << 1 << 3;
    QTest::newRow("causal row 1") << QStringLiteral("causal") << 0 << 1;
}

void TestViewData::softmaxRowIsTheEngines()
{
    QFETCH(QString, example);
    QFETCH(int, head);
    QFETCH(int, row);
    const AttentionResult result = computeAttention(loadExample(example.toStdString()));
    const HeadResult& h = result.heads[static_cast<std::size_t>(head)];
    const NormalizerComparison comparison = compareNormalizers(h, row, 1.0);
    const Index softmax = rowOf(comparison, "softmax");
    QVERIFY(softmax >= 0);
    for (Index j = 0; j < h.weights.cols(); ++j)
        QVERIFY2(std::abs(comparison.weights(softmax, j) - h.weights(row, j)) < tolerance,
                 qPrintable(QStringLiteral("key %1").arg(j)));
    if (example == QLatin1String("love") && row == 0)
        QKV_COMPARE_NEAR(comparison.weights(softmax, 1), 0.707, 5e-4); // as its article works it out by hand
}

void TestViewData::everyRowIsTheEngineUnderThatNormalizer_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<NormalizerType>("type");
    QTest::addColumn<double>("temperature");
    QTest::newRow("softmax τ=0.5") << QStringLiteral("softmax") << NormalizerType::Softmax << 0.5;
    QTest::newRow("sparsemax τ=1") << QStringLiteral("sparsemax") << NormalizerType::Sparsemax << 1.0;
    QTest::newRow("sparsemax τ=0.3") << QStringLiteral("sparsemax") << NormalizerType::Sparsemax << 0.3;
    QTest::newRow("entmax τ=1") << QStringLiteral("1.5-entmax") << NormalizerType::Entmax << 1.0;
    QTest::newRow("entmax τ=2") << QStringLiteral("1.5-entmax") << NormalizerType::Entmax << 2.0;
    QTest::newRow("sigmoid τ=1") << QStringLiteral("sigmoid") << NormalizerType::Sigmoid << 1.0;
    QTest::newRow("hardmax τ=1") << QStringLiteral("hardmax") << NormalizerType::Hardmax << 1.0;
}

void TestViewData::everyRowIsTheEngineUnderThatNormalizer()
{
    QFETCH(QString, name);
    QFETCH(NormalizerType, type);
    QFETCH(double, temperature);
    for (const char* example : {"love", "causal", "multihead"}) {
        Session session = loadExample(example);
        session.temperature = temperature;
        const AttentionResult asShown = computeAttention(session);
        session.normalizer = {type, 1.5};
        const AttentionResult underIt = computeAttention(session);
        for (std::size_t head = 0; head < asShown.heads.size(); ++head)
            for (Index i = 0; i < session.n(); ++i) {
                const NormalizerComparison comparison =
                    compareNormalizers(asShown.heads[head], i, temperature);
                const Index k = rowOf(comparison, name.toStdString());
                QVERIFY(k >= 0);
                for (Index j = 0; j < session.m(); ++j)
                    QVERIFY2(std::abs(comparison.weights(k, j) - underIt.heads[head].weights(i, j)) <
                                 tolerance,
                             qPrintable(QStringLiteral("%1 head %2 row %3 key %4")
                                            .arg(QLatin1String(example))
                                            .arg(head)
                                            .arg(i)
                                            .arg(j)));
            }
    }
}

void TestViewData::distributionsSumToOne_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<double>("temperature");
    QTest::newRow("love τ=1") << QStringLiteral("love") << 1.0;
    QTest::newRow("love τ=0.25") << QStringLiteral("love") << 0.25;
    QTest::newRow("sparsemax τ=1") << QStringLiteral("sparsemax") << 1.0;
    QTest::newRow("causal τ=3") << QStringLiteral("causal") << 3.0;
}

void TestViewData::distributionsSumToOne()
{
    QFETCH(QString, example);
    QFETCH(double, temperature);
    const AttentionResult result = computeAttention(loadExample(example.toStdString()));
    const HeadResult& h = result.heads[0];
    for (Index i = 0; i < h.scaled.rows(); ++i) {
        const NormalizerComparison comparison = compareNormalizers(h, i, temperature);
        for (const char* name : {"softmax", "sparsemax", "1.5-entmax", "hardmax"})
            QVERIFY2(std::abs(comparison.weights.row(rowOf(comparison, name)).sum() - 1.0) < 1e-9,
                     qPrintable(QStringLiteral("%1 row %2").arg(QLatin1String(name)).arg(i)));
        QVERIFY(comparison.weights.minCoeff() >= 0.0);
        QVERIFY(comparison.weights.maxCoeff() <= 1.0);
    }
}

void TestViewData::maskedKeysAreZero()
{
    const Session session = loadExample("causal");
    const AttentionResult result = computeAttention(session);
    const HeadResult& h = result.heads[0];
    QVERIFY(h.allowed.rows() >= 2);
    for (Index i = 0; i < h.allowed.rows(); ++i) {
        const NormalizerComparison comparison = compareNormalizers(h, i, 1.0);
        for (Index j = 0; j < h.allowed.cols(); ++j)
            if (h.allowed(i, j) == 0)
                for (Index k = 0; k < comparison.weights.rows(); ++k)
                    QCOMPARE(comparison.weights(k, j), 0.0);
    }
    // Row 0 of a causal mask sees only key 0: every normalizer but sigmoid puts all its weight there.
    const NormalizerComparison first = compareNormalizers(h, 0, 1.0);
    for (const char* name : {"softmax", "sparsemax", "1.5-entmax", "hardmax"})
        QKV_COMPARE_NEAR(first.weights(rowOf(first, name), 0), 1.0, tolerance);
}

void TestViewData::badArgumentsThrow()
{
    const AttentionResult result = computeAttention(loadExample("love"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, compareNormalizers(result.heads[0], 3, 1.0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, compareNormalizers(result.heads[0], -1, 1.0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compareNormalizers(result.heads[0], 0, 0.0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compareNormalizers(result.heads[0], 0, std::nan("")));
}

void TestViewData::headSummaryByHand()
{
    HeadResult h;
    h.allowed = MaskMatrix(3, 2);
    h.allowed << 1, 1, //
        0, 0,          // an empty row: left out of the means
        1, 0;
    h.rowStats = {{0.6, 2, 0.7, 1.0}, {0.0, 0, 0.0, 0.0}, {0.0, 1, 1.0, 1.0}};
    h.emptyRows = {1};
    const HeadSummary summary = summarizeHead(h);
    QCOMPARE(summary.nonEmptyRows, Index(2));
    QKV_COMPARE_NEAR(summary.meanEntropy, 0.3, tolerance);
    QKV_COMPARE_NEAR(summary.meanSupport, 1.5, tolerance);

    HeadResult allEmpty;
    allEmpty.allowed = MaskMatrix::Zero(2, 2);
    allEmpty.rowStats.resize(2);
    const HeadSummary none = summarizeHead(allEmpty);
    QCOMPARE(none.nonEmptyRows, Index(0));
    QCOMPARE(none.meanEntropy, 0.0);
    QCOMPARE(none.meanSupport, 0.0);
}

void TestViewData::headSummaryOfAnExample()
{
    const AttentionResult result = computeAttention(loadExample("multihead"));
    for (const HeadResult& h : result.heads) {
        const HeadSummary summary = summarizeHead(h);
        QCOMPARE(summary.nonEmptyRows, Index(4));
        double entropy = 0.0;
        for (const RowStats& stats : h.rowStats)
            entropy += stats.entropy;
        QKV_COMPARE_NEAR(summary.meanEntropy, entropy / 4.0, tolerance);
        QCOMPARE(summary.meanSupport, 4.0); // softmax: every key has a positive weight
    }
}

QKV_TEST_APPLESS_MAIN(TestViewData)
#include "tst_viewdata.moc"
