// SPDX-License-Identifier: GPL-3.0-or-later
// `qkvlab patch` and `qkvlab lens` run as the real executable on tiny GPT-2, LLaMA (4 query heads over 2
// key/value heads, lm_head) and Qwen2 (q/k/v biases, tied) checkpoints: the JSON's keys, labels and shapes
// for every site and method; the values are the core's grid and the normalized grid follows from them and
// the two metrics; the metrics are the prediction's log-probability difference; patching the token
// embedding where the prompts differ gives the clean metric; the lens's last row is the prediction; every
// refusal is one line naming the option; --script writes a script that needs only PyTorch; progress shows
// only on a terminal.

#include "FuzzyCompare.h"
#include "LogitLens.h"
#include "Model.h"
#include "ModelRun.h"
#include "Patching.h"
#include "QkvlabProcess.h"
#include "TestMain.h"
#include "TinyModels.h"
#include "TinyTokenizer.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fcntl.h>
#include <memory>
#include <pty.h>
#include <unistd.h>

using namespace qkv;
using qkv::test::Tiny;

namespace {

constexpr int timeoutMs = 120000;
using qkv::test::idList;
using qkv::test::keysInOrder;
using Run = qkv::test::QkvlabRun;

const std::vector<std::int64_t> cleanIds{5, 17, 3, 8, 22, 9};
const std::vector<std::int64_t> corruptIds{5, 17, 30, 8, 22, 9}; // differs at position 2
constexpr std::int64_t answerId = 11, wrongId = 12;

/// The three families the model tests run on (TinyModels.h): gpt2; llama (4 query heads over 2 key/value
/// heads, no biases, lm_head); qwen2 (q/k/v biases, tied, 4 over 2); two layers, float64.
Tiny shape(const QString& name)
{
    Tiny tiny = qkv::test::tinyOfFamily(name, "F64", 2);
    tiny.layers = 2;
    return tiny;
}

Run qkvlab(const QStringList& arguments)
{
    return qkv::test::runQkvlabWith(qkv::test::offscreenEnvironment(), arguments, {}, timeoutMs);
}

QStringList patchArguments(const QString& folder, const QString& site, const QString& method)
{
    return {QStringLiteral("patch"),         folder,
            QStringLiteral("--clean-ids"),   idList(cleanIds),
            QStringLiteral("--corrupt-ids"), idList(corruptIds),
            QStringLiteral("--answer-id"),   QString::number(answerId),
            QStringLiteral("--wrong-id"),    QString::number(wrongId),
            QStringLiteral("--what"),        site,
            QStringLiteral("--method"),      method};
}

QJsonObject parsed(const Run& run)
{
    return QJsonDocument::fromJson(run.out).object();
}

QStringList strings(const QJsonValue& value)
{
    QStringList list;
    for (const QJsonValue& item : value.toArray())
        list.append(item.toString());
    return list;
}

QStringList numberedLabels(const QString& prefix, int count)
{
    QStringList labels;
    for (int k = 0; k < count; ++k)
        labels.append(prefix + QString::number(k));
    return labels;
}

/// "2 #3/#30": a position's index and token, both prompts' where they differ (no tokenizer: "#id").
QStringList positionLabels(int first, int last)
{
    QStringList labels;
    for (int p = first; p <= last; ++p) {
        QString label = QStringLiteral("%1 #%2").arg(p).arg(cleanIds[std::size_t(p)]);
        if (corruptIds[std::size_t(p)] != cleanIds[std::size_t(p)])
            label += QStringLiteral("/#%1").arg(corruptIds[std::size_t(p)]);
        labels.append(label);
    }
    return labels;
}

/// The grid's values flattened in the core's order (row, column, position).
std::vector<double> flattened(const QJsonValue& grid)
{
    std::vector<double> values;
    for (const QJsonValue& row : grid.toArray())
        for (const QJsonValue& cell : row.toArray()) {
            if (cell.isArray()) {
                for (const QJsonValue& value : cell.toArray())
                    values.push_back(value.toDouble());
            } else {
                values.push_back(cell.toDouble());
            }
        }
    return values;
}

/// ln p(answer) − ln p(wrong) at the last position, from the prediction of every token.
double predictedLogitDifference(const std::shared_ptr<const Model>& model,
                                const std::vector<std::int64_t>& ids)
{
    PredictOptions options;
    options.top = model->config().vocabSize;
    const ModelRun run(model, ids, Precision::Float64);
    const Prediction prediction = run.predict({}, options); // kept: the loop reads into it
    double answer = 0, wrong = 0;
    for (const TokenProbability& token : prediction.positions.back().top) {
        if (token.id == answerId)
            answer = token.probability;
        if (token.id == wrongId)
            wrong = token.probability;
    }
    return std::log(answer) - std::log(wrong);
}

} // namespace

class TestPatchCli : public QObject {
    Q_OBJECT

private slots:
    void patchGrid_data();
    void patchGrid();
    void embeddingPatchGivesClean_data();
    void embeddingPatchGivesClean();
    void positionRange();
    void textPromptsAndTokens();
    void lens_data();
    void lens();
    void refusals_data();
    void refusals();
    void script();
    void progressOnlyOnATerminal();
};

void TestPatchCli::patchGrid_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("site");
    QTest::addColumn<QString>("method");
    for (const char* kind : {"gpt2", "llama", "qwen2"})
        for (PatchSite site : allPatchSites())
            for (const char* method : {"exact", "attribution"})
                QTest::addRow("%s %s %s", kind, patchSiteName(site).c_str(), method)
                    << QString::fromLatin1(kind) << QString::fromStdString(patchSiteName(site))
                    << QString::fromLatin1(method);
}

// Every site and method: the keys in the documented order, the labels, the grid's shape, the core's
// values, the normalized grid, and the metrics the prediction gives.
void TestPatchCli::patchGrid()
{
    QFETCH(QString, kind);
    QFETCH(QString, site);
    QFETCH(QString, method);
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const Tiny tiny = shape(kind);
    qkv::test::writeModel(tiny, folder.path(), 7);
    const Run run = qkvlab(patchArguments(folder.path(), site, method));
    QVERIFY_RUN(run, run.exitCode == 0);
    QVERIFY2(run.err.isEmpty(), run.err.constData()); // no progress when standard error is not a terminal
    const PatchSite patchSite = *patchSiteNamed(site.toStdString());
    const bool headPositions = patchSite == PatchSite::HeadOutPos;
    QStringList keys = {QStringLiteral("what"),    QStringLiteral("method"), QStringLiteral("clean"),
                        QStringLiteral("corrupt"), QStringLiteral("rows"),   QStringLiteral("cols")};
    if (headPositions)
        keys.append(QStringLiteral("positions"));
    keys += QStringList{QStringLiteral("values"), QStringLiteral("normalized")};
    QVERIFY2(keysInOrder(run.out, keys), run.out.constData());
    const QJsonObject json = parsed(run);
    QCOMPARE(json.keys().size(), keys.size());
    QCOMPARE(json.value(QStringLiteral("what")).toString(), site);
    QCOMPARE(json.value(QStringLiteral("method")).toString(), method);
    const QJsonObject clean = json.value(QStringLiteral("clean")).toObject();
    QCOMPARE(clean.value(QStringLiteral("ids")).toArray(), (QJsonArray{5, 17, 3, 8, 22, 9}));
    QCOMPARE(strings(clean.value(QStringLiteral("tokens"))).at(2), QStringLiteral("#3"));
    QCOMPARE(strings(json.value(QStringLiteral("corrupt")).toObject().value(QStringLiteral("tokens"))).at(2),
             QStringLiteral("#30"));

    // Labels and shape.
    QCOMPARE(strings(json.value(QStringLiteral("rows"))), numberedLabels(QStringLiteral("L"), tiny.layers));
    QStringList cols;
    if (patchSite == PatchSite::HeadK || patchSite == PatchSite::HeadV)
        cols = numberedLabels(QStringLiteral("KV"), tiny.kvHeads);
    else if (patchSiteHasPositions(patchSite) && !headPositions)
        cols = positionLabels(0, 5);
    else
        cols = numberedLabels(QStringLiteral("H"), tiny.heads);
    QCOMPARE(strings(json.value(QStringLiteral("cols"))), cols);
    if (headPositions)
        QCOMPARE(strings(json.value(QStringLiteral("positions"))), positionLabels(0, 5));
    const QJsonArray rows = json.value(QStringLiteral("values")).toArray();
    QCOMPARE(rows.size(), tiny.layers);
    for (const QJsonValue& row : rows) {
        QCOMPARE(row.toArray().size(), cols.size());
        if (headPositions)
            for (const QJsonValue& cell : row.toArray())
                QCOMPARE(cell.toArray().size(), 6);
    }

    // The values are the core's grid; normalized = (value − m_corrupt) / (m_clean − m_corrupt).
    const auto model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    PatchingRun expected(*model, PatchPair{cleanIds, corruptIds, answerId, wrongId});
    const PatchGrid grid = expected.patch(patchSite, *patchMethodNamed(method.toStdString()));
    const std::vector<double> values = flattened(json.value(QStringLiteral("values")));
    const std::vector<double> normalized = flattened(json.value(QStringLiteral("normalized")));
    QKV_COMPARE_NEAR(values, grid.values, 0.0);
    const double cleanMetric = clean.value(QStringLiteral("metric")).toDouble();
    const double corruptMetric =
        json.value(QStringLiteral("corrupt")).toObject().value(QStringLiteral("metric")).toDouble();
    QCOMPARE(cleanMetric, expected.cleanMetric());
    QCOMPARE(corruptMetric, expected.corruptMetric());
    std::vector<double> fromValues;
    for (double value : values)
        fromValues.push_back((value - corruptMetric) / (cleanMetric - corruptMetric));
    QKV_COMPARE_NEAR(normalized, fromValues, 1e-12);
    // The metric is the logit difference, which is the difference of log-probabilities.
    QKV_COMPARE_NEAR(cleanMetric, predictedLogitDifference(model, cleanIds), 1e-10);
    QKV_COMPARE_NEAR(corruptMetric, predictedLogitDifference(model, corruptIds), 1e-10);
}

void TestPatchCli::embeddingPatchGivesClean_data()
{
    QTest::addColumn<QString>("kind");
    for (const char* kind : {"gpt2", "llama", "qwen2"})
        QTest::newRow(kind) << QString::fromLatin1(kind);
}

// The residual entering layer 0 is the embedding: patching it where the prompts differ turns the corrupted
// run into the clean one (normalized 1), and patching it where they agree changes nothing (0), by either
// method at an unchanged position.
void TestPatchCli::embeddingPatchGivesClean()
{
    QFETCH(QString, kind);
    QTemporaryDir folder;
    qkv::test::writeModel(shape(kind), folder.path(), 11);
    const Run exact =
        qkvlab(patchArguments(folder.path(), QStringLiteral("resid_pre"), QStringLiteral("exact")));
    QVERIFY_RUN(exact, exact.exitCode == 0);
    const QJsonArray layer0 = parsed(exact).value(QStringLiteral("normalized")).toArray().at(0).toArray();
    for (int p = 0; p < 6; ++p)
        QKV_COMPARE_NEAR(layer0.at(p).toDouble(), p == 2 ? 1.0 : 0.0, 1e-10);
    const Run attribution =
        qkvlab(patchArguments(folder.path(), QStringLiteral("resid_pre"), QStringLiteral("attribution")));
    QVERIFY_RUN(attribution, attribution.exitCode == 0);
    const QJsonArray estimated =
        parsed(attribution).value(QStringLiteral("normalized")).toArray().at(0).toArray();
    for (int p : {0, 1, 3, 4, 5})
        QCOMPARE(estimated.at(p).toDouble(), 0.0);
    QVERIFY(estimated.at(2).toDouble() != 0.0);
}

// --positions I..J: the position axis holds J − I + 1 entries, labelled and valued as those of the whole
// grid; sites without a position axis are unchanged.
void TestPatchCli::positionRange()
{
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("llama")), folder.path(), 5);
    for (const QString& site :
         {QStringLiteral("mlp_out"), QStringLiteral("head_out_pos"), QStringLiteral("head_v")}) {
        const Run whole = qkvlab(patchArguments(folder.path(), site, QStringLiteral("exact")));
        const Run part = qkvlab(patchArguments(folder.path(), site, QStringLiteral("exact")) +
                                QStringList{QStringLiteral("--positions"), QStringLiteral("1..3")});
        QVERIFY_RUN(whole, whole.exitCode == 0);
        QVERIFY_RUN(part, part.exitCode == 0);
        const QJsonObject all = parsed(whole), some = parsed(part);
        const QJsonArray allRows = all.value(QStringLiteral("values")).toArray();
        const QJsonArray someRows = some.value(QStringLiteral("values")).toArray();
        for (int l = 0; l < allRows.size(); ++l) {
            const QJsonArray allRow = allRows.at(l).toArray(), someRow = someRows.at(l).toArray();
            if (site == QLatin1String("mlp_out")) {
                QCOMPARE(strings(some.value(QStringLiteral("cols"))), positionLabels(1, 3));
                QCOMPARE(someRow, (QJsonArray{allRow.at(1), allRow.at(2), allRow.at(3)}));
            } else if (site == QLatin1String("head_out_pos")) {
                QCOMPARE(strings(some.value(QStringLiteral("positions"))), positionLabels(1, 3));
                for (int h = 0; h < allRow.size(); ++h) {
                    const QJsonArray cell = allRow.at(h).toArray();
                    QCOMPARE(someRow.at(h).toArray(), (QJsonArray{cell.at(1), cell.at(2), cell.at(3)}));
                }
            } else {
                QCOMPARE(someRow, allRow);
            }
        }
    }
    // One position: head_out_pos keeps its third axis, of one entry.
    const Run one =
        qkvlab(patchArguments(folder.path(), QStringLiteral("head_out_pos"), QStringLiteral("exact")) +
               QStringList{QStringLiteral("--positions"), QStringLiteral("2..2")});
    QVERIFY_RUN(one, one.exitCode == 0);
    const QJsonArray cell =
        parsed(one).value(QStringLiteral("values")).toArray().at(1).toArray().at(3).toArray();
    QCOMPARE(cell.size(), 1);
    QCOMPARE(strings(parsed(one).value(QStringLiteral("positions"))), positionLabels(2, 2));
}

// Prompts and tokens as texts, through the model's tokenizer: the same grid as their ids.
void TestPatchCli::textPromptsAndTokens()
{
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 3);
    qkv::test::writeTinyTokenizer(folder.path());
    const Run text =
        qkvlab({QStringLiteral("patch"), folder.path(), QStringLiteral("--clean"),
                QStringLiteral("a cat sat on"), QStringLiteral("--corrupt"), QStringLiteral("a dog sat on"),
                QStringLiteral("--answer"), QStringLiteral(" mat"), QStringLiteral("--wrong"),
                QStringLiteral(" cat"), QStringLiteral("--what"), QStringLiteral("head_out")});
    const Run ids =
        qkvlab({QStringLiteral("patch"), folder.path(), QStringLiteral("--clean-ids"),
                QStringLiteral("0,29,34,38"), QStringLiteral("--corrupt-ids"), QStringLiteral("0,32,34,38"),
                QStringLiteral("--answer-id"), QStringLiteral("36"), QStringLiteral("--wrong-id"),
                QStringLiteral("29"), QStringLiteral("--what"), QStringLiteral("head_out")});
    QVERIFY_RUN(text, text.exitCode == 0);
    QVERIFY_RUN(ids, ids.exitCode == 0);
    QCOMPARE(text.out, ids.out);
    const QJsonObject json = parsed(text);
    QCOMPARE(strings(json.value(QStringLiteral("clean")).toObject().value(QStringLiteral("tokens"))),
             (QStringList{QStringLiteral("a"), QStringLiteral("Ġcat"), QStringLiteral("Ġsat"),
                          QStringLiteral("Ġon")}));
    QCOMPARE(json.value(QStringLiteral("method")).toString(), QStringLiteral("exact")); // the default
}

void TestPatchCli::lens_data()
{
    QTest::addColumn<QString>("kind");
    for (const char* kind : {"gpt2", "llama", "qwen2"})
        QTest::newRow(kind) << QString::fromLatin1(kind);
}

// L + 1 rows of n positions, K tokens each by probability; the last row is predict's distribution; the
// answer's probability and rank agree with the top list; without an answer neither is printed.
void TestPatchCli::lens()
{
    QFETCH(QString, kind);
    QTemporaryDir folder;
    const Tiny tiny = shape(kind);
    qkv::test::writeModel(tiny, folder.path(), 13);
    const QStringList base = {QStringLiteral("lens"), folder.path(),           QStringLiteral("--ids"),
                              idList(cleanIds),       QStringLiteral("--top"), QStringLiteral("5")};
    const Run run = qkvlab(base + QStringList{QStringLiteral("--answer-id"), QString::number(answerId)});
    QVERIFY_RUN(run, run.exitCode == 0);
    QVERIFY(run.err.isEmpty());
    const QJsonObject json = parsed(run);
    QCOMPARE(json.keys(), QStringList{QStringLiteral("layers")});
    const QJsonArray layers = json.value(QStringLiteral("layers")).toArray();
    QCOMPARE(layers.size(), tiny.layers + 1);
    const auto model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    PredictOptions options;
    options.top = tiny.vocab;
    const Prediction prediction = ModelRun(model, cleanIds, Precision::Float64).predict({}, options);
    for (int l = 0; l <= tiny.layers; ++l) {
        const QJsonArray positions = layers.at(l).toArray();
        QCOMPARE(positions.size(), 6);
        for (int i = 0; i < 6; ++i) {
            const QJsonObject cell = positions.at(i).toObject();
            const QJsonArray top = cell.value(QStringLiteral("top")).toArray();
            QCOMPARE(top.size(), 5);
            for (int k = 0; k < 5; ++k) {
                const QJsonObject token = top.at(k).toObject();
                QCOMPARE(token.value(QStringLiteral("token")).toString(),
                         QStringLiteral("#%1").arg(token.value(QStringLiteral("id")).toInteger()));
                if (k > 0)
                    QVERIFY(token.value(QStringLiteral("p")).toDouble() <=
                            top.at(k - 1).toObject().value(QStringLiteral("p")).toDouble());
            }
            const int rank = cell.value(QStringLiteral("answer_rank")).toInt();
            QVERIFY(rank >= 1 && rank <= tiny.vocab);
            if (rank <= 5) {
                const QJsonObject ranked = top.at(rank - 1).toObject();
                QCOMPARE(ranked.value(QStringLiteral("id")).toInteger(), answerId);
                QCOMPARE(cell.value(QStringLiteral("answer_p")).toDouble(),
                         ranked.value(QStringLiteral("p")).toDouble());
            } else {
                QVERIFY(cell.value(QStringLiteral("answer_p")).toDouble() <=
                        top.at(4).toObject().value(QStringLiteral("p")).toDouble());
            }
            if (l < tiny.layers)
                continue;
            const PositionPrediction& want = prediction.positions[std::size_t(i)];
            for (int k = 0; k < 5; ++k) {
                QCOMPARE(top.at(k).toObject().value(QStringLiteral("id")).toInteger(),
                         want.top[std::size_t(k)].id);
                QKV_COMPARE_NEAR(top.at(k).toObject().value(QStringLiteral("p")).toDouble(),
                                 want.top[std::size_t(k)].probability, 1e-12);
            }
        }
    }
    const Run plain = qkvlab(base);
    QVERIFY_RUN(plain, plain.exitCode == 0);
    const QJsonObject cell =
        parsed(plain).value(QStringLiteral("layers")).toArray().at(0).toArray().at(0).toObject();
    QCOMPARE(cell.keys(), QStringList{QStringLiteral("top")});
}

void TestPatchCli::refusals_data()
{
    QTest::addColumn<QStringList>("arguments"); // after `patch MODEL`, or a whole `lens` command
    QTest::addColumn<QString>("message");
    const QString ids = idList(cleanIds);
    const QStringList pair = {QStringLiteral("--clean-ids"), ids, QStringLiteral("--corrupt-ids"),
                              idList(corruptIds)};
    const QStringList tokens = {QStringLiteral("--answer-id"), QStringLiteral("11"),
                                QStringLiteral("--wrong-id"), QStringLiteral("12")};
    const QStringList site = {QStringLiteral("--what"), QStringLiteral("resid_pre")};
    QTest::newRow("different lengths")
        << (QStringList{QStringLiteral("--clean-ids"), ids, QStringLiteral("--corrupt-ids"),
                        QStringLiteral("5,17,3")} +
            tokens + site)
        << QStringLiteral("--clean-ids has 6 tokens and --corrupt-ids has 3");
    QTest::newRow("answer of two tokens")
        << (QStringList{QStringLiteral("--clean"), QStringLiteral("a cat sat on"),
                        QStringLiteral("--corrupt"), QStringLiteral("a dog sat on"),
                        QStringLiteral("--answer"), QStringLiteral(" mat on"), QStringLiteral("--wrong-id"),
                        QStringLiteral("12")} +
            site)
        << QStringLiteral("--answer ' mat on' is 2 tokens");
    QTest::newRow("wrong of no token")
        << (pair +
            QStringList{QStringLiteral("--answer-id"), QStringLiteral("11"), QStringLiteral("--wrong"), {}} +
            site)
        << QStringLiteral("--wrong '' is 0 tokens");
    QTest::newRow("positions out of range")
        << (pair + tokens + site + QStringList{QStringLiteral("--positions"), QStringLiteral("2..6")})
        << QStringLiteral("--positions 2..6: the prompts have n = 6 tokens");
    QTest::newRow("positions backwards")
        << (pair + tokens + site + QStringList{QStringLiteral("--positions"), QStringLiteral("3..1")})
        << QStringLiteral("bad --positions '3..1'");
    QTest::newRow("unknown site") << (pair + tokens +
                                      QStringList{QStringLiteral("--what"), QStringLiteral("resid")})
                                  << QStringLiteral(
                                         "bad --what 'resid': expected resid_pre, attn_out, mlp_out, "
                                         "head_out, head_out_pos, head_pattern, head_q, head_k or head_v");
    QTest::newRow("no site") << (pair + tokens) << QStringLiteral("expected --what SITE: resid_pre");
    QTest::newRow("unknown method")
        << (pair + tokens + site + QStringList{QStringLiteral("--method"), QStringLiteral("gradient")})
        << QStringLiteral("bad --method 'gradient': expected exact or attribution");
    QTest::newRow("answer outside the vocabulary")
        << (pair +
            QStringList{QStringLiteral("--answer-id"), QStringLiteral("40"), QStringLiteral("--wrong-id"),
                        QStringLiteral("12")} +
            site)
        << QStringLiteral("bad --answer-id '40': expected a token id from 0 to 39");
    QTest::newRow("id outside the vocabulary")
        << (QStringList{QStringLiteral("--clean-ids"), QStringLiteral("5,17,3,8,22,99"),
                        QStringLiteral("--corrupt-ids"), idList(corruptIds)} +
            tokens + site)
        << QStringLiteral(
               "--clean-ids: token id 99 at position 5 is outside the model's vocabulary of 40 tokens");
    QTest::newRow("same answer and wrong")
        << (pair +
            QStringList{QStringLiteral("--answer-id"), QStringLiteral("11"), QStringLiteral("--wrong-id"),
                        QStringLiteral("11")} +
            site)
        << QStringLiteral("--answer and --wrong are the same token (id 11)");
    QTest::newRow("same prompts") << (QStringList{QStringLiteral("--clean-ids"), ids,
                                                  QStringLiteral("--corrupt-ids"), ids} +
                                      tokens + site)
                                  << QStringLiteral("clean and corrupted give the same logit difference");
    QTest::newRow("text and ids of one prompt")
        << (pair + QStringList{QStringLiteral("--clean"), QStringLiteral("a cat")} + tokens + site)
        << QStringLiteral("give --clean or --clean-ids, not both");
    QTest::newRow("no corrupted prompt") << (QStringList{QStringLiteral("--clean-ids"), ids} + tokens + site)
                                         << QStringLiteral("expected MODEL, the prompts");
    QTest::newRow("bad ids") << (QStringList{QStringLiteral("--clean-ids"), QStringLiteral("5,x"),
                                             QStringLiteral("--corrupt-ids"), QStringLiteral("5,6")} +
                                 tokens + site)
                             << QStringLiteral("bad --clean-ids '5,x'");
    QTest::newRow("lens answer of two tokens")
        << QStringList{QStringLiteral("lens"), QStringLiteral("--text"), QStringLiteral("a cat"),
                       QStringLiteral("--answer"), QStringLiteral(" cat sat")}
        << QStringLiteral("--answer ' cat sat' is 2 tokens");
    QTest::newRow("lens bad top") << QStringList{QStringLiteral("lens"), QStringLiteral("--ids"), ids,
                                                 QStringLiteral("--top"), QStringLiteral("0")}
                                  << QStringLiteral(
                                         "bad --top '0': expected a whole number from 1 to 1000000");
    QTest::newRow("lens id outside the vocabulary")
        << QStringList{QStringLiteral("lens"), QStringLiteral("--ids"), QStringLiteral("1,40")}
        << QStringLiteral("--ids: token id 40 at position 1 is outside the model's vocabulary of 40 tokens");
    QTest::newRow("lens without a text") << QStringList{QStringLiteral("lens")}
                                         << QStringLiteral("expected MODEL and either --text TEXT or --ids");
}

// One line on standard error naming the option, exit status 2, nothing on standard output.
void TestPatchCli::refusals()
{
    QFETCH(QStringList, arguments);
    QFETCH(QString, message);
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 3);
    qkv::test::writeTinyTokenizer(folder.path());
    QStringList command = arguments;
    if (command.first() == QLatin1String("lens"))
        command.insert(1, folder.path());
    else
        command = QStringList{QStringLiteral("patch"), folder.path()} + arguments;
    const Run run = qkvlab(command);
    QVERIFY_RUN(run, run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QCOMPARE(run.err.count('\n'), 1);
    QVERIFY2(run.err.startsWith("qkvlab " + command.first().toUtf8() + ": "), run.err.constData());
    QVERIFY2(QString::fromUtf8(run.err).contains(message), run.err.constData());
}

// --script writes a Python script beside the JSON: PyTorch and the standard library only, holding the
// prompts, the tokens and the site; the JSON is the same as without it. (tests/app/patch_script_reference.py
// runs the scripts and compares their grids.)
void TestPatchCli::script()
{
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("qwen2")), folder.path(), 3);
    const QString path = folder.filePath(QStringLiteral("patch.py"));
    const QStringList arguments =
        patchArguments(folder.path(), QStringLiteral("head_k"), QStringLiteral("attribution"));
    const Run withScript = qkvlab(arguments + QStringList{QStringLiteral("--script"), path});
    const Run without = qkvlab(arguments);
    QVERIFY_RUN(withScript, withScript.exitCode == 0);
    QCOMPARE(withScript.out, without.out);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.startsWith("#!/usr/bin/env python3\n"));
    QVERIFY(text.contains("\nimport torch\n"));
    QVERIFY(text.contains("\\\"what\\\":\\\"head_k\\\""));
    QVERIFY(text.contains("\\\"ids\\\":[5,17,30,8,22,9]"));
    for (const QByteArray& line : text.split('\n'))
        if (line.startsWith("import ") || line.startsWith("from "))
            QVERIFY2(QList<QByteArray>({"import json", "import math", "import os", "import struct",
                                        "import sys", "import torch"})
                         .contains(line),
                     line.constData());
    // A folder that cannot be written is refused by name, and nothing is printed.
    const Run refused = qkvlab(arguments + QStringList{QStringLiteral("--script"), folder.path()});
    QVERIFY_RUN(refused, refused.exitCode == 2);
    QVERIFY(refused.out.isEmpty());
    QVERIFY(refused.err.contains(folder.path().toUtf8()));
}

// With standard error on a terminal (a pseudo-terminal here), the cells and layers done are counted there
// on one line, erased at the end; the JSON on standard output is unchanged. (Every other test runs with
// standard error in a pipe and checks that it stays empty.)
void TestPatchCli::progressOnlyOnATerminal()
{
    QTemporaryDir folder;
    qkv::test::writeModel(shape(QStringLiteral("gpt2")), folder.path(), 3); // 2 layers × 2 heads
    const QStringList patch =
        patchArguments(folder.path(), QStringLiteral("head_out"), QStringLiteral("exact"));
    const QStringList lens = {QStringLiteral("lens"), folder.path(), QStringLiteral("--ids"),
                              idList(cleanIds)};
    for (const auto& [arguments, expected] :
         {std::pair{patch, QByteArray("qkvlab patch head_out: 4/4 cells")},
          std::pair{lens, QByteArray("qkvlab lens: 3/3 layers")}}) {
        int terminal = -1, device = -1;
        char name[256] = {};
        QVERIFY(openpty(&terminal, &device, name, nullptr, nullptr) == 0);
        QProcess process;
        process.setProcessEnvironment(qkv::test::offscreenEnvironment());
        process.setStandardErrorFile(QString::fromLocal8Bit(name));
        process.start(QStringLiteral(QKVLAB_EXECUTABLE), arguments);
        QVERIFY(process.waitForFinished(timeoutMs));
        ::close(device);
        QCOMPARE(process.exitCode(), 0);
        QVERIFY(!QJsonDocument::fromJson(process.readAllStandardOutput()).isNull());
        QByteArray shown;
        ::fcntl(terminal, F_SETFL, O_NONBLOCK);
        char buffer[4096];
        for (ssize_t got = 0; (got = ::read(terminal, buffer, sizeof buffer)) > 0;)
            shown.append(buffer, qsizetype(got));
        ::close(terminal);
        QVERIFY2(shown.contains(expected), shown.constData());
        QVERIFY2(shown.endsWith("\r\033[K"), shown.constData());
    }
}

QKV_TEST_GUILESS_MAIN(TestPatchCli)
#include "tst_patch_cli.moc"
