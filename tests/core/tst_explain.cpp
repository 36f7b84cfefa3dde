// SPDX-License-Identifier: GPL-3.0-or-later
// The step-by-step explanation of one cell against the worked example of Shekhar's article
// (docs/references.md) and the engine's own numbers, what float32 does to a row of weights, and the plane
// geometry (convex hull) that the projection views draw.

#include "AttentionEngine.h"
#include "Examples.h"
#include "Explain.h"
#include "ExplanationText.h"
#include "Geometry.h"
#include "Initializers.h"
#include "Normalizers.h"
#include "Positions.h"
#include "Projection.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TestMatrices.h"

#include <QtTest>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

using namespace qkv;

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

#define VERIFY_CONTAINS(text, part)                                                                          \
    QVERIFY2(contains((text), (part)),                                                                       \
             qPrintable(QStringLiteral("missing \"%1\" in:\n%2")                                             \
                            .arg(QString::fromStdString(part), QString::fromStdString(text))))

std::string fixed3(double x)
{
    return QString::number(x, 'f', 3).toStdString();
}

/// " - t", or " + |t|" when t is negative, as the explanation writes a subtraction.
std::string minus(double t)
{
    return t < 0 ? " + " + fixed3(-t) : " - " + fixed3(t);
}

/// A derived value as a factor: negative numbers in parentheses.
std::string factor(double x)
{
    return x < 0 ? "(" + fixed3(x) + ")" : fixed3(x);
}

using test::fromRows;

Session randomSession(Index n, Index m, Index dK, Index dV, std::uint64_t seed)
{
    Session s;
    const Index dModel = 4;
    s.X = initializeMatrix({Initializer::Normal, 1.0, seed}, n, dModel);
    for (Index i = 0; i < n; ++i)
        s.tokens.push_back("q" + std::to_string(i));
    s.pad.assign(static_cast<std::size_t>(n), false);
    if (m != n) {
        Context c;
        c.Z = initializeMatrix({Initializer::Normal, 1.0, seed + 1}, m, dModel);
        for (Index j = 0; j < m; ++j)
            c.tokens.push_back("k" + std::to_string(j));
        c.pad.assign(static_cast<std::size_t>(m), false);
        s.context = c;
    }
    Head head;
    head.W_Q = initializeMatrix({Initializer::XavierNormal, 1.0, seed + 2}, dModel, dK);
    head.W_K = initializeMatrix({Initializer::XavierNormal, 1.0, seed + 3}, dModel, dK);
    head.W_V = initializeMatrix({Initializer::Normal, 1.0, seed + 4}, dModel, dV);
    head.W_S = initializeMatrix({Initializer::Normal, 1.0, seed + 5}, dK, dK);
    head.W_a = initializeMatrix({Initializer::Normal, 1.0, seed + 6}, dK, 3);
    head.U_a = initializeMatrix({Initializer::Normal, 1.0, seed + 7}, dK, 3);
    head.v_a = initializeMatrix({Initializer::Normal, 1.0, seed + 8}, 3, 1).col(0);
    s.heads.push_back(head);
    return s;
}

/// Brace balance of a LaTeX string, ignoring escaped braces.
bool bracesBalance(const std::string& latex)
{
    int depth = 0;
    for (std::size_t k = 0; k < latex.size(); ++k) {
        if (latex[k] == '\\') {
            ++k;
            continue;
        }
        depth += latex[k] == '{' ? 1 : latex[k] == '}' ? -1 : 0;
        if (depth < 0)
            return false;
    }
    return depth == 0;
}

/// The result as a float32 engine would store it if float32 changed nothing but the final rounding: every
/// weight rounded to the nearest float32.
AttentionResult withRoundedWeights(AttentionResult result)
{
    result.precision = Precision::Float32;
    for (HeadResult& head : result.heads)
        head.weights = head.weights.cast<float>().cast<double>();
    return result;
}

/// Σ row − 1 in long double, as a reference for the compensated sums.
double sumMinusOne(const RowVector& row)
{
    long double sum = 0.0L;
    for (Index j = 0; j < row.size(); ++j)
        sum += row(j);
    return static_cast<double>(sum - 1.0L);
}

} // namespace

class TestExplain : public QObject {
    Q_OBJECT
private slots:
    // Explanations.
    void loveAcceptance();
    void loveStructuredData();
    void loveEveryCell_data();
    void loveEveryCell();
    void latexRendering();
    void latexEscapesTokens();
    void positionsAndBiasesExplained();
    void maskedCells_data();
    void maskedCells();
    void emptyRow();
    void sparsemaxMatchesTrace();
    void entmaxMatchesTrace();
    void sigmoidAndHardmax();
    void scoreFunctions_data();
    void scoreFunctions();
    void temperatureUsesShiftedForm();
    void longRowsAreShortened();
    void outOfRangeIsRefused();

    // Precision.
    void float32Ulp_data();
    void float32Ulp();
    void roundedWeightsAreReportedExactly_data();
    void roundedWeightsAreReportedExactly();
    void stepsAwayAreCountedInUlps();
    void longRowsListTheLargestDifferences();
    void precisionOfMaskedAndSigmoidRows();
    void precisionText();
    // Geometry.
    void hullOfSquareWithInteriorPoint();
    void hullOfCollinearPoints();
    void hullWithDuplicates();
    void hullOfFewPoints();
    void insideOrOnHull();
    void outputsLieInsideHullOfValues_data();
    void outputsLieInsideHullOfValues();
};

void TestExplain::loveAcceptance()
{
    const Session s = loadExample("love");
    const AttentionResult r = computeAttention(s);
    const std::string text = toPlainText(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(text, "2*2 + 0*1 + 1*1 = 5");
    VERIFY_CONTAINS(text, "5 / √3 = 2.887");
    VERIFY_CONTAINS(text, "0.707");
    // The article's layout of the softmax step, with the exact exponentials (the article rounds the exponents
    // to three decimals first, so it prints 17.940 and 25.372).
    VERIFY_CONTAINS(text, "e^0.577 = 1.781");
    VERIFY_CONTAINS(text, "e^2.887 = 17.935");
    VERIFY_CONTAINS(text, "e^1.732 = 5.652");
    VERIFY_CONTAINS(text, "sum = 1.781 + 17.935 + 5.652 = 25.368");
    VERIFY_CONTAINS(text, "a_ij = 17.935 / 25.368 = 0.707");
    VERIFY_CONTAINS(text, "\"I\"");
    VERIFY_CONTAINS(text, "\"love\"");
    VERIFY_CONTAINS(text, "q_i = [2, 0, 1]");
    VERIFY_CONTAINS(text, "k_j = [2, 1, 1]");
    VERIFY_CONTAINS(text, "0.070*[1, 0, 1] + 0.707*[1, 2, 0] + 0.223*[1, 1, 0] = [1.000, 1.637, 0.070]");
}

void TestExplain::loveStructuredData()
{
    const Session s = loadExample("love");
    const AttentionResult r = computeAttention(s);
    const CellExplanation e = explainCell(s, r, 0, 0, 1);
    QCOMPARE(e.queryToken, std::string("I"));
    QCOMPARE(e.keyToken, std::string("love"));
    QCOMPARE(e.sum, 5.0);
    QCOMPARE(e.score, 5.0);
    QCOMPARE(e.dK, Index(3));
    QCOMPARE(e.divisor, std::sqrt(3.0));
    QCOMPARE(e.scaled, r.heads[0].scaled(0, 1));
    QVERIFY(e.allowed);
    QCOMPARE(e.maskReason, MaskReason::Allowed);
    QCOMPARE(e.weight, r.heads[0].weights(0, 1));
    QVERIFY(e.showPlainExponentials);
    QCOMPARE(e.allowedCount, Index(3));
    QCOMPARE(e.row.size(), std::size_t(3));
    double shiftedSum = 0.0;
    for (const RowEntry& entry : e.row) {
        shiftedSum += entry.exponential;
        // Both forms of the quotient give the engine's weight.
        QVERIFY(std::abs(entry.exponential / e.trace.expSum - entry.weight) < 1e-15);
        QVERIFY(std::abs(entry.plainExponential / e.plainExponentialSum - entry.weight) < 1e-15);
    }
    QVERIFY(std::abs(shiftedSum - e.trace.expSum) < 1e-14);
    QVERIFY(e.output == r.heads[0].output.row(0));
    QCOMPARE(e.support.size(), std::size_t(3));
}

void TestExplain::loveEveryCell_data()
{
    QTest::addColumn<int>("i");
    QTest::addColumn<int>("j");
    QTest::addColumn<QString>("products");
    QTest::addColumn<QString>("weight");
    // The article's sums and weights.
    const char* products[3][3] = {{"2*0 + 0*1 + 1*1 = 1", "2*2 + 0*1 + 1*1 = 5", "2*1 + 0*1 + 1*1 = 3"},
                                  {"0*0 + 2*1 + 1*1 = 3", "0*2 + 2*1 + 1*1 = 3", "0*1 + 2*1 + 1*1 = 3"},
                                  {"1*0 + 1*1 + 1*1 = 2", "1*2 + 1*1 + 1*1 = 4", "1*1 + 1*1 + 1*1 = 3"}};
    const char* weights[3][3] = {
        {"0.070", "0.707", "0.223"}, {"0.333", "0.333", "0.333"}, {"0.168", "0.533", "0.299"}};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            QTest::addRow("(%d,%d)", i, j)
                << i << j << QString::fromLatin1(products[i][j]) << QString::fromLatin1(weights[i][j]);
}

void TestExplain::loveEveryCell()
{
    QFETCH(int, i);
    QFETCH(int, j);
    QFETCH(QString, products);
    QFETCH(QString, weight);
    const Session s = loadExample("love");
    const AttentionResult r = computeAttention(s);
    const std::string text = toPlainText(explainCell(s, r, 0, i, j));
    VERIFY_CONTAINS(text, products.toStdString());
    VERIFY_CONTAINS(text, "Weight: a_ij = " + weight.toStdString());
    VERIFY_CONTAINS(text, "/ √3 = " + fixed3(r.heads[0].scaled(i, j)));
}

void TestExplain::latexRendering()
{
    const Session s = loadExample("love");
    const AttentionResult r = computeAttention(s);
    const std::string latex = toLatex(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(latex, "\\begin{align*}");
    VERIFY_CONTAINS(latex, "\\end{align*}");
    VERIFY_CONTAINS(latex, "2 \\cdot 2 + 0 \\cdot 1 + 1 \\cdot 1 = 5");
    VERIFY_CONTAINS(latex, "\\frac{5}{\\sqrt{3}} = 2.887");
    VERIFY_CONTAINS(latex, "\\frac{17.935}{25.368} = 0.707");
    VERIFY_CONTAINS(latex, "``love''");
    QVERIFY(!contains(latex, "√"));
    QCOMPARE(std::count(latex.begin(), latex.end(), '*'), 2); // only in align*: products use \cdot
    QVERIFY2(bracesBalance(latex), latex.c_str());
}

// With positions or biases, the explanation first says where q_i and k_j come from: x_i + PE_i (the row the
// engine projected), the biases, and for RoPE the products before their turn, which turned by position
// give q_i and k_j. A plain session gets none of these lines.
void TestExplain::positionsAndBiasesExplained()
{
    Session s = loadExample("love"); // d_model = 4, d_k = 3
    QVERIFY(!contains(toPlainText(explainCell(s, computeAttention(s), 0, 1, 2)), "W_Q"));

    s.positions.type = PositionType::Sinusoidal;
    s.heads[0].b_Q = Vector::Constant(s.dK(), 0.5);
    AttentionResult r = computeAttention(s);
    CellExplanation e = explainCell(s, r, 0, 1, 2);
    QVERIFY(sameMatrix(e.queryInput, r.positionedX.row(1)));
    QVERIFY(sameMatrix(e.keyInput, r.positionedX.row(2)));
    std::string text = toPlainText(e);
    VERIFY_CONTAINS(text, "Positions (sinusoidal): x_i + PE_i = [");
    VERIFY_CONTAINS(text, "q_i = (x_i + PE_i) W_Q + b_Q, k_j = (x_j + PE_j) W_K");
    QVERIFY2(bracesBalance(toLatex(e)), toLatex(e).c_str());

    s.positions.type = PositionType::Rope;
    s.heads[0].W_Q = Matrix::Random(4, 2); // RoPE turns pairs: an even d_k
    s.heads[0].W_K = Matrix::Random(4, 2);
    s.heads[0].b_Q = Vector::Constant(2, 0.5);
    r = computeAttention(s);
    e = explainCell(s, r, 0, 2, 1);
    Matrix turned = e.qBeforeRope;
    applyRope(turned, s.positions.base, s.positions.pairing, 2);
    QKV_COMPARE_NEAR(turned, Matrix(e.q), 1e-12);
    turned = e.kBeforeRope;
    applyRope(turned, s.positions.base, s.positions.pairing, 1);
    QKV_COMPARE_NEAR(turned, Matrix(e.k), 1e-12);
    QVERIFY(!sameMatrix(e.qBeforeRope, e.q)); // position 2 turns it
    text = toPlainText(e);
    VERIFY_CONTAINS(text, "RoPE: x_i W_Q + b_Q = [");
    VERIFY_CONTAINS(text, "  x_j W_K = [");
    QVERIFY2(bracesBalance(toLatex(e)), toLatex(e).c_str());
}

void TestExplain::latexEscapesTokens()
{
    QCOMPARE(escapeLatex("a_b & {c} 100% #1 $x"), std::string("a\\_b \\& \\{c\\} 100\\% \\#1 \\$x"));
    QCOMPARE(escapeLatex("~^\\"), std::string("\\textasciitilde{}\\textasciicircum{}\\textbackslash{}"));
    QCOMPARE(escapeLatex("é\n"), std::string("é "));

    Session s = loadExample("love");
    s.tokens = {"x_1", "{&}", "50%"};
    const AttentionResult r = computeAttention(s);
    const std::string latex = toLatex(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(latex, "``x\\_1''");
    VERIFY_CONTAINS(latex, "``\\{\\&\\}''");
    QVERIFY2(bracesBalance(latex), latex.c_str());
    const std::string text = toPlainText(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(text, "\"x_1\"");
}

void TestExplain::maskedCells_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("i");
    QTest::addColumn<int>("j");
    QTest::addColumn<int>("reason");
    QTest::addColumn<QString>("why");
    QTest::newRow("causal, future key") << int(MaskType::Causal) << 0 << 1 << int(MaskReason::Causal)
                                        << QStringLiteral("causal mask, key j = 1 comes after query i = 0");
    QTest::newRow("causal, allowed") << int(MaskType::Causal) << 2 << 1 << int(MaskReason::Allowed)
                                     << QStringLiteral("allowed (causal mask: j ≤ i)");
    QTest::newRow("prefix") << int(MaskType::Prefix) << 0 << 2 << int(MaskReason::Prefix)
                            << QStringLiteral("prefix-LM mask, key j = 2 is outside the prefix (p = 1)");
    QTest::newRow("sliding, too far back") << int(MaskType::Sliding) << 2 << 0 << int(MaskReason::Sliding)
                                           << QStringLiteral("i - j = 2 is not below w = 2");
    QTest::newRow("custom") << int(MaskType::Custom) << 1 << 2 << int(MaskReason::Custom)
                            << QStringLiteral("custom mask, allowed[i][j] = 0");
}

void TestExplain::maskedCells()
{
    QFETCH(int, type);
    QFETCH(int, i);
    QFETCH(int, j);
    QFETCH(int, reason);
    QFETCH(QString, why);
    Session s = loadExample("love");
    s.mask.type = MaskType(type);
    s.mask.prefixLength = 1;
    s.mask.window = 2;
    if (s.mask.type == MaskType::Custom) {
        s.mask.allowed = MaskMatrix::Ones(3, 3);
        s.mask.allowed(1, 2) = 0;
    }
    const AttentionResult r = computeAttention(s);
    const CellExplanation e = explainCell(s, r, 0, i, j);
    QCOMPARE(int(e.maskReason), reason);
    QCOMPARE(e.allowed, reason == int(MaskReason::Allowed));
    const std::string text = toPlainText(e);
    VERIFY_CONTAINS(text, why.toStdString());
    if (!e.allowed) {
        VERIFY_CONTAINS(text, "Mask: masked, so a_ij = 0");
        VERIFY_CONTAINS(text, "Weight: a_ij = 0.000 (masked)");
        QCOMPARE(e.weight, 0.0);
        QVERIFY(!contains(text, "Softmax")); // no normalizer step for a masked cell
    }
    // The score and the scale are still explained: the engine computes them for every cell.
    VERIFY_CONTAINS(text, "Score (dot product)");
    QVERIFY(bracesBalance(toLatex(e)));
}

void TestExplain::emptyRow()
{
    Session s = loadExample("love");
    s.pad = {false, true, false};
    const AttentionResult r = computeAttention(s);

    const CellExplanation key = explainCell(s, r, 0, 0, 1);
    QCOMPARE(key.maskReason, MaskReason::KeyPadding);
    VERIFY_CONTAINS(toPlainText(key), "key \"love\" is padding, so it is masked in every row");

    const CellExplanation query = explainCell(s, r, 0, 1, 0);
    QCOMPARE(query.maskReason, MaskReason::QueryPadding);
    QCOMPARE(query.allowedCount, Index(0));
    const std::string text = toPlainText(query);
    VERIFY_CONTAINS(text, "query \"love\" is padding, so its whole row is masked");
    VERIFY_CONTAINS(text, "has no allowed key");
    VERIFY_CONTAINS(text, "o_i = Σ_j a_ij v_j = 0 = [0.000, 0.000, 0.000]");
    QVERIFY(bracesBalance(toLatex(query)));
}

void TestExplain::sparsemaxMatchesTrace()
{
    const Session s = loadExample("sparsemax");
    QCOMPARE(s.normalizer.type, NormalizerType::Sparsemax);
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    bool sawZero = false;
    for (Index i = 0; i < s.n(); ++i) {
        const NormalizerTrace trace =
            traceRow(s.normalizer, h.scaled.row(i).data(), h.allowed.row(i).data(), s.m(), s.temperature);
        for (Index j = 0; j < s.m(); ++j) {
            const CellExplanation e = explainCell(s, r, 0, i, j);
            QCOMPARE(e.trace.threshold, trace.threshold);
            QCOMPARE(e.trace.support, trace.support);
            QCOMPARE(Index(e.support.size()), trace.support);
            for (Index key : e.support)
                QVERIFY(h.weights(i, key) > 0);
            // a = max(z − t, 0) with the trace's threshold.
            QVERIFY(std::abs(e.weight - std::max(e.logit - trace.threshold, 0.0)) < 1e-12);
            sawZero = sawZero || e.weight == 0.0;

            const std::string text = toPlainText(e);
            VERIFY_CONTAINS(text, "Sparsemax over the");
            VERIFY_CONTAINS(text, "threshold t = " + fixed3(trace.threshold));
            VERIFY_CONTAINS(text, "keys): ");
            VERIFY_CONTAINS(text, "support (z_j > t, " + std::to_string(trace.support) + " keys)");
            for (Index key : e.support)
                VERIFY_CONTAINS(text,
                                "\"" + s.tokens[std::size_t(key)] + "\" (j = " + std::to_string(key) + ")");
            VERIFY_CONTAINS(text, "a_ij = max(" + fixed3(e.logit) + minus(trace.threshold) + ", 0)");
            QVERIFY(bracesBalance(toLatex(e)));
        }
    }
    QVERIFY(sawZero); // the example shows exact zeros
}

void TestExplain::entmaxMatchesTrace()
{
    Session s = loadExample("sparsemax");
    s.normalizer = {NormalizerType::Entmax, 1.5};
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];
    for (Index i = 0; i < s.n(); ++i) {
        const NormalizerTrace trace =
            traceRow(s.normalizer, h.scaled.row(i).data(), h.allowed.row(i).data(), s.m(), s.temperature);
        const CellExplanation e = explainCell(s, r, 0, i, 0);
        QCOMPARE(e.trace.threshold, trace.threshold);
        QCOMPARE(Index(e.support.size()), trace.support);
        const double d = std::max(0.5 * e.logit - trace.threshold, 0.0);
        QVERIFY(std::abs(e.weight - d * d) < 1e-9);
        const std::string text = toPlainText(e);
        VERIFY_CONTAINS(text, "1.5-entmax over the");
        VERIFY_CONTAINS(text, "threshold t = " + fixed3(trace.threshold));
        VERIFY_CONTAINS(text, "a_ij = [0.5*" + factor(e.logit) + minus(trace.threshold) + "]₊^2");
        QVERIFY(bracesBalance(toLatex(e)));
    }
}

void TestExplain::sigmoidAndHardmax()
{
    Session s = loadExample("love");
    s.normalizer.type = NormalizerType::Sigmoid;
    AttentionResult r = computeAttention(s);
    std::string text = toPlainText(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(text, "a_ij = 1 / (1 + e^-z) = 1 / (1 + e^-2.887) = " + fixed3(r.heads[0].weights(0, 1)));

    s.normalizer.type = NormalizerType::Hardmax;
    r = computeAttention(s);
    text = toPlainText(explainCell(s, r, 0, 0, 1));
    VERIFY_CONTAINS(text, "is reached by \"love\" (j = 1)");
    VERIFY_CONTAINS(text, "a_ij = 1/k = 1/1 = 1.000");
    text = toPlainText(explainCell(s, r, 0, 0, 0));
    VERIFY_CONTAINS(text, "a_ij = 0 (z = 0.577 is below the maximum)");
    // The "love" row ties three ways: each gets 1/3.
    const CellExplanation tie = explainCell(s, r, 0, 1, 2);
    QCOMPARE(tie.support.size(), std::size_t(3));
    VERIFY_CONTAINS(toPlainText(tie), "a_ij = 1/k = 1/3 = 0.333");
}

void TestExplain::scoreFunctions_data()
{
    QTest::addColumn<int>("score");
    QTest::addColumn<QString>("marker");
    QTest::newRow("dot") << int(ScoreFunction::Dot) << QStringLiteral("s = q_i · k_j = ");
    QTest::newRow("general") << int(ScoreFunction::General) << QStringLiteral("s = (q_i W_S) · k_j = ");
    QTest::newRow("additive") << int(ScoreFunction::Additive)
                              << QStringLiteral("h = tanh(q_i W_a + k_j U_a) = ");
    QTest::newRow("cosine") << int(ScoreFunction::Cosine)
                            << QStringLiteral("s = (q_i · k_j) / (‖q_i‖ ‖k_j‖) = ");
}

void TestExplain::scoreFunctions()
{
    QFETCH(int, score);
    QFETCH(QString, marker);
    Session s = randomSession(4, 5, 3, 2, 42);
    s.score = ScoreFunction(score);
    s.scale = defaultScale(s.score);
    const AttentionResult r = computeAttention(s);
    for (Index i = 0; i < s.n(); ++i)
        for (Index j = 0; j < s.m(); ++j) {
            const CellExplanation e = explainCell(s, r, 0, i, j);
            QCOMPARE(e.keyToken, "k" + std::to_string(j));
            // The term-by-term sum is the engine's score (for cosine, before dividing by the norms).
            const double expected =
                s.score == ScoreFunction::Cosine ? e.sum / (e.queryNorm * e.keyNorm) : e.sum;
            QVERIFY2(
                std::abs(expected - e.score) < 1e-12,
                qPrintable(QStringLiteral("%1 vs %2").arg(expected, 0, 'g', 17).arg(e.score, 0, 'g', 17)));
            const std::string text = toPlainText(e);
            VERIFY_CONTAINS(text, marker.toStdString());
            if (s.score == ScoreFunction::Dot || s.score == ScoreFunction::General)
                VERIFY_CONTAINS(text, "/ √3 = ");
            else
                VERIFY_CONTAINS(text, "Scale: none, s' = s = ");
            QVERIFY(bracesBalance(toLatex(e)));
        }
}

void TestExplain::temperatureUsesShiftedForm()
{
    Session s = loadExample("love");
    s.temperature = 0.5;
    const AttentionResult r = computeAttention(s);
    const CellExplanation e = explainCell(s, r, 0, 0, 1);
    QVERIFY(!e.showPlainExponentials);
    QCOMPARE(e.logit, e.scaled / 0.5);
    const std::string text = toPlainText(e);
    VERIFY_CONTAINS(text, "z = s' / τ = 2.887 / 0.5 = 5.774");
    VERIFY_CONTAINS(text, "e^(5.774 - 5.774) = e^0.000 = 1.000");
    VERIFY_CONTAINS(text, "a_ij = 1.000 / " + fixed3(e.trace.expSum) + " = " + fixed3(e.weight));
    QVERIFY(!contains(text, "e^2.887 ="));
    QVERIFY(bracesBalance(toLatex(e)));
}

void TestExplain::longRowsAreShortened()
{
    Session s = randomSession(3, 30, 16, 12, 9);
    const AttentionResult r = computeAttention(s);
    const CellExplanation e = explainCell(s, r, 0, 1, 25);
    QCOMPARE(e.row.size(), std::size_t(30));
    const std::string text = toPlainText(e);
    VERIFY_CONTAINS(text, "sum over all 30 allowed keys = ");
    VERIFY_CONTAINS(text, "(j = 25 \"k25\")"); // the explained key stays listed
    QVERIFY(!contains(text, "(j = 20 \"k20\")"));
    VERIFY_CONTAINS(text, "+ ... +");
    VERIFY_CONTAINS(text, ", ...");
    const std::string latex = toLatex(e);
    QVERIFY(bracesBalance(latex));
    VERIFY_CONTAINS(latex, "\\cdots");
}

void TestExplain::outOfRangeIsRefused()
{
    const Session s = loadExample("love");
    const AttentionResult r = computeAttention(s);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, explainCell(s, r, 1, 0, 0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, explainCell(s, r, 0, 3, 0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, explainCell(s, r, 0, 0, -1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             explainCell(s, computeAttention(loadExample("causal")), 0, 0, 0));
}

void TestExplain::float32Ulp_data()
{
    QTest::addColumn<double>("x");
    QTest::addColumn<double>("ulp");
    QTest::newRow("1") << 1.0 << std::ldexp(1.0, -23);
    QTest::newRow("just below 1") << 0.999 << std::ldexp(1.0, -24);
    QTest::newRow("0.5") << 0.5 << std::ldexp(1.0, -24);
    QTest::newRow("0.1") << 0.1 << std::ldexp(1.0, -27);
    QTest::newRow("-0.1") << -0.1 << std::ldexp(1.0, -27);
    QTest::newRow("3") << 3.0 << std::ldexp(1.0, -22);
    QTest::newRow("smallest normal") << std::ldexp(1.0, -126) << std::ldexp(1.0, -149);
    QTest::newRow("subnormal") << 1e-40 << std::ldexp(1.0, -149);
    QTest::newRow("0") << 0.0 << std::ldexp(1.0, -149);
}

void TestExplain::float32Ulp()
{
    QFETCH(double, x);
    QFETCH(double, ulp);
    QCOMPARE(qkv::float32Ulp(x), ulp);
    QCOMPARE(float32Epsilon, double(FLT_EPSILON));
    // Against the float32 numbers themselves: the gap from a float32 value (not a power of 2) to the next.
    const float f = static_cast<float>(std::abs(x));
    if (f > 0 && std::nextafter(f, 0.0f) > 0 && f != std::ldexp(1.0f, std::ilogb(f)))
        QCOMPARE(qkv::float32Ulp(x), double(std::nextafter(f, 2 * f)) - double(f));
}

void TestExplain::roundedWeightsAreReportedExactly_data()
{
    QTest::addColumn<int>("score");
    QTest::addColumn<int>("normalizer");
    QTest::newRow("love softmax") << -1 << int(NormalizerType::Softmax);
    QTest::newRow("dot softmax") << int(ScoreFunction::Dot) << int(NormalizerType::Softmax);
    QTest::newRow("general entmax") << int(ScoreFunction::General) << int(NormalizerType::Entmax);
    QTest::newRow("additive sparsemax") << int(ScoreFunction::Additive) << int(NormalizerType::Sparsemax);
    QTest::newRow("cosine softmax") << int(ScoreFunction::Cosine) << int(NormalizerType::Softmax);
    QTest::newRow("dot hardmax") << int(ScoreFunction::Dot) << int(NormalizerType::Hardmax);
}

void TestExplain::roundedWeightsAreReportedExactly()
{
    QFETCH(int, score);
    QFETCH(int, normalizer);
    Session s = score < 0 ? loadExample("love") : randomSession(3, 6, 3, 2, 17);
    if (score >= 0) {
        s.score = ScoreFunction(score);
        s.scale = defaultScale(s.score);
        s.context->Z.row(4) = s.context->Z.row(1); // identical keys: tied under hardmax
        s.temperature = 0.7;
    }
    s.normalizer.type = NormalizerType(normalizer);
    const AttentionResult exact = computeAttention(s);
    const AttentionResult rounded = withRoundedWeights(exact);

    for (Index i = 0; i < s.n(); ++i) {
        const PrecisionComparison c = comparePrecision(s, rounded, 0, i, 0);
        QCOMPARE(c.precision, Precision::Float32);
        QCOMPARE(c.keyCount, s.m());
        QCOMPARE(c.allowedCount, s.m());
        QCOMPARE(static_cast<Index>(c.listed.size()), s.m()); // a short row: every key
        const RowVector w = exact.heads[0].weights.row(i);
        double maxDifference = 0.0;
        Index maxKey = -1, differing = 0;
        for (const PrecisionEntry& entry : c.listed) {
            const double weight = w(entry.key);
            const double roundingError = double(static_cast<float>(weight)) - weight;
            // The float64 row is recomputed from the session: it is the engine's float64 row.
            QKV_COMPARE_NEAR(entry.reference, weight, 1e-15);
            QCOMPARE(entry.computed, double(static_cast<float>(weight)));
            QKV_COMPARE_NEAR(entry.difference, roundingError, 1e-15);
            // Rounding to nearest moves a value by at most half a float32 step.
            QVERIFY2(entry.ulps <= 0.5 + 1e-6, qPrintable(QString::number(entry.ulps)));
            if (weight != 0.0)
                QKV_COMPARE_NEAR(entry.ulps, std::abs(roundingError) / qkv::float32Ulp(weight), 1e-6);
            if (std::abs(roundingError) > maxDifference) {
                maxDifference = std::abs(roundingError);
                maxKey = entry.key;
            }
            differing += roundingError != 0.0;
        }
        QKV_COMPARE_NEAR(c.maxDifference, maxDifference, 1e-15);
        QCOMPARE(c.maxDifferenceKey, maxKey);
        QCOMPARE(c.differing, differing);
        QVERIFY(c.maxUlps <= 0.5 + 1e-6);
        QVERIFY(c.sumsToOne);
        QVERIFY(std::abs(c.referenceSumError) < 1e-15);
        QKV_COMPARE_NEAR(c.computedSumError, sumMinusOne(rounded.heads[0].weights.row(i)), 1e-16);
    }
}

void TestExplain::stepsAwayAreCountedInUlps()
{
    const Session s = loadExample("love");
    const AttentionResult exact = computeAttention(s);
    AttentionResult moved = withRoundedWeights(exact);
    // Weight (0, 1) = 0.7071…, in [0.5, 1) where float32 steps are 2^-24: moved 3 steps up.
    float weight = static_cast<float>(exact.heads[0].weights(0, 1));
    for (int step = 0; step < 3; ++step)
        weight = std::nextafter(weight, 1.0f);
    moved.heads[0].weights(0, 1) = weight;

    const PrecisionComparison c = comparePrecision(s, moved, 0, 0, 0);
    QCOMPARE(c.maxDifferenceKey, Index(1));
    const PrecisionEntry& entry = c.listed[1];
    QCOMPARE(entry.key, Index(1));
    QVERIFY2(entry.ulps >= 2.5 && entry.ulps <= 3.5, qPrintable(QString::number(entry.ulps)));
    QKV_COMPARE_NEAR(entry.difference, double(weight) - exact.heads[0].weights(0, 1), 1e-16);
    QKV_COMPARE_NEAR(c.maxDifference, entry.difference, 0.0);
    QCOMPARE(c.maxUlps, entry.ulps);
    // In units of ε = 2^-23, three steps of 2^-24 are about 1.5.
    QVERIFY(std::abs(c.maxDifference / float32Epsilon - 1.5) <= 0.25);
}

void TestExplain::longRowsListTheLargestDifferences()
{
    const Session s = randomSession(2, 40, 4, 3, 5);
    const AttentionResult exact = computeAttention(s);
    const AttentionResult rounded = withRoundedWeights(exact);
    const PrecisionComparison all = comparePrecision(s, rounded, 0, 1, 0, 40);
    QCOMPARE(all.listed.size(), std::size_t(40));

    std::vector<double> differences;
    for (const PrecisionEntry& entry : all.listed)
        differences.push_back(std::abs(entry.difference));
    std::vector<double> largest = differences;
    std::sort(largest.begin(), largest.end(), std::greater<>());
    const Index smallestKey = std::min_element(differences.begin(), differences.end()) - differences.begin();

    for (const Index selected : {Index(-1), smallestKey}) {
        const PrecisionComparison c = comparePrecision(s, rounded, 0, 1, selected, 8);
        QCOMPARE(c.listed.size(), std::size_t(8));
        QVERIFY(
            std::is_sorted(c.listed.begin(), c.listed.end(),
                           [](const PrecisionEntry& a, const PrecisionEntry& b) { return a.key < b.key; }));
        int topSeven = 0;
        bool selectedListed = false;
        for (const PrecisionEntry& entry : c.listed) {
            topSeven += std::abs(entry.difference) >= largest[6];
            selectedListed = selectedListed || entry.key == selected;
        }
        QVERIFY(topSeven >= 7);
        QCOMPARE(selectedListed, selected >= 0);
        QCOMPARE(c.maxDifference, largest[0]);
        QCOMPARE(c.allowedCount, Index(40));
    }
}

void TestExplain::precisionOfMaskedAndSigmoidRows()
{
    Session s = loadExample("love");
    s.mask.type = MaskType::Causal;
    PrecisionComparison c = comparePrecision(s, withRoundedWeights(computeAttention(s)), 0, 1, 2);
    QCOMPARE(c.allowedCount, Index(2)); // keys 0 and 1; the masked key is 0 in both precisions
    QCOMPARE(c.listed.size(), std::size_t(2));
    QCOMPARE(c.listed.back().key, Index(1));

    s.pad[0] = true; // query 0 padding: its row has no allowed key
    c = comparePrecision(s, withRoundedWeights(computeAttention(s)), 0, 0, 0);
    QCOMPARE(c.allowedCount, Index(0));
    QVERIFY(c.listed.empty());
    QVERIFY(!c.sumsToOne);
    VERIFY_CONTAINS(toPlainText(c), "no allowed key");

    s = loadExample("love");
    s.normalizer.type = NormalizerType::Sigmoid;
    c = comparePrecision(s, withRoundedWeights(computeAttention(s)), 0, 0, 0);
    QVERIFY(!c.sumsToOne); // sigmoid rows need not sum to 1
    QVERIFY(!contains(toPlainText(c), "row sum"));

    QVERIFY_THROWS_EXCEPTION(std::out_of_range, comparePrecision(s, computeAttention(s), 1, 0, 0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, comparePrecision(s, computeAttention(s), 0, 3, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             comparePrecision(s, computeAttention(loadExample("causal")), 0, 0, 0));
}

void TestExplain::precisionText()
{
    const Session s = loadExample("love");
    const AttentionResult exact = computeAttention(s);
    const PrecisionComparison c = comparePrecision(s, withRoundedWeights(exact), 0, 0, 1);
    const std::string text = toPlainText(c);
    VERIFY_CONTAINS(text,
                    "Precision: row i = 0 \"I\" as computed in float32, beside the same row in float64:");
    // Nine significant digits tell the float32 value from the float64 one.
    const double w = exact.heads[0].weights(0, 1);
    VERIFY_CONTAINS(text, "j = 1 \"love\": float64 " + QString::number(w, 'g', 9).toStdString() +
                              ", float32 " +
                              QString::number(double(static_cast<float>(w)), 'g', 9).toStdString());
    VERIFY_CONTAINS(text, "largest difference ");
    VERIFY_CONTAINS(text, " of 3 weights differ");
    VERIFY_CONTAINS(text, "row sum - 1: float64 ");
    VERIFY_CONTAINS(text, "ε = 2^-23");
    QVERIFY(!contains(text, "largest differences")); // three keys: all listed

    const std::string latex = toLatex(c);
    VERIFY_CONTAINS(latex, "\\begin{align*}");
    VERIFY_CONTAINS(latex, "\\varepsilon_{32}");
    VERIFY_CONTAINS(latex, "``love''");
    QVERIFY(!contains(latex, "ε"));
    QVERIFY2(bracesBalance(latex), latex.c_str());

    const Session wide = randomSession(2, 30, 4, 3, 8);
    const std::string shortened =
        toPlainText(comparePrecision(wide, withRoundedWeights(computeAttention(wide)), 0, 0, 0, 8));
    VERIFY_CONTAINS(shortened, "... the 8 of 30 allowed keys with the largest differences");
}

void TestExplain::hullOfSquareWithInteriorPoint()
{
    // Centre and an edge midpoint are not vertices; counter-clockwise from the lowest-x, lowest-y corner.
    const Matrix points = fromRows({{0.5, 0.5}, {1, 1}, {0, 1}, {0.5, 0}, {0, 0}, {1, 0}});
    const std::vector<Index> hull = convexHull(points);
    QCOMPARE(hull, (std::vector<Index>{4, 5, 1, 2}));
}

void TestExplain::hullOfCollinearPoints()
{
    const Matrix points = fromRows({{2, 2}, {0, 0}, {3, 3}, {1, 1}, {-1, -1}});
    QCOMPARE(convexHull(points), (std::vector<Index>{4, 2}));
    const Matrix vertical = fromRows({{0, 3}, {0, 1}, {0, 2}});
    QCOMPARE(convexHull(vertical), (std::vector<Index>{1, 0}));
}

void TestExplain::hullWithDuplicates()
{
    const Matrix points = fromRows({{0, 0}, {2, 0}, {0, 0}, {0, 2}, {2, 0}, {0, 2}, {0.5, 0.5}});
    QCOMPARE(convexHull(points), (std::vector<Index>{0, 1, 3}));
    const Matrix same = fromRows({{1, 1}, {1, 1}, {1, 1}});
    QCOMPARE(convexHull(same), (std::vector<Index>{0}));
}

void TestExplain::hullOfFewPoints()
{
    QVERIFY(convexHull(Matrix(0, 2)).empty());
    QCOMPARE(convexHull(fromRows({{3, 4}})), (std::vector<Index>{0}));
    QCOMPARE(convexHull(fromRows({{3, 4}, {1, 1}})), (std::vector<Index>{1, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, convexHull(Matrix::Zero(3, 3)));
}

void TestExplain::insideOrOnHull()
{
    const Matrix square = fromRows({{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0.5, 0.5}});
    const std::vector<Index> hull = convexHull(square);
    const auto inside = [&](double x, double y, double tolerance) {
        return qkv::insideOrOnHull(square, hull, Eigen::RowVector2d(x, y), tolerance);
    };
    QVERIFY(inside(0.5, 0.5, 0));
    QVERIFY(inside(0.25, 0.9, 0));
    QVERIFY(inside(1, 0.5, 0)); // on an edge
    QVERIFY(inside(1, 1, 0));   // a vertex
    QVERIFY(!inside(1.01, 0.5, 0));
    QVERIFY(inside(1.01, 0.5, 0.02));
    QVERIFY(!inside(-0.5, -0.5, 0.1));

    const Matrix segment = fromRows({{0, 0}, {2, 2}});
    const std::vector<Index> segmentHull = convexHull(segment);
    QVERIFY(qkv::insideOrOnHull(segment, segmentHull, Eigen::RowVector2d(1, 1), 0));
    QVERIFY(qkv::insideOrOnHull(segment, segmentHull, Eigen::RowVector2d(1, 1.001), 0.01));
    QVERIFY(!qkv::insideOrOnHull(segment, segmentHull, Eigen::RowVector2d(3, 3), 0.01));

    const Matrix single = fromRows({{1, 2}});
    QVERIFY(qkv::insideOrOnHull(single, convexHull(single), Eigen::RowVector2d(1, 2), 0));
    QVERIFY(!qkv::insideOrOnHull(single, convexHull(single), Eigen::RowVector2d(1, 2.1), 0.01));
    QVERIFY(!qkv::insideOrOnHull(single, {}, Eigen::RowVector2d(1, 2), 1));
}

void TestExplain::outputsLieInsideHullOfValues_data()
{
    QTest::addColumn<int>("dV");
    QTest::addColumn<int>("normalizer");
    QTest::addColumn<int>("mask");
    for (int dV : {2, 3, 6})
        for (NormalizerType type :
             {NormalizerType::Softmax, NormalizerType::Sparsemax, NormalizerType::Entmax})
            for (MaskType mask : {MaskType::None, MaskType::Causal})
                QTest::addRow("d_v=%d %s %s", dV, toString(type), toString(mask))
                    << dV << int(type) << int(mask);
}

void TestExplain::outputsLieInsideHullOfValues()
{
    // Each output row is a convex combination of value rows (the weights are ≥ 0 and sum to 1), and an affine
    // map keeps convex combinations, so the projected outputs lie in the hull of the projected values.
    QFETCH(int, dV);
    QFETCH(int, normalizer);
    QFETCH(int, mask);
    Session s = randomSession(9, 9, 3, dV, std::uint64_t(1000 + dV * 10 + normalizer));
    s.normalizer.type = NormalizerType(normalizer);
    s.mask.type = MaskType(mask);
    const AttentionResult r = computeAttention(s);
    const HeadResult& h = r.heads[0];

    // d_v = 2: the raw coordinates; otherwise PCA of V.
    const Projection2D projection = dV == 2 ? pickDimensions(h.V, 0, 1) : pcaProjection(h.V);
    const Matrix outputs = projectRows(projection, h.output);
    const std::vector<Index> hull = convexHull(projection.points);
    QVERIFY(hull.size() >= 3);
    const double tolerance = 1e-9 * (1.0 + projection.points.cwiseAbs().maxCoeff());
    for (Index i = 0; i < outputs.rows(); ++i) {
        QVERIFY(std::abs(h.weights.row(i).sum() - 1.0) < 1e-12);
        QVERIFY2(qkv::insideOrOnHull(projection.points, hull, outputs.row(i), tolerance),
                 qPrintable(QStringLiteral("output row %1 is outside the hull").arg(i)));
    }
    // A point well outside is refused, so the check is not vacuous.
    const RowVector far = projection.points.colwise().maxCoeff().array() + 1.0;
    QVERIFY(!qkv::insideOrOnHull(projection.points, hull, far, tolerance));
}

QKV_TEST_APPLESS_MAIN(TestExplain)
#include "tst_explain.moc"
