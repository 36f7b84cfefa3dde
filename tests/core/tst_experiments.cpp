// SPDX-License-Identifier: GPL-3.0-or-later
// The articles' experiments in core: the √d_k variance experiment against NumPy (bit for bit) and its
// convergence, and scaled vs unscaled attention through the engine, with the own example of Brenndoerfer's
// article (docs/references.md).

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "NumpyRandom.h"
#include "ScalingComparison.h"
#include "VarianceExperiment.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <cmath>
#include <vector>

using namespace qkv;

class TestExperiments : public QObject {
    Q_OBJECT
private slots:
    void varianceEqualsNumpy();
    void varianceConverges_data();
    void varianceConverges();
    void varianceRefusesBadSettings();
    void numpySumOrder();
    void scalingMatchesTheEngine_data();
    void scalingMatchesTheEngine();
    void scalingOfTheArticlesExample();
    void scalingRefusesBadSettings();
};

// The article's measure_dot_product_variance for dimensions [4 … 512] after np.random.seed(42), 10 000
// samples.
// Reference computed once with Debian's python3-numpy 1.24.2:
//   np.random.seed(42); [np.sum(np.random.randn(10000, d) * np.random.randn(10000, d), axis=1).var() …]
void TestExperiments::varianceEqualsNumpy()
{
    VarianceSettings settings;
    settings.dimensions = {4, 8, 16, 32, 64, 128, 256, 512};
    settings.samples = 10000;
    settings.seed = 42;
    const std::vector<double> numpy = {4.027590312633204,  7.968038365185051, 16.080980096875447,
                                       31.170989066709193, 63.87141582982411, 132.30932539379677,
                                       256.28304573544415, 507.78358699646293};
    const std::vector<VariancePoint> points = measureDotProductVariance(settings);
    QCOMPARE(points.size(), numpy.size());
    for (std::size_t i = 0; i < numpy.size(); ++i) {
        QCOMPARE(points[i].dK, settings.dimensions[i]);
        QKV_COMPARE_NEAR(points[i].unscaled, numpy[i], 0.0); // bit for bit
    }
    // The default axis 1 … 1024 from seed 42, unscaled and ÷ √d_k (same reference run, same NumPy).
    settings.dimensions = defaultVarianceDimensions();
    const std::vector<VariancePoint> all = measureDotProductVariance(settings);
    QCOMPARE(all.size(), std::size_t(11));
    QKV_COMPARE_NEAR(all[0].unscaled, 1.0041771935738826, 0.0);
    QKV_COMPARE_NEAR(all[6].unscaled, 64.68539456939652, 0.0);
    QKV_COMPARE_NEAR(all[6].scaled, 1.0107092901468206, 0.0);
    QKV_COMPARE_NEAR(all[10].unscaled, 1032.545580277082, 0.0);
    QKV_COMPARE_NEAR(all[10].scaled, 1.008345293239338, 0.0);
}

void TestExperiments::varianceConverges_data()
{
    QTest::addColumn<unsigned>("seed");
    QTest::addColumn<int>("samples");
    QTest::newRow("seed 42, 10 000") << 42u << 10000;
    QTest::newRow("seed 7, 20 000") << 7u << 20000;
    QTest::newRow("seed 2^32-1, 5 000") << 4294967295u << 5000;
}

// Var(q·k) = d_k and Var(q·k/√d_k) = 1, each within 3 of its own standard errors, for every d_k.
void TestExperiments::varianceConverges()
{
    QFETCH(unsigned, seed);
    QFETCH(int, samples);
    VarianceSettings settings;
    settings.dimensions = {1, 3, 16, 100, 256};
    settings.samples = samples;
    settings.seed = seed;
    for (const VariancePoint& p : measureDotProductVariance(settings)) {
        const auto d = static_cast<double>(p.dK);
        QVERIFY(p.unscaledError > 0.0 && p.scaledError > 0.0);
        // The standard error of a variance of n samples is about σ² √(2/n) (more for the heavy-tailed d_k =
        // 1).
        QVERIFY2(p.unscaledError < 4.0 * d * std::sqrt(2.0 / samples),
                 qPrintable(QString::number(p.unscaledError)));
        QVERIFY2(std::abs(p.unscaled - d) <= 3.0 * p.unscaledError,
                 qPrintable(QStringLiteral("d_k %1: %2 ± %3").arg(d).arg(p.unscaled).arg(p.unscaledError)));
        QVERIFY2(std::abs(p.scaled - 1.0) <= 3.0 * p.scaledError,
                 qPrintable(QStringLiteral("d_k %1: %2 ± %3").arg(d).arg(p.scaled).arg(p.scaledError)));
        QKV_COMPARE_NEAR(p.scaled, p.unscaled / d, 1e-12 * p.scaled);
    }
}

void TestExperiments::varianceRefusesBadSettings()
{
    VarianceSettings settings;
    settings.dimensions = {4, 0};
    QVERIFY_THROWS_EXCEPTION(qkv::Error, measureDotProductVariance(settings));
    settings.dimensions = {4};
    settings.samples = 1;
    QVERIFY_THROWS_EXCEPTION(qkv::Error, measureDotProductVariance(settings));
    settings.samples = 10;
    settings.seed = 1ull << 32;
    QVERIFY_THROWS_EXCEPTION(qkv::Error, measureDotProductVariance(settings));
    settings.seed = 1;
    settings.dimensions = {4096};
    settings.samples = VarianceSettings::maxSamples;
    QVERIFY_THROWS_EXCEPTION(qkv::Error, measureDotProductVariance(settings));
    settings.dimensions.clear();
    QVERIFY_THROWS_EXCEPTION(qkv::Error, measureDotProductVariance(settings));
}

// NumPy's order: pairwise in eights, chunks of 8192; checked on values where the order shows.
void TestExperiments::numpySumOrder()
{
    std::vector<double> values(20000);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = (i % 3 == 0 ? 1e16 : 1.0) * (i % 2 == 0 ? 1.0 : -1.0) + 0.1 * static_cast<double>(i % 7);
    // np.add.reduce of the same array (python3-numpy 1.24.2), the first 9, 200 and 20000 values; a sum from
    // left to right gives 1.0000000000000002e16, 1.0000000000000072e16 and 1.0000000000007616e16.
    QKV_COMPARE_NEAR(numpySum(values.data(), 9), 1.0000000000000004e16, 0.0);
    QKV_COMPARE_NEAR(numpySum(values.data(), 200), 1.0000000000000024e16, 0.0);
    QKV_COMPARE_NEAR(numpySum(values.data(), 20000), 1.0000000000002672e16, 0.0);
}

void TestExperiments::scalingMatchesTheEngine_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<int>("head");
    QTest::newRow("love") << QStringLiteral("love") << 0;
    QTest::newRow("multihead head 2") << QStringLiteral("multihead") << 1;
}

// Each side is exactly what the engine computes for the session under that setting.
void TestExperiments::scalingMatchesTheEngine()
{
    QFETCH(QString, example);
    QFETCH(int, head);
    const Session session = loadExample(example.toStdString());
    ScalingSetting scaled{Scale{Scale::Kind::SqrtDk, 1.0}, 1.0};
    ScalingSetting other{Scale{Scale::Kind::Constant, 0.5}, 2.0};
    const ScalingComparison c = compareScaling(session, head, scaled, other);
    for (const auto& [setting, side] : {std::pair{scaled, c.first}, std::pair{other, c.second}}) {
        Session copy = session;
        copy.scale = setting.scale;
        copy.temperature = setting.temperature;
        const AttentionResult result = computeAttention(copy);
        const HeadResult& r = result.heads[static_cast<std::size_t>(head)];
        QKV_COMPARE_NEAR(side.weights, r.weights, 0.0);
        QKV_COMPARE_NEAR(side.scaled, r.scaled, 0.0);
        for (std::size_t i = 0; i < r.rowStats.size(); ++i)
            QKV_COMPARE_NEAR(side.entropy[i], r.rowStats[i].entropy, 0.0);
    }
    QKV_COMPARE_NEAR(c.first.divisor, std::sqrt(static_cast<double>(session.dK())), 0.0);
    QKV_COMPARE_NEAR(c.second.divisor, 0.5, 0.0);
    // Unscaled, the example's rows are sharper: lower mean entropy.
    const ScalingComparison plain = compareScaling(session, head, scaled, alternativeSetting(session));
    QCOMPARE(plain.second.setting.scale.kind, Scale::Kind::None);
    QVERIFY(plain.second.meanEntropy < plain.first.meanEntropy);
}

// The article's example: np.random.seed(42); Q = randn(1, 64); K = randn(8, 64); softmax of Q Kᵀ unscaled
// and ÷ 8. The article's text says "position 3 receives 91%" unscaled; its code gives key 4 (0-based) 97.76%
// unscaled and 44.0% scaled (python3-numpy 1.24.2; 91% matches no d_k of that code). The test checks the
// code's numbers.
void TestExperiments::scalingOfTheArticlesExample()
{
    NumpyRandom random(42);
    const Matrix Q = random.randn(1, 64);
    const Matrix K = random.randn(8, 64);
    const Session session = querySessionFromMatrices(Q, K);
    ScalingSetting unscaled{Scale{Scale::Kind::None, 1.0}, 1.0};
    ScalingSetting scaled{Scale{Scale::Kind::SqrtDk, 1.0}, 1.0};
    const ScalingComparison c = compareScaling(session, 0, unscaled, scaled);
    const RowVector raw = c.first.scaled.row(0);
    const std::vector<double> numpyScores = {1.18198354,  -1.2590833,  -2.2594352, -7.10907294,
                                             16.87498927, -9.82235659, 5.01819597, 13.09982699};
    for (Index j = 0; j < 8; ++j)
        QKV_COMPARE_NEAR(raw(j), numpyScores[static_cast<std::size_t>(j)], 5e-8);
    const std::vector<double> numpyUnscaled = {1.49542204e-07, 1.30203279e-08, 4.78822568e-09,
                                               3.74976199e-11, 9.77573840e-01, 2.48679270e-12,
                                               6.93121975e-06, 2.24190613e-02};
    const std::vector<double> numpyScaled = {0.06189289, 0.04561661, 0.04025475, 0.02195562,
                                             0.4401128,  0.01564049, 0.09997617, 0.27455066};
    for (Index j = 0; j < 8; ++j) {
        QKV_COMPARE_NEAR(c.first.weights(0, j), numpyUnscaled[static_cast<std::size_t>(j)], 5e-9);
        QKV_COMPARE_NEAR(c.second.weights(0, j), numpyScaled[static_cast<std::size_t>(j)], 5e-8);
    }
    Index top = 0;
    c.first.weights.row(0).maxCoeff(&top);
    QCOMPARE(top, Index(4));
    QKV_COMPARE_NEAR(c.first.topWeight[0], 0.9775738401225624, 1e-12);
    QCOMPARE(c.second.divisor, 8.0);
    QVERIFY(c.second.entropy[0] > c.first.entropy[0] + 1.0);
}

void TestExperiments::scalingRefusesBadSettings()
{
    const Session session = loadExample("love");
    const ScalingSetting fine{};
    QVERIFY_THROWS_EXCEPTION(qkv::Error, compareScaling(session, 0, fine, ScalingSetting{Scale{}, 0.0}));
    QVERIFY_THROWS_EXCEPTION(
        Error, compareScaling(session, 0, fine, ScalingSetting{Scale{Scale::Kind::Constant, -1.0}, 1.0}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, compareScaling(session, 3, fine, fine));
    QVERIFY_THROWS_EXCEPTION(qkv::Error, querySessionFromMatrices(Matrix::Ones(1, 3), Matrix::Ones(2, 4)));
}

QKV_TEST_APPLESS_MAIN(TestExperiments)
#include "tst_experiments.moc"
