// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in examples generated from NumPy's legacy stream (core/session/internal/NumpyExamples.h) against
// every number the article they come from (Brenndoerfer's, docs/references.md) prints for them, to the 3
// decimals it prints.

#include "AttentionEngine.h"
#include "Examples.h"
#include "NumpyRandom.h"
#include "SessionFile.h"

#include "TestMain.h"
#include <QtTest>

#include <cmath>
#include <initializer_list>

using qkv::AttentionResult;
using qkv::Index;
using qkv::Matrix;
using qkv::Session;

namespace {

Matrix rows(Index count, Index cols, std::initializer_list<double> values)
{
    Matrix m(count, cols);
    Index k = 0;
    for (double value : values) {
        m(k / cols, k % cols) = value;
        ++k;
    }
    return m;
}

/// Entry by entry, `actual` rounded to 3 decimals (as NumPy prints it) equals the printed value.
QString printedMismatch(const Matrix& actual, const Matrix& printed)
{
    if (actual.rows() != printed.rows() || actual.cols() != printed.cols())
        return QStringLiteral("shape %1 × %2, printed %3 × %4")
            .arg(actual.rows())
            .arg(actual.cols())
            .arg(printed.rows())
            .arg(printed.cols());
    for (Index i = 0; i < actual.rows(); ++i)
        for (Index j = 0; j < actual.cols(); ++j)
            if (std::llround(actual(i, j) * 1000.0) != std::llround(printed(i, j) * 1000.0))
                return QStringLiteral("entry (%1, %2): %3 rounds to %4, printed %5")
                    .arg(i)
                    .arg(j)
                    .arg(actual(i, j), 0, 'g', 17)
                    .arg(actual(i, j), 0, 'f', 3)
                    .arg(printed(i, j), 0, 'f', 3);
    return {};
}

} // namespace

#define QKV_COMPARE_PRINTED(actual, printed)                                                                 \
    do {                                                                                                     \
        const QString problem = printedMismatch((actual), (printed));                                        \
        QVERIFY2(problem.isEmpty(), qPrintable(problem));                                                    \
    } while (false)

class TestNumpyExamples : public QObject {
    Q_OBJECT

private slots:
    void listed();
    void theCatSatAsPrinted();
    void theCatSatWeightsAreNumpyStream();
    void layerTestAsPrinted();
    void layerTestIsNumpyStream();
    void loadsLikeItsJson_data();
    void loadsLikeItsJson();
};

void TestNumpyExamples::listed()
{
    QStringList names;
    for (const qkv::ExampleInfo& example : qkv::builtinExamples()) {
        names << QString::fromStdString(example.name);
        QVERIFY(!example.title.empty());
    }
    QVERIFY2(names.contains(QStringLiteral("the-cat-sat")), qPrintable(names.join(u',')));
    QVERIFY2(names.contains(QStringLiteral("layer-test")), qPrintable(names.join(u',')));
    QVERIFY(names.contains(QStringLiteral("love"))); // the embedded ones are still there
    QCOMPARE(names.removeDuplicates(), 0);
}

void TestNumpyExamples::theCatSatAsPrinted()
{
    const Session session = qkv::loadExample("the-cat-sat");
    QCOMPARE(session.tokens, (std::vector<std::string>{"The", "cat", "sat"}));
    QCOMPARE(session.dims, (std::vector<std::string>{"determiner", "noun", "verb", "animacy"}));
    QVERIFY(session.X == rows(3, 4, {1.0, 0.0, 0.0, 0.0, 0.1, 1.0, 0.0, 0.8, 0.0, 0.1, 1.0, 0.0}));
    const AttentionResult result = qkv::computeAttention(session);
    QCOMPARE(result.heads.size(), std::size_t{1});
    const qkv::HeadResult& head = result.heads.front();
    // The article's "A Worked Example with Real Words", steps 1 to 4.
    QKV_COMPARE_PRINTED(head.Q,
                        rows(3, 3, {0.248, -0.069, 0.324, 1.003, -0.309, -0.271, 0.866, 0.372, -0.246}));
    QKV_COMPARE_PRINTED(head.K,
                        rows(3, 3, {0.121, -0.957, -0.862, -0.359, -0.575, -0.499, -0.482, -0.757, 0.749}));
    QKV_COMPARE_PRINTED(head.V,
                        rows(3, 3, {-0.272, 0.055, -0.575, -0.262, 0.034, -0.692, -0.282, 0.896, -0.021}));
    QKV_COMPARE_PRINTED(head.scores,
                        rows(3, 3, {-0.183, -0.211, 0.175, 0.651, -0.047, -0.452, -0.039, -0.402, -0.883}));
    QKV_COMPARE_PRINTED(head.scaled,
                        rows(3, 3, {-0.106, -0.122, 0.101, 0.376, -0.027, -0.261, -0.022, -0.232, -0.510}));
    QKV_COMPARE_PRINTED(head.weights,
                        rows(3, 3, {0.311, 0.306, 0.383, 0.455, 0.304, 0.241, 0.412, 0.334, 0.253}));
    QKV_COMPARE_PRINTED(head.output,
                        rows(3, 3, {-0.273, 0.371, -0.399, -0.272, 0.251, -0.477, -0.271, 0.261, -0.474}));
    QKV_COMPARE_PRINTED(result.output, head.output); // one head, no W_O
    // "(sum: 1.000)" on every row.
    for (Index i = 0; i < 3; ++i)
        QCOMPARE(std::llround(head.weights.row(i).sum() * 1000.0), 1000LL);
}

void TestNumpyExamples::theCatSatWeightsAreNumpyStream()
{
    // np.random.seed(42); W_q = randn(4, 3) * 0.5; W_k = randn(4, 3) * 0.5; W_v = randn(4, 3) * 0.5, exactly.
    const Session session = qkv::loadExample("the-cat-sat");
    qkv::NumpyRandom random(42);
    const Matrix W_q = random.randn(4, 3) * 0.5;
    const Matrix W_k = random.randn(4, 3) * 0.5;
    const Matrix W_v = random.randn(4, 3) * 0.5;
    QVERIFY(session.heads.front().W_Q == W_q);
    QVERIFY(session.heads.front().W_K == W_k);
    QVERIFY(session.heads.front().W_V == W_v);
    // The first entry is NumPy's first normal after seed 42 (0.4967141530112327, from Debian's numpy 1.24)
    // halved.
    QCOMPARE(session.heads.front().W_Q(0, 0), 0.4967141530112327 * 0.5);
}

void TestNumpyExamples::layerTestAsPrinted()
{
    const AttentionResult result = qkv::computeAttention(qkv::loadExample("layer-test"));
    const qkv::HeadResult& head = result.heads.front();
    QCOMPARE(result.output.rows(), Index{5}); // "Output shape: (5, 6)"
    QCOMPARE(result.output.cols(), Index{6});
    // The article's "Test the complete layer": the attention weight matrix as printed.
    QKV_COMPARE_PRINTED(head.weights, rows(5, 5, {0.068, 0.446, 0.094, 0.171, 0.221, //
                                                  0.012, 0.476, 0.085, 0.148, 0.280, //
                                                  0.046, 0.240, 0.251, 0.096, 0.367, //
                                                  0.177, 0.324, 0.158, 0.208, 0.132, //
                                                  0.457, 0.169, 0.077, 0.125, 0.172}));
}

void TestNumpyExamples::layerTestIsNumpyStream()
{
    const Session session = qkv::loadExample("layer-test");
    QVERIFY(qkv::sameMatrix(session.X, qkv::NumpyRandom(42).randn(5, 8)));
    qkv::NumpyRandom random(123);
    const double scale = std::sqrt(2.0 / (8.0 + 6.0));
    QVERIFY(qkv::sameMatrix(session.heads.front().W_Q, Matrix(random.randn(8, 6) * scale)));
    QVERIFY(qkv::sameMatrix(session.heads.front().W_K, Matrix(random.randn(8, 6) * scale)));
    QVERIFY(qkv::sameMatrix(session.heads.front().W_V, Matrix(random.randn(8, 6) * scale)));
    QCOMPARE(session.scale.kind, qkv::Scale::Kind::SqrtDk);
    QCOMPARE(session.normalizer.type, qkv::NormalizerType::Softmax);
}

void TestNumpyExamples::loadsLikeItsJson_data()
{
    QTest::addColumn<QString>("name");
    QTest::newRow("the-cat-sat") << QStringLiteral("the-cat-sat");
    QTest::newRow("layer-test") << QStringLiteral("layer-test");
}

void TestNumpyExamples::loadsLikeItsJson()
{
    // The generated example's text reads back as the same session, and writing that session gives the text.
    QFETCH(QString, name);
    const std::string& text = qkv::exampleJson(name.toStdString());
    const Session session = qkv::parseSession(text);
    QVERIFY(session == qkv::loadExample(name.toStdString()));
    QCOMPARE(qkv::serializeSession(session), text);
}

QKV_TEST_APPLESS_MAIN(TestNumpyExamples)
#include "tst_numpyexamples.moc"
