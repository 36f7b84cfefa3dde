// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline (docs/semantics.md) against the articles' worked examples (docs/references.md) and hand
// computations.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "Initializers.h"
#include "ResourceLimits.h"

#include "ResultBits.h"
#include "TestMatrices.h"
#include "TestSessions.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

using namespace qkv;

namespace {

using test::fromRows;
using test::sameResultBits;
using test::SessionBuilder;

/// `input` · `weights` + `bias` by plain loops (the bias skipped when empty).
Matrix affineByLoops(const Matrix& input, const Matrix& weights, const Vector& bias)
{
    Matrix out(input.rows(), weights.cols());
    for (Index r = 0; r < input.rows(); ++r)
        for (Index c = 0; c < weights.cols(); ++c) {
            double sum = 0.0;
            for (Index t = 0; t < input.cols(); ++t)
                sum += input(r, t) * weights(t, c);
            out(r, c) = sum + (bias.size() > 0 ? bias(c) : 0.0);
        }
    return out;
}

/// Softmax(Q Kᵀ / √d_k) V by plain loops (no mask).
Matrix attentionByLoops(const Matrix& Q, const Matrix& K, const Matrix& V)
{
    Matrix out = Matrix::Zero(Q.rows(), V.cols());
    for (Index i = 0; i < Q.rows(); ++i) {
        std::vector<double> a(static_cast<std::size_t>(K.rows()));
        double largest = -HUGE_VAL, total = 0.0;
        for (Index j = 0; j < K.rows(); ++j) {
            double dot = 0.0;
            for (Index t = 0; t < Q.cols(); ++t)
                dot += Q(i, t) * K(j, t);
            a[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(Q.cols()));
            largest = std::max(largest, a[static_cast<std::size_t>(j)]);
        }
        for (double& x : a)
            total += (x = std::exp(x - largest));
        for (Index j = 0; j < K.rows(); ++j)
            for (Index c = 0; c < V.cols(); ++c)
                out(i, c) += a[static_cast<std::size_t>(j)] / total * V(j, c);
    }
    return out;
}

/// Biases with every entry different from 0, for every head and for W_O.
void addBiases(Session& s, std::uint64_t seed)
{
    for (Head& head : s.heads) {
        head.b_Q = initializeMatrix({Initializer::Normal, 1.0, seed++}, head.W_Q.cols(), 1).col(0);
        head.b_K = initializeMatrix({Initializer::Normal, 1.0, seed++}, head.W_K.cols(), 1).col(0);
        head.b_V = initializeMatrix({Initializer::Normal, 1.0, seed++}, head.W_V.cols(), 1).col(0);
    }
    if (s.W_O)
        s.b_O = initializeMatrix({Initializer::Normal, 1.0, seed}, s.W_O->cols(), 1).col(0);
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void loveAI();
    void catSat();
    void everyExampleComputes();
    void crossAttentionShapes();
    void multiHeadConcatAndOutputProjection();
    void scoringFunctions_data();
    void scoringFunctions();
    void cosineOfZeroVectorIsZero();
    void scaleAndTemperature();
    void fullyMaskedRows();
    void rowStatistics();
    void noNaNUnderExtremes_data();
    void noNaNUnderExtremes();
    void overflowIsAnError();
    void invalidSessionsAreRefused_data();
    void invalidSessionsAreRefused();
    void nonFiniteOperandsAreNamedAsValidationNamesThem();
    void reusedProjectionsGiveTheSameBits();
    void reusedBuffersGiveTheSameResult();
    void overflowingResultsNameStageAndHead_data();
    void overflowingResultsNameStageAndHead();
    void overflowingProjectionsAreNamedFirst();
    void scoresSpanningMoreThanTheDoubleRange_data();
    void scoresSpanningMoreThanTheDoubleRange();
    void identicalTokensShareHardmaxEqually();
    void identicalTokensOfALongSequenceShareTheirRows();
    void memoryGuardRefusesBeforeAllocating();
    void cancelledComputationStops();
    void biasesAreAddedAfterTheProducts_data();
    void biasesAreAddedAfterTheProducts();
    void zeroBiasesChangeNothing();
    void biasMessagesNameTheKey_data();
    void biasMessagesNameTheKey();
};

void TestEngine::loveAI()
{
    const AttentionResult r = computeAttention(loadExample("love"));
    QCOMPARE(r.heads.size(), std::size_t(1));
    const HeadResult& h = r.heads[0];
    QKV_COMPARE_NEAR(h.Q, fromRows({{2, 0, 1}, {0, 2, 1}, {1, 1, 1}}), 0);
    QKV_COMPARE_NEAR(h.K, fromRows({{0, 1, 1}, {2, 1, 1}, {1, 1, 1}}), 0);
    QKV_COMPARE_NEAR(h.V, fromRows({{1, 0, 1}, {1, 2, 0}, {1, 1, 0}}), 0);
    QKV_COMPARE_NEAR(h.scores, fromRows({{1, 5, 3}, {3, 3, 3}, {2, 4, 3}}), 0);
    // The article prints three decimals.
    QKV_COMPARE_NEAR(h.scaled,
                     fromRows({{0.577, 2.887, 1.732}, {1.732, 1.732, 1.732}, {1.155, 2.309, 1.732}}), 5e-4);
    QKV_COMPARE_NEAR(h.weights,
                     fromRows({{0.070, 0.707, 0.223}, {0.333, 0.333, 0.333}, {0.168, 0.533, 0.299}}), 5e-4);
    // The article's "love" row prints 0.999 because it multiplies the rounded 0.333; the exact value is 1.
    QKV_COMPARE_NEAR(h.output,
                     fromRows({{1.000, 1.637, 0.070}, {1.000, 1.000, 0.333}, {1.000, 1.365, 0.168}}), 5e-4);
    QCOMPARE(h.output(1, 0), 1.0);
    QKV_COMPARE_NEAR(h.output(1, 1), 1.0, 1e-15);
    QKV_COMPARE_NEAR(r.output, h.output, 0);
    // Exact values, independent of the article's rounding.
    const double e0 = std::exp(1 / std::sqrt(3.0)), e1 = std::exp(5 / std::sqrt(3.0)),
                 e2 = std::exp(3 / std::sqrt(3.0));
    QKV_COMPARE_NEAR(h.weights(0, 1), e1 / (e0 + e1 + e2), 1e-15);
    QVERIFY(h.emptyRows.empty());
}

void TestEngine::catSat()
{
    const AttentionResult r = computeAttention(loadExample("cat-sat"));
    const HeadResult& h = r.heads[0];
    QKV_COMPARE_NEAR(h.Q, fromRows({{1, 0, 1, 0}, {0, 1, 0, 1}}), 0);
    QKV_COMPARE_NEAR(h.K, fromRows({{1, 0, 1, 0}, {0, 1, 0, 1}}), 0);
    QKV_COMPARE_NEAR(h.V, fromRows({{2, 3}, {5, 7}}), 0);
    QKV_COMPARE_NEAR(h.scores, fromRows({{2, 0}, {0, 2}}), 0);
    QKV_COMPARE_NEAR(h.scaled, fromRows({{1, 0}, {0, 1}}), 0);
    QKV_COMPARE_NEAR(h.weights, fromRows({{0.73, 0.27}, {0.27, 0.73}}), 5e-3);
    QKV_COMPARE_NEAR(h.output, fromRows({{2.81, 4.08}, {4.19, 5.92}}), 5e-3);
}

void TestEngine::everyExampleComputes()
{
    for (const ExampleInfo& example : builtinExamples()) {
        const Session s = loadExample(example.name);
        const AttentionResult r = computeAttention(s);
        QVERIFY2(r.output.allFinite(), example.name.c_str());
        QCOMPARE(r.output.rows(), s.n());
        QCOMPARE(r.heads.size(), s.heads.size());
    }
    // The sparsemax example exists to show exact zeros.
    const AttentionResult sparse = computeAttention(loadExample("sparsemax"));
    QVERIFY((sparse.heads[0].weights.array() == 0.0).any());
}

void TestEngine::crossAttentionShapes()
{
    const Session s = SessionBuilder(3, 4).context(5).heads(1, 2, 3).build(7);
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    QCOMPARE(h.Q.rows(), Index(3));
    QCOMPARE(h.K.rows(), Index(5));
    QCOMPARE(h.V.rows(), Index(5));
    QCOMPARE(h.scores.rows(), Index(3));
    QCOMPARE(h.scores.cols(), Index(5));
    QCOMPARE(h.output.rows(), Index(3));
    QCOMPARE(h.output.cols(), Index(3));
    // Keys and values come from Z, queries from X.
    QKV_COMPARE_NEAR(h.K, s.context->Z * s.heads[0].W_K, 1e-14);
    QKV_COMPARE_NEAR(h.Q, s.X * s.heads[0].W_Q, 1e-14);
    for (Index i = 0; i < 3; ++i)
        QKV_COMPARE_NEAR(h.weights.row(i).sum(), 1, 1e-12);
}

void TestEngine::multiHeadConcatAndOutputProjection()
{
    Session s = SessionBuilder(4, 6).heads(3, 3, 2).build(11);
    s.W_O = initializeMatrix({Initializer::XavierUniform, 1.0, 99}, 6, 5);
    const AttentionResult r = computeAttention(s);
    QCOMPARE(r.concat.rows(), Index(4));
    QCOMPARE(r.concat.cols(), Index(6));
    for (int h = 0; h < 3; ++h) {
        // Each head by hand: softmax(Q Kᵀ / √d_k) V.
        const Head& head = s.heads[static_cast<std::size_t>(h)];
        const Matrix Q = s.X * head.W_Q, K = s.X * head.W_K, V = s.X * head.W_V;
        Matrix A = (Q * K.transpose()) / std::sqrt(3.0);
        for (Index i = 0; i < A.rows(); ++i) {
            A.row(i) = (A.row(i).array() - A.row(i).maxCoeff()).exp();
            A.row(i) /= A.row(i).sum();
        }
        QKV_COMPARE_NEAR(r.concat.middleCols(h * 2, 2), A * V, 1e-13);
    }
    QKV_COMPARE_NEAR(r.output, r.concat * *s.W_O, 1e-13);
    QCOMPARE(r.output.cols(), Index(5));
}

void TestEngine::scoringFunctions_data()
{
    QTest::addColumn<int>("score");
    QTest::newRow("dot") << int(ScoreFunction::Dot);
    QTest::newRow("general") << int(ScoreFunction::General);
    QTest::newRow("additive") << int(ScoreFunction::Additive);
    QTest::newRow("cosine") << int(ScoreFunction::Cosine);
}

void TestEngine::scoringFunctions()
{
    QFETCH(int, score);
    Session s = SessionBuilder(3, 5).context(4).heads(1, 3, 2).build(21);
    s.score = static_cast<ScoreFunction>(score);
    s.scale = defaultScale(s.score);
    Head& head = s.heads[0];
    head.W_S = initializeMatrix({Initializer::Normal, 1.0, 31}, 3, 3);
    head.W_a = initializeMatrix({Initializer::Normal, 1.0, 32}, 3, 4);
    head.U_a = initializeMatrix({Initializer::Normal, 1.0, 33}, 3, 4);
    head.v_a = initializeMatrix({Initializer::Normal, 1.0, 34}, 4, 1);
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    for (Index i = 0; i < 3; ++i)
        for (Index j = 0; j < 4; ++j) {
            const RowVector q = h.Q.row(i), k = h.K.row(j);
            double expected = 0;
            switch (s.score) {
            case ScoreFunction::Dot:
                expected = q.dot(k);
                break;
            case ScoreFunction::General:
                expected = (q * head.W_S * k.transpose())(0, 0);
                break;
            case ScoreFunction::Additive: {
                const RowVector hidden = q * head.W_a + k * head.U_a;
                for (Index a = 0; a < 4; ++a)
                    expected += head.v_a(a) * std::tanh(hidden(a));
                break;
            }
            case ScoreFunction::Cosine:
                expected = q.dot(k) / (q.norm() * k.norm());
                break;
            }
            QVERIFY2(std::abs(h.scores(i, j) - expected) < 1e-12,
                     qPrintable(QString::number(h.scores(i, j))));
        }
    const double divisor =
        (s.score == ScoreFunction::Dot || s.score == ScoreFunction::General) ? std::sqrt(3.0) : 1.0;
    QKV_COMPARE_NEAR(h.scaled, h.scores / divisor, 1e-15);
}

void TestEngine::cosineOfZeroVectorIsZero()
{
    Session s = loadExample("love");
    s.score = ScoreFunction::Cosine;
    s.X.row(0).setZero(); // query "I" and key "I" become zero vectors
    const AttentionResult r = computeAttention(s);
    QVERIFY(r.heads[0].scores.row(0).isZero(0));
    QVERIFY(r.heads[0].scores.col(0).isZero(0));
    QVERIFY(r.output.allFinite());
}

void TestEngine::scaleAndTemperature()
{
    Session s = loadExample("love");
    s.scale = {Scale::Kind::None, 1.0};
    QCOMPARE(computeAttention(s).heads[0].scaled, computeAttention(s).heads[0].scores);
    s.scale = {Scale::Kind::Constant, 4.0};
    const AttentionResult byFour = computeAttention(s);
    QKV_COMPARE_NEAR(byFour.heads[0].scaled, byFour.heads[0].scores / 4.0, 0);
    // Temperature 2 on scale 2 equals temperature 1 on scale 4 for softmax.
    s.scale = {Scale::Kind::Constant, 2.0};
    s.temperature = 2.0;
    QKV_COMPARE_NEAR(computeAttention(s).heads[0].weights, byFour.heads[0].weights, 1e-15);
}

void TestEngine::fullyMaskedRows()
{
    Session s = loadExample("love");
    s.pad = {false, true, false}; // "love" is padding: its row and its column are masked
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    QCOMPARE(h.emptyRows, std::vector<Index>{1});
    QVERIFY(h.weights.row(1).isZero(0));
    QVERIFY(h.weights.col(1).isZero(0));
    QVERIFY(h.output.row(1).isZero(0));
    QCOMPARE(h.rowStats[1], RowStats{});
    QKV_COMPARE_NEAR(h.weights.row(0).sum(), 1, 1e-15);
    // Causal with a custom all-zero row.
    s.pad = {false, false, false};
    s.mask.type = MaskType::Custom;
    s.mask.allowed = MaskMatrix::Ones(3, 3);
    s.mask.allowed.row(2).setZero();
    const AttentionResult custom = computeAttention(s);
    QCOMPARE(custom.heads[0].emptyRows, std::vector<Index>{2});
    QVERIFY(custom.output.allFinite());
}

void TestEngine::rowStatistics()
{
    const AttentionResult r = computeAttention(loadExample("love"));
    const HeadResult& h = r.heads[0];
    for (Index i = 0; i < 3; ++i) {
        double entropy = 0;
        for (Index j = 0; j < 3; ++j)
            entropy -= h.weights(i, j) * std::log(h.weights(i, j));
        const RowStats& stats = h.rowStats[static_cast<std::size_t>(i)];
        QKV_COMPARE_NEAR(stats.entropy, entropy, 1e-14);
        QCOMPARE(stats.support, Index(3));
        QCOMPARE(stats.max, h.weights.row(i).maxCoeff());
        QKV_COMPARE_NEAR(stats.sum, 1, 1e-15);
    }
    QKV_COMPARE_NEAR(h.rowStats[1].entropy, std::log(3.0), 1e-15);
    // The unmasked softmax path hands over its entropy (ln Σe^z − Σ p z): it must equal −Σ a ln a.
    const AttentionResult big =
        computeAttention(SessionBuilder(40, 16).context(300).heads(1, 8, 4).build(77));
    for (Index i = 0; i < 40; ++i) {
        const auto row = big.heads[0].weights.row(i).array();
        const double direct = -(row * row.log()).sum();
        QVERIFY2(std::abs(big.heads[0].rowStats[static_cast<std::size_t>(i)].entropy - direct) < 1e-13,
                 qPrintable(QString::number(direct)));
    }
    // Sparse rows: 0 ln 0 = 0, support counts only positive weights.
    const double w[] = {0.0, 0.25, 0.75};
    const RowStats sparse = qkv::rowStatistics(w, 3);
    QCOMPARE(sparse.support, Index(2));
    QKV_COMPARE_NEAR(sparse.entropy, (-0.25 * std::log(0.25) - 0.75 * std::log(0.75)), 1e-15);
}

void TestEngine::noNaNUnderExtremes_data()
{
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<double>("magnitude");
    QTest::addColumn<double>("temperature");
    for (int type = 0; type <= int(NormalizerType::Hardmax); ++type)
        for (double magnitude : {1e-300, 1.0, 1e150})
            for (double temperature : {1e-300, 1e-10, 1.0, 1e10, 1e300})
                QTest::addRow("%s/|X|=%g/tau=%g", toString(NormalizerType(type)), magnitude, temperature)
                    << type << magnitude << temperature;
}

void TestEngine::noNaNUnderExtremes()
{
    QFETCH(int, normalizer);
    QFETCH(double, magnitude);
    QFETCH(double, temperature);
    // |X| = 1e150 with unit weights gives scores near ±1e300, close to the largest double.
    Session s = SessionBuilder(5, 2).heads(1, 2, 2).build(3);
    s.X *= magnitude;
    s.heads[0].W_Q.setIdentity();
    s.heads[0].W_K.setIdentity();
    s.heads[0].W_K(1, 1) = -1;
    s.heads[0].W_V.setIdentity();
    s.X /= std::max(1.0, s.X.cwiseAbs().maxCoeff() / magnitude); // keep |x| ≤ magnitude so q·k ≤ 2·1e300
    s.scale = {Scale::Kind::None, 1.0};
    s.normalizer.type = static_cast<NormalizerType>(normalizer);
    s.temperature = temperature;
    s.mask.type = MaskType::Causal;
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    QVERIFY(h.weights.allFinite());
    QVERIFY(r.output.allFinite());
    QVERIFY((h.weights.array() >= 0).all() && (h.weights.array() <= 1).all());
    if (s.normalizer.type != NormalizerType::Sigmoid)
        for (Index i = 0; i < 5; ++i)
            QVERIFY2(std::abs(h.weights.row(i).sum() - 1) < 1e-12,
                     qPrintable(QString::number(h.weights.row(i).sum())));
}

void TestEngine::overflowIsAnError()
{
    Session s = loadExample("love");
    s.X *= 1e200; // q·k ≈ 1e400 does not fit in a double
    try {
        computeAttention(s);
        QFAIL("expected an error");
    } catch (const Error& e) {
        QVERIFY2(QByteArray(e.what()).startsWith("heads[0]."), e.what());
        QVERIFY2(QByteArray(e.what()).contains("overflows"), e.what());
    }
}

void TestEngine::invalidSessionsAreRefused_data()
{
    QTest::addColumn<int>("variant");
    QTest::addColumn<QString>("path");
    QTest::newRow("tokens") << 0 << QStringLiteral("tokens");
    QTest::newRow("temperature") << 1 << QStringLiteral("temperature");
    QTest::newRow("W_K") << 2 << QStringLiteral("heads[0].W_K");
    QTest::newRow("alpha") << 3 << QStringLiteral("normalizer.alpha");
    QTest::newRow("W_S") << 4 << QStringLiteral("heads[0].W_S");
    QTest::newRow("custom") << 5 << QStringLiteral("mask.allowed");
    QTest::newRow("heads") << 6 << QStringLiteral("heads");
    QTest::newRow("nan") << 7 << QStringLiteral("X");
}

void TestEngine::invalidSessionsAreRefused()
{
    QFETCH(int, variant);
    QFETCH(QString, path);
    Session s = loadExample("love");
    switch (variant) {
    case 0:
        s.tokens.pop_back();
        break;
    case 1:
        s.temperature = 0;
        break;
    case 2:
        s.heads[0].W_K = Matrix::Zero(3, 3);
        break;
    case 3:
        s.normalizer = {NormalizerType::Entmax, 0.5};
        break;
    case 4:
        s.score = ScoreFunction::General;
        break;
    case 5:
        s.mask.type = MaskType::Custom;
        break;
    case 6:
        s.heads.clear();
        break;
    case 7:
        s.X(0, 0) = std::nan("");
        break;
    }
    try {
        computeAttention(s);
        QFAIL("expected an error");
    } catch (const Error& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(path + QLatin1Char(':')), e.what());
    }
}

// The engine reads X, Z and the projections for infinities and NaN only when the computation fails
// (FiniteScan): every such entry must still stop it, with the message a full validation gives, whatever the
// precision, positions, score or zeros beside it (∞ · 0 is NaN), and ahead of any later problem.
void TestEngine::nonFiniteOperandsAreNamedAsValidationNamesThem()
{
    std::mt19937_64 random(20261128);
    const auto pick = [&random](Index count) { return static_cast<Index>(random() % std::uint64_t(count)); };
    const double values[] = {std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::nan("")};
    for (int trial = 0; trial < 300; ++trial) {
        const Index n = 1 + pick(6);
        const Index contextTokens = trial % 3 == 0 ? 1 + pick(5) : 0;
        const Index dK = 2 * (1 + pick(3));
        const int heads = 1 + int(pick(3));
        const Index dV = 1 + pick(4);
        const Index dModel = 1 + pick(5);
        Session s = SessionBuilder(n, dModel).context(contextTokens).heads(heads, dK, dV).build(trial);
        s.precision = trial % 2 ? Precision::Float32 : Precision::Float64;
        s.positions.type =
            std::array{PositionType::None, PositionType::Rope, PositionType::Sinusoidal}[trial % 5 % 3];
        s.score = trial % 7 == 0 ? ScoreFunction::Cosine : ScoreFunction::Dot;
        Head& head = s.heads[std::size_t(pick(Index(s.heads.size())))];
        Matrix* targets[] = {&s.X, s.context ? &s.context->Z : &s.X, &head.W_Q, &head.W_K, &head.W_V};
        Matrix& target = *targets[pick(5)];
        const Index row = pick(target.rows()), column = pick(target.cols());
        target(row, column) = values[pick(3)];
        if (trial % 4 == 0) // the infinity's partners in its products are zero
            for (Matrix* m : targets)
                if (m != &target)
                    m->setZero();
        if (trial % 6 == 0)
            s.temperature = 0; // a problem that validation names later
        const std::string expected = validate(s);
        QVERIFY2(!expected.empty(), "validation should refuse a non-finite operand");
        try {
            computeAttention(s);
            QFAIL(qPrintable(QStringLiteral("trial %1: expected \"%2\"")
                                 .arg(trial)
                                 .arg(QString::fromStdString(expected))));
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), expected);
        }
    }
    // Stopped before the projections: stopped, not refused, even with an infinity waiting in X.
    Session s = SessionBuilder(4, 3).heads(1, 2, 2).build(1);
    s.X(1, 1) = std::numeric_limits<double>::infinity();
    const std::atomic<bool> stop{true};
    QVERIFY_THROWS_EXCEPTION(Cancelled, computeAttention(s, ComputeOptions{&stop}));
}

// A computation given the previous one copies the projections whose inputs did not change: the result must
// be the same bits as computing everything (or the same refusal), whatever the edit, precision or positions;
// and it must copy exactly those (the previous result's Q, K, V are marked to tell).
void TestEngine::reusedProjectionsGiveTheSameBits()
{
    std::mt19937_64 random(20261128);
    const auto pick = [&random](Index count) { return static_cast<Index>(random() % std::uint64_t(count)); };
    enum Edit {
        QueryWeight,
        KeyWeight,
        ValueWeight,
        QueryBias,
        Input,
        KeyInput,
        Positions,
        Precision,
        NegativeZero,
        Mask,
        Nothing,
        Edits
    };
    for (int trial = 0; trial < 240; ++trial) {
        const Index n = 1 + pick(6);
        const Index contextTokens = trial % 3 == 0 ? 1 + pick(5) : 0;
        const Index dK = 2 * (1 + pick(3));
        const int heads = 1 + int(pick(3));
        const Index dV = 1 + pick(4);
        const Index dModel = 1 + pick(5);
        Session before = SessionBuilder(n, dModel).context(contextTokens).heads(heads, dK, dV).build(trial);
        before.precision = trial % 2 ? Precision::Float32 : Precision::Float64;
        before.positions.type =
            std::array{PositionType::None, PositionType::Rope, PositionType::Sinusoidal}[trial % 5 % 3];
        Session after = before;
        const auto edit = static_cast<Edit>(trial % Edits);
        const std::size_t h = std::size_t(pick(heads));
        Head& head = after.heads[h];
        const auto change = [&](Matrix& m) { m(pick(m.rows()), pick(m.cols())) += 0.5; };
        switch (edit) {
        case QueryWeight:
            change(head.W_Q);
            break;
        case KeyWeight:
            change(head.W_K);
            break;
        case ValueWeight:
            change(head.W_V);
            break;
        case QueryBias:
            head.b_Q = Vector::Constant(head.W_Q.cols(), 0.25);
            break;
        case Input:
            change(after.X);
            break;
        case KeyInput:
            change(after.context ? after.context->Z : after.X);
            break;
        case Positions:
            after.positions.type = PositionType::Alibi;
            break;
        case Precision:
            after.precision = after.precision == Precision::Float32 ? Precision::Float64 : Precision::Float32;
            break;
        case NegativeZero: // 0 → −0: equal, yet another number (a product of zeros keeps its sign)
            head.W_Q.setZero();
            before.heads[h].W_Q.setZero();
            head.W_Q(0, 0) = -0.0;
            break;
        case Mask:
            after.mask.type = MaskType::Causal;
            break;
        case Nothing:
        case Edits:
            break;
        }
        const AttentionResult previous = computeAttention(before); // NegativeZero changed `before`
        ComputeOptions options;
        options.previousSession = &before;
        options.previousResult = &previous;
        const AttentionResult reused = computeAttention(after, options);
        const AttentionResult fresh = computeAttention(after);
        QVERIFY2(sameResultBits(reused, fresh),
                 qPrintable(QStringLiteral("trial %1, edit %2").arg(trial).arg(edit)));

        // Which projections were copied: the previous result's are marked (+1 in every entry, rounded to
        // float32 so that a float32 computation copies them unchanged).
        AttentionResult marked = previous;
        const auto mark = [](Matrix& m) { m = (m.array() + 1.0).cast<float>().cast<double>(); };
        for (HeadResult& r : marked.heads) {
            mark(r.Q);
            mark(r.K);
            mark(r.V);
        }
        options.previousResult = &marked;
        const AttentionResult probe = computeAttention(after, options);
        const bool sameInputs = edit != Positions && edit != Precision;
        const bool cross = after.context.has_value();
        const bool xChanged = edit == Input || (edit == KeyInput && !cross);
        for (std::size_t g = 0; g < after.heads.size(); ++g) {
            const bool edited = g == h;
            const bool queries =
                sameInputs && !xChanged &&
                !(edited && (edit == QueryWeight || edit == QueryBias || edit == NegativeZero));
            const bool keySide = sameInputs && !(cross ? edit == KeyInput : xChanged);
            const bool keys = keySide && !(edited && edit == KeyWeight);
            const bool values = keySide && !(edited && edit == ValueWeight);
            const QString where = QStringLiteral("trial %1, edit %2, head %3").arg(trial).arg(edit).arg(g);
            QVERIFY2(sameBits(probe.heads[g].Q, queries ? marked.heads[g].Q : fresh.heads[g].Q),
                     qPrintable(where));
            QVERIFY2(sameBits(probe.heads[g].K, keys ? marked.heads[g].K : fresh.heads[g].K),
                     qPrintable(where));
            QVERIFY2(sameBits(probe.heads[g].V, values ? marked.heads[g].V : fresh.heads[g].V),
                     qPrintable(where));
        }
    }
}

void TestEngine::reusedBuffersGiveTheSameResult()
{
    Session s = SessionBuilder(8, 6).heads(2, 4, 3).build(5);
    AttentionResult reused = computeAttention(SessionBuilder(8, 6).heads(2, 4, 3).build(6));
    computeAttention(s, reused);
    const AttentionResult fresh = computeAttention(s);
    QCOMPARE(reused.output, fresh.output);
    QCOMPARE(reused.heads[1].weights, fresh.heads[1].weights);
    // A smaller session into the same buffers.
    const Session small = SessionBuilder(3, 6).heads(1, 4, 3).build(9);
    computeAttention(small, reused);
    QCOMPARE(reused.heads.size(), std::size_t(1));
    QCOMPARE(reused.output, computeAttention(small).output);
}

void TestEngine::overflowingResultsNameStageAndHead_data()
{
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<bool>("withOutputProjection");
    QTest::addColumn<QString>("message");
    // Three sigmoid weights near 1 times a value of 1e308: weights · V passes the largest double.
    const int sigmoid = int(NormalizerType::Sigmoid);
    QTest::newRow("sigmoid") << sigmoid << false << QStringLiteral("heads[1].output: weights · V overflows");
    // With W_O the head output is still the culprit, not W_O.
    QTest::newRow("sigmoid, W_O") << sigmoid << true
                                  << QStringLiteral("heads[1].output: weights · V overflows");
}

void TestEngine::overflowingResultsNameStageAndHead()
{
    QFETCH(int, normalizer);
    QFETCH(bool, withOutputProjection);
    QFETCH(QString, message);
    Session s;
    s.title = "overflow";
    s.tokens = {"a", "b", "c"};
    s.pad.assign(3, false);
    s.X = fromRows({{1}, {1}, {1}});
    Head fine;
    fine.W_Q = fine.W_K = fine.W_V = fromRows({{1}});
    Head huge = fine;
    huge.W_V = fromRows({{1e308}});
    s.heads = {fine, huge};
    s.normalizer.type = static_cast<NormalizerType>(normalizer);
    if (withOutputProjection)
        s.W_O = fromRows({{1}, {1}});
    try {
        computeAttention(s);
        QFAIL("expected the session to be refused");
    } catch (const Error& e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(message), e.what());
    }
    // The final projection overflowing on its own is named as the output's.
    s.heads = {fine, fine};
    s.W_O = fromRows({{1e308}, {1e308}});
    s.normalizer.type = NormalizerType::Softmax;
    try {
        computeAttention(s);
        QFAIL("expected the session to be refused");
    } catch (const Error& e) {
        QVERIFY2(QByteArray(e.what()).startsWith("output: concat · W_O overflows"), e.what());
    }
}

void TestEngine::overflowingProjectionsAreNamedFirst()
{
    // A projection that overflows is named before anything it makes overflow later (scores, output), with
    // every score function and in both precisions: in float64 with dot scores the engine reads Q, K and V
    // only when a later stage is not finite, so this checks that every such overflow reaches a later stage.
    // The overflowing entry sits in the last token, which the causal mask hides from every other query, in
    // a session large enough for the engine's threads (blocks and chunks of rows).
    std::mt19937_64 random(11);
    for (const Precision precision : {Precision::Float64, Precision::Float32})
        for (const ScoreFunction score :
             {ScoreFunction::Dot, ScoreFunction::Cosine, ScoreFunction::General, ScoreFunction::Additive})
            for (int projection = 0; projection < 3; ++projection)
                for (const bool masked : {false, true}) {
                    const Index n = 300, dModel = 96, d = 32;
                    Session s = SessionBuilder(n, dModel).heads(2, d, d).build(random());
                    s.precision = precision;
                    s.score = score;
                    s.scale = defaultScale(score);
                    s.mask.type = masked ? MaskType::Causal : MaskType::None;
                    for (Head& head : s.heads) {
                        head.W_S = initializeMatrix({Initializer::XavierNormal, 1.0, random()}, d, d);
                        head.W_a = initializeMatrix({Initializer::XavierNormal, 1.0, random()}, d, 8);
                        head.U_a = initializeMatrix({Initializer::XavierNormal, 1.0, random()}, d, 8);
                        head.v_a = initializeMatrix({Initializer::XavierNormal, 1.0, random()}, 8, 1).col(0);
                    }
                    const double huge = precision == Precision::Float32 ? 1e30 : 1e300;
                    for (Matrix* first : {&s.heads[0].W_Q, &s.heads[0].W_K, &s.heads[0].W_V})
                        first->row(5).setZero(); // the first head stays finite
                    Head& second = s.heads[1];
                    Matrix& W = projection == 0 ? second.W_Q : projection == 1 ? second.W_K : second.W_V;
                    s.X(n - 1, 5) = huge; // finite, and so is W: only their product overflows
                    W(5, 7) = huge;
                    const QString expected =
                        QStringLiteral("heads[1].%1: ").arg(QLatin1Char("QKV"[projection]));
                    const QString where = QStringLiteral("%1, %2 score, %3, %4")
                                              .arg(QLatin1String(toString(precision)))
                                              .arg(QLatin1String(toString(score)))
                                              .arg(expected)
                                              .arg(QLatin1String(masked ? "causal" : "no mask"));
                    try {
                        computeAttention(s);
                        QFAIL(qPrintable(where + QStringLiteral(": expected the session to be refused")));
                    } catch (const Error& e) {
                        QVERIFY2(QString::fromUtf8(e.what()).startsWith(expected) &&
                                     QByteArray(e.what()).contains("overflows"),
                                 qPrintable(where + QStringLiteral(": ") + QString::fromUtf8(e.what())));
                    }
                }
}

void TestEngine::scoresSpanningMoreThanTheDoubleRange_data()
{
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<double>("expectedTop");
    // z = (±1.69e308 ∓ 1.69e308) / 1e308 = ±3.38: softmax [1, e^−3.38] / (1 + e^−3.38).
    const double z = 2 * (1.3e154 * 1.3e154 / 1e308);
    QTest::newRow("softmax") << int(NormalizerType::Softmax) << 1.0 << 1.0 / (1.0 + std::exp(-z));
    QTest::newRow("sparsemax") << int(NormalizerType::Sparsemax) << 2.0 << 1.0; // z gap > 1: one winner
    // 1.01-entmax is within a few hundredths of softmax here; the row must still sum to 1 with a split.
    QTest::newRow("entmax 1.01") << int(NormalizerType::Entmax) << 1.01 << -1.0;
}

void TestEngine::scoresSpanningMoreThanTheDoubleRange()
{
    QFETCH(int, normalizer);
    QFETCH(double, alpha);
    QFETCH(double, expectedTop);
    Session s;
    s.title = "range";
    s.tokens = {"+", "-"};
    s.pad.assign(2, false);
    s.X = fromRows({{1}, {-1}});
    Head head;
    head.W_Q = head.W_K = fromRows({{1.3e154}});
    head.W_V = fromRows({{1}});
    s.heads = {head};
    s.scale = {Scale::Kind::None, 1.0};
    s.temperature = 1e308;
    s.normalizer = {static_cast<NormalizerType>(normalizer), alpha};
    const AttentionResult r = computeAttention(s);
    const Matrix& w = r.heads[0].weights;
    QCOMPARE(r.heads[0].scores(0, 1), -1.3e154 * 1.3e154);
    for (Index i = 0; i < 2; ++i) {
        QKV_COMPARE_NEAR(w.row(i).sum(), 1.0, 1e-15);
        const Index top = i; // the diagonal scores are the positive ones
        if (expectedTop > 0)
            QVERIFY2(std::abs(w(i, top) - expectedTop) < 1e-15,
                     qPrintable(QString::number(w(i, top), 'g', 17)));
        else
            QVERIFY2(w(i, top) > 0.9 && w(i, top) < 0.99, qPrintable(QString::number(w(i, top), 'g', 17)));
    }
}

void TestEngine::identicalTokensShareHardmaxEqually()
{
    // A matrix product can round identical rows of X into K rows that differ in the last bit, and
    // hardmax must not pick one of them. 300 random sessions, each with a token repeated four times.
    std::mt19937_64 random(7);
    for (int trial = 0; trial < 300; ++trial) {
        const Index n = 5 + static_cast<Index>(random() % 20);
        const Index dModel = 3 + static_cast<Index>(random() % 30);
        const Index dK = 2 + static_cast<Index>(random() % 30);
        Session s = SessionBuilder(n, dModel).heads(1, dK, 3).build(random());
        const Index repeated = static_cast<Index>(random() % static_cast<std::uint64_t>(n));
        std::vector<Index> copies = {repeated};
        for (Index k = 0; k < 3; ++k) {
            const Index at = static_cast<Index>(random() % static_cast<std::uint64_t>(n));
            s.X.row(at) = s.X.row(repeated);
            copies.push_back(at);
        }
        s.normalizer.type = NormalizerType::Hardmax;
        const std::vector<ScoreFunction> scores = {ScoreFunction::Dot, ScoreFunction::Cosine};
        s.score = scores[static_cast<std::size_t>(trial % 2)];
        s.scale = defaultScale(s.score);
        const AttentionResult r = computeAttention(s);
        const Matrix& w = r.heads[0].weights;
        for (Index i = 0; i < n; ++i)
            for (Index a : copies)
                for (Index b : copies)
                    QVERIFY2(w(i, a) == w(i, b),
                             qPrintable(QStringLiteral("trial %1 (%7), row %2: keys %3 and %4 get %5 and %6; "
                                                       "scaled %8 and %9")
                                            .arg(trial)
                                            .arg(i)
                                            .arg(a)
                                            .arg(b)
                                            .arg(w(i, a))
                                            .arg(w(i, b))
                                            .arg(QLatin1String(toString(s.score)))
                                            .arg(r.heads[0].scaled(i, a), 0, 'g', 17)
                                            .arg(r.heads[0].scaled(i, b), 0, 'g', 17)));
    }
}

void TestEngine::identicalTokensOfALongSequenceShareTheirRows()
{
    // Long enough that the rows are hashed in chunks on the engine's threads: copies far apart (in other
    // chunks), a copy whose zero is −0, and a near-copy (its last entry one ulp away) that must stay itself.
    const Index n = 900, dModel = 128;
    Session s = SessionBuilder(n, dModel).heads(1, 48, 40).build(21);
    s.X(17, 3) = 0.0;
    const std::vector<Index> copiesOf17 = {18, 450, 899};
    for (Index copy : copiesOf17)
        s.X.row(copy) = s.X.row(17);
    s.X(450, 3) = -0.0;
    s.X.row(700) = s.X.row(17);
    s.X(700, dModel - 1) = std::nextafter(s.X(700, dModel - 1), INFINITY);
    s.X.row(800) = s.X.row(5);
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    const auto sameRow = [](const Matrix& m, Index a, Index b) {
        return std::memcmp(m.row(a).data(), m.row(b).data(), sizeof(double) * std::size_t(m.cols())) == 0;
    };
    for (const auto& [copy, original] :
         std::vector<std::pair<Index, Index>>{{18, 17}, {450, 17}, {899, 17}, {800, 5}}) {
        QVERIFY2(sameRow(h.K, copy, original) && sameRow(h.V, copy, original),
                 qPrintable(QStringLiteral("row %1 of %2").arg(copy).arg(original)));
        for (Index i = 0; i < n; ++i)
            QVERIFY(std::memcmp(&h.scores(i, copy), &h.scores(i, original), sizeof(double)) == 0);
    }
    QVERIFY(!sameRow(h.K, 700, 17));
}

void TestEngine::memoryGuardRefusesBeforeAllocating()
{
    // The estimate is made from the shapes, before anything large is allocated.
    Session big = loadExample("love");
    const std::uint64_t small = estimateComputeBytes(big);
    QVERIFY(small > 0 && small < 10000);
    ComputeOptions options;
    options.memoryLimit = small - 1;
    try {
        computeAttention(big, options);
        QFAIL("expected the memory guard to refuse");
    } catch (const Error& e) {
        QVERIFY2(QByteArray(e.what()).startsWith("this session needs about "), e.what());
        QVERIFY2(QByteArray(e.what()).contains("more than the limit of"), e.what());
    }
    options.memoryLimit = small;
    QVERIFY(computeAttention(big, options).heads.size() == 1);

    // A session far too large to compute, by its shapes: 64 heads, d_k = d_v = 4096, n = 4096, d_model = 1.
    Session shapes;
    shapes.X = Matrix::Zero(4096, 1);
    Head head;
    head.W_Q = head.W_K = head.W_V = Matrix::Zero(1, 4096);
    shapes.heads.assign(64, head);
    const double gigabytes = static_cast<double>(estimateComputeBytes(shapes)) / 1e9;
    QVERIFY2(gigabytes > 50 && gigabytes < 80, qPrintable(QString::number(gigabytes)));
    QCOMPARE(parseByteSize("512M"), std::uint64_t(512) << 20);
    QCOMPARE(parseByteSize("1.5GB"), std::uint64_t(3) << 29);
    QCOMPARE(parseByteSize("2048"), std::uint64_t(2048));
    QCOMPARE(parseByteSize("0"), std::uint64_t(0));
    QCOMPARE(parseByteSize("lots"), std::uint64_t(0));
    QCOMPARE(formatBytes(78300000000), std::string("78.3 GB"));
}

void TestEngine::cancelledComputationStops()
{
    const std::atomic<bool> stop{true};
    ComputeOptions options;
    options.cancel = &stop;
    QVERIFY_THROWS_EXCEPTION(Cancelled, computeAttention(loadExample("multihead"), options));
    const std::atomic<bool> go{false};
    options.cancel = &go;
    QVERIFY(computeAttention(loadExample("multihead"), options) ==
            computeAttention(loadExample("multihead")));
}

void TestEngine::biasesAreAddedAfterTheProducts_data()
{
    QTest::addColumn<int>("m"); // 0: self-attention
    QTest::addColumn<bool>("float32");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("self, float64") << 0 << false << 1e-12;
    QTest::newRow("cross, float64") << 3 << false << 1e-12;
    // float32: products and bias add in float32 (relative error ~ d · 2⁻²⁴ on entries of order 1).
    QTest::newRow("self, float32") << 0 << true << 2e-5;
    QTest::newRow("cross, float32") << 3 << true << 2e-5;
}

void TestEngine::biasesAreAddedAfterTheProducts()
{
    QFETCH(int, m);
    QFETCH(bool, float32);
    QFETCH(double, tolerance);
    Session s = SessionBuilder(5, 6).context(m).heads(2, 4, 3).build(21);
    s.W_O = initializeMatrix({Initializer::XavierUniform, 1.0, 98}, 6, 5);
    addBiases(s, 300);
    s.precision = float32 ? Precision::Float32 : Precision::Float64;
    const AttentionResult r = computeAttention(s);
    for (int h = 0; h < 2; ++h) {
        const Head& head = s.heads[static_cast<std::size_t>(h)];
        const HeadResult& out = r.heads[static_cast<std::size_t>(h)];
        const Matrix Q = affineByLoops(s.X, head.W_Q, head.b_Q);
        const Matrix K = affineByLoops(s.keySide(), head.W_K, head.b_K);
        const Matrix V = affineByLoops(s.keySide(), head.W_V, head.b_V);
        QKV_COMPARE_NEAR(out.Q, Q, tolerance);
        QKV_COMPARE_NEAR(out.K, K, tolerance);
        QKV_COMPARE_NEAR(out.V, V, tolerance);
        QKV_COMPARE_NEAR(out.output, attentionByLoops(Q, K, V), 10 * tolerance);
    }
    QKV_COMPARE_NEAR(r.output, affineByLoops(r.concat, *s.W_O, s.b_O), tolerance);
}

void TestEngine::zeroBiasesChangeNothing()
{
    // x + 0 is x: zero biases give the result without biases, bit for bit, in both precisions.
    for (const Precision precision : {Precision::Float64, Precision::Float32}) {
        Session plain = SessionBuilder(6, 5).heads(2, 4, 3).build(5);
        plain.W_O = initializeMatrix({Initializer::XavierUniform, 1.0, 7}, 6, 4);
        plain.precision = precision;
        Session zeros = plain;
        for (Head& head : zeros.heads) {
            head.b_Q = Vector::Zero(4);
            head.b_K = Vector::Zero(4);
            head.b_V = Vector::Zero(3);
        }
        zeros.b_O = Vector::Zero(4);
        QVERIFY(computeAttention(zeros) == computeAttention(plain));
    }
}

void TestEngine::biasMessagesNameTheKey_data()
{
    QTest::addColumn<int>("variant");
    QTest::addColumn<QString>("message");
    QTest::newRow("b_Q short") << 0 << QStringLiteral("heads[1].b_Q: expected 4 entries (d_k = 4), found 3");
    QTest::newRow("b_K long") << 1 << QStringLiteral("heads[0].b_K: expected 4 entries (d_k = 4), found 5");
    QTest::newRow("b_V short") << 2 << QStringLiteral("heads[1].b_V: expected 3 entries (d_v = 3), found 2");
    QTest::newRow("b_V NaN") << 3 << QStringLiteral("heads[0].b_V: contains a number that is not finite");
    QTest::newRow("b_O short") << 4 << QStringLiteral("b_O: expected 5 entries (d_out = 5), found 4");
    QTest::newRow("b_O without W_O")
        << 5 << QStringLiteral("b_O: needs W_O beside it (it is the bias of the output projection)");
    QTest::newRow("b_Q beyond float32")
        << 6
        << QStringLiteral("heads[0].b_Q: an entry is beyond float32's range (±3.40282e+38); reduce it or "
                          "choose precision float64");
}

void TestEngine::biasMessagesNameTheKey()
{
    QFETCH(int, variant);
    QFETCH(QString, message);
    Session s = SessionBuilder(3, 6).heads(2, 4, 3).build(8);
    s.W_O = initializeMatrix({Initializer::XavierUniform, 1.0, 9}, 6, 5);
    addBiases(s, 40);
    switch (variant) {
    case 0:
        s.heads[1].b_Q = Vector::Ones(3);
        break;
    case 1:
        s.heads[0].b_K = Vector::Ones(5);
        break;
    case 2:
        s.heads[1].b_V = Vector::Ones(2);
        break;
    case 3:
        s.heads[0].b_V(1) = std::nan("");
        break;
    case 4:
        s.b_O = Vector::Ones(4);
        break;
    case 5:
        s.W_O.reset();
        break;
    case 6:
        s.precision = Precision::Float32;
        s.heads[0].b_Q(2) = 1e300;
        break;
    }
    try {
        computeAttention(s);
        QFAIL("expected an error");
    } catch (const Error& e) {
        QCOMPARE(QString::fromUtf8(e.what()), message);
    }
}

QKV_TEST_APPLESS_MAIN(TestEngine)
#include "tst_engine.moc"
