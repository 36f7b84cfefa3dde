// SPDX-License-Identifier: GPL-3.0-or-later
// `qkvlab circuits`, `qkvlab decompose` and `qkvlab export --view circuits|composition|decompose` run as the
// real executable on tiny GPT-2, LLaMA (4 query heads over 2 key/value heads, lm_head) and Qwen2 (q/k/v
// biases, tied) checkpoints: the JSON's keys in the documented order, its shapes, and every number against
// the core's circuits (Circuits.h, Composition.h, Decompose.h); the top lists sorted by logit; a session
// file's head against the engine's Q·Kᵀ; every refusal one line naming the option; the exported figures and
// CSV files.

#include "AttentionEngine.h"
#include "Circuits.h"
#include "Composition.h"
#include "Decompose.h"
#include "DelimitedText.h"
#include "Examples.h"
#include "FuzzyCompare.h"
#include "Model.h"
#include "ModelJson.h"
#include "QkvlabProcess.h"
#include "TestMain.h"
#include "TinyModels.h"
#include "TinyTokenizer.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <complex>

using namespace qkv;
using qkv::test::Tiny;

namespace {

constexpr int timeoutMs = 120000;
// The command and this test run the same code on the same weights; the JSON's numbers round-trip.
constexpr double tolerance = 1e-12;
using qkv::test::idList;
using qkv::test::keysInOrder;
using Run = qkv::test::QkvlabRun;

const std::vector<std::int64_t> ids{5, 17, 3, 3, 39, 0};

Run qkvlab(const QStringList& arguments)
{
    return qkv::test::runQkvlabWith(qkv::test::offscreenEnvironment(), arguments, {}, timeoutMs);
}

/// Two layers of each family, float64.
Tiny shape(const QString& family)
{
    Tiny tiny = qkv::test::tinyOfFamily(family, "F64", 2);
    tiny.layers = 2;
    return tiny;
}

QStringList keysOf(const QJsonObject& object)
{
    QStringList keys = object.keys();
    keys.sort();
    return keys;
}

QStringList sorted(QStringList list)
{
    list.sort();
    return list;
}

std::vector<double> numbers(const QJsonValue& value)
{
    std::vector<double> list;
    for (const QJsonValue& item : value.toArray())
        list.push_back(item.toDouble());
    return list;
}

/// A list of rows as a matrix; `columns` gives the shape of an empty list.
Matrix matrix(const QJsonValue& value, Index columns = 0)
{
    const QJsonArray rows = value.toArray();
    Matrix m(rows.size(), rows.isEmpty() ? columns : rows.first().toArray().size());
    for (Index r = 0; r < m.rows(); ++r) {
        const QJsonArray row = rows[int(r)].toArray();
        if (row.size() != m.cols())
            return Matrix(); // ragged: no matrix
        for (Index c = 0; c < m.cols(); ++c)
            m(r, c) = row[int(c)].toDouble();
    }
    return m;
}

/// [{re, im}…] as the real parts then the imaginary parts, both in the listed order.
std::vector<double> eigenvalueParts(const QJsonValue& value)
{
    std::vector<double> re, im;
    for (const QJsonValue& item : value.toArray()) {
        const QJsonObject pair = item.toObject();
        if (keysOf(pair) != QStringList{QStringLiteral("im"), QStringLiteral("re")})
            return {};
        re.push_back(pair[QStringLiteral("re")].toDouble());
        im.push_back(pair[QStringLiteral("im")].toDouble());
    }
    re.insert(re.end(), im.begin(), im.end());
    return re;
}

std::vector<double> eigenvalueParts(const Eigenvalues& values)
{
    std::vector<double> re, im;
    for (const std::complex<double>& value : values) {
        re.push_back(value.real());
        im.push_back(value.imag());
    }
    re.insert(re.end(), im.begin(), im.end());
    return re;
}

QString tokenName(std::int64_t id)
{
    return QStringLiteral("#%1").arg(id); // the tiny models have no tokenizer
}

QStringList csvFields(const QByteArray& line)
{
    QStringList fields;
    for (const QByteArray& field : line.split(','))
        fields.append(QString::fromUtf8(field.startsWith('"') ? field.mid(1, field.size() - 2) : field));
    return fields;
}

/// A labelled CSV matrix: the header's column labels, each line's row label, and the values.
struct LabelledCsv {
    QStringList columns, rows;
    Matrix values;
};

LabelledCsv readLabelledCsv(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QList<QByteArray> lines = file.readAll().split('\n');
    if (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    LabelledCsv csv;
    if (lines.isEmpty())
        return csv;
    csv.columns = csvFields(lines.takeFirst()).mid(1);
    std::string numbers;
    for (const QByteArray& line : lines) {
        const qsizetype comma = line.indexOf("\",");
        csv.rows.append(QString::fromUtf8(line.mid(1, comma - 1)));
        numbers += line.mid(comma + 2).toStdString() + "\n";
    }
    if (!numbers.empty())
        csv.values = parseDelimited(numbers);
    return csv;
}

} // namespace

class TestCircuitsCli : public QObject {
    Q_OBJECT

private slots:
    void modelHead_data();
    void modelHead();
    void textTokens();
    void sessionHead_data();
    void sessionHead();
    void decompose_data();
    void decompose();
    void refusals_data();
    void refusals();
    void exportFigures_data();
    void exportFigures();
};

void TestCircuitsCli::modelHead_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<bool>("tokens");
    QTest::newRow("gpt2 L0H1 tokens") << QStringLiteral("gpt2") << 0 << 1 << true;
    QTest::newRow("gpt2 L1H0") << QStringLiteral("gpt2") << 1 << 0 << false;
    QTest::newRow("llama L1H3 tokens") << QStringLiteral("llama") << 1 << 3 << true;
    QTest::newRow("qwen2 L1H2 tokens") << QStringLiteral("qwen2") << 1 << 2 << true;
}

// A model's head: the keys in the documented order, every shape, and every number the core's.
void TestCircuitsCli::modelHead()
{
    QFETCH(QString, family);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(bool, tokens);
    QTemporaryDir folder;
    const Tiny tiny = shape(family);
    qkv::test::writeModel(tiny, folder.path(), 11);
    constexpr Index top = 3;
    QStringList arguments{QStringLiteral("circuits"), folder.path(),
                          QStringLiteral("--layer"),  QString::number(layer),
                          QStringLiteral("--head"),   QString::number(head)};
    if (tokens)
        arguments += {QStringLiteral("--ids"), idList(ids), QStringLiteral("--top"), QString::number(top)};
    const Run run = qkvlab(arguments);
    QVERIFY_RUN(run, run.exitCode == 0);
    QVERIFY2(run.err.isEmpty(), run.err.constData());
    QVERIFY(run.out.endsWith("}\n") && run.out.count('\n') == 1);
    const QJsonObject json = QJsonDocument::fromJson(run.out).object();
    QStringList keys{QStringLiteral("layer"), QStringLiteral("head"),    QStringLiteral("qk"),
                     QStringLiteral("ov"),    QStringLiteral("full_ov"), QStringLiteral("composition")};
    if (tokens)
        keys.append(QStringLiteral("tokens"));
    QCOMPARE(keysOf(json), sorted(keys));
    QVERIFY(keysInOrder(run.out, keys));
    QVERIFY(keysInOrder(run.out, {QStringLiteral("singular_values"), QStringLiteral("frobenius"),
                                  QStringLiteral("singular_values"), QStringLiteral("frobenius"),
                                  QStringLiteral("eigenvalues"), QStringLiteral("eigenvalues"),
                                  QStringLiteral("copying_score"), QStringLiteral("q"), QStringLiteral("k"),
                                  QStringLiteral("v")}));
    QCOMPARE(json[QStringLiteral("layer")].toInt(-1), layer);
    QCOMPARE(json[QStringLiteral("head")].toInt(-1), head);

    const Model model = Model::open(folder.path().toStdString());
    const ModelCircuits circuits(model);
    const CircuitSpectra spectra = circuitSpectra(circuits.head(layer, head));
    const QJsonObject qk = json[QStringLiteral("qk")].toObject();
    QCOMPARE(int(qk[QStringLiteral("singular_values")].toArray().size()), tiny.headDim());
    QKV_COMPARE_NEAR(numbers(qk[QStringLiteral("singular_values")]), spectra.qk.singularValues, tolerance);
    QKV_COMPARE_NEAR(qk[QStringLiteral("frobenius")].toDouble(), spectra.qk.frobenius, tolerance);
    const QJsonObject ov = json[QStringLiteral("ov")].toObject();
    QKV_COMPARE_NEAR(numbers(ov[QStringLiteral("singular_values")]), spectra.ov->singularValues, tolerance);
    QKV_COMPARE_NEAR(ov[QStringLiteral("frobenius")].toDouble(), spectra.ov->frobenius, tolerance);
    QCOMPARE(int(ov[QStringLiteral("eigenvalues")].toArray().size()), tiny.headDim());
    QKV_COMPARE_NEAR(eigenvalueParts(ov[QStringLiteral("eigenvalues")]),
                     eigenvalueParts(spectra.ovEigenvalues), tolerance);
    const FullOvCircuit fullOv = circuits.fullOv(layer, head);
    const QJsonObject full = json[QStringLiteral("full_ov")].toObject();
    QCOMPARE(keysOf(full), sorted({QStringLiteral("eigenvalues"), QStringLiteral("copying_score")}));
    QKV_COMPARE_NEAR(eigenvalueParts(full[QStringLiteral("eigenvalues")]),
                     eigenvalueParts(fullOv.eigenvalues), tolerance);
    QKV_COMPARE_NEAR(full[QStringLiteral("copying_score")].toDouble(), fullOv.copyingScore, tolerance);

    // One row per earlier layer (none at layer 0), a column per query head.
    const CompositionScores composition = compositionScores<double>(circuits.weights(), layer, head);
    const QJsonObject scores = json[QStringLiteral("composition")].toObject();
    for (const auto& [name, kind] :
         {std::pair{"q", CompositionKind::Query}, std::pair{"k", CompositionKind::Key},
          std::pair{"v", CompositionKind::Value}}) {
        const QJsonValue grid = scores[QLatin1String(name)];
        QVERIFY(grid.isArray());
        QCOMPARE(int(grid.toArray().size()), layer);
        const Matrix printed = matrix(grid, tiny.heads);
        QCOMPARE(printed.cols(), Index(tiny.heads));
        QKV_COMPARE_NEAR(printed, composition.into(kind, layer, head), tolerance);
    }
    if (!tokens)
        return;

    const QJsonObject table = json[QStringLiteral("tokens")].toObject();
    QVERIFY(keysInOrder(run.out,
                        {QStringLiteral("tokens"), QStringLiteral("ids"), QStringLiteral("tokens"),
                         QStringLiteral("qk"), QStringLiteral("ov_top")},
                        run.out.indexOf("\"composition\":")));
    QCOMPARE(numbers(table[QStringLiteral("ids")]), std::vector<double>(ids.begin(), ids.end()));
    QStringList names;
    for (std::int64_t id : ids)
        names.append(tokenName(id));
    QCOMPARE(table[QStringLiteral("tokens")].toVariant().toStringList(), names);
    const auto n = Index(ids.size());
    const Matrix printedQk = matrix(table[QStringLiteral("qk")]);
    QCOMPARE(printedQk.rows(), n);
    QCOMPARE(printedQk.cols(), n);
    QKV_COMPARE_NEAR(printedQk, circuits.tokenQk(layer, head, ids), tolerance);
    QVERIFY(keysInOrder(run.out,
                        {QStringLiteral("top"), QStringLiteral("id"), QStringLiteral("token"),
                         QStringLiteral("logit"), QStringLiteral("id")},
                        run.out.indexOf("\"ov_top\":")));
    const std::vector<std::vector<TokenValue>> expectedTop = circuits.ovTop(layer, head, ids, top);
    const QJsonArray ovTop = table[QStringLiteral("ov_top")].toArray();
    QCOMPARE(Index(ovTop.size()), n);
    for (Index i = 0; i < n; ++i) {
        const QJsonArray list = ovTop[int(i)].toObject()[QStringLiteral("top")].toArray();
        QCOMPARE(Index(list.size()), top);
        for (int k = 0; k < list.size(); ++k) {
            const QJsonObject entry = list[k].toObject();
            QCOMPARE(keysOf(entry),
                     sorted({QStringLiteral("id"), QStringLiteral("token"), QStringLiteral("logit")}));
            const TokenValue& expected = expectedTop[std::size_t(i)][std::size_t(k)];
            QCOMPARE(entry[QStringLiteral("id")].toInteger(), expected.id);
            QCOMPARE(entry[QStringLiteral("token")].toString(), tokenName(expected.id));
            QKV_COMPARE_NEAR(entry[QStringLiteral("logit")].toDouble(), expected.value, tolerance);
            if (k > 0) { // by logit descending, ties by id
                const QJsonObject before = list[k - 1].toObject();
                const double previous = before[QStringLiteral("logit")].toDouble();
                const double logit = entry[QStringLiteral("logit")].toDouble();
                QVERIFY(previous > logit ||
                        (previous == logit &&
                         before[QStringLiteral("id")].toInteger() < entry[QStringLiteral("id")].toInteger()));
            }
        }
    }
}

// A text is tokenized by the model's tokenizer, and every token is named as the lens and predict name it.
void TestCircuitsCli::textTokens()
{
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 4);
    qkv::test::writeTinyTokenizer(folder.path());
    const Run run =
        qkvlab({QStringLiteral("circuits"), folder.path(), QStringLiteral("--layer"), QStringLiteral("1"),
                QStringLiteral("--head"), QStringLiteral("0"), QStringLiteral("--text"),
                QStringLiteral("a cat sat"), QStringLiteral("--top"), QStringLiteral("4")});
    QVERIFY_RUN(run, run.exitCode == 0);
    const QJsonObject table = QJsonDocument::fromJson(run.out).object()[QStringLiteral("tokens")].toObject();
    QCOMPARE(numbers(table[QStringLiteral("ids")]), (std::vector<double>{0, 29, 34}));
    QCOMPARE(table[QStringLiteral("tokens")].toVariant().toStringList(),
             (QStringList{QStringLiteral("a"), QStringLiteral("Ġcat"), QStringLiteral("Ġsat")}));
    const Model model = Model::open(folder.path().toStdString());
    int named = 0;
    for (const QJsonValue& position : table[QStringLiteral("ov_top")].toArray())
        for (const QJsonValue& entry : position.toObject()[QStringLiteral("top")].toArray()) {
            const QJsonObject token = entry.toObject();
            QCOMPARE(token[QStringLiteral("token")].toString(),
                     QString::fromStdString(qkv::tokenName(model, token[QStringLiteral("id")].toInteger())));
            ++named;
        }
    QCOMPARE(named, 3 * 4);
}

void TestCircuitsCli::sessionHead_data()
{
    QTest::addColumn<QString>("source");
    QTest::addColumn<int>("head");
    QTest::newRow("love (no W_O)") << QStringLiteral("example:love") << 0;
    QTest::newRow("multihead head 1") << QStringLiteral("example:multihead") << 1;
    QTest::newRow("translation (cross-attention)") << QStringLiteral("example:translation") << 0;
}

// A session's head, nothing folded: no layer, full OV circuit or composition; the OV circuit only with W_O;
// the QK table is the engine's Q·Kᵀ before the scale.
void TestCircuitsCli::sessionHead()
{
    QFETCH(QString, source);
    QFETCH(int, head);
    QStringList arguments{QStringLiteral("circuits"), source};
    if (head != 0)
        arguments += {QStringLiteral("--head"), QString::number(head)};
    const Run run = qkvlab(arguments);
    QVERIFY_RUN(run, run.exitCode == 0);
    const QJsonObject json = QJsonDocument::fromJson(run.out).object();
    const Session session = loadExample(source.mid(int(std::string(examplePrefix).size())).toStdString());
    const HeadFactors factors = sessionHeadFactors(session, head);
    const CircuitSpectra spectra = circuitSpectra(factors);
    QStringList keys{QStringLiteral("head"), QStringLiteral("qk")};
    if (session.W_O)
        keys.append(QStringLiteral("ov"));
    keys.append(QStringLiteral("tokens"));
    QCOMPARE(keysOf(json), sorted(keys));
    QVERIFY(keysInOrder(run.out, keys));
    QCOMPARE(json[QStringLiteral("head")].toInt(-1), head);
    const QJsonObject qk = json[QStringLiteral("qk")].toObject();
    QKV_COMPARE_NEAR(numbers(qk[QStringLiteral("singular_values")]), spectra.qk.singularValues, tolerance);
    QKV_COMPARE_NEAR(qk[QStringLiteral("frobenius")].toDouble(), spectra.qk.frobenius, tolerance);
    if (session.W_O) {
        const QJsonObject ov = json[QStringLiteral("ov")].toObject();
        QKV_COMPARE_NEAR(numbers(ov[QStringLiteral("singular_values")]), spectra.ov->singularValues,
                         tolerance);
        const bool square = session.W_O->cols() == session.dModel();
        QCOMPARE(ov.contains(QStringLiteral("eigenvalues")), square);
        if (square)
            QKV_COMPARE_NEAR(eigenvalueParts(ov[QStringLiteral("eigenvalues")]),
                             eigenvalueParts(spectra.ovEigenvalues), tolerance);
    }
    const QJsonObject table = json[QStringLiteral("tokens")].toObject();
    QCOMPARE(table[QStringLiteral("tokens")].toVariant().toStringList().size(), int(session.tokens.size()));
    QCOMPARE(table.contains(QStringLiteral("key_tokens")), session.context.has_value());
    const AttentionResult result = computeAttention(session);
    QKV_COMPARE_NEAR(matrix(table[QStringLiteral("qk")]), result.heads[std::size_t(head)].scores, tolerance);
}

void TestCircuitsCli::decompose_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<int>("query");
    QTest::addColumn<int>("key");
    QTest::newRow("gpt2 L1H1 5→2") << QStringLiteral("gpt2") << 1 << 1 << 5 << 2;
    QTest::newRow("gpt2 L0H0 1→4 (masked key)") << QStringLiteral("gpt2") << 0 << 0 << 1 << 4;
    QTest::newRow("qwen2 L1H3 4→0") << QStringLiteral("qwen2") << 1 << 3 << 4 << 0;
}

// The decomposition the core gives, its rows and columns summing to the score.
void TestCircuitsCli::decompose()
{
    QFETCH(QString, family);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(int, query);
    QFETCH(int, key);
    QTemporaryDir folder;
    qkv::test::writeModel(shape(family), folder.path(), 5);
    const Run run = qkvlab({QStringLiteral("decompose"), folder.path(), QStringLiteral("--layer"),
                            QString::number(layer), QStringLiteral("--head"), QString::number(head),
                            QStringLiteral("--ids"), idList(ids), QStringLiteral("--query"),
                            QString::number(query), QStringLiteral("--key"), QString::number(key)});
    QVERIFY_RUN(run, run.exitCode == 0);
    const QStringList keys{QStringLiteral("components"), QStringLiteral("score"), QStringLiteral("terms"),
                           QStringLiteral("query"), QStringLiteral("key")};
    const QJsonObject json = QJsonDocument::fromJson(run.out).object();
    QCOMPARE(keysOf(json), sorted(keys));
    QVERIFY(keysInOrder(run.out, keys));
    const Model model = Model::open(folder.path().toStdString());
    const ScoreDecomposition expected = decomposeScore(model, {layer, head, ids, query, key});
    QStringList components;
    for (const std::string& name : expected.components)
        components.append(QString::fromStdString(name));
    QCOMPARE(json[QStringLiteral("components")].toVariant().toStringList(), components);
    QCOMPARE(components.first(), QStringLiteral("embed"));
    QCOMPARE(components.last(), QStringLiteral("bias"));
    const auto c = Index(components.size());
    const Matrix terms = matrix(json[QStringLiteral("terms")]);
    QCOMPARE(terms.rows(), c);
    QCOMPARE(terms.cols(), c);
    QKV_COMPARE_NEAR(terms, expected.terms, tolerance);
    const double score = json[QStringLiteral("score")].toDouble();
    QKV_COMPARE_NEAR(score, expected.score, tolerance);
    QKV_COMPARE_NEAR(numbers(json[QStringLiteral("query")]), expected.query, tolerance);
    QKV_COMPARE_NEAR(numbers(json[QStringLiteral("key")]), expected.key, tolerance);
    QKV_COMPARE_NEAR(terms.sum(), score, 1e-9);
}

void TestCircuitsCli::refusals_data()
{
    QTest::addColumn<QStringList>("arguments"); // MODEL is inserted after the command; "SESSION" names none
    QTest::addColumn<QString>("message");
    const QString list = idList(ids);
    const auto circuits = [](std::initializer_list<QString> rest) {
        return QStringList{QStringLiteral("circuits")} + QStringList(rest);
    };
    const auto decompose = [&list](std::initializer_list<QString> rest) {
        return QStringList{QStringLiteral("decompose"), QStringLiteral("--ids"), list} + QStringList(rest);
    };
    QTest::newRow("layer out of range") << circuits({QStringLiteral("--layer"), QStringLiteral("2"),
                                                     QStringLiteral("--head"), QStringLiteral("0")})
                                        << QStringLiteral("--layer 2: the model has 2 layers (0 to 1)");
    QTest::newRow("head out of range") << circuits({QStringLiteral("--layer"), QStringLiteral("1"),
                                                    QStringLiteral("--head"), QStringLiteral("7")})
                                       << QStringLiteral("--head 7: the model has 2 heads (0 to 1)");
    QTest::newRow("no layer") << circuits({QStringLiteral("--head"), QStringLiteral("0")})
                              << QStringLiteral("expected --layer");
    QTest::newRow("negative head") << circuits({QStringLiteral("--layer"), QStringLiteral("0"),
                                                QStringLiteral("--head"), QStringLiteral("-1")})
                                   << QStringLiteral("bad --head '-1'");
    QTest::newRow("text and ids") << circuits({QStringLiteral("--layer"), QStringLiteral("0"),
                                               QStringLiteral("--head"), QStringLiteral("0"),
                                               QStringLiteral("--text"), QStringLiteral("a"),
                                               QStringLiteral("--ids"), QStringLiteral("1")})
                                  << QStringLiteral("give --text or --ids, not both");
    QTest::newRow("bad top") << circuits({QStringLiteral("--layer"), QStringLiteral("0"),
                                          QStringLiteral("--head"), QStringLiteral("0"),
                                          QStringLiteral("--ids"), QStringLiteral("1"),
                                          QStringLiteral("--top"), QStringLiteral("0")})
                             << QStringLiteral("bad --top '0'");
    QTest::newRow("id outside the vocabulary")
        << circuits({QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--head"),
                     QStringLiteral("0"), QStringLiteral("--ids"), QStringLiteral("1,40")})
        << QStringLiteral("--ids: token id 40 at position 1 is outside the model's vocabulary of 40 tokens");
    QTest::newRow("session head out of range")
        << QStringList{QStringLiteral("circuits"), QStringLiteral("SESSION"), QStringLiteral("--head"),
                       QStringLiteral("3")}
        << QStringLiteral("--head 3: the session has 1 head (0)");
    QTest::newRow("session with a layer")
        << QStringList{QStringLiteral("circuits"), QStringLiteral("SESSION"), QStringLiteral("--layer"),
                       QStringLiteral("0")}
        << QStringLiteral("--layer is for a model folder");
    QTest::newRow("decompose query out of range")
        << decompose({QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--head"),
                      QStringLiteral("0"), QStringLiteral("--query"), QStringLiteral("6"),
                      QStringLiteral("--key"), QStringLiteral("0")})
        << QStringLiteral("--query 6: --ids has 6 tokens (0 to 5)");
    QTest::newRow("decompose no key")
        << decompose({QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--head"),
                      QStringLiteral("0"), QStringLiteral("--query"), QStringLiteral("1")})
        << QStringLiteral("expected --key");
    QTest::newRow("decompose without tokens")
        << QStringList{QStringLiteral("decompose"), QStringLiteral("--layer"), QStringLiteral("0"),
                       QStringLiteral("--head"), QStringLiteral("0")}
        << QStringLiteral("expected MODEL --layer L --head H, --text TEXT or --ids");
    QTest::newRow("export composition into layer 0")
        << QStringList{QStringLiteral("export"),  QStringLiteral("--view"), QStringLiteral("composition"),
                       QStringLiteral("--layer"), QStringLiteral("0"),      QStringLiteral("--out"),
                       QStringLiteral("x.png")}
        << QStringLiteral("layer 0 reads only the embeddings");
    QTest::newRow("export bad kind") << QStringList{QStringLiteral("export"),      QStringLiteral("--view"),
                                                    QStringLiteral("composition"), QStringLiteral("--kind"),
                                                    QStringLiteral("o"),           QStringLiteral("--out"),
                                                    QStringLiteral("x.png")}
                                     << QStringLiteral("bad --kind 'o': expected q, k or v");
    QTest::newRow("export kind with another view") << QStringList{QStringLiteral("export"),
                                                                  QStringLiteral("--view"),
                                                                  QStringLiteral("circuits"),
                                                                  QStringLiteral("--ids"),
                                                                  list,
                                                                  QStringLiteral("--kind"),
                                                                  QStringLiteral("q"),
                                                                  QStringLiteral("--out"),
                                                                  QStringLiteral("x.png")}
                                                   << QStringLiteral("--kind is for --view composition");
    QTest::newRow("export key out of range") << QStringList{QStringLiteral("export"),
                                                            QStringLiteral("--view"),
                                                            QStringLiteral("decompose"),
                                                            QStringLiteral("--ids"),
                                                            list,
                                                            QStringLiteral("--key"),
                                                            QStringLiteral("9"),
                                                            QStringLiteral("--out"),
                                                            QStringLiteral("x.csv")}
                                             << QStringLiteral("--key 9: --ids has 6 tokens (0 to 5)");
    QTest::newRow("export layer with the model view")
        << QStringList{QStringLiteral("export"),
                       QStringLiteral("--view"),
                       QStringLiteral("model"),
                       QStringLiteral("--ids"),
                       list,
                       QStringLiteral("--layer"),
                       QStringLiteral("1"),
                       QStringLiteral("--out"),
                       QStringLiteral("x.png")}
        << QStringLiteral("--layer is for --view circuits, composition and decompose");
    QTest::newRow("export circuits without tokens")
        << QStringList{QStringLiteral("export"), QStringLiteral("--view"), QStringLiteral("circuits"),
                       QStringLiteral("--out"), QStringLiteral("x.png")}
        << QStringLiteral("--model needs either --text TEXT or --ids");
}

// One line on standard error naming the option and the numbers, exit status 2, nothing on standard output.
void TestCircuitsCli::refusals()
{
    QFETCH(QStringList, arguments);
    QFETCH(QString, message);
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 3);
    QStringList command = arguments;
    if (command.first() == QLatin1String("export"))
        command += {QStringLiteral("--model"), folder.path()};
    else if (command.size() > 1 && command[1] == QLatin1String("SESSION"))
        command[1] = QStringLiteral("example:love");
    else
        command.insert(1, folder.path());
    const Run run = qkvlab(command);
    QVERIFY_RUN(run, run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QCOMPARE(run.err.count('\n'), 1);
    QVERIFY2(run.err.startsWith("qkvlab " + command.first().toUtf8() + ": "), run.err.constData());
    QVERIFY2(QString::fromUtf8(run.err).contains(message), run.err.constData());
}

void TestCircuitsCli::exportFigures_data()
{
    QTest::addColumn<QString>("view");
    QTest::addColumn<QStringList>("options");
    QTest::newRow("circuits") << QStringLiteral("circuits")
                              << QStringList{QStringLiteral("--ids"),   idList(ids),
                                             QStringLiteral("--layer"), QStringLiteral("1"),
                                             QStringLiteral("--head"),  QStringLiteral("1")};
    QTest::newRow("composition v") << QStringLiteral("composition")
                                   << QStringList{QStringLiteral("--head"), QStringLiteral("1"),
                                                  QStringLiteral("--kind"), QStringLiteral("v")};
    QTest::newRow("decompose") << QStringLiteral("decompose")
                               << QStringList{QStringLiteral("--ids"),   idList(ids),
                                              QStringLiteral("--layer"), QStringLiteral("1"),
                                              QStringLiteral("--query"), QStringLiteral("4"),
                                              QStringLiteral("--key"),   QStringLiteral("1")};
}

// Each view as a PNG and as CSV: the CSV's labels and values are the matrix the command line prints.
void TestCircuitsCli::exportFigures()
{
    QFETCH(QString, view);
    QFETCH(QStringList, options);
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 9);
    QTemporaryDir out;
    for (const char* suffix : {"png", "csv"}) {
        const QString path = out.filePath(view + QLatin1Char('.') + QLatin1String(suffix));
        const Run run = qkvlab(QStringList{QStringLiteral("export"), QStringLiteral("--model"), folder.path(),
                                           QStringLiteral("--view"), view, QStringLiteral("--out"), path} +
                               options);
        QVERIFY_RUN(run, run.exitCode == 0);
        QCOMPARE(run.out.trimmed(), path.toUtf8());
        QVERIFY(QFile(path).size() > 0);
    }
    const LabelledCsv csv = readLabelledCsv(out.filePath(view + QStringLiteral(".csv")));
    const Model model = Model::open(folder.path().toStdString());
    const ModelCircuits circuits(model);
    if (view == QLatin1String("circuits")) {
        const QStringList labels{QStringLiteral("0 #5"), QStringLiteral("1 #17"), QStringLiteral("2 #3"),
                                 QStringLiteral("3 #3"), QStringLiteral("4 #39"), QStringLiteral("5 #0")};
        QCOMPARE(csv.columns, labels);
        QCOMPARE(csv.rows, labels);
        QKV_COMPARE_NEAR(csv.values, circuits.tokenQk(1, 1, ids), tolerance);
    } else if (view == QLatin1String("composition")) { // the last layer by default
        QCOMPARE(csv.columns, (QStringList{QStringLiteral("H0"), QStringLiteral("H1")}));
        QCOMPARE(csv.rows, QStringList{QStringLiteral("L0")});
        QKV_COMPARE_NEAR(
            csv.values,
            compositionScores<double>(circuits.weights(), 1, 1).into(CompositionKind::Value, 1, 1),
            tolerance);
    } else {
        const ScoreDecomposition expected = decomposeScore(model, {1, 0, ids, 4, 1});
        QStringList components;
        for (const std::string& name : expected.components)
            components.append(QString::fromStdString(name));
        QCOMPARE(csv.columns, components);
        QCOMPARE(csv.rows, components);
        QKV_COMPARE_NEAR(csv.values, expected.terms, tolerance);
    }
}

QKV_TEST_MAIN(TestCircuitsCli)
#include "tst_circuits_cli.moc"
