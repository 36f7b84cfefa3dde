// SPDX-License-Identifier: GPL-3.0-or-later
// The float32 path against the float64 path, with tolerances derived from float32's epsilon, and the
// engine's threads (Parallel.h): every chunk once, errors carried to the caller, the same bits on any thread.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "Initializers.h"
#include "Normalizers.h"
#include "Parallel.h"
#include "ResultJson.h"
#include "RowKernels.h"
#include "SessionEdits.h"
#include "SessionFile.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TestSessions.h"

#include <sstream>

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace qkv;

namespace {

constexpr double epsilon32 = FLT_EPSILON; // 2^-23, one unit in the last place of 1.0f

bool isFloat32Value(double x)
{
    return static_cast<double>(static_cast<float>(x)) == x;
}

bool allFloat32Values(const Matrix& m)
{
    return m.unaryExpr([](double x) { return isFloat32Value(x) ? 0.0 : 1.0; }).sum() == 0.0;
}

/// A random session of two heads of d_k = d_v = 6, d_model 8 and W_O, with the given score, mask and
/// normalizer; cross-attention when m ≠ n.
Session comparedSession(Index n, Index m, ScoreFunction score, MaskType mask,
                        const NormalizerSpec& normalizer, std::uint64_t seed)
{
    Session s = test::SessionBuilder(n, 8)
                    .context(m != n ? m : 0)
                    .heads(2, 6, 6)
                    .score(score)
                    .outputProjection()
                    .build(seed);
    setMaskType(s, mask);
    s.mask.window = 3;
    s.mask.prefixLength = 2;
    if (mask == MaskType::Custom)
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < m; ++j)
                s.mask.allowed(i, j) = (i * 7 + j * 3) % 4 != 0;
    s.pad[1] = true; // a padding query: its row is empty in both precisions
    s.normalizer = normalizer;
    s.temperature = 0.7;
    return s;
}

/// max over entries of (|A|·|B|): the size of the terms a product sums, which its rounding error scales with.
double termScale(const Matrix& a, const Matrix& b)
{
    return (a.cwiseAbs() * b.cwiseAbs()).maxCoeff();
}

} // namespace

class TestPrecision : public QObject {
    Q_OBJECT
private slots:
    void float32AgreesWithFloat64_data();
    void float32AgreesWithFloat64();
    void float32AtTheExtremes_data();
    void float32AtTheExtremes();
    void float32RefusesWhatItCannotHold();
    void float32WeightsGivenApart();
    void precisionRoundTripsAndIsValidated_data();
    void precisionRoundTripsAndIsValidated();
    void rowKernelExpIsAccurate();
    void softmaxNumeratorsOfNarrowRowsSkipNothing();
    void rowKernelsMatchPlainLoops();
    void rowKernelLevelsGiveTheSameBits();
    void streamedWideRowsMatchCached();
    void float32ExpIsAccurate();
    void float32SoftmaxRow();
    void roundToFloatAndRowHash();
    void parallelForRunsEveryChunkOnce();
    void parallelForCarriesTheFirstError();
    void allPiecesPassTestsEveryEntryOnce();
    void parallelForFromManyThreads();
    void resultDoesNotDependOnBlocks();
};

void TestPrecision::float32AgreesWithFloat64_data()
{
    QTest::addColumn<int>("score");
    QTest::addColumn<int>("mask");
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<int>("m");
    for (int score = 0; score <= int(ScoreFunction::Cosine); ++score)
        for (int mask = 0; mask <= int(MaskType::Custom); ++mask)
            for (int normalizer = 0; normalizer <= int(NormalizerType::Hardmax); ++normalizer)
                for (double alpha : normalizer == int(NormalizerType::Entmax)
                                        ? std::vector<double>{1.25, 1.5, 3.0}
                                        : std::vector<double>{1.5})
                    for (int m : {9, 5})
                        QTest::addRow("%s/%s/%s%g/m=%d", toString(ScoreFunction(score)),
                                      toString(MaskType(mask)), toString(NormalizerType(normalizer)), alpha,
                                      m)
                            << score << mask << normalizer << alpha << m;
}

void TestPrecision::float32AgreesWithFloat64()
{
    QFETCH(int, score);
    QFETCH(int, mask);
    QFETCH(int, normalizer);
    QFETCH(double, alpha);
    QFETCH(int, m);
    const Index n = 9;
    Session s =
        comparedSession(n, m, ScoreFunction(score), MaskType(mask), {NormalizerType(normalizer), alpha},
                        std::uint64_t(100 * score + 10 * mask + normalizer));
    const AttentionResult exact = computeAttention(s);
    s.precision = Precision::Float32;
    const AttentionResult rounded = computeAttention(s);
    QCOMPARE(rounded.precision, Precision::Float32);
    QCOMPARE(exact.precision, Precision::Float64);

    const Matrix& keySide = s.keySide();
    const Index dModel = s.dModel();
    for (std::size_t h = 0; h < s.heads.size(); ++h) {
        const Head& head = s.heads[h];
        const HeadResult& a = exact.heads[h];
        const HeadResult& b = rounded.heads[h];
        for (const Matrix* m32 : {&b.Q, &b.K, &b.V, &b.scores, &b.scaled, &b.weights, &b.output})
            QVERIFY(allFloat32Values(*m32));
        // A product of inner dimension k, of inputs rounded to float32, is within (k + 2)·ε·Σ|terms|.
        const double bound = double(dModel + 2) * epsilon32;
        QKV_COMPARE_NEAR(b.Q, a.Q, bound * termScale(s.X, head.W_Q));
        QKV_COMPARE_NEAR(b.K, a.K, bound * termScale(keySide, head.W_K));
        QKV_COMPARE_NEAR(b.V, a.V, bound * termScale(keySide, head.W_V));
        // Scores: Q's and K's errors carried through one more product, plus its own rounding (generous
        // for the general and additive scores' extra products, whose terms are of the same size here).
        const double qkScale = (a.Q.cwiseAbs() * a.K.cwiseAbs().transpose()).maxCoeff() + 1.0;
        const double scoreTolerance = 4 * double(dModel + s.dK() + 4) * epsilon32 * qkScale;
        if (s.score == ScoreFunction::Dot || s.score == ScoreFunction::Cosine)
            QKV_COMPARE_NEAR(b.scores, a.scores, scoreTolerance);
        const double logitError = (b.scaled - a.scaled).cwiseAbs().maxCoeff() / s.temperature;
        QVERIFY(std::isfinite(logitError));
        // Every normalizer here moves a weight by at most √m times the largest logit change (softmax,
        // sparsemax and entmax with α ≤ 2 are 1-Lipschitz in ℓ2, sigmoid ¼), plus the final rounding to
        // float32. Entmax with α > 2 is only Hölder continuous: p = d^{1/(α−1)} near the support's edge.
        const double holder = s.normalizer.type == NormalizerType::Entmax && alpha > 2
                                  ? std::pow(logitError, 1 / (alpha - 1))
                                  : logitError;
        // Softmax works in float32 (exp within 2 ε, 1/Σ and the product rounded): 5 ε; the others round once.
        const double weightTolerance = std::sqrt(double(m)) * std::max(logitError, holder) + 5 * epsilon32;
        for (Index i = 0; i < n; ++i) {
            if (s.normalizer.type == NormalizerType::Hardmax) {
                // A near tie may be broken differently by float32: compare only rows with a clear winner.
                std::vector<double> allowedScores;
                for (Index j = 0; j < m; ++j)
                    if (a.allowed(i, j))
                        allowedScores.push_back(a.scaled(i, j));
                std::sort(allowedScores.rbegin(), allowedScores.rend());
                if (allowedScores.size() > 1 &&
                    allowedScores[0] - allowedScores[1] < 4 * logitError * s.temperature)
                    continue;
            }
            QKV_COMPARE_NEAR(b.weights.row(i), a.weights.row(i), weightTolerance);
            QCOMPARE(b.rowStats[std::size_t(i)].support > 0, a.rowStats[std::size_t(i)].support > 0);
        }
        QCOMPARE(b.emptyRows, a.emptyRows);
        QVERIFY(b.allowed == a.allowed);
    }
    QVERIFY(allFloat32Values(rounded.output));
    QVERIFY(rounded.output.allFinite());
}

void TestPrecision::float32AtTheExtremes_data()
{
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<double>("magnitude");
    QTest::addColumn<double>("temperature");
    for (int type = 0; type <= int(NormalizerType::Hardmax); ++type)
        for (double magnitude : {1e-30, 1.0, 1e18})
            for (double temperature : {1e-300, 1e-10, 1.0, 1e10, 1e300})
                QTest::addRow("%s/|X|=%g/tau=%g", toString(NormalizerType(type)), magnitude, temperature)
                    << type << magnitude << temperature;
}

void TestPrecision::float32AtTheExtremes()
{
    QFETCH(int, normalizer);
    QFETCH(double, magnitude);
    QFETCH(double, temperature);
    // |X| = 1e18 with unit weights gives scores near ±1e36, close to float32's largest (3.4e38).
    Session s = blankSession(5, 2, 2, 2, {Initializer::Normal, 1.0, 3});
    s.X = initializeMatrix({Initializer::Normal, 1.0, 4}, 5, 2);
    s.X *= magnitude / s.X.cwiseAbs().maxCoeff();
    s.heads[0].W_Q.setIdentity();
    s.heads[0].W_K.setIdentity();
    s.heads[0].W_K(1, 1) = -1;
    s.heads[0].W_V.setIdentity();
    s.scale = {Scale::Kind::None, 1.0};
    s.normalizer.type = static_cast<NormalizerType>(normalizer);
    s.temperature = temperature;
    s.mask.type = MaskType::Causal;
    s.precision = Precision::Float32;
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    QVERIFY(h.scores.allFinite() && h.weights.allFinite() && r.output.allFinite());
    QVERIFY((h.weights.array() >= 0).all() && (h.weights.array() <= 1).all());
    if (s.normalizer.type != NormalizerType::Sigmoid)
        for (Index i = 0; i < 5; ++i)
            QKV_COMPARE_NEAR(h.weights.row(i).sum(), 1.0, 5 * epsilon32); // m roundings to float32
}

void TestPrecision::float32RefusesWhatItCannotHold()
{
    Session s = blankSession(3, 2, 2, 2, {Initializer::Normal, 1.0, 5});
    s.precision = Precision::Float32;
    s.X(1, 0) = 1e39; // beyond float32's 3.4e38, fine in float64
    try {
        computeAttention(s);
        QFAIL("expected an error");
    } catch (const Error& e) {
        QVERIFY2(QByteArray(e.what()).startsWith("X: "), e.what());
        QVERIFY2(QByteArray(e.what()).contains("float32"), e.what());
    }
    s.X(1, 0) = 1e20; // fits, but q·k ≈ 1e40 does not
    s.heads[0].W_Q.setIdentity();
    s.heads[0].W_K.setIdentity();
    try {
        computeAttention(s);
        QFAIL("expected an error");
    } catch (const Error& e) {
        QVERIFY2(QByteArray(e.what()).startsWith("heads[0].scores: a score overflows float32"), e.what());
    }
    s.precision = Precision::Float64;
    QVERIFY(computeAttention(s).output.allFinite());
}

// The forward pass through a checkpoint hands the engine its float32 weights apart from the session: the
// same bits as the session holding them, for several heads, biases, RoPE and W_O; misuse is refused.
void TestPrecision::float32WeightsGivenApart()
{
    Session whole =
        comparedSession(9, 9, ScoreFunction::Dot, MaskType::Causal, {NormalizerType::Softmax, 1.5}, 41);
    whole.precision = Precision::Float32;
    whole.positions.type = PositionType::Rope;
    whole.heads[1].b_Q = Vector::Constant(6, 0.25);
    whole.b_O = Vector::Constant(whole.W_O->cols(), -0.5);
    Float32Weights apart;
    Session bare = whole;
    for (Head& head : bare.heads) {
        apart.heads.push_back({head.W_Q.cast<float>(), head.W_K.cast<float>(), head.W_V.cast<float>()});
        head.W_Q.resize(0, 0), head.W_K.resize(0, 0), head.W_V.resize(0, 0);
    }
    apart.W_O = bare.W_O->cast<float>();
    bare.W_O.reset();
    ComputeOptions options;
    options.float32Weights = &apart;
    const AttentionResult expected = computeAttention(whole), actual = computeAttention(bare, options);
    QKV_COMPARE_NEAR(actual.output, expected.output, 0.0);
    QKV_COMPARE_NEAR(actual.concat, expected.concat, 0.0);
    for (std::size_t h = 0; h < expected.heads.size(); ++h) {
        QKV_COMPARE_NEAR(actual.heads[h].Q, expected.heads[h].Q, 0.0);
        QKV_COMPARE_NEAR(actual.heads[h].weights, expected.heads[h].weights, 0.0);
    }
    const auto refused = [&](const Session& session, const Float32Weights& weights, const char* message) {
        ComputeOptions given;
        given.float32Weights = &weights;
        try {
            computeAttention(session, given);
        } catch (const Error& error) {
            QCOMPARE(QString::fromStdString(error.what()), QString::fromUtf8(message));
            return;
        }
        QFAIL("not refused");
    };
    Session float64 = bare;
    float64.precision = Precision::Float64;
    refused(float64, apart, "precision: float32 weights were given for a float64 computation");
    refused(whole, apart, "W_O: given twice: in the session and in float32");
    Session twice = bare;
    twice.heads[1].W_K = whole.heads[1].W_K;
    refused(twice, apart, "heads[1]: projections given twice: in the session and in float32");
    Float32Weights wrong = apart;
    wrong.heads[1].W_V = MatrixF::Zero(8, 5);
    refused(bare, wrong, "heads[1].W_V: expected 6 columns, found 5");
    wrong = apart;
    wrong.heads[0].W_K(2, 3) = std::numeric_limits<float>::infinity();
    refused(bare, wrong, "heads[0].W_K: contains a number that is not finite");
    wrong = apart;
    wrong.heads.pop_back();
    refused(bare, wrong, "heads: the session has 2 heads, its float32 weights 1");
    wrong = apart;
    wrong.W_O.reset();
    refused(bare, wrong, "b_O: needs W_O beside it (it is the bias of the output projection)");
    options.memoryLimit = 1 << 30;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, computeAttention(bare, options));
}

void TestPrecision::precisionRoundTripsAndIsValidated_data()
{
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("error"); // empty: accepted
    QTest::newRow("float32") << QStringLiteral(R"("float32")") << QString();
    QTest::newRow("float64") << QStringLiteral(R"("float64")") << QString();
    QTest::newRow("float16") << QStringLiteral(R"("float16")")
                             << QStringLiteral(R"(precision: unknown precision "float16")");
    QTest::newRow("number") << QStringLiteral("32") << QStringLiteral("precision: ");
    QTest::newRow("capitals") << QStringLiteral(R"("FLOAT32")") << QStringLiteral("precision: ");
}

void TestPrecision::precisionRoundTripsAndIsValidated()
{
    QFETCH(QString, value);
    QFETCH(QString, error);
    std::string text = exampleJson("love");
    text.insert(text.rfind('}'), ", \"precision\": " + value.toStdString() + "\n");
    try {
        const Session s = parseSession(text);
        QVERIFY2(error.isEmpty(), "accepted a bad precision");
        const Precision expected =
            value.contains(QLatin1String("32")) ? Precision::Float32 : Precision::Float64;
        QCOMPARE(s.precision, expected);
        const std::string written = serializeSession(s);
        // Written only when it is not the default, and read back to the same session.
        QCOMPARE(written.find("\"precision\": \"float32\"") != std::string::npos,
                 expected == Precision::Float32);
        QVERIFY(parseSession(written, s.title) == s);
        QCOMPARE(computeAttention(s).precision, expected);
    } catch (const Error& e) {
        QVERIFY2(!error.isEmpty(), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(error), e.what());
    }
}

void TestPrecision::rowKernelExpIsAccurate()
{
    // Within 2 units in the last place of std::exp where the result is normal, within one subnormal step
    // below, and exactly 1 at 0.
    QCOMPARE(rows::expOfNonPositive(0.0), 1.0);
    QCOMPARE(rows::expOfNonPositive(-0.0), 1.0);
    QCOMPARE(rows::expOfNonPositive(-800.0), 0.0);
    QCOMPARE(rows::expOfNonPositive(-std::numeric_limits<double>::infinity()), 0.0);
    double worstUlps = 0.0;
    for (int i = 0; i <= 2'000'000; ++i) {
        const double z = -746.0 * i / 2'000'000.0;
        const double expected = std::exp(z);
        const double actual = rows::expOfNonPositive(z);
        if (expected >= DBL_MIN)
            worstUlps = std::max(worstUlps, std::abs(actual - expected) / (expected * DBL_EPSILON));
        else
            QVERIFY2(std::abs(actual - expected) <= 2 * std::numeric_limits<double>::denorm_min(),
                     qPrintable(QString::number(z, 'g', 17)));
    }
    QVERIFY2(worstUlps <= 2.0, qPrintable(QString::number(worstUlps)));
}

void TestPrecision::softmaxNumeratorsOfNarrowRowsSkipNothing()
{
    // shiftedExp skips exp's steps for subnormal results when the row's range says every allowed z exceeds
    // −700: the numerators must be the bits of the full steps (a range with min = −∞ forces them), on rows
    // whose span lies just inside and just outside that bound, at τ = 1 and another τ, with masked entries
    // far below it, at every kernel level the CPU has.
    std::mt19937_64 random(5);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const rows::KernelLevel inUse = rows::kernelLevel();
    for (const rows::KernelLevel level :
         {rows::KernelLevel::Baseline, rows::KernelLevel::X86_64_V3, rows::KernelLevel::X86_64_V4}) {
        if (!rows::useKernelLevel(level))
            continue;
        for (const double temperature : {1.0, 0.37, 3.0})
            for (const double span : {1.0, 699.0, 700.0 * temperature, 700.5 * temperature, 745.0, 760.0})
                for (const Index m : {Index(5), Index(8), Index(37), Index(1000)}) {
                    std::vector<double> x(static_cast<std::size_t>(m)), fast(x.size()), full(x.size());
                    std::vector<std::uint8_t> allowed(x.size());
                    for (std::size_t j = 0; j < x.size(); ++j) {
                        x[j] = 3.0 - span * unit(random);
                        allowed[j] = j % 5 != 2;
                        if (!allowed[j])
                            x[j] = -1e6; // masked: never part of the range
                    }
                    x[0] = 3.0;        // the max
                    x[1] = 3.0 - span; // the min
                    const rows::Range range = rows::allowedRange(x.data(), allowed.data(), m);
                    const rows::ExpSums a =
                        rows::shiftedExp(x.data(), allowed.data(), range, temperature, fast.data(), m);
                    const rows::ExpSums b = rows::shiftedExp(x.data(), allowed.data(), {-INFINITY, range.max},
                                                             temperature, full.data(), m);
                    const QString where = QStringLiteral("level %1, τ %2, span %3, m %4")
                                              .arg(int(level))
                                              .arg(temperature)
                                              .arg(span)
                                              .arg(m);
                    QVERIFY2(std::memcmp(fast.data(), full.data(), sizeof(double) * x.size()) == 0,
                             qPrintable(where));
                    QVERIFY2(std::memcmp(&a, &b, sizeof a) == 0, qPrintable(where));
                }
    }
    QVERIFY(rows::useKernelLevel(inUse));
}

void TestPrecision::float32ExpIsAccurate()
{
    // Within 2 units in float32's last place of the exact value over the whole range it is used on.
    QCOMPARE(rows::expOfNonPositive(0.0f), 1.0f);
    QCOMPARE(rows::expOfNonPositive(-0.0f), 1.0f);
    double worstUlps = 0.0;
    for (int i = 0; i <= 2'000'000; ++i) {
        const float z = rows::smallestFloatExpArgument * float(i) / 2'000'000.0f;
        const double exact = std::exp(double(z));
        const float actual = rows::expOfNonPositive(z);
        QVERIFY(actual >= FLT_MIN);
        worstUlps = std::max(worstUlps, std::abs(double(actual) - exact) / (exact * epsilon32));
    }
    QVERIFY2(worstUlps <= 2.0, qPrintable(QString::number(worstUlps)));
}

void TestPrecision::float32SoftmaxRow()
{
    const NormalizerSpec softmax{NormalizerType::Softmax, 1.5};
    NormalizerScratch scratch;
    NormalizerTrace trace;
    // Against the float64 softmax of the same float32 logits, masked keys exactly 0, in place.
    std::vector<float> row{3.5f, -1.25f, 0.0f, 2.0f, -40.0f, 7.0f, 1.0f, 0.5f, -3.0f};
    const std::vector<std::uint8_t> allowed{1, 1, 1, 0, 1, 1, 1, 1, 0};
    const std::vector<double> wide(row.begin(), row.end());
    const std::vector<double> expected = normalize(softmax, wide, 2.0, allowed);
    const auto m = Index(row.size());
    QVERIFY(softmaxRowFloat32(softmax, row.data(), allowed.data(), m, 2.0f, row.data(), trace, scratch));
    double sum = 0.0;
    for (std::size_t j = 0; j < row.size(); ++j) {
        QVERIFY2(std::abs(double(row[j]) - expected[j]) <= 5 * epsilon32 * expected[j],
                 qPrintable(QString::number(j)));
        if (!allowed[j])
            QCOMPARE(row[j], 0.0f);
        sum += row[j];
    }
    QVERIFY(std::abs(sum - 1.0) <= 10 * epsilon32);
    QVERIFY(trace.entropy > 0.0);

    // Rows it leaves to the exact path, writing nothing: a logit below −87, a non-finite score, nothing
    // allowed, another normalizer.
    const auto refused = [&](std::vector<float> x, std::vector<std::uint8_t> mask, NormalizerSpec spec,
                             float temperature) {
        std::vector<float> out(x.size(), -1.0f);
        NormalizerTrace unused;
        const bool taken = softmaxRowFloat32(spec, x.data(), mask.data(), Index(x.size()), temperature,
                                             out.data(), unused, scratch);
        return !taken && std::all_of(out.begin(), out.end(), [](float v) { return v == -1.0f; });
    };
    QVERIFY(refused({0.0f, -88.0f}, {1, 1}, softmax, 1.0f));
    QVERIFY(refused({0.0f, -1.0f}, {1, 1}, softmax, 0.01f));
    QVERIFY(refused({0.0f, INFINITY}, {1, 1}, softmax, 1.0f));
    QVERIFY(refused({0.0f, NAN}, {1, 1}, softmax, 1.0f));
    QVERIFY(refused({0.0f, 1.0f}, {0, 0}, softmax, 1.0f));
    QVERIFY(refused({0.0f, 1.0f}, {1, 1}, {NormalizerType::Sparsemax, 1.5}, 1.0f));
    QVERIFY(refused({0.0f, 1.0f}, {1, 1}, {NormalizerType::Entmax, 1.5}, 1.0f));
    // −88 is allowed when masked: masked keys do not count.
    QVERIFY(!refused({0.0f, -88.0f}, {1, 0}, softmax, 1.0f));
}

void TestPrecision::roundToFloatAndRowHash()
{
    std::vector<double> x{1.0 / 3.0,        -2.5, 0.0, 1e-50, double(FLT_MAX),
                          -double(FLT_MAX), 7.0,  8.0, 9.0,   1e30};
    std::vector<float> y(x.size());
    QVERIFY(rows::roundToFloat(x.data(), y.data(), Index(x.size())));
    for (std::size_t j = 0; j < x.size(); ++j)
        QCOMPARE(y[j], static_cast<float>(x[j]));
    for (double bad : {std::nextafter(double(FLT_MAX), INFINITY), -1e39, double(INFINITY), double(NAN)}) {
        for (std::size_t at : {std::size_t(0), std::size_t(9)}) { // in a full vector of lanes and in the tail
            std::vector<double> withBad = x;
            withBad[at] = bad;
            QVERIFY2(!rows::roundToFloat(withBad.data(), y.data(), Index(x.size())),
                     qPrintable(QString::number(bad)));
        }
    }

    std::vector<double> same = x, negativeZero = x, other = x;
    negativeZero[2] = -0.0;
    other[9] = 1e31;
    const auto hash = [](const std::vector<double>& row) {
        return rows::rowHash(row.data(), Index(row.size()));
    };
    QCOMPARE(hash(same), hash(x));
    QCOMPARE(hash(negativeZero), hash(x));
    QVERIFY(hash(other) != hash(x));
    QVERIFY(hash({1.0, 2.0}) != hash({2.0, 1.0}));
    // One-hot tokens are permutations of one another: every position must hash apart, the tail's too.
    for (std::size_t length : {std::size_t(64), std::size_t(77)}) {
        std::set<std::uint64_t> oneHot;
        for (std::size_t at = 0; at < length; ++at) {
            std::vector<double> row(length, 0.0);
            row[at] = 1.0;
            oneHot.insert(hash(row));
        }
        QCOMPARE(oneHot.size(), length);
    }
}

void TestPrecision::rowKernelsMatchPlainLoops()
{
    std::mt19937_64 random(7);
    std::normal_distribution<double> normal(0.0, 3.0);
    for (Index m : {0, 1, 7, 8, 9, 63, 1000}) {
        const auto size = static_cast<std::size_t>(m);
        std::vector<double> x(size), w(size);
        std::vector<std::uint8_t> allowed(size);
        for (Index j = 0; j < m; ++j) {
            x[std::size_t(j)] = normal(random);
            allowed[std::size_t(j)] = (j * 5) % 3 != 0;
            w[std::size_t(j)] = x[std::size_t(j)] > 0 ? x[std::size_t(j)] : 0.0;
        }
        double low = INFINITY, high = -INFINITY, sum = 0, max = 0;
        Index support = 0;
        for (Index j = 0; j < m; ++j) {
            if (allowed[std::size_t(j)]) {
                low = std::min(low, x[std::size_t(j)]);
                high = std::max(high, x[std::size_t(j)]);
            }
            sum += w[std::size_t(j)];
            support += w[std::size_t(j)] > 0;
            max = std::max(max, w[std::size_t(j)]);
        }
        const rows::Range range = rows::allowedRange(x.data(), allowed.data(), m);
        QCOMPARE(range.min, low);
        QCOMPARE(range.max, high);
        const rows::WeightSums sums = rows::weightSums(w.data(), m);
        QKV_COMPARE_NEAR(sums.sum, sum, 1e-12 * (1 + sum));
        QCOMPARE(sums.support, support);
        QCOMPARE(sums.max, max);
        QVERIFY(rows::allFinite(x.data(), m));
        if (m > 0) {
            x[std::size_t(m / 2)] = std::numeric_limits<double>::quiet_NaN();
            QVERIFY(!rows::allFinite(x.data(), m));
            x[std::size_t(m / 2)] = -std::numeric_limits<double>::infinity();
            QVERIFY(!rows::allFinite(x.data(), m));
        }

        // The float32 kernels, vectorised eight entries at a time, against the same steps one entry at a
        // time.
        std::vector<float> x32(size), e32(size), divided(size), wide32(size);
        for (Index j = 0; j < m; ++j)
            x32[std::size_t(j)] =
                static_cast<float>(std::isfinite(x[std::size_t(j)]) ? x[std::size_t(j)] : 1.0);
        std::vector<double> wideX(size, -1.0);
        QVERIFY(rows::widen(x32.data(), wideX.data(), m));
        for (std::size_t j = 0; j < size; ++j)
            QCOMPARE(wideX[j], double(x32[j]));
        for (Index at : {Index(0), m / 2, m - 1}) { // in a full pack and in the tail
            if (m == 0)
                break;
            const float kept = x32[std::size_t(at)];
            x32[std::size_t(at)] = std::numeric_limits<float>::infinity();
            QVERIFY(!rows::widen(x32.data(), wideX.data(), m));
            x32[std::size_t(at)] = std::numeric_limits<float>::quiet_NaN();
            QVERIFY(!rows::widen(x32.data(), wideX.data(), m));
            x32[std::size_t(at)] = kept;
        }
        const rows::RangeF range32 = rows::allowedRange(x32.data(), allowed.data(), m);
        const float temperature = 0.7f;
        const rows::ExpSums expSums =
            rows::shiftedExp(x32.data(), allowed.data(), range32.max, temperature, e32.data(), m);
        double expSum = 0.0, weighted = 0.0;
        for (Index j = 0; j < m; ++j) {
            const std::size_t k = std::size_t(j);
            const float z = allowed[k] ? (x32[k] - range32.max) / temperature : 0.0f;
            const float e = allowed[k] ? rows::expOfNonPositive(z) : 0.0f;
            QCOMPARE(e32[k], e);
            expSum += e;
            weighted += double(e) * double(z);
        }
        QKV_COMPARE_NEAR(expSums.sum, expSum, 1e-12 * (1 + expSum));
        QKV_COMPARE_NEAR(expSums.weightedLogits, weighted, 1e-12 * (1 + std::abs(weighted)));
        // A NaN or infinite score makes the sum NaN where it is allowed (in a full pack or in the tail), and
        // changes nothing where it is masked; τ = 1 (no division) gives the same numerators.
        for (Index at : {Index(0), m - 1}) {
            if (m == 0)
                break;
            std::vector<float> bad = x32, scratch(size);
            bad[std::size_t(at)] = at == 0 ? std::numeric_limits<float>::quiet_NaN() : -INFINITY;
            const bool isAllowed = allowed[std::size_t(at)] != 0;
            const rows::ExpSums badSums =
                rows::shiftedExp(bad.data(), allowed.data(), range32.max, temperature, scratch.data(), m);
            QCOMPARE(std::isnan(badSums.sum), isAllowed);
        }
        std::vector<float> atOne(size);
        const rows::ExpSums unitSums =
            rows::shiftedExp(x32.data(), allowed.data(), range32.max, 1.0f, atOne.data(), m);
        for (Index j = 0; j < m; ++j) {
            const std::size_t k = std::size_t(j);
            const float z = allowed[k] ? x32[k] - range32.max : 0.0f;
            QCOMPARE(atOne[k], allowed[k] ? rows::expOfNonPositive(z) : 0.0f);
        }
        QVERIFY(std::isfinite(unitSums.sum));

        std::vector<double> scoresOut(size), scaledOut(size);
        divided = x32;
        QVERIFY(rows::divide(divided.data(), 3.0f, scoresOut.data(), scaledOut.data(), m));
        for (Index j = 0; j < m; ++j) {
            const std::size_t k = std::size_t(j);
            QCOMPARE(divided[k], x32[k] / 3.0f);
            QCOMPARE(scoresOut[k], double(x32[k]));
            QCOMPARE(scaledOut[k], double(divided[k]));
        }
        std::vector<double> widened(size);
        const rows::WeightSums sums32 = rows::widenAndSum(e32.data(), widened.data(), m);
        std::vector<double> rounded = w;
        const rows::WeightSums roundedSums = rows::roundToFloatAndSum(rounded.data(), wide32.data(), m);
        double wideSum = 0.0, roundedSum = 0.0;
        for (Index j = 0; j < m; ++j) {
            const std::size_t k = std::size_t(j);
            QCOMPARE(widened[k], double(e32[k]));
            QCOMPARE(wide32[k], static_cast<float>(w[k]));
            QCOMPARE(rounded[k], double(wide32[k]));
            wideSum += widened[k];
            roundedSum += rounded[k];
        }
        QKV_COMPARE_NEAR(sums32.sum, wideSum, 1e-12 * (1 + wideSum));
        QKV_COMPARE_NEAR(roundedSums.sum, roundedSum, 1e-12 * (1 + roundedSum));
        QCOMPARE(roundedSums.support, support);
    }
}

namespace {

/// Every row kernel's outputs on rows of length m (sums, ranges and flags as their bits), written to text.
std::string everyKernelOn(const std::vector<double>& x, const std::vector<std::uint8_t>& allowed)
{
    const Index m = Index(x.size());
    const auto size = x.size();
    std::ostringstream out;
    out.precision(17);
    const auto put = [&out](auto... values) { ((out << values << ' '), ...); };
    const auto putDoubles = [&put](const std::vector<double>& v) {
        for (double d : v)
            put(std::signbit(d), d);
    };
    const auto putFloats = [&put](const std::vector<float>& v) {
        for (float f : v)
            put(std::signbit(f), f);
    };
    std::vector<float> x32(size), e32(size), rounded32(size);
    std::vector<double> e(size), scaled(size), wide(size), widened(size), weights(size);
    const rows::Range range = rows::allowedRange(x.data(), allowed.data(), m);
    put(range.min, range.max);
    for (double temperature : {1.0, 0.3}) {
        const rows::ExpSums sums =
            rows::shiftedExp(x.data(), allowed.data(), range, temperature, e.data(), m);
        put(sums.sum, sums.weightedLogits);
        putDoubles(e);
    }
    put(rows::divide(x.data(), 3.0, scaled.data(), m), rows::allFinite(x.data(), m),
        rows::roundToFloat(x.data(), x32.data(), m), rows::rowHash(x.data(), m));
    putDoubles(scaled);
    putFloats(x32);
    put(rows::widen(x32.data(), widened.data(), m));
    putDoubles(widened);
    for (std::size_t j = 0; j < size; ++j)
        if (!std::isfinite(x32[j]))
            x32[j] = 0.5f; // the float32 kernels take finite scores
    const rows::RangeF range32 = rows::allowedRange(x32.data(), allowed.data(), m);
    put(range32.min, range32.max);
    bool floatExpDefined = true; // the float32 exp serves logits down to smallestFloatExpArgument
    for (std::size_t j = 0; j < size; ++j)
        floatExpDefined &= !allowed[j] || (x32[j] - range32.max) / 0.7f >= rows::smallestFloatExpArgument;
    if (floatExpDefined) {
        const rows::ExpSums sums32 =
            rows::shiftedExp(x32.data(), allowed.data(), range32.max, 0.7f, e32.data(), m);
        put(sums32.sum, sums32.weightedLogits);
        putFloats(e32);
    }
    put(rows::divide(x32.data(), 3.0f, wide.data(), scaled.data(), m));
    putFloats(x32);
    putDoubles(wide);
    putDoubles(scaled);
    std::vector<float> product(size);
    rows::multiply(x32.data(), 1.5f, product.data(), m);
    putFloats(product);
    for (std::size_t j = 0; j < size; ++j)
        weights[j] = std::abs(std::isfinite(x[j]) ? x[j] : 1.0) / 7.0;
    for (const rows::WeightSums& sums :
         {rows::weightSums(weights.data(), m), rows::widenAndSum(product.data(), widened.data(), m),
          rows::roundToFloatAndSum(weights.data(), rounded32.data(), m)})
        put(sums.sum, sums.support, sums.max);
    putDoubles(widened);
    putDoubles(weights);
    putFloats(rounded32);
    rows::multiply(weights.data(), 0.25, m);
    putDoubles(weights);
    return out.str();
}

} // namespace

void TestPrecision::rowKernelLevelsGiveTheSameBits()
{
    // Each level this CPU has (AVX-512, AVX2, the baseline) against the baseline, kernel by kernel on rows
    // with tails, masks, subnormal exps and non-finite entries, then the whole engine on random sessions.
    const rows::KernelLevel inUse = rows::kernelLevel();
    std::vector<rows::KernelLevel> levels;
    for (rows::KernelLevel level :
         {rows::KernelLevel::Baseline, rows::KernelLevel::X86_64_V3, rows::KernelLevel::X86_64_V4})
        if (rows::kernelLevelAvailable(level))
            levels.push_back(level);
    QVERIFY(!levels.empty() && levels.front() == rows::KernelLevel::Baseline);
    QVERIFY(rows::kernelLevelAvailable(inUse));
    if (levels.size() == 1)
        qInfo("only the baseline row kernels run on this CPU: each level is compared with itself");

    std::mt19937_64 random(11);
    std::normal_distribution<double> normal(0.0, 4.0);
    std::vector<std::pair<std::vector<double>, std::vector<std::uint8_t>>> cases;
    for (Index m : {0, 1, 5, 8, 9, 15, 16, 17, 31, 63, 100, 1000}) {
        std::vector<double> x(static_cast<std::size_t>(m));
        std::vector<std::uint8_t> allowed(x.size());
        for (std::size_t j = 0; j < x.size(); ++j) {
            x[j] = normal(random);
            allowed[j] = random() % 5 != 0;
        }
        cases.emplace_back(x, allowed);
        if (m >= 9) {
            x[3] = -900.0; // below exp's subnormal range, and into it
            x[5] = -706.25;
            x[7] = -0.0;
            cases.emplace_back(x, allowed);
            x[m - 1] = std::numeric_limits<double>::quiet_NaN(); // in the tail, then in a full pack
            cases.emplace_back(x, allowed);
            x[m - 1] = 1.0;
            x[2] = -std::numeric_limits<double>::infinity();
            cases.emplace_back(x, allowed);
        }
    }

    std::vector<Session> sessions;
    for (int normalizer = 0; normalizer <= int(NormalizerType::Hardmax); ++normalizer)
        for (Precision precision : {Precision::Float64, Precision::Float32})
            for (MaskType mask : {MaskType::None, MaskType::Causal, MaskType::Sliding}) {
                Session s = comparedSession(19, normalizer % 2 ? 13 : 19, ScoreFunction::Dot, mask,
                                            {NormalizerType(normalizer), 1.5}, std::uint64_t(normalizer));
                s.precision = precision;
                sessions.push_back(s);
            }

    const auto everything = [&] {
        std::string text;
        for (const auto& [x, allowed] : cases)
            text += everyKernelOn(x, allowed) + '\n';
        for (const Session& s : sessions) {
            std::ostringstream json;
            writeResultJson(computeAttention(s), json);
            text += json.str();
        }
        return text;
    };
    QVERIFY(rows::useKernelLevel(rows::KernelLevel::Baseline));
    const std::string expected = everything();
    for (rows::KernelLevel level : levels) {
        QVERIFY(rows::useKernelLevel(level));
        QCOMPARE(rows::kernelLevel(), level);
        const std::string actual = everything();
        if (actual != expected) {
            const auto at =
                std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end()).first -
                actual.begin();
            QFAIL(qPrintable(
                QStringLiteral("%1 differs from the baseline at character %2: …%3… vs …%4…")
                    .arg(QLatin1String(rows::kernelLevelName(level)))
                    .arg(at)
                    .arg(QString::fromStdString(actual.substr(std::size_t(std::max<long>(0, at - 40)), 80)))
                    .arg(QString::fromStdString(
                        expected.substr(std::size_t(std::max<long>(0, at - 40)), 80)))));
        }
    }
    QVERIFY(rows::useKernelLevel(inUse));
}

void TestPrecision::streamedWideRowsMatchCached()
{
    // WideRows::Streamed changes how the double rows are stored, never what: the same bits and sums as
    // WideRows::Cached on every level, into 16-byte-aligned rows (streamed) and rows one double off (which
    // fall back to cached stores), with tails of every length.
    const rows::KernelLevel inUse = rows::kernelLevel();
    std::mt19937_64 random(5);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (rows::KernelLevel level :
         {rows::KernelLevel::Baseline, rows::KernelLevel::X86_64_V3, rows::KernelLevel::X86_64_V4}) {
        if (!rows::useKernelLevel(level))
            continue;
        for (Index m : {1, 7, 8, 9, 16, 23, 64, 2051}) {
            const std::size_t size = std::size_t(m);
            std::vector<float> x(size);
            for (float& v : x)
                v = normal(random);
            if (size > 8)
                x[size / 2] = INFINITY; // the finiteness check sees streamed rows too
            for (std::size_t offset : {0, 1}) {
                std::vector<double> scores[2], scaled[2], weights[2];
                bool finite[2];
                rows::WeightSums sums[2];
                std::vector<float> divided[2];
                for (int streamed = 0; streamed < 2; ++streamed) {
                    const rows::WideRows stores =
                        streamed ? rows::WideRows::Streamed : rows::WideRows::Cached;
                    scores[streamed].assign(size + offset, -1.0);
                    scaled[streamed].assign(size + offset, -1.0);
                    weights[streamed].assign(size + offset, -1.0);
                    divided[streamed] = x;
                    finite[streamed] =
                        rows::divide(divided[streamed].data(), 3.0f, scores[streamed].data() + offset,
                                     scaled[streamed].data() + offset, m, stores);
                    sums[streamed] =
                        rows::widenAndSum(x.data(), weights[streamed].data() + offset, m, stores);
                }
                const QByteArray where = QByteArrayLiteral("level ") + rows::kernelLevelName(level) +
                                         ", m = " + QByteArray::number(qlonglong(m)) + ", offset " +
                                         QByteArray::number(qulonglong(offset));
                QVERIFY2(finite[0] == finite[1] && finite[0] == (size <= 8), where);
                QVERIFY2(divided[0] == divided[1], where);
                for (const std::vector<double>* pair : {scores, scaled, weights}) {
                    const std::size_t bytes = pair[0].size() * sizeof(double);
                    QVERIFY2(std::memcmp(pair[0].data(), pair[1].data(), bytes) == 0, where);
                }
                QVERIFY2(std::memcmp(&sums[0], &sums[1], sizeof sums[0]) == 0, where);
            }
        }
    }
    QVERIFY(rows::useKernelLevel(inUse));
}

void TestPrecision::parallelForRunsEveryChunkOnce()
{
    for (Index count : {0, 1, 7, 64, 1000, 4097})
        for (Index grain : {1, 3, 64, 5000}) {
            std::vector<std::atomic<int>> visits(static_cast<std::size_t>(count));
            parallelFor(count, grain, [&](Index begin, Index end) {
                QVERIFY(end - begin <= grain && begin % grain == 0);
                for (Index i = begin; i < end; ++i)
                    visits[std::size_t(i)].fetch_add(1);
            });
            for (const auto& v : visits)
                QCOMPARE(v.load(), 1);
        }
}

void TestPrecision::allPiecesPassTestsEveryEntryOnce()
{
    constexpr Index piece = Index(1) << 16;
    for (Index count : {Index(0), Index(5), piece, piece + 1, 3 * piece + 5}) {
        std::vector<std::atomic<int>> visits(static_cast<std::size_t>(count));
        const auto visit = [&visits](Index first, Index size) {
            for (Index i = first; i < first + size; ++i)
                visits[std::size_t(i)].fetch_add(1);
            return true;
        };
        QVERIFY(allPiecesPass(count, visit));
        for (const std::atomic<int>& v : visits)
            QCOMPARE(v.load(), 1);
        // One failing entry anywhere, the last one included, fails the whole.
        for (Index bad : {Index(0), count / 2, count - 1}) {
            if (count == 0)
                continue;
            QVERIFY(!allPiecesPass(
                count, [bad](Index first, Index size) { return bad < first || bad >= first + size; }));
        }
    }
}

void TestPrecision::parallelForCarriesTheFirstError()
{
    std::atomic<int> ran{0};
    try {
        parallelFor(100, 1, [&](Index begin, Index) {
            ran.fetch_add(1);
            if (begin == 3)
                throw std::runtime_error("chunk 3");
        });
        QFAIL("expected the chunk's error");
    } catch (const std::runtime_error& e) {
        QCOMPARE(QByteArray(e.what()), QByteArray("chunk 3"));
    }
    QVERIFY(ran.load() >= 4);
    // The pool is usable again, and a chunk may itself call parallelFor (it then runs on its thread).
    std::atomic<Index> sum{0};
    parallelFor(10, 2, [&](Index begin, Index end) {
        parallelFor(end - begin, 1, [&](Index b, Index) { sum.fetch_add(begin + b); });
    });
    QCOMPARE(sum.load(), Index(45));
}

void TestPrecision::parallelForFromManyThreads()
{
    // Several callers at once (the window computes on a thread pool while a test or export computes too):
    // one of them uses the pool, the others run alone, and every result is right.
    std::vector<std::thread> callers;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&wrong, t] {
            for (int round = 0; round < 50; ++round) {
                std::vector<std::atomic<int>> visits(257);
                parallelFor(257, 16, [&](Index begin, Index end) {
                    for (Index i = begin; i < end; ++i)
                        visits[std::size_t(i)].fetch_add(1 + t);
                });
                for (const auto& v : visits)
                    if (v.load() != 1 + t)
                        wrong.fetch_add(1);
            }
        });
    for (std::thread& caller : callers)
        caller.join();
    QCOMPARE(wrong.load(), 0);
}

void TestPrecision::resultDoesNotDependOnBlocks()
{
    // Large enough to be cut into blocks run on several threads; the same session computed again, and
    // computed while another thread keeps the pool busy (so its blocks all run on the caller), gives the
    // same bits.
    Session s = blankSession(300, 64, 32, 32, {Initializer::XavierNormal, 1.0, 9});
    s.X = initializeMatrix({Initializer::Normal, 1.0, 10}, 300, 64);
    for (Precision precision : {Precision::Float64, Precision::Float32}) {
        s.precision = precision;
        const AttentionResult first = computeAttention(s);
        std::atomic<bool> stop{false};
        std::thread busy([&] {
            while (!stop.load())
                parallelFor(64, 1, [](Index, Index) { std::this_thread::yield(); });
        });
        for (int round = 0; round < 5; ++round)
            QVERIFY(computeAttention(s) == first);
        stop.store(true);
        busy.join();
    }
}

QKV_TEST_APPLESS_MAIN(TestPrecision)
#include "tst_precision.moc"
