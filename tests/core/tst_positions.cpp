// SPDX-License-Identifier: GPL-3.0-or-later
// Positional encodings (docs/semantics.md): the sinusoidal and learned tables, RoPE's rotation, ALiBi's
// slopes and bias, each against values computed here from the definitions; the engine with each of them; the
// session file's `positions` key (round trips and refusals).

#include "AttentionEngine.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "Examples.h"
#include "Explain.h"
#include "ExplanationText.h"
#include "Initializers.h"
#include "Positions.h"
#include "SessionEdits.h"
#include "SessionFile.h"
#include "SpaceLayout.h"

#include "TestMatrices.h"
#include "TestSessions.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <functional>
#include <string>

using namespace qkv;
using qkv::test::errorOf;

namespace {

using test::fromRows;
using test::SessionBuilder;

/// RoPE written out for one row from the definition: pair r of d/2 turned by position · base^(−2r/d).
RowVector ropeByDefinition(const RowVector& x, double position, double base, bool half)
{
    const Index d = x.size();
    RowVector out = x;
    for (Index r = 0; r < d / 2; ++r) {
        const double angle = position / std::pow(base, 2.0 * double(r) / double(d));
        const Index a = half ? r : 2 * r, b = half ? r + d / 2 : 2 * r + 1;
        out(a) = x(a) * std::cos(angle) - x(b) * std::sin(angle);
        out(b) = x(a) * std::sin(angle) + x(b) * std::cos(angle);
    }
    return out;
}

/// Llama 3's frequencies as transformers computes them (modeling_rope_utils._compute_llama3_parameters),
/// written out one frequency at a time: inv_freq, the wavelengths, the low frequencies divided by the
/// factor, and the medium ones blended.
std::vector<double> llama3FrequenciesByDefinition(Index d, double base, double factor, double low,
                                                  double high, double original)
{
    const double pi = 3.14159265358979323846;
    std::vector<double> out;
    for (Index i = 0; i < d; i += 2) {
        const double invFreq = 1.0 / std::pow(base, double(i) / double(d));
        const double wavelen = 2 * pi / invFreq;
        const double lowFreqWavelen = original / low, highFreqWavelen = original / high;
        double llama = wavelen > lowFreqWavelen ? invFreq / factor : invFreq;
        const double smoothFactor = (original / wavelen - low) / (high - low);
        const double smoothed = (1 - smoothFactor) * llama / factor + smoothFactor * llama;
        const bool medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
        out.push_back(medium ? smoothed : llama);
    }
    return out;
}

/// Softmax of each row of `logits` by plain loops.
Matrix softmaxRows(const Matrix& logits)
{
    Matrix out(logits.rows(), logits.cols());
    for (Index i = 0; i < logits.rows(); ++i) {
        const double largest = logits.row(i).maxCoeff();
        double total = 0.0;
        for (Index j = 0; j < logits.cols(); ++j)
            total += (out(i, j) = std::exp(logits(i, j) - largest));
        out.row(i) /= total;
    }
    return out;
}

/// "I love AI" (n = 3, d_model = 4, d_v = 3, one head; d_k = 3 unless given) with `positions` set to the
/// JSON text given.
std::string loveWithPositions(const std::string& positionsJson, Index dK = 3)
{
    Session love = loadExample("love");
    if (dK != love.dK())
        resizeDK(love, dK, {Initializer::XavierNormal, 1.0, 1});
    std::string text = serializeSession(love);
    const std::string key = "\"score\":";
    text.insert(text.find(key), "\"positions\":" + positionsJson + ",");
    return text;
}

} // namespace

class TestPositions : public QObject {
    Q_OBJECT
private slots:
    void sinusoidalTable_data();
    void sinusoidalTable();
    void sinusoidalInTheEngine_data();
    void sinusoidalInTheEngine();
    void learnedInTheEngine();
    void ropeRotatesPairs_data();
    void ropeRotatesPairs();
    void ropeKeepsNormsAndDependsOnOffsetsOnly_data();
    void ropeKeepsNormsAndDependsOnOffsetsOnly();
    void ropeInTheEngine_data();
    void ropeInTheEngine();
    void ropeScalingFrequencies();
    void ropeScalingInTheEngine();
    void ropePairPlane_data();
    void ropePairPlane();
    void alibiSlopes_data();
    void alibiSlopes();
    void alibiBiasComesBeforeTheTemperature_data();
    void alibiBiasComesBeforeTheTemperature();
    void explanationsFollowThePositions_data();
    void explanationsFollowThePositions();
    void noPositionsLeavesTheResultAsItWas();
    void reusedResultFollowsThePositions();
    void editsKeepPositionsValid();
    void positionsRoundTrip_data();
    void positionsRoundTrip();
    void unknownKeysInPositionsAreKept();
    void refusals_data();
    void refusals();
};

// ---- sinusoidal ---------------------------------------------------------------------------------------

void TestPositions::sinusoidalTable_data()
{
    QTest::addColumn<int>("dModel");
    QTest::addColumn<double>("base");
    QTest::newRow("d = 4, base 10000") << 4 << 10000.0;
    QTest::newRow("d = 5 (odd), base 10000") << 5 << 10000.0;
    QTest::newRow("d = 6, base 100") << 6 << 100.0;
}

void TestPositions::sinusoidalTable()
{
    QFETCH(int, dModel);
    QFETCH(double, base);
    const Matrix table = qkv::sinusoidalTable(3, dModel, base);
    QCOMPARE(table.rows(), Index(3));
    QCOMPARE(table.cols(), Index(dModel));
    // Position 0: sin 0 = 0 in even columns, cos 0 = 1 in odd ones.
    for (Index c = 0; c < dModel; ++c)
        QCOMPARE(table(0, c), c % 2 == 0 ? 0.0 : 1.0);
    // Position 1 and 2 from the formula: PE[p][2i] = sin(p / base^(2i/d)), PE[p][2i+1] = cos(p /
    // base^(2i/d)).
    for (Index p = 1; p < 3; ++p)
        for (Index c = 0; c < dModel; ++c) {
            const double i2 = double(c - c % 2); // 2i
            const double angle = double(p) / std::pow(base, i2 / double(dModel));
            QKV_COMPARE_NEAR(table(p, c), c % 2 == 0 ? std::sin(angle) : std::cos(angle), 1e-15);
        }
    if (dModel == 4) { // written out: d = 4 has frequencies 1 and 1/100
        QKV_COMPARE_NEAR(table.row(1),
                         fromRows({{std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)}}), 1e-15);
    }
}

void TestPositions::sinusoidalInTheEngine_data()
{
    QTest::addColumn<int>("m"); // 0: self-attention
    QTest::addColumn<bool>("float32");
    QTest::newRow("self, float64") << 0 << false;
    QTest::newRow("cross, float64") << 3 << false;
    QTest::newRow("self, float32") << 0 << true;
    QTest::newRow("cross, float32") << 6 << true;
}

void TestPositions::sinusoidalInTheEngine()
{
    QFETCH(int, m);
    QFETCH(bool, float32);
    Session s = SessionBuilder(5, 6).context(m).heads(2, 4, 3).build(3);
    s.positions.type = PositionType::Sinusoidal;
    s.positions.base = 500.0;
    s.precision = float32 ? Precision::Float32 : Precision::Float64;
    const double tolerance = float32 ? 1e-5 : 1e-12;
    const AttentionResult r = computeAttention(s);
    // Each side counts positions from 0.
    const Matrix X = s.X + qkv::sinusoidalTable(5, 6, 500.0);
    QKV_COMPARE_NEAR(r.positionedX, X, tolerance);
    const Matrix keys = m > 0 ? Matrix(s.context->Z + qkv::sinusoidalTable(m, 6, 500.0)) : X;
    if (m > 0)
        QKV_COMPARE_NEAR(r.positionedZ, keys, tolerance);
    else
        QCOMPARE(r.positionedZ.size(), Index(0));
    for (int h = 0; h < 2; ++h) {
        const Head& head = s.heads[std::size_t(h)];
        const HeadResult& out = r.heads[std::size_t(h)];
        QKV_COMPARE_NEAR(out.Q, X * head.W_Q, 4 * tolerance);
        QKV_COMPARE_NEAR(out.K, keys * head.W_K, 4 * tolerance);
        QKV_COMPARE_NEAR(out.V, keys * head.W_V, 4 * tolerance);
    }
}

// ---- learned ------------------------------------------------------------------------------------------

void TestPositions::learnedInTheEngine()
{
    // P has more rows than positions; rows 0 … n − 1 go to X and rows 0 … m − 1 to Z.
    const Matrix P = fromRows({{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, 4}, {5, 5, 5, 5}});
    Session s = loadExample("love");
    s.positions.type = PositionType::Learned;
    s.positions.P = P;
    const AttentionResult self = computeAttention(s);
    QCOMPARE(self.positionedX, Matrix(s.X + P.topRows(3)));
    QKV_COMPARE_NEAR(self.heads[0].Q, (s.X + P.topRows(3)) * s.heads[0].W_Q, 1e-13);
    QKV_COMPARE_NEAR(self.heads[0].K, (s.X + P.topRows(3)) * s.heads[0].W_K, 1e-13);

    setCrossAttention(s, true);
    s.context->Z = fromRows({{1, 1, 1, 1}, {2, 2, 2, 2}});
    s.context->tokens = {"x", "y"};
    s.context->pad = {false, false};
    const AttentionResult cross = computeAttention(s);
    QCOMPARE(cross.positionedZ, Matrix(s.context->Z + P.topRows(2)));
    QKV_COMPARE_NEAR(cross.heads[0].V, (s.context->Z + P.topRows(2)) * s.heads[0].W_V, 1e-13);

    // Identical tokens at different positions are different inputs once P is added.
    Session same = loadExample("love");
    same.X.row(2) = same.X.row(0);
    same.positions = s.positions;
    const AttentionResult r = computeAttention(same);
    QVERIFY(r.heads[0].K.row(2) != r.heads[0].K.row(0));
}

// ---- RoPE ---------------------------------------------------------------------------------------------

void TestPositions::ropeRotatesPairs_data()
{
    QTest::addColumn<bool>("half");
    QTest::newRow("half") << true;
    QTest::newRow("interleaved") << false;
}

void TestPositions::ropeRotatesPairs()
{
    QFETCH(bool, half);
    const RopePairing pairing = half ? RopePairing::Half : RopePairing::Interleaved;
    // One pair (d = 2): (1, 0) at position p turns by p radians whatever the base.
    Matrix pair = fromRows({{1, 0}, {1, 0}, {1, 0}});
    applyRope(pair, 10000.0, pairing);
    for (Index p = 0; p < 3; ++p)
        QKV_COMPARE_NEAR(pair.row(p), fromRows({{std::cos(double(p)), std::sin(double(p))}}), 1e-15);

    // d = 4, base 100, position 2: pair 0 turns by 2 rad, pair 1 by 2 / 100^(2/4) = 0.2 rad.
    Matrix x = fromRows({{1, 2, 3, 4}});
    applyRope(x, 100.0, pairing, 2);
    const double c2 = std::cos(2.0), s2 = std::sin(2.0), c02 = std::cos(0.2), s02 = std::sin(0.2);
    const Matrix expected =
        half ? fromRows({{1 * c2 - 3 * s2, 2 * c02 - 4 * s02, 1 * s2 + 3 * c2, 2 * s02 + 4 * c02}})
             : fromRows({{1 * c2 - 2 * s2, 1 * s2 + 2 * c2, 3 * c02 - 4 * s02, 3 * s02 + 4 * c02}});
    QKV_COMPARE_NEAR(x, expected, 1e-14);

    // float32: the same rotation within float32's rounding.
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x32(1, 4);
    x32 << 1, 2, 3, 4;
    applyRope(x32, 100.0, pairing, 2);
    QKV_COMPARE_NEAR(Matrix(x32.cast<double>()), expected, 1e-6);
}

void TestPositions::ropeKeepsNormsAndDependsOnOffsetsOnly_data()
{
    ropeRotatesPairs_data();
}

void TestPositions::ropeKeepsNormsAndDependsOnOffsetsOnly()
{
    QFETCH(bool, half);
    const RopePairing pairing = half ? RopePairing::Half : RopePairing::Interleaved;
    const Index positions = 7, d = 8;
    // The same q and the same k at every position.
    const RowVector q = initializeMatrix({Initializer::Normal, 1.0, 1}, 1, d).row(0);
    const RowVector k = initializeMatrix({Initializer::Normal, 1.0, 2}, 1, d).row(0);
    Matrix Q = q.replicate(positions, 1), K = k.replicate(positions, 1);
    applyRope(Q, 10000.0, pairing);
    applyRope(K, 10000.0, pairing);
    for (Index p = 0; p < positions; ++p) {
        QKV_COMPARE_NEAR(Q.row(p).norm(), q.norm(), 1e-14); // a rotation keeps lengths
        QKV_COMPARE_NEAR(Q.row(p), ropeByDefinition(q, double(p), 10000.0, half), 1e-14);
    }
    // q_i · k_j depends on i − j only.
    for (Index i = 0; i < positions; ++i)
        for (Index j = 0; j < positions; ++j) {
            const Index back = std::min(i, j);
            QKV_COMPARE_NEAR(Q.row(i).dot(K.row(j)), Q.row(i - back).dot(K.row(j - back)), 1e-13);
        }
    QVERIFY(std::abs(Q.row(0).dot(K.row(1)) - Q.row(0).dot(K.row(2))) > 1e-3); // and it does depend on it
}

void TestPositions::ropeInTheEngine_data()
{
    QTest::addColumn<bool>("half");
    QTest::addColumn<int>("m");
    QTest::addColumn<bool>("float32");
    QTest::newRow("half, self, float64") << true << 0 << false;
    QTest::newRow("interleaved, self, float64") << false << 0 << false;
    QTest::newRow("half, cross, float64") << true << 4 << false;
    QTest::newRow("interleaved, cross, float32") << false << 7 << true;
    QTest::newRow("half, self, float32") << true << 0 << true;
}

void TestPositions::ropeInTheEngine()
{
    QFETCH(bool, half);
    QFETCH(int, m);
    QFETCH(bool, float32);
    Session s = SessionBuilder(6, 5).context(m).heads(2, 4, 3).build(17);
    s.heads[1].b_Q = (Vector(4) << 0.5, -1, 2, 0.25).finished(); // rotation after the bias
    s.heads[1].b_K = (Vector(4) << 1, 1, -1, 0).finished();
    s.X.row(3) = s.X.row(1); // identical tokens: their keys differ once turned
    s.positions.type = PositionType::Rope;
    s.positions.base = 50.0;
    s.positions.pairing = half ? RopePairing::Half : RopePairing::Interleaved;
    s.precision = float32 ? Precision::Float32 : Precision::Float64;
    const double tolerance = float32 ? 2e-5 : 1e-12;
    const AttentionResult r = computeAttention(s);
    QCOMPARE(r.positionedX.size(), Index(0)); // nothing is added to X
    for (int h = 0; h < 2; ++h) {
        const Head& head = s.heads[std::size_t(h)];
        Matrix Q = s.X * head.W_Q, K = s.keySide() * head.W_K;
        if (head.b_Q.size())
            Q.rowwise() += head.b_Q.transpose();
        if (head.b_K.size())
            K.rowwise() += head.b_K.transpose();
        for (Index i = 0; i < Q.rows(); ++i) // positions from 0 on each side
            Q.row(i) = ropeByDefinition(Q.row(i), double(i), 50.0, half);
        for (Index j = 0; j < K.rows(); ++j)
            K.row(j) = ropeByDefinition(K.row(j), double(j), 50.0, half);
        const HeadResult& out = r.heads[std::size_t(h)];
        QKV_COMPARE_NEAR(out.Q, Q, tolerance); // Q and K shown as the scores use them: turned
        QKV_COMPARE_NEAR(out.K, K, tolerance);
        QKV_COMPARE_NEAR(out.V, Matrix(s.keySide() * head.W_V), tolerance); // V is not turned
        QKV_COMPARE_NEAR(out.scores, Matrix(Q * K.transpose()), 4 * tolerance);
        QKV_COMPARE_NEAR(out.weights, softmaxRows(Q * K.transpose() / 2.0), 4 * tolerance);
    }
}

// Llama 3.1 8B's rope_scaling (θ = 500000, d_head = 128, factor 8, low 1, high 4, 8192 positions), and
// the linear scaling, against transformers' formulas written out.
void TestPositions::ropeScalingFrequencies()
{
    const Index d = 128;
    const std::vector<double> plain = ropeFrequencies(d, 500000.0);
    const RopeScaling llama3{RopeScalingType::Llama3, 8.0, 1.0, 4.0, 8192.0};
    const std::vector<double> scaled = ropeFrequencies(d, 500000.0, llama3);
    const std::vector<double> expected = llama3FrequenciesByDefinition(d, 500000.0, 8.0, 1.0, 4.0, 8192.0);
    QCOMPARE(scaled.size(), std::size_t(d / 2));
    int kept = 0, divided = 0, blended = 0;
    for (std::size_t r = 0; r < scaled.size(); ++r) {
        QKV_COMPARE_NEAR(scaled[r], expected[r], 1e-15 * plain[r]);
        QKV_COMPARE_NEAR(plain[r], std::pow(500000.0, -2.0 * double(r) / double(d)), 1e-15 * plain[r]);
        if (scaled[r] == plain[r])
            ++kept;
        else if (std::abs(scaled[r] - plain[r] / 8.0) <= 1e-15 * plain[r])
            ++divided;
        else if (scaled[r] < plain[r] && scaled[r] > plain[r] / 8.0)
            ++blended;
    }
    // High frequencies kept, low ones ÷ 8, a band between blended: all three regimes are exercised.
    QVERIFY2(
        kept > 0 && divided > 0 && blended > 0 && kept + divided + blended == d / 2,
        qPrintable(QStringLiteral("%1 kept, %2 divided, %3 blended").arg(kept).arg(divided).arg(blended)));
    QCOMPARE(scaled.front(), plain.front()); // pair 0: a wavelength of 2π
    const std::vector<double> linear =
        ropeFrequencies(d, 500000.0, RopeScaling{RopeScalingType::Linear, 4.0});
    for (std::size_t r = 0; r < linear.size(); ++r)
        QCOMPARE(linear[r], plain[r] / 4.0);
}

// The engine turns Q and K by the scaled frequencies: linear scaling by f is RoPE at positions p / f.
void TestPositions::ropeScalingInTheEngine()
{
    Session s = SessionBuilder(6, 5).heads(1, 8, 8).build(23);
    s.positions.type = PositionType::Rope;
    s.positions.base = 100.0;
    s.positions.scaling = RopeScaling{RopeScalingType::Llama3, 8.0, 1.0, 4.0, 64.0};
    const AttentionResult r = computeAttention(s);
    Session plain = s;
    plain.positions = PositionSpec{};
    const AttentionResult unturned = computeAttention(plain);
    const std::vector<double> theta = llama3FrequenciesByDefinition(8, 100.0, 8.0, 1.0, 4.0, 64.0);
    for (Index i = 0; i < s.n(); ++i)
        for (Index pair = 0; pair < 4; ++pair) {
            const double angle = double(i) * theta[std::size_t(pair)];
            const double x = unturned.heads[0].Q(i, pair), y = unturned.heads[0].Q(i, pair + 4);
            QKV_COMPARE_NEAR(r.heads[0].Q(i, pair), x * std::cos(angle) - y * std::sin(angle), 1e-12);
            QKV_COMPARE_NEAR(r.heads[0].Q(i, pair + 4), x * std::sin(angle) + y * std::cos(angle), 1e-12);
        }
    // The RoPE pair plane turns by the same angle.
    PlaneOptions options;
    options.mode = PlaneMode::RopePair;
    options.first = 3;
    options.ropeBase = s.positions.base;
    options.ropeScaling = s.positions.scaling;
    QCOMPARE(queryKeyPlane(r.heads[0], options).pairAngle, theta[3]);
    // Linear: positions divided by the factor.
    s.positions.scaling = RopeScaling{RopeScalingType::Linear, 2.0};
    const AttentionResult linear = computeAttention(s);
    for (Index i = 0; i < s.n(); ++i)
        QKV_COMPARE_NEAR(linear.heads[0].Q.row(i),
                         ropeByDefinition(unturned.heads[0].Q.row(i), double(i) / 2.0, 100.0, true), 1e-12);
}

void TestPositions::ropePairPlane_data()
{
    QTest::addColumn<bool>("half");
    QTest::addColumn<int>("m");
    QTest::newRow("half, self") << true << 0;
    QTest::newRow("interleaved, self") << false << 0;
    QTest::newRow("half, cross") << true << 5;
}

// The Q/K plane of one RoPE pair: the pair's two coordinates of Q and K as the engine turned them, and
// turned back by position × θ_pair: what the same session computes without positions.
void TestPositions::ropePairPlane()
{
    QFETCH(bool, half);
    QFETCH(int, m);
    Session s = SessionBuilder(6, 5).context(m).heads(2, 4, 3).build(23);
    s.heads[0].b_Q = (Vector(4) << 0.5, -1, 2, 0.25).finished();
    s.positions.type = PositionType::Rope;
    s.positions.base = 50.0;
    s.positions.pairing = half ? RopePairing::Half : RopePairing::Interleaved;
    const AttentionResult turned = computeAttention(s);
    Session plain = s;
    plain.positions = PositionSpec{};
    const AttentionResult unturned = computeAttention(plain);
    for (int h = 0; h < 2; ++h) {
        const HeadResult& head = turned.heads[std::size_t(h)];
        const HeadResult& before = unturned.heads[std::size_t(h)];
        for (Index pair = 0; pair < 2; ++pair) {
            PlaneOptions options;
            options.mode = PlaneMode::RopePair;
            options.first = pair;
            options.pairing = s.positions.pairing;
            options.ropeBase = s.positions.base;
            const QueryKeyPlane plane = queryKeyPlane(head, options);
            const Index x = half ? pair : 2 * pair, y = half ? pair + 2 : 2 * pair + 1;
            const auto columns = [x, y](const Matrix& rows) {
                Matrix two(rows.rows(), 2);
                two << rows.col(x), rows.col(y);
                return two;
            };
            QVERIFY(plane.queries == columns(head.Q)); // the engine's numbers, unchanged
            QVERIFY(plane.keys == columns(head.K));
            QKV_COMPARE_NEAR(plane.unrotatedQueries, columns(before.Q), 1e-12);
            QKV_COMPARE_NEAR(plane.unrotatedKeys, columns(before.K), 1e-12);
            QCOMPARE(plane.pairAngle, std::pow(50.0, -2.0 * double(pair) / 4.0));
            QVERIFY2(plane.xLabel.find("dimension " + std::to_string(x)) != std::string::npos &&
                         plane.xLabel.find("RoPE pair " + std::to_string(pair)) != std::string::npos,
                     plane.xLabel.c_str());
            QCOMPARE(plane.yLabel, "q/k dimension " + std::to_string(y));
        }
        PlaneOptions outside;
        outside.mode = PlaneMode::RopePair;
        outside.first = 2; // d_k = 4: pairs 0 and 1
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, queryKeyPlane(head, outside));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, valuePlane(head, outside)); // V is not turned
    }
}

// ---- ALiBi --------------------------------------------------------------------------------------------

void TestPositions::alibiSlopes_data()
{
    QTest::addColumn<int>("heads");
    QTest::addColumn<std::vector<double>>("exponents"); // slope h = 2^exponent
    QTest::newRow("1") << 1 << std::vector<double>{-8};
    QTest::newRow("2") << 2 << std::vector<double>{-4, -8};
    // Not a power of two: the 2 of the power below, then every other slope of 4 heads (2^−2).
    QTest::newRow("3") << 3 << std::vector<double>{-4, -8, -2};
    QTest::newRow("8") << 8 << std::vector<double>{-1, -2, -3, -4, -5, -6, -7, -8};
    // 12: the 8 slopes 2^−1 … 2^−8, then slopes 1, 3, 5, 7 of 16 heads (2^−8h/16: 2^−0.5, 2^−1.5, ...).
    QTest::newRow("12") << 12 << std::vector<double>{-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5};
}

void TestPositions::alibiSlopes()
{
    QFETCH(int, heads);
    QFETCH(std::vector<double>, exponents);
    const std::vector<double> slopes = qkv::alibiSlopes(heads);
    QCOMPARE(slopes.size(), exponents.size());
    for (std::size_t h = 0; h < slopes.size(); ++h)
        QKV_COMPARE_NEAR(slopes[h], std::pow(2.0, exponents[h]), 1e-16);
    PositionSpec own;
    own.slopes = {0.5, 0.25};
    QCOMPARE(effectiveAlibiSlopes(own, 2), own.slopes);
    QCOMPARE(effectiveAlibiSlopes(PositionSpec(), heads), slopes);
}

void TestPositions::alibiBiasComesBeforeTheTemperature_data()
{
    QTest::addColumn<bool>("ownSlopes");
    QTest::addColumn<int>("m");
    QTest::addColumn<bool>("float32");
    QTest::newRow("default slopes, self") << false << 0 << false;
    QTest::newRow("own slopes, self") << true << 0 << false;
    QTest::newRow("default slopes, cross") << false << 4 << false;
    QTest::newRow("own slopes, self, float32") << true << 0 << true;
}

void TestPositions::alibiBiasComesBeforeTheTemperature()
{
    QFETCH(bool, ownSlopes);
    QFETCH(int, m);
    QFETCH(bool, float32);
    Session s = SessionBuilder(5, 4).context(m).heads(2, 4, 2).build(29);
    s.positions.type = PositionType::Alibi;
    if (ownSlopes)
        s.positions.slopes = {1.5, -0.75};
    s.temperature = 2.5;
    s.mask.type = MaskType::Causal;
    s.precision = float32 ? Precision::Float32 : Precision::Float64;
    const double tolerance = float32 ? 2e-5 : 1e-12;
    const std::vector<double> slopes =
        ownSlopes ? s.positions.slopes : std::vector<double>{1.0 / 16, 1.0 / 256};
    const AttentionResult r = computeAttention(s);
    for (int h = 0; h < 2; ++h) {
        const Head& head = s.heads[std::size_t(h)];
        const Matrix scores = (s.X * head.W_Q) * (s.keySide() * head.W_K).transpose();
        Matrix scaled = scores / 2.0; // √d_k = 2
        Matrix logits(scaled.rows(), scaled.cols());
        for (Index i = 0; i < scaled.rows(); ++i)
            for (Index j = 0; j < scaled.cols(); ++j) {
                scaled(i, j) -= slopes[std::size_t(h)] * double(std::abs(i - j));
                logits(i, j) = j <= i ? scaled(i, j) / 2.5 : -HUGE_VAL; // the bias, then τ
            }
        const HeadResult& out = r.heads[std::size_t(h)];
        QKV_COMPARE_NEAR(out.scores, scores, 4 * tolerance); // the raw scores have no bias
        QKV_COMPARE_NEAR(out.scaled, scaled, 4 * tolerance); // S' has it
        QKV_COMPARE_NEAR(out.weights, softmaxRows(logits), 4 * tolerance);
    }
}

// ---- the step-by-step panel and the precision comparison ---------------------------------------------

void TestPositions::explanationsFollowThePositions_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("m"); // 0: self-attention
    QTest::newRow("sinusoidal") << int(PositionType::Sinusoidal) << 0;
    QTest::newRow("learned, cross") << int(PositionType::Learned) << 4;
    QTest::newRow("rope") << int(PositionType::Rope) << 0;
    QTest::newRow("rope, cross") << int(PositionType::Rope) << 6;
    QTest::newRow("alibi") << int(PositionType::Alibi) << 0;
}

void TestPositions::explanationsFollowThePositions()
{
    QFETCH(int, type);
    QFETCH(int, m);
    Session s = SessionBuilder(5, 4).context(m).heads(2, 4, 3).build(41);
    s.heads[1].b_Q = Vector::Constant(4, 0.5);
    s.heads[1].b_K = Vector::Constant(4, -0.25);
    s.positions.type = PositionType(type);
    s.positions.P = initializeMatrix({Initializer::Normal, 1.0, 9}, 6, 4);
    s.temperature = 0.7;
    const AttentionResult exact = computeAttention(s);

    // The float32 comparison's reference row is the float64 engine's row: positions and biases included.
    Session single = s;
    single.precision = Precision::Float32;
    const AttentionResult rounded = computeAttention(single);
    for (Index i = 0; i < s.n(); ++i) {
        const PrecisionComparison c = comparePrecision(single, rounded, 1, i, 0, s.m());
        for (const PrecisionEntry& entry : c.listed)
            QKV_COMPARE_NEAR(entry.reference, exact.heads[1].weights(i, entry.key), 1e-12);
    }

    // The step-by-step explanation: q and k as the scores use them, ALiBi's bias as a line of its own.
    const CellExplanation e = explainCell(s, exact, 1, 3, 1);
    QCOMPARE(e.q, RowVector(exact.heads[1].Q.row(3)));
    QCOMPARE(e.k, RowVector(exact.heads[1].K.row(1)));
    QCOMPARE(e.scaled, exact.heads[1].scaled(3, 1));
    const std::string text = toPlainText(e);
    QCOMPARE(e.alibi, type == int(PositionType::Alibi));
    QCOMPARE(text.find("ALiBi") != std::string::npos, e.alibi);
    if (e.alibi) {
        QCOMPARE(e.alibiSlope, 1.0 / 256); // head 2 of 2
        QKV_COMPARE_NEAR(e.unbiasedScaled, exact.heads[1].scores(3, 1) / 2.0, 1e-15);
        QKV_COMPARE_NEAR(e.scaled, e.unbiasedScaled - 2.0 / 256, 1e-15);
    }
}

// ---- compatibility and edits --------------------------------------------------------------------------

void TestPositions::noPositionsLeavesTheResultAsItWas()
{
    // Type none with parameters set computes exactly as without them; the result has no positioned inputs.
    for (const char* name : {"love", "translation", "multihead"}) {
        const Session plain = loadExample(name);
        Session withParameters = plain;
        withParameters.positions.base = 77.0;
        withParameters.positions.pairing = RopePairing::Interleaved;
        const AttentionResult r = computeAttention(plain);
        QVERIFY(computeAttention(withParameters) == r);
        QCOMPARE(r.positionedX.size(), Index(0));
        QCOMPARE(r.positionedZ.size(), Index(0));
        QVERIFY(serializeSession(plain).find("positions") == std::string::npos);
    }
}

void TestPositions::reusedResultFollowsThePositions()
{
    // One result computed into again and again (as the window does): positions on, then off, then on.
    Session positioned = loadExample("translation"); // cross-attention
    positioned.positions.type = PositionType::Sinusoidal;
    const Session plain = loadExample("translation");
    AttentionResult reused;
    computeAttention(positioned, reused);
    QVERIFY(reused == computeAttention(positioned));
    QVERIFY(reused.positionedX.size() > 0 && reused.positionedZ.size() > 0);
    computeAttention(plain, reused);
    QVERIFY(reused == computeAttention(plain));
    QCOMPARE(reused.positionedZ.size(), Index(0));
    computeAttention(positioned, reused);
    QVERIFY(reused == computeAttention(positioned));
}

void TestPositions::editsKeepPositionsValid()
{
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 5};
    Session s = loadExample("love"); // n = 3, d_model = 4, one head
    s.positions.type = PositionType::Learned;
    s.positions.P = Matrix::Ones(3, 4);
    insertToken(s, Side::Query, 1, "new", init); // P gains a row of zeros for position 3
    QCOMPARE(s.positions.P.rows(), Index(4));
    QCOMPARE(RowVector(s.positions.P.row(3)), RowVector::Zero(4).eval());
    resizeDModel(s, 5, init); // P's columns follow X's
    QCOMPARE(s.positions.P.cols(), Index(5));
    QCOMPARE(s.positions.P(0, 3), 1.0);
    QCOMPARE(s.positions.P(0, 4), 0.0);
    QVERIFY2(validate(s).empty(), validate(s).c_str());

    s.positions.type = PositionType::Alibi;
    s.positions.slopes = {0.3};
    qkv::setHeadCount(s, 4, init); // set slopes kept, the new heads' from Press et al. for 4 heads
    QCOMPARE(s.positions.slopes, (std::vector<double>{0.3, 0.0625, 0.015625, 0.00390625}));
    qkv::setHeadCount(s, 2, init);
    QCOMPARE(s.positions.slopes, (std::vector<double>{0.3, 0.0625}));
    QVERIFY2(validate(s).empty(), validate(s).c_str());
}

// ---- the session file ---------------------------------------------------------------------------------

void TestPositions::positionsRoundTrip_data()
{
    QTest::addColumn<QByteArray>("positions");
    QTest::addColumn<int>("type");
    QTest::newRow("none") << QByteArray(R"({"type":"none"})") << int(PositionType::None);
    QTest::newRow("sinusoidal") << QByteArray(R"({"type":"sinusoidal"})") << int(PositionType::Sinusoidal);
    QTest::newRow("sinusoidal, base")
        << QByteArray(R"({"type":"sinusoidal","base":123.5})") << int(PositionType::Sinusoidal);
    QTest::newRow("learned") << QByteArray(
                                    R"({"type":"learned","P":[[1,2,3,4],[5,6,7,8],[0,0,0,0.5],[9,9,9,9]]})")
                             << int(PositionType::Learned);
    QTest::newRow("rope") << QByteArray(R"({"type":"rope"})") << int(PositionType::Rope);
    QTest::newRow("rope, interleaved")
        << QByteArray(R"({"type":"rope","base":500000,"pairing":"interleaved"})") << int(PositionType::Rope);
    QTest::newRow("rope, llama3 scaling")
        << QByteArray(R"({"type":"rope","base":500000,"scaling":{"type":"llama3","factor":8,)"
                      R"("low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}})")
        << int(PositionType::Rope);
    QTest::newRow("rope, linear scaling")
        << QByteArray(R"({"type":"rope","scaling":{"type":"linear","factor":2.5}})")
        << int(PositionType::Rope);
    QTest::newRow("alibi") << QByteArray(R"({"type":"alibi"})") << int(PositionType::Alibi);
    QTest::newRow("alibi, slopes") << QByteArray(R"({"type":"alibi","slopes":[0.125]})")
                                   << int(PositionType::Alibi);
    QTest::newRow("none, parameters kept")
        << QByteArray(R"({"type":"none","base":10,"pairing":"interleaved","slopes":[2]})")
        << int(PositionType::None);
}

void TestPositions::positionsRoundTrip()
{
    QFETCH(QByteArray, positions);
    QFETCH(int, type);
    const Session s = parseSession(loveWithPositions(positions.toStdString(), 4)); // rope needs an even d_k
    QCOMPARE(int(s.positions.type), type);
    const std::string text = serializeSession(s);
    const Session back = parseSession(text);
    QVERIFY(back == s);
    QCOMPARE(serializeSession(back), text);
    QCOMPARE(text.find("\"positions\"") != std::string::npos, !(s.positions == PositionSpec()));
    (void)computeAttention(back); // every one computes
}

void TestPositions::unknownKeysInPositionsAreKept()
{
    // As everywhere else in the file: keys QKV Lab does not know are kept on a round trip.
    const Session s =
        parseSession(loveWithPositions(R"({"type":"sinusoidal","future":{"a":[1,2]},"note":"x"})"));
    const std::string text = serializeSession(s);
    const QJsonObject positions = QJsonDocument::fromJson(QByteArray::fromStdString(text))
                                      .object()
                                      .value(QStringLiteral("positions"))
                                      .toObject();
    QCOMPARE(positions.value(QStringLiteral("type")).toString(), QStringLiteral("sinusoidal"));
    QCOMPARE(positions.value(QStringLiteral("future")).toObject(),
             (QJsonObject{{QStringLiteral("a"), QJsonArray{1, 2}}}));
    QCOMPARE(positions.value(QStringLiteral("note")).toString(), QStringLiteral("x"));
    QVERIFY(parseSession(text) == s);
}

void TestPositions::refusals_data()
{
    QTest::addColumn<QByteArray>("positions");
    QTest::addColumn<QString>("message");
    QTest::newRow("not an object") << QByteArray(R"("rope")")
                                   << QStringLiteral("positions: expected an object, found a string");
    QTest::newRow("no type") << QByteArray(R"({"base":10})") << QStringLiteral("positions.type: missing");
    QTest::newRow("unknown type")
        << QByteArray(R"({"type":"foo"})")
        << QStringLiteral(
               R"(positions.type: expected one of none, sinusoidal, learned, rope, alibi, found "foo")");
    QTest::newRow("negative base") << QByteArray(R"({"type":"sinusoidal","base":-1})")
                                   << QStringLiteral(
                                          "positions.base: expected a positive finite number, found -1");
    QTest::newRow("zero base") << QByteArray(R"({"type":"rope","base":0})")
                               << QStringLiteral(
                                      "positions.base: expected a positive finite number, found 0");
    QTest::newRow("base a string")
        << QByteArray(R"({"type":"rope","base":"big"})")
        << QStringLiteral(R"(positions.base: expected a positive finite number, found "big")");
    QTest::newRow("base too small")
        << QByteArray(R"({"type":"sinusoidal","base":1e-301})")
        << QStringLiteral(
               "positions.base: expected at least 1e-300 (a smaller base makes the angles overflow)");
    QTest::newRow("unknown pairing")
        << QByteArray(R"({"type":"rope","pairing":"diagonal"})")
        << QStringLiteral(R"(positions.pairing: expected one of half, interleaved, found "diagonal")");
    QTest::newRow("scaling not an object")
        << QByteArray(R"({"type":"rope","scaling":2})")
        << QStringLiteral("positions.scaling: expected an object, found a number");
    QTest::newRow("scaling type unknown")
        << QByteArray(R"({"type":"rope","scaling":{"type":"yarn","factor":4}})")
        << QStringLiteral(R"(positions.scaling.type: expected one of none, linear, llama3, found "yarn")");
    QTest::newRow("scaling factor zero")
        << QByteArray(R"({"type":"rope","scaling":{"type":"linear","factor":0}})")
        << QStringLiteral("positions.scaling.factor: expected a positive finite number");
    QTest::newRow("scaling high below low")
        << QByteArray(R"({"type":"rope","scaling":{"type":"llama3","factor":8,"low_freq_factor":4,)"
                      R"("high_freq_factor":2}})")
        << QStringLiteral(
               "positions.scaling.high_freq_factor: expected a finite number larger than low_freq_factor");
    QTest::newRow("scaling unknown key")
        << QByteArray(R"({"type":"rope","scaling":{"type":"linear","factor":2,"beta":1}})")
        << QStringLiteral("positions.scaling.beta: unknown key (expected type, factor, low_freq_factor, "
                          "high_freq_factor, original_max_position_embeddings)");
    QTest::newRow("rope, odd d_k")
        << QByteArray(R"({"type":"rope"})")
        << QStringLiteral(
               "positions.type: rope rotates pairs of coordinates and needs an even d_k, found d_k = 3");
    QTest::newRow("too many slopes") << QByteArray(R"({"type":"alibi","slopes":[1,2]})")
                                     << QStringLiteral(
                                            "positions.slopes: expected 1 number (one per head), found 2");
    QTest::newRow("slope a string") << QByteArray(R"({"type":"alibi","slopes":["x"]})")
                                    << QStringLiteral(
                                           "positions.slopes[0]: expected a number, found a string");
    QTest::newRow("slopes not an array")
        << QByteArray(R"({"type":"alibi","slopes":0.5})")
        << QStringLiteral("positions.slopes: expected an array of numbers (one per head), found a number");
    QTest::newRow("learned without P")
        << QByteArray(R"({"type":"learned"})")
        << QStringLiteral("positions.P: missing (a learned encoding needs a max positions × d_model matrix)");
    QTest::newRow("P too short") << QByteArray(R"({"type":"learned","P":[[1,2,3,4],[5,6,7,8]]})")
                                 << QStringLiteral(
                                        "positions.P: has 2 rows (positions 0 to 1), but the sequence "
                                        "has n = 3 tokens");
    QTest::newRow("P wrong width") << QByteArray(R"({"type":"learned","P":[[1,2,3],[5,6,7],[1,1,1]]})")
                                   << QStringLiteral("positions.P: expected 4 columns, found 3");
}

void TestPositions::refusals()
{
    QFETCH(QByteArray, positions);
    QFETCH(QString, message);
    QCOMPARE(errorOf([&] { (void)parseSession(loveWithPositions(positions.toStdString())); }), message);
}

QKV_TEST_APPLESS_MAIN(TestPositions)
#include "tst_positions.moc"
