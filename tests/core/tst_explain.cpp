// The step-by-step explanation of one cell against the seed's worked example and the engine's own numbers,
// and the plane geometry (convex hull) that the projection views draw.

#include "AttentionEngine.h"
#include "Examples.h"
#include "Explain.h"
#include "ExplanationText.h"
#include "Geometry.h"
#include "Initializers.h"
#include "Normalizers.h"
#include "Projection.h"

#include "TestMatrices.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
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
    // The seed's layout of the softmax step, with the exact exponentials (the article rounds the exponents to
    // three decimals first, so it prints 17.940 and 25.372).
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
    // The seed's sums and weights.
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

QTEST_APPLESS_MAIN(TestExplain)
#include "tst_explain.moc"
