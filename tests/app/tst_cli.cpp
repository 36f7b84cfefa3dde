// SPDX-License-Identifier: GPL-3.0-or-later
// `qkvlab compute`, `--help` and `--version` (docs/command-line.md), run as the real executable.

#include "AttentionEngine.h"
#include "Examples.h"
#include "FigureFileChecks.h"

#include "FuzzyCompare.h"
#include "ModelRun.h"
#include "ModelSession.h"
#include "QkvlabProcess.h"
#include "SessionFile.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QtTest>

#include <sys/stat.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>
#include <filesystem>

using namespace qkv;

namespace {

constexpr int timeoutMs = 30000;

using Run = qkv::test::QkvlabRun;

Run runWithEnvironment(const QProcessEnvironment& environment, const QStringList& arguments,
                       const QByteArray& input)
{
    return qkv::test::runQkvlabWith(environment, arguments, input, timeoutMs);
}

Run runQkvlab(const QStringList& arguments, const QByteArray& input = QByteArray())
{
    return runWithEnvironment(qkv::test::offscreenEnvironment(), arguments, input);
}

QJsonObject parseOutput(const QByteArray& out, bool* ok)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(out, &error);
    *ok = error.error == QJsonParseError::NoError && doc.isObject();
    if (!*ok)
        qWarning("stdout is not a JSON object: %s", qPrintable(error.errorString()));
    return doc.object();
}

/// Every number of `json` (an array of rows) equals the matrix entry exactly.
template <typename Derived>
bool sameMatrix(const QJsonValue& json, const Eigen::MatrixBase<Derived>& expected, const QString& what,
                QString* problem)
{
    const QJsonArray rows = json.toArray();
    if (!json.isArray() || rows.size() != expected.rows()) {
        *problem = QStringLiteral("%1: expected %2 rows").arg(what).arg(expected.rows());
        return false;
    }
    for (Index r = 0; r < expected.rows(); ++r) {
        const QJsonArray row = rows.at(static_cast<qsizetype>(r)).toArray();
        if (row.size() != expected.cols()) {
            *problem = QStringLiteral("%1[%2]: expected %3 numbers").arg(what).arg(r).arg(expected.cols());
            return false;
        }
        for (Index c = 0; c < expected.cols(); ++c) {
            const QJsonValue value = row.at(static_cast<qsizetype>(c));
            const double wanted = static_cast<double>(expected(r, c));
            if (!value.isDouble() || value.toDouble() != wanted) {
                *problem = QStringLiteral("%1[%2][%3] = %4, expected %5")
                               .arg(what)
                               .arg(r)
                               .arg(c)
                               .arg(value.toDouble(), 0, 'g', 17)
                               .arg(wanted, 0, 'g', 17);
                return false;
            }
        }
    }
    return true;
}

/// The printed result equals the engine's result exactly: every number reads back to the same double.
bool sameResult(const QJsonObject& printed, const AttentionResult& expected, QString* problem)
{
    const QJsonArray heads = printed.value(QStringLiteral("heads")).toArray();
    if (heads.size() != static_cast<qsizetype>(expected.heads.size())) {
        *problem = QStringLiteral("heads: expected %1").arg(expected.heads.size());
        return false;
    }
    for (std::size_t h = 0; h < expected.heads.size(); ++h) {
        const HeadResult& e = expected.heads[h];
        const QJsonObject head = heads.at(static_cast<qsizetype>(h)).toObject();
        const QString at = QStringLiteral("heads[%1].").arg(h);
        const auto field = [&head](const char* key) { return head.value(QString::fromUtf8(key)); };
        if (!sameMatrix(field("Q"), e.Q, at + QStringLiteral("Q"), problem) ||
            !sameMatrix(field("K"), e.K, at + QStringLiteral("K"), problem) ||
            !sameMatrix(field("V"), e.V, at + QStringLiteral("V"), problem) ||
            !sameMatrix(field("scores"), e.scores, at + QStringLiteral("scores"), problem) ||
            !sameMatrix(field("scaled"), e.scaled, at + QStringLiteral("scaled"), problem) ||
            !sameMatrix(field("allowed"), e.allowed, at + QStringLiteral("allowed"), problem) ||
            !sameMatrix(field("weights"), e.weights, at + QStringLiteral("weights"), problem) ||
            !sameMatrix(field("output"), e.output, at + QStringLiteral("output"), problem))
            return false;
        const QJsonArray stats = field("row_stats").toArray();
        if (stats.size() != static_cast<qsizetype>(e.rowStats.size())) {
            *problem = at + QStringLiteral("row_stats: wrong count");
            return false;
        }
        for (std::size_t i = 0; i < e.rowStats.size(); ++i) {
            const QJsonObject row = stats.at(static_cast<qsizetype>(i)).toObject();
            const RowStats& s = e.rowStats[i];
            if (row.value(QStringLiteral("entropy")).toDouble() != s.entropy ||
                row.value(QStringLiteral("support")).toDouble() != static_cast<double>(s.support) ||
                row.value(QStringLiteral("max")).toDouble() != s.max ||
                row.value(QStringLiteral("sum")).toDouble() != s.sum) {
                *problem = at + QStringLiteral("row_stats[%1] differs").arg(i);
                return false;
            }
        }
        const QJsonArray empty = field("empty_rows").toArray();
        if (empty.size() != static_cast<qsizetype>(e.emptyRows.size())) {
            *problem = at + QStringLiteral("empty_rows: wrong count");
            return false;
        }
        for (std::size_t i = 0; i < e.emptyRows.size(); ++i)
            if (empty.at(static_cast<qsizetype>(i)).toDouble() != static_cast<double>(e.emptyRows[i])) {
                *problem = at + QStringLiteral("empty_rows[%1] differs").arg(i);
                return false;
            }
    }
    return sameMatrix(printed.value(QStringLiteral("concat")), expected.concat, QStringLiteral("concat"),
                      problem) &&
           sameMatrix(printed.value(QStringLiteral("output")), expected.output, QStringLiteral("output"),
                      problem);
}

bool writeFile(const QString& path, const QByteArray& content)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(content) == content.size();
}

/// "I love AI" with a second head whose W_K has 3 rows although d_model is 4.
QByteArray raggedSession()
{
    QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(exampleJson("love"))).object();
    QJsonArray heads = root.value(QStringLiteral("heads")).toArray();
    QJsonObject second = heads.at(0).toObject();
    second[QStringLiteral("W_K")] = QJsonArray{QJsonArray{0, 1, 0}, QJsonArray{1, 0, 1}, QJsonArray{0, 0, 1}};
    heads.append(second);
    root[QStringLiteral("heads")] = heads;
    return QJsonDocument(root).toJson();
}

const char* const raggedMessage = "heads[1].W_K: expected 4 rows, found 3";

} // namespace

class TestCli : public QObject {
    Q_OBJECT

private slots:
    void computeLoveExample();
    void computeTheCatSatExample();
    void computeFileAndStandardInput();
    void computeEveryExample_data();
    void computeEveryExample();
    void refusedFileExitsTwo();
    void refusedStandardInputExitsTwo();
    void hugeNumberIsRefusedNotCrashed();
    void missingFileExitsTwo();
    void unknownExampleListsTheKnownOnes();
    void computeNeedsOneArgument_data();
    void computeNeedsOneArgument();
    void hostileInputExitsTwoWithOneLine_data();
    void hostileInputExitsTwoWithOneLine();
    void help();
    void version();
    void exportHelpListsTheViews();
    void exportEveryViewAndFormat_data();
    void exportEveryViewAndFormat();
    void exportScaleAndFormatFromSuffix();
    void exportAllWritesOneFilePerView_data();
    void exportAllWritesOneFilePerView();
    void exportOtherHead();
    void exportBadViewExitsTwo();
    void exportBadArgumentsExitTwo_data();
    void exportBadArgumentsExitTwo();
    void tokenize();
    void fromModel();
    void predict();
    void predictInterventionsAndRefusals();
    void heads();
    void exportModelView_data();
    void exportModelView();
    void exportModelViewRefusals();
    void exportModelPrediction();
    void exportLensAndPatch();
};

void TestCli::computeLoveExample()
{
    const Run run = runQkvlab({QStringLiteral("compute"), QStringLiteral("example:love")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QVERIFY2(run.err.isEmpty(), run.err.constData());
    bool ok = false;
    const QJsonObject printed = parseOutput(run.out, &ok);
    QVERIFY(ok);

    QString problem;
    QVERIFY2(sameResult(printed, computeAttention(loadExample("love")), &problem), qPrintable(problem));

    // The numbers Shekhar's article works out by hand for “I love AI” (docs/references.md).
    const QJsonObject head = printed.value(QStringLiteral("heads")).toArray().at(0).toObject();
    const Matrix scores = (Matrix(3, 3) << 1, 5, 3, 3, 3, 3, 2, 4, 3).finished();
    QVERIFY2(sameMatrix(head.value(QStringLiteral("scores")), scores, QStringLiteral("scores"), &problem),
             qPrintable(problem));
    const QJsonArray weights0 = head.value(QStringLiteral("weights")).toArray().at(0).toArray();
    const double expected[] = {0.070, 0.707, 0.223};
    QCOMPARE(weights0.size(), 3);
    for (int j = 0; j < 3; ++j)
        QVERIFY2(
            std::abs(weights0.at(j).toDouble() - expected[j]) <= 5e-4,
            qPrintable(
                QStringLiteral("weights[0][%1] = %2").arg(j).arg(weights0.at(j).toDouble(), 0, 'g', 17)));
    const QJsonArray scaled0 = head.value(QStringLiteral("scaled")).toArray().at(0).toArray();
    QKV_COMPARE_NEAR(scaled0.at(1).toDouble(), 5.0 / std::sqrt(3.0), 1e-15);
}

void TestCli::computeTheCatSatExample()
{
    // `qkvlab compute example:the-cat-sat` prints the worked example of Brenndoerfer's article
    // (docs/references.md): every matrix the article prints, to its 3
    // decimals (its W_Q, W_K, W_V are drawn from NumPy's stream after np.random.seed(42)).
    const Run run = runQkvlab({QStringLiteral("compute"), QStringLiteral("example:the-cat-sat")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    bool ok = false;
    const QJsonObject printed = parseOutput(run.out, &ok);
    QVERIFY(ok);
    const QJsonObject head = printed.value(QStringLiteral("heads")).toArray().at(0).toObject();
    const struct {
        const char* key;
        double values[9];
    } article[] = {
        {"Q", {0.248, -0.069, 0.324, 1.003, -0.309, -0.271, 0.866, 0.372, -0.246}},
        {"K", {0.121, -0.957, -0.862, -0.359, -0.575, -0.499, -0.482, -0.757, 0.749}},
        {"V", {-0.272, 0.055, -0.575, -0.262, 0.034, -0.692, -0.282, 0.896, -0.021}},
        {"scores", {-0.183, -0.211, 0.175, 0.651, -0.047, -0.452, -0.039, -0.402, -0.883}},
        {"scaled", {-0.106, -0.122, 0.101, 0.376, -0.027, -0.261, -0.022, -0.232, -0.510}},
        {"weights", {0.311, 0.306, 0.383, 0.455, 0.304, 0.241, 0.412, 0.334, 0.253}},
        {"output", {-0.273, 0.371, -0.399, -0.272, 0.251, -0.477, -0.271, 0.261, -0.474}},
    };
    for (const auto& matrix : article) {
        const QJsonArray rows = head.value(QLatin1String(matrix.key)).toArray();
        QCOMPARE(rows.size(), 3);
        for (int i = 0; i < 3; ++i) {
            const QJsonArray row = rows.at(i).toArray();
            QCOMPARE(row.size(), 3);
            for (int j = 0; j < 3; ++j) {
                const double value = row.at(j).toDouble();
                QVERIFY2(std::llround(value * 1000.0) == std::llround(matrix.values[3 * i + j] * 1000.0),
                         qPrintable(QStringLiteral("%1[%2][%3] = %4, the article prints %5")
                                        .arg(QLatin1String(matrix.key))
                                        .arg(i)
                                        .arg(j)
                                        .arg(value, 0, 'f', 6)
                                        .arg(matrix.values[3 * i + j], 0, 'f', 3)));
            }
        }
    }
}

void TestCli::computeFileAndStandardInput()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("love.qkv.json"));
    const QByteArray session = QByteArray::fromStdString(exampleJson("love"));
    QVERIFY(writeFile(path, session));

    const Run fromExample = runQkvlab({QStringLiteral("compute"), QStringLiteral("example:love")});
    const Run fromFile = runQkvlab({QStringLiteral("compute"), path});
    const Run fromStdin = runQkvlab({QStringLiteral("compute"), QStringLiteral("-")}, session);
    for (const Run* run : {&fromExample, &fromFile, &fromStdin}) {
        QVERIFY_RUN(*run, run->status == QProcess::NormalExit && run->exitCode == 0);
        QVERIFY2(run->err.isEmpty(), run->err.constData());
    }
    QCOMPARE(fromFile.out, fromExample.out);
    QCOMPARE(fromStdin.out, fromExample.out);

    bool ok = false;
    const QJsonObject printed = parseOutput(fromStdin.out, &ok);
    QVERIFY(ok);
    QString problem;
    QVERIFY2(sameResult(printed, computeAttention(loadExample("love")), &problem), qPrintable(problem));
}

void TestCli::computeEveryExample_data()
{
    QTest::addColumn<QString>("name");
    const std::vector<ExampleInfo> examples = builtinExamples();
    QVERIFY(!examples.empty());
    for (const ExampleInfo& example : examples)
        QTest::newRow(example.name.c_str()) << QString::fromStdString(example.name);
}

void TestCli::computeEveryExample()
{
    QFETCH(QString, name);
    const Run run = runQkvlab({QStringLiteral("compute"), QStringLiteral("example:") + name});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QVERIFY2(run.err.isEmpty(), run.err.constData());
    bool ok = false;
    const QJsonObject printed = parseOutput(run.out, &ok);
    QVERIFY(ok);
    QString problem;
    QVERIFY2(sameResult(printed, computeAttention(loadExample(name.toStdString())), &problem),
             qPrintable(problem));
}

void TestCli::refusedFileExitsTwo()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("ragged.qkv.json"));
    QVERIFY(writeFile(path, raggedSession()));
    const Run run = runQkvlab({QStringLiteral("compute"), path});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY2(run.out.isEmpty(), run.out.constData());
    const QString err = QString::fromUtf8(run.err);
    QVERIFY2(err.contains(QLatin1String(raggedMessage)), qPrintable(err));
    QVERIFY2(err.contains(path), qPrintable(err));
    QCOMPARE(err.count(QLatin1Char('\n')), 1); // one message on one line
}

void TestCli::refusedStandardInputExitsTwo()
{
    const Run ragged = runQkvlab({QStringLiteral("compute"), QStringLiteral("-")}, raggedSession());
    QVERIFY_RUN(ragged, ragged.status == QProcess::NormalExit && ragged.exitCode == 2);
    QVERIFY(ragged.out.isEmpty());
    QVERIFY2(ragged.err.contains(raggedMessage), ragged.err.constData());

    const Run garbage = runQkvlab({QStringLiteral("compute"), QStringLiteral("-")}, "{ not json");
    QVERIFY_RUN(garbage, garbage.status == QProcess::NormalExit && garbage.exitCode == 2);
    QVERIFY(garbage.out.isEmpty());
    QVERIFY2(garbage.err.contains("not valid JSON"), garbage.err.constData());

    const Run empty = runQkvlab({QStringLiteral("compute"), QStringLiteral("-")});
    QVERIFY_RUN(empty, empty.status == QProcess::NormalExit && empty.exitCode == 2);
    QVERIFY(empty.out.isEmpty());
    QVERIFY2(!empty.err.isEmpty(), "no message for empty standard input");
}

void TestCli::hugeNumberIsRefusedNotCrashed()
{
    std::string text = exampleJson("love");
    const std::string firstRow = "[1, 0, 1, 0]";
    const auto at = text.find(firstRow);
    QVERIFY(at != std::string::npos);
    text.replace(at, firstRow.size(), "[1e999, 0, 1, 0]");
    const Run run =
        runQkvlab({QStringLiteral("compute"), QStringLiteral("-")}, QByteArray::fromStdString(text));
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(run.err.contains("X[0][0]: not a finite number"), run.err.constData());
}

void TestCli::missingFileExitsTwo()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("absent.qkv.json"));
    const Run run = runQkvlab({QStringLiteral("compute"), path});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(QString::fromUtf8(run.err).contains(path), run.err.constData());
}

void TestCli::unknownExampleListsTheKnownOnes()
{
    const Run run = runQkvlab({QStringLiteral("compute"), QStringLiteral("example:no-such-example")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(run.err.contains("no-such-example"), run.err.constData());
    for (const ExampleInfo& example : builtinExamples())
        QVERIFY2(run.err.contains(QByteArray::fromStdString(example.name)),
                 qPrintable(QStringLiteral("%1 not listed in: %2")
                                .arg(QString::fromStdString(example.name), QString::fromUtf8(run.err))));
}

void TestCli::computeNeedsOneArgument_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::newRow("no argument") << QStringList{QStringLiteral("compute")};
    QTest::newRow("two arguments") << QStringList{QStringLiteral("compute"), QStringLiteral("example:love"),
                                                  QStringLiteral("example:causal")};
}

void TestCli::computeNeedsOneArgument()
{
    QFETCH(QStringList, arguments);
    const Run run = runQkvlab(arguments);
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(run.err.contains("compute"), run.err.constData());
}

namespace {

/// A session of `heads` heads with d_model = 1, d_k = d_v = `width` and n tokens, all zeros: a small file
/// whose results are enormous.
QByteArray zeroSession(int n, int heads, int width)
{
    QByteArray zeros = "[";
    for (int c = 0; c < width; ++c)
        zeros += c ? ",0" : "0";
    zeros += "]";
    QByteArray text = R"({"format": "qkvlab-session", "version": 1, "tokens": [)";
    for (int i = 0; i < n; ++i)
        text += i ? ",\"t\"" : "\"t\"";
    text += R"(], "X": [)";
    for (int i = 0; i < n; ++i)
        text += i ? ",[0]" : "[0]";
    text += R"(], "heads": [)";
    for (int h = 0; h < heads; ++h)
        text += (h ? "," : "") + QByteArray(R"({"W_Q": [)") + zeros + R"(], "W_K": [)" + zeros +
                R"(], "W_V": [)" + zeros + "]}";
    return text + "]}";
}

} // namespace

void TestCli::hostileInputExitsTwoWithOneLine_data()
{
    QTest::addColumn<QStringList>("arguments"); // "<file>" is replaced by the path of `content`
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("stdinFile");
    QTest::addColumn<QString>("message");
    const QString file = QStringLiteral("<file>");
    const QString compute = QStringLiteral("compute");
    const QByteArray nested = R"({"format": "qkvlab-session", "version": 1, "tokens": ["a"], "X": [[1]],
        "heads": [{"W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}], "extra": )" +
                              QByteArray(80000, '[') + QByteArray(80000, ']') + "}";
    const QByteArray sigmoid = R"({"format": "qkvlab-session", "version": 1, "tokens": ["a", "b", "c"],
        "X": [[1], [1], [1]], "heads": [{"W_Q": [[1]], "W_K": [[1]], "W_V": [[1e308]]}], "W_O": [[1]],
        "normalizer": {"type": "sigmoid"}})";
    QTest::newRow("80000 nested arrays") << QStringList{compute, file} << nested << QString()
                                         << QStringLiteral("nested more than 512 levels deep");
    QTest::newRow("sigmoid · V overflows") << QStringList{compute, file} << sigmoid << QString()
                                           << QStringLiteral("heads[0].output: weights · V overflows");
    QTest::newRow("FIFO") << QStringList{compute, QStringLiteral("<fifo>")} << QByteArray() << QString()
                          << QStringLiteral("it is a pipe (FIFO), not a file");
    QTest::newRow("/dev/zero") << QStringList{compute, QStringLiteral("/dev/zero")} << QByteArray()
                               << QString()
                               << QStringLiteral("/dev/zero: cannot read: it is a device, not a file");
    QTest::newRow("folder") << QStringList{compute, QStringLiteral("/")} << QByteArray() << QString()
                            << QStringLiteral("/: cannot read: it is a folder, not a file");
    QTest::newRow("endless standard input")
        << QStringList{compute, QStringLiteral("--max-memory"), QStringLiteral("64M"), QStringLiteral("-")}
        << QByteArray() << QStringLiteral("/dev/zero")
        << QStringLiteral("(standard input): too large: a session file may have at most");
    QTest::newRow("64 heads of 4096 at n = 4096") << QStringList{compute, file} << zeroSession(4096, 64, 4096)
                                                  << QString() << QStringLiteral("this session needs about ");
    QTest::newRow("--max-memory") << QStringList{compute, QStringLiteral("--max-memory=1K"),
                                                 QStringLiteral("example:love")}
                                  << QByteArray() << QString()
                                  << QStringLiteral("more than the limit of 1.0 KB");
    QTest::newRow("bad --max-memory")
        << QStringList{compute, QStringLiteral("--max-memory"), QStringLiteral("lots"),
                       QStringLiteral("example:love")}
        << QByteArray() << QString() << QStringLiteral("bad --max-memory 'lots'");
}

void TestCli::hostileInputExitsTwoWithOneLine()
{
    QFETCH(QStringList, arguments);
    QFETCH(QByteArray, content);
    QFETCH(QString, stdinFile);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    for (QString& argument : arguments) {
        if (argument == QLatin1String("<file>")) {
            argument = dir.filePath(QStringLiteral("hostile.qkv.json"));
            QVERIFY(writeFile(argument, content));
        } else if (argument == QLatin1String("<fifo>")) {
            argument = dir.filePath(QStringLiteral("fifo.qkv.json"));
            QVERIFY(::mkfifo(QFile::encodeName(argument).constData(), 0600) == 0);
        }
    }
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    process.setProcessEnvironment(environment);
    if (!stdinFile.isEmpty())
        process.setStandardInputFile(stdinFile);
    process.start(QStringLiteral(QKVLAB_EXECUTABLE), arguments);
    QVERIFY(process.waitForStarted(timeoutMs));
    if (stdinFile.isEmpty())
        process.closeWriteChannel();
    const bool finished = process.waitForFinished(timeoutMs);
    if (!finished)
        process.kill();
    QVERIFY2(finished, "qkvlab did not finish: a hang");
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 2,
             qPrintable(QStringLiteral("exit %1: %2").arg(process.exitCode()).arg(err)));
    QVERIFY2(err.contains(message), qPrintable(err));
    QCOMPARE(err.count(QLatin1Char('\n')), 1);
    QVERIFY(process.readAllStandardOutput().isEmpty());
}

void TestCli::help()
{
    const Run run = runQkvlab({QStringLiteral("--help")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QVERIFY2(run.out.contains("qkvlab compute"), run.out.constData());
    QVERIFY2(run.out.contains("example:love"), run.out.constData());
}

void TestCli::version()
{
    const Run run = runQkvlab({QStringLiteral("--version")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QCOMPARE(QString::fromUtf8(run.out).trimmed(), QStringLiteral("qkvlab " QKV_VERSION));
}

// `qkvlab export` (docs/command-line.md): run as on a machine without a display, since the command picks the
// offscreen platform itself.

namespace {

Run runHeadless(const QStringList& arguments, const QByteArray& input = QByteArray())
{
    return runWithEnvironment(qkv::test::headlessEnvironment(), arguments, input);
}

const QStringList resultHeatmaps{
    QStringLiteral("Q"),       QStringLiteral("K"),      QStringLiteral("V"),
    QStringLiteral("scores"),  QStringLiteral("scaled"), QStringLiteral("mask"),
    QStringLiteral("weights"), QStringLiteral("output"), QStringLiteral("final_output")};

/// The names `qkvlab export --help` lists under "Views:", one per line.
QStringList exportedViews()
{
    const Run run = runHeadless({QStringLiteral("export"), QStringLiteral("--help")});
    QStringList names;
    bool inViews = false;
    for (const QString& line : QString::fromUtf8(run.out).split(QLatin1Char('\n'))) {
        if (line == QLatin1String("Views:"))
            inViews = true;
        else if (inViews && line.startsWith(QLatin1String("  ")))
            names.append(line.trimmed());
        else if (inViews)
            break;
    }
    return names;
}

/// What the file of `format` written for `view` must be (the token labels as text for the heatmaps).
QString checkExported(const QString& view, const QString& format, const QString& path, QSize pixels)
{
    if (format == QLatin1String("png"))
        return test::checkPng(path, pixels);
    if (format == QLatin1String("svg"))
        return test::checkSvg(
            path, resultHeatmaps.contains(view)
                      ? QStringList{QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")}
                      : QStringList());
    return test::checkPdf(path);
}

/// The lines of `err` from qkvlab itself (the platform may add notices of its own, such as XDG_RUNTIME_DIR).
QStringList exportMessages(const QByteArray& err)
{
    return QString::fromUtf8(err)
        .split(QLatin1Char('\n'))
        .filter(QRegularExpression(QStringLiteral("^qkvlab export: ")));
}

const QStringList figureFormats{QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")};

} // namespace

void TestCli::exportHelpListsTheViews()
{
    const Run run = runHeadless({QStringLiteral("export"), QStringLiteral("--help")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QVERIFY2(run.out.contains("--view"), run.out.constData());
    const QStringList views = exportedViews();
    for (const QString& name : resultHeatmaps)
        QVERIFY2(views.contains(name), qPrintable(views.join(u',')));
    const Run general = runQkvlab({QStringLiteral("--help")});
    QVERIFY2(general.out.contains("qkvlab export"), general.out.constData());
}

void TestCli::exportEveryViewAndFormat_data()
{
    QTest::addColumn<QString>("view");
    QTest::addColumn<QString>("format");
    const QStringList views = exportedViews();
    QVERIFY(!views.isEmpty());
    for (const QString& view : views)
        for (const QString& format : figureFormats)
            QTest::newRow(qPrintable(view + QLatin1Char(' ') + format)) << view << format;
}

void TestCli::exportEveryViewAndFormat()
{
    QFETCH(QString, view);
    QFETCH(QString, format);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(view + QStringLiteral(".figure")); // the format comes from --format
    const Run run = runHeadless({QStringLiteral("export"), QStringLiteral("example:love"),
                                 QStringLiteral("--view"), view, QStringLiteral("--format"), format,
                                 QStringLiteral("--out"), path, QStringLiteral("--width"),
                                 QStringLiteral("480"), QStringLiteral("--height"), QStringLiteral("360")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QCOMPARE(QString::fromUtf8(run.out).trimmed(), QDir::toNativeSeparators(path));
    const QString problem = checkExported(view, format, path, QSize(480, 360));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestCli::exportScaleAndFormatFromSuffix()
{
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("weights.png"));
    const Run scaled =
        runHeadless({QStringLiteral("export"), QStringLiteral("example:love"), QStringLiteral("--view"),
                     QStringLiteral("weights"), QStringLiteral("--out"), png, QStringLiteral("--width=300"),
                     QStringLiteral("--height=200"), QStringLiteral("--scale=2")});
    QVERIFY_RUN(scaled, scaled.exitCode == 0);
    QString problem = test::checkPng(png, QSize(600, 400));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));

    const QString svg = dir.filePath(QStringLiteral("weights.SVG"));
    const Run fromSuffix =
        runHeadless({QStringLiteral("export"), QStringLiteral("example:love"), QStringLiteral("--view"),
                     QStringLiteral("weights"), QStringLiteral("--out"), svg});
    QVERIFY_RUN(fromSuffix, fromSuffix.exitCode == 0);
    problem = checkExported(QStringLiteral("weights"), QStringLiteral("svg"), svg, QSize());
    QVERIFY2(problem.isEmpty(), qPrintable(problem));

    // Standard input as the session, and an existing folder as --out.
    const Run fromStdin = runHeadless(
        {QStringLiteral("export"), QStringLiteral("-"), QStringLiteral("--view"), QStringLiteral("scores"),
         QStringLiteral("--format"), QStringLiteral("pdf"), QStringLiteral("--out"), dir.path()},
        QByteArray::fromStdString(exampleJson("love")));
    QVERIFY_RUN(fromStdin, fromStdin.exitCode == 0);
    problem = test::checkPdf(dir.filePath(QStringLiteral("scores.pdf")));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestCli::exportAllWritesOneFilePerView_data()
{
    QTest::addColumn<QString>("format");
    for (const QString& format : figureFormats)
        QTest::newRow(qPrintable(format)) << format;
}

void TestCli::exportAllWritesOneFilePerView()
{
    QFETCH(QString, format);
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("figures"));
    const Run run = runHeadless({QStringLiteral("export"), QStringLiteral("example:love"),
                                 QStringLiteral("--view"), QStringLiteral("all"), QStringLiteral("--format"),
                                 format, QStringLiteral("--out"), folder, QStringLiteral("--width"),
                                 QStringLiteral("400"), QStringLiteral("--height"), QStringLiteral("300")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    const QStringList views = exportedViews();
    QStringList expected;
    for (const QString& view : views)
        expected.append(view + QLatin1Char('.') + format);
    QStringList files = QDir(folder).entryList(QDir::Files);
    files.sort();
    expected.sort();
    QCOMPARE(files, expected);
    QCOMPARE(QString::fromUtf8(run.out).trimmed().split(QLatin1Char('\n')).size(), views.size());
    for (const QString& view : views) {
        const QString problem = checkExported(
            view, format, QDir(folder).filePath(view + QLatin1Char('.') + format), QSize(400, 300));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }
}

void TestCli::exportOtherHead()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("weights.svg"));
    const Run run =
        runHeadless({QStringLiteral("export"), QStringLiteral("example:multihead"), QStringLiteral("--view"),
                     QStringLiteral("weights"), QStringLiteral("--head"), QStringLiteral("1"),
                     QStringLiteral("--out"), path});
    QVERIFY_RUN(run, run.exitCode == 0);
    const QString problem = test::checkSvg(path, {QStringLiteral("Attention weights — head 2 of 2")});
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestCli::exportBadViewExitsTwo()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("x.png"));
    const Run run =
        runHeadless({QStringLiteral("export"), QStringLiteral("example:love"), QStringLiteral("--view"),
                     QStringLiteral("no-such-view"), QStringLiteral("--out"), path});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(run.err.contains("no-such-view"), run.err.constData());
    QVERIFY2(run.err.contains("weights"), run.err.constData()); // the known names are listed
    QCOMPARE(exportMessages(run.err).size(), 1);                // one message on one line
    QVERIFY(!QFileInfo::exists(path));
}

void TestCli::exportBadArgumentsExitTwo_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("message"); // a part of the message; "%OUT" stands for --out
    const QString love = QStringLiteral("example:love");
    const QStringList base{QStringLiteral("export"), love, QStringLiteral("--view"),
                           QStringLiteral("weights")};
    const QString out = QStringLiteral("--out");
    QTest::newRow("head out of range")
        << (base + QStringList{QStringLiteral("--head"), QStringLiteral("1"), out, QStringLiteral("%OUT")})
        << QByteArray() << QStringLiteral("head 1");
    QTest::newRow("negative head") << (base + QStringList{QStringLiteral("--head"), QStringLiteral("-1"), out,
                                                          QStringLiteral("%OUT")})
                                   << QByteArray() << QStringLiteral("-1");
    QTest::newRow("bad format") << (base + QStringList{QStringLiteral("--format"), QStringLiteral("gif"), out,
                                                       QStringLiteral("%OUT")})
                                << QByteArray() << QStringLiteral("gif");
    QTest::newRow("width too small") << (base + QStringList{QStringLiteral("--width"), QStringLiteral("5"),
                                                            out, QStringLiteral("%OUT")})
                                     << QByteArray() << QStringLiteral("width");
    QTest::newRow("height too large")
        << (base +
            QStringList{QStringLiteral("--height"), QStringLiteral("20001"), out, QStringLiteral("%OUT")})
        << QByteArray() << QStringLiteral("height");
    QTest::newRow("width not a number")
        << (base +
            QStringList{QStringLiteral("--width"), QStringLiteral("wide"), out, QStringLiteral("%OUT")})
        << QByteArray() << QStringLiteral("wide");
    QTest::newRow("bad scale") << (base + QStringList{QStringLiteral("--scale"), QStringLiteral("0"), out,
                                                      QStringLiteral("%OUT")})
                               << QByteArray() << QStringLiteral("scale");
    QTest::newRow("no --out") << base << QByteArray() << QStringLiteral("--out");
    QTest::newRow("no --view") << QStringList{QStringLiteral("export"), love, out, QStringLiteral("%OUT")}
                               << QByteArray() << QStringLiteral("--view");
    QTest::newRow("no session") << QStringList{QStringLiteral("export"), QStringLiteral("--view"),
                                               QStringLiteral("weights"), out, QStringLiteral("%OUT")}
                                << QByteArray() << QStringLiteral("session");
    QTest::newRow("unknown option") << (base +
                                        QStringList{QStringLiteral("--colour"), out, QStringLiteral("%OUT")})
                                    << QByteArray() << QStringLiteral("--colour");
    QTest::newRow("refused session") << QStringList{QStringLiteral("export"),
                                                    QStringLiteral("-"),
                                                    QStringLiteral("--view"),
                                                    QStringLiteral("weights"),
                                                    out,
                                                    QStringLiteral("%OUT")}
                                     << raggedSession() << QString::fromLatin1(raggedMessage);
    QTest::newRow("unknown example") << QStringList{QStringLiteral("export"),
                                                    QStringLiteral("example:nope"),
                                                    QStringLiteral("--view"),
                                                    QStringLiteral("weights"),
                                                    out,
                                                    QStringLiteral("%OUT")}
                                     << QByteArray() << QStringLiteral("nope");
    QTest::newRow("unwritable path") << (base + QStringList{out, QStringLiteral("%DIR/missing/weights.png")})
                                     << QByteArray() << QStringLiteral("missing");
}

void TestCli::exportBadArgumentsExitTwo()
{
    QFETCH(QStringList, arguments);
    QFETCH(QByteArray, input);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("out.png"));
    for (QString& argument : arguments)
        argument.replace(QStringLiteral("%OUT"), path).replace(QStringLiteral("%DIR"), dir.path());
    const Run run = runHeadless(arguments, input);
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 2);
    QVERIFY(run.out.isEmpty());
    QVERIFY2(QString::fromUtf8(run.err).contains(message), run.err.constData());
    QVERIFY2(exportMessages(run.err).size() == 1, run.err.constData());
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList());
}

void TestCli::tokenize()
{
    // GPT-2's file pair in a folder: the 256 byte characters (ids 0–255 in byte order: "Ġ" is a space) and
    // two merges; "the" becomes t·he, then the.
    QTemporaryDir model;
    QVERIFY(model.isValid());
    QJsonObject vocabulary;
    const QString printable =
        QStringLiteral("!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`"
                       "abcdefghijklmnopqrstuvwxyz{|}~");
    for (const QChar c : printable)
        vocabulary.insert(QString(c), int(c.unicode()));
    vocabulary.insert(QStringLiteral("\u0120"), 32); // Ġ, the space
    vocabulary.insert(QStringLiteral("he"), 256);
    vocabulary.insert(QStringLiteral("the"), 257);
    QFile vocab(model.filePath(QStringLiteral("vocab.json")));
    QVERIFY(vocab.open(QIODevice::WriteOnly));
    vocab.write(QJsonDocument(vocabulary).toJson());
    vocab.close();
    QFile merges(model.filePath(QStringLiteral("merges.txt")));
    QVERIFY(merges.open(QIODevice::WriteOnly));
    merges.write("#version: 0.2\nh e\nt he\n");
    merges.close();

    const Run run = runQkvlab(
        {QStringLiteral("tokenize"), model.path(), QStringLiteral("--text"), QStringLiteral("the a")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QCOMPARE(run.out, QByteArray("{\"ids\":[257,32,97],\"tokens\":[\"the\",\"\xC4\xA0\",\"a\"]}\n"));

    // Refused: a folder with no tokenizer, a character the vocabulary cannot spell, a missing --text.
    QTemporaryDir empty;
    const Run none =
        runQkvlab({QStringLiteral("tokenize"), empty.path(), QStringLiteral("--text"), QStringLiteral("x")});
    QVERIFY_RUN(none, none.exitCode == 2 && none.err.contains("no tokenizer") && none.out.isEmpty());
    const Run unspellable = runQkvlab(
        {QStringLiteral("tokenize"), model.path(), QStringLiteral("--text"), QStringLiteral("\u00e9")});
    QVERIFY_RUN(unspellable,
                unspellable.exitCode == 2 && unspellable.err.contains("is not in the vocabulary"));
    const Run noText = runQkvlab({QStringLiteral("tokenize"), model.path()});
    QVERIFY_RUN(noText,
                noText.exitCode == 2 && noText.err.contains("expected a model folder and --text TEXT"));
}

void TestCli::fromModel()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3); // GPT-2 shaped: 3 layers, 2 heads of 8
    const Run run = runQkvlab({QStringLiteral("from-model"), model.path(), QStringLiteral("--layer"),
                               QStringLiteral("1"), QStringLiteral("--ids"), QStringLiteral("4,8,15,16"),
                               QStringLiteral("--heads"), QStringLiteral("1")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    // The session written is the one the model layer makes, and it computes.
    ModelHeadRequest request;
    request.layer = 1;
    request.ids = {4, 8, 15, 16};
    request.heads = {1};
    const Model opened = Model::open(model.path().toStdString());
    Session expected = sessionFromModel(opened, request);
    const Session written = parseSession(run.out.toStdString());
    QCOMPARE(written.heads.size(), std::size_t(1));
    // It links to its model (by an absolute folder) with its head live, so the window reopens the model.
    QVERIFY(written.model.has_value());
    QVERIFY(std::filesystem::path(written.model->folder).is_absolute());
    QCOMPARE(QDir(QString::fromStdString(written.model->folder)).canonicalPath(),
             QDir(model.path()).canonicalPath());
    expected.model = modelLinkFor(opened, request);
    expected.model->folder = written.model->folder;
    QVERIFY(written == expected);
    QCOMPARE(written.model->interventions.size(), std::size_t(1));
    QCOMPARE(written.model->head, Index(1));
    QVERIFY(computeAttention(written).heads[0].weights.allFinite());

    // To a file with --out, in float32.
    const QString out = model.filePath(QStringLiteral("head.qkv.json"));
    const Run toFile =
        runQkvlab({QStringLiteral("from-model"), model.path(), QStringLiteral("--layer"), QStringLiteral("0"),
                   QStringLiteral("--ids"), QStringLiteral("1,2"), QStringLiteral("--precision"),
                   QStringLiteral("float32"), QStringLiteral("--out"), out});
    QVERIFY_RUN(toFile, toFile.exitCode == 0 && toFile.out.isEmpty());
    QCOMPARE(loadSession(out.toStdString()).precision, Precision::Float32);

    // Refusals: exit 2, one line naming the problem, nothing written.
    const auto refused = [&](const QStringList& extra, const char* message) {
        QStringList arguments{QStringLiteral("from-model"), model.path()};
        arguments << extra;
        const Run r = runQkvlab(arguments);
        return r.exitCode == 2 && r.out.isEmpty() && r.err.contains(message) && r.err.count('\n') == 1;
    };
    QVERIFY(refused(
        {QStringLiteral("--layer"), QStringLiteral("3"), QStringLiteral("--ids"), QStringLiteral("1")},
        "layer 3 is out of range"));
    QVERIFY(refused(
        {QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--ids"), QStringLiteral("1,99")},
        "token id 99 (token 1) is outside the vocabulary"));
    QVERIFY(refused({QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--ids"),
                     QStringLiteral("1"), QStringLiteral("--heads"), QStringLiteral("0,5")},
                    "head 5 is out of range"));
    QVERIFY(refused(
        {QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--text"), QStringLiteral("hi")},
        "no tokenizer"));
    QVERIFY(refused(
        {QStringLiteral("--layer"), QStringLiteral("x"), QStringLiteral("--ids"), QStringLiteral("1")},
        "bad --layer 'x'"));
    QVERIFY(refused({QStringLiteral("--layer"), QStringLiteral("0")}, "either --text TEXT or --ids"));
    QVERIFY(refused({QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--ids"),
                     QStringLiteral("1"), QStringLiteral("--precision"), QStringLiteral("half")},
                    "bad --precision 'half'"));
    QFile::remove(model.filePath(QStringLiteral("model.safetensors")));
    QVERIFY(refused(
        {QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--ids"), QStringLiteral("1")},
        "model.safetensors"));
}

// `qkvlab predict`: the model's next-token distribution, as ModelRun computes it in the program.
void TestCli::predict()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(),
                          3); // GPT-2 shaped: 3 layers, 2 heads, vocabulary 40
    const Run run = runQkvlab({QStringLiteral("predict"), model.path(), QStringLiteral("--ids"),
                               QStringLiteral("4,8,15,16,23"), QStringLiteral("--top"), QStringLiteral("3")});
    QVERIFY_RUN(run, run.exitCode == 0);
    bool ok = false;
    const QJsonObject json = parseOutput(run.out, &ok);
    QVERIFY(ok);
    const auto opened = std::make_shared<const Model>(Model::open(model.path().toStdString()));
    const ModelRun expected(opened, {4, 8, 15, 16, 23}, Precision::Float64);
    QCOMPARE(json.value(QStringLiteral("ids")).toArray(), (QJsonArray{4, 8, 15, 16, 23}));
    QCOMPARE(json.value(QStringLiteral("tokens")).toArray().at(0).toString(), QStringLiteral("#4"));
    const QJsonArray positions = json.value(QStringLiteral("positions")).toArray();
    QCOMPARE(positions.size(), 5);
    for (int i = 0; i < 5; ++i) {
        const QJsonObject position = positions.at(i).toObject();
        const QJsonArray top = position.value(QStringLiteral("top")).toArray();
        QCOMPARE(top.size(), 3);
        const PositionPrediction& want = expected.clean().positions[std::size_t(i)];
        for (int k = 0; k < 3; ++k) {
            QCOMPARE(top.at(k).toObject().value(QStringLiteral("id")).toInteger(),
                     want.top[std::size_t(k)].id);
            QCOMPARE(top.at(k).toObject().value(QStringLiteral("p")).toDouble(),
                     want.top[std::size_t(k)].probability);
            if (k > 0)
                QVERIFY(top.at(k).toObject().value(QStringLiteral("p")).toDouble() <=
                        top.at(k - 1).toObject().value(QStringLiteral("p")).toDouble());
        }
        QCOMPARE(position.contains(QStringLiteral("loss")), i < 4);
        QCOMPARE(position.contains(QStringLiteral("next_id")), i < 4);
        if (i < 4) {
            QCOMPARE(position.value(QStringLiteral("next_id")).toInteger(),
                     std::int64_t(json.value(QStringLiteral("ids")).toArray().at(i + 1).toInteger()));
            QCOMPARE(position.value(QStringLiteral("loss")).toDouble(), want.loss);
        }
    }
    QCOMPARE(json.value(QStringLiteral("loss")).toDouble(), expected.clean().meanLoss);
    // One token: no loss at all.
    const Run single =
        runQkvlab({QStringLiteral("predict"), model.path(), QStringLiteral("--ids"), QStringLiteral("7")});
    QVERIFY_RUN(single, single.exitCode == 0);
    QVERIFY(!parseOutput(single.out, &ok).contains(QStringLiteral("loss")));
}

void TestCli::predictInterventionsAndRefusals()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3);
    const auto lossOf = [&](const QStringList& extra) {
        QStringList arguments{QStringLiteral("predict"), model.path(), QStringLiteral("--ids"),
                              QStringLiteral("4,8,15,16,23,4,8")};
        arguments << extra;
        const Run r = runQkvlab(arguments);
        bool ok = false;
        const double loss = parseOutput(r.out, &ok).value(QStringLiteral("loss")).toDouble(-1.0);
        return r.exitCode == 0 && ok ? loss : -1.0;
    };
    const double clean = lossOf({});
    QVERIFY(clean > 0);
    const double zero = lossOf({QStringLiteral("--intervene"), QStringLiteral("1.0=zero")});
    const double mean = lossOf({QStringLiteral("--intervene"), QStringLiteral("1.0=mean")});
    const double both = lossOf({QStringLiteral("--intervene"), QStringLiteral("1.0=zero"),
                                QStringLiteral("--intervene"), QStringLiteral("2.1=scale:3")});
    for (double changed : {zero, mean, both})
        QVERIFY2(changed > 0 && changed != clean, qPrintable(QString::number(changed)));
    QVERIFY(both != zero);
    QCOMPARE(lossOf({QStringLiteral("--intervene"), QStringLiteral("0.1=scale:1")}), clean);
    // The head as from-model writes it, applied as a session: the model's own head, so the same loss.
    const QString head = model.filePath(QStringLiteral("head.qkv.json"));
    QVERIFY(runQkvlab({QStringLiteral("from-model"), model.path(), QStringLiteral("--layer"),
                       QStringLiteral("1"), QStringLiteral("--ids"), QStringLiteral("4,8,15,16,23,4,8"),
                       QStringLiteral("--heads"), QStringLiteral("1"), QStringLiteral("--out"), head})
                .exitCode == 0);
    const double session = lossOf({QStringLiteral("--intervene"), QStringLiteral("1.1=session:") + head});
    QVERIFY(std::abs(session - clean) <= 1e-12 * clean);

    const auto refused = [&](const QStringList& extra, const char* message) {
        QStringList arguments{QStringLiteral("predict"), model.path()};
        arguments << extra;
        const Run r = runQkvlab(arguments);
        const bool ok =
            r.exitCode == 2 && r.out.isEmpty() && r.err.contains(message) && r.err.count('\n') == 1;
        if (!ok)
            qWarning("%s", qPrintable(r.describe()));
        return ok;
    };
    const QString ids = QStringLiteral("--ids");
    const QString intervene = QStringLiteral("--intervene");
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("3.0=zero")},
                    "--intervene 3.0=zero: layer 3 is out of range"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.2=mean")},
                    "--intervene 0.2=mean: head 2 is out of range"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=ablate")},
                    "--intervene 0.1=ablate: unknown change"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("01=zero")},
                    "--intervene 01=zero: expected LAYER.HEAD="));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=scale:inf")},
                    "is not a finite number"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=scale:nan")},
                    "is not a finite number"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=scale")},
                    "scale needs a factor"));
    QVERIFY(
        refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=session:/nonexistent.qkv.json")},
                "--intervene 0.1=session:/nonexistent.qkv.json: "));
    // A session of another shape: d_model 4 (the love example) against the model's 16.
    const QString love = model.filePath(QStringLiteral("love.qkv.json"));
    saveSession(loadExample("love"), love.toStdString());
    QVERIFY(refused({ids, QStringLiteral("1,2"), intervene, QStringLiteral("0.1=session:") + love},
                    "the session's d_model is 4, the model's 16"));
    QVERIFY(
        refused({ids, QStringLiteral("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25")},
                "25 tokens are more than the model's 24 positions"));
    QVERIFY(
        refused({ids, QStringLiteral("1,2"), QStringLiteral("--top"), QStringLiteral("x")}, "bad --top 'x'"));
    QVERIFY(refused({ids, QStringLiteral("1,2"), QStringLiteral("--layer"), QStringLiteral("1")},
                    "unknown option --layer"));
    QFile::remove(model.filePath(QStringLiteral("model.safetensors")));
    qkv::test::Tiny noFinalNorm;
    noFinalNorm.withFinalNorm = false;
    qkv::test::writeModel(noFinalNorm, model.path(), 3);
    QVERIFY(refused({ids, QStringLiteral("1,2")}, "ln_f.weight (the final norm)"));
}

// `qkvlab heads`: every head's scores, as ModelRun computes them.
void TestCli::heads()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3);
    const Run run = runQkvlab(
        {QStringLiteral("heads"), model.path(), QStringLiteral("--ids"), QStringLiteral("4,8,15,4,8,15")});
    QVERIFY_RUN(run, run.exitCode == 0);
    bool ok = false;
    const QJsonObject json = parseOutput(run.out, &ok);
    QVERIFY(ok);
    QCOMPARE(json.value(QStringLiteral("layers")).toInt(), 3);
    QCOMPARE(json.value(QStringLiteral("heads")).toInt(), 2);
    const QJsonObject scores = json.value(QStringLiteral("scores")).toObject();
    QCOMPARE(scores.keys().size(), 6);
    const ModelRun expected(std::make_shared<const Model>(Model::open(model.path().toStdString())),
                            {4, 8, 15, 4, 8, 15}, Precision::Float64);
    for (HeadScore score : allHeadScores) {
        const QJsonArray rows = scores.value(QString::fromUtf8(toString(score))).toArray();
        QCOMPARE(rows.size(), 3);
        for (int l = 0; l < 3; ++l)
            for (int h = 0; h < 2; ++h)
                QCOMPARE(rows.at(l).toArray().at(h).toDouble(), expected.scores()[score](l, h));
    }
    const Run refused =
        runQkvlab({QStringLiteral("heads"), model.path(), QStringLiteral("--ids"), QStringLiteral("4,99")});
    QVERIFY_RUN(refused, refused.exitCode == 2 && refused.err.contains("token id 99 (token 1) is outside"));
}

// `qkvlab export --model MODEL --ids ... --view model`: every layer and head of a model as one figure.
void TestCli::exportModelView_data()
{
    QTest::addColumn<QString>("format");
    for (const QString& format : figureFormats)
        QTest::newRow(qPrintable(format)) << format;
}

void TestCli::exportModelView()
{
    QFETCH(QString, format);
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3); // 3 layers, 2 heads
    const QString path = model.filePath(QStringLiteral("model.") + format);
    const Run run =
        runHeadless({QStringLiteral("export"), QStringLiteral("--model"), model.path(),
                     QStringLiteral("--ids"), QStringLiteral("4,8,15,16,23"), QStringLiteral("--view"),
                     QStringLiteral("model"), QStringLiteral("--out"), path, QStringLiteral("--width"),
                     QStringLiteral("500"), QStringLiteral("--height"), QStringLiteral("600")});
    QVERIFY_RUN(run, run.status == QProcess::NormalExit && run.exitCode == 0);
    QCOMPARE(QString::fromUtf8(run.out).trimmed(), QDir::toNativeSeparators(path));
    // The layers and heads are labelled, and the title names the input.
    const QString problem = format == QLatin1String("svg")
                                ? test::checkSvg(path, {QStringLiteral("L0"), QStringLiteral("L2"),
                                                        QStringLiteral("H0"), QStringLiteral("H1")})
                                : checkExported(QStringLiteral("model"), format, path, QSize(500, 600));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    if (format == QLatin1String("png")) {
        // The thumbnails are drawn: the figure holds the colour of a full weight (row 0 attends only to
        // itself under the causal mask).
        const QImage image(path);
        const QRgb full = qRgb(0xfd, 0xe7, 0x25); // viridis at 1, the weights heatmap's top colour
        bool found = false;
        for (int y = 0; y < image.height() && !found; ++y)
            for (int x = 0; x < image.width() && !found; ++x)
                found = image.pixel(x, y) == full;
        QVERIFY(found);
    }
}

// `export --model ... --view prediction|scores|sweep`: the Prediction and Head Scores tabs as figures, the
// grids also as CSV with one row per layer.
void TestCli::exportModelPrediction()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3); // 3 layers, 2 heads
    const auto exported = [&](const QString& view, const QString& file, const QStringList& extra) {
        QStringList arguments{QStringLiteral("export"),
                              QStringLiteral("--model"),
                              model.path(),
                              QStringLiteral("--ids"),
                              QStringLiteral("4,8,15,4,8,15"),
                              QStringLiteral("--view"),
                              view,
                              QStringLiteral("--out"),
                              model.filePath(file)};
        arguments << extra;
        return runHeadless(arguments);
    };
    const Run prediction = exported(QStringLiteral("prediction"), QStringLiteral("p.svg"),
                                    {QStringLiteral("--intervene"), QStringLiteral("1.0=zero")});
    QVERIFY_RUN(prediction, prediction.exitCode == 0);
    QVERIFY(QFileInfo(model.filePath(QStringLiteral("p.svg"))).size() > 1000);
    const Run png = exported(QStringLiteral("prediction"), QStringLiteral("p.png"),
                             {QStringLiteral("--position"), QStringLiteral("2")});
    QVERIFY_RUN(png, png.exitCode == 0 && !QImage(model.filePath(QStringLiteral("p.png"))).isNull());
    for (const QString& view :
         {QStringLiteral("scores"), QStringLiteral("sweep"), QStringLiteral("attribution")}) {
        const Run csv = exported(view, view + QStringLiteral(".csv"), {});
        QVERIFY_RUN(csv, csv.exitCode == 0);
        QFile file(model.filePath(view + QStringLiteral(".csv")));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = file.readAll().trimmed().split('\n');
        QVERIFY2(lines.size() >= 3, qPrintable(view)); // a row per layer (and perhaps a header)
        const Run pdf = exported(view, view + QStringLiteral(".pdf"), {});
        QVERIFY_RUN(pdf, pdf.exitCode == 0);
    }
    // Refusals: one line naming the problem, nothing written.
    const Run badHead = exported(QStringLiteral("prediction"), QStringLiteral("x.svg"),
                                 {QStringLiteral("--intervene"), QStringLiteral("0.7=zero")});
    QVERIFY_RUN(badHead, badHead.exitCode == 2 && badHead.err.contains("--intervene 0.7=zero: head 7"));
    const Run badAblation = exported(QStringLiteral("sweep"), QStringLiteral("x.svg"),
                                     {QStringLiteral("--ablation"), QStringLiteral("scale")});
    QVERIFY_RUN(badAblation, badAblation.exitCode == 2 && badAblation.err.contains("bad --ablation 'scale'"));
    const Run csvPrediction = exported(QStringLiteral("prediction"), QStringLiteral("x.csv"), {});
    QVERIFY_RUN(csvPrediction,
                csvPrediction.exitCode == 2 && csvPrediction.err.contains("CSV is for the grids"));
    QVERIFY(!QFileInfo::exists(model.filePath(QStringLiteral("x.svg"))));
    QVERIFY(!QFileInfo::exists(model.filePath(QStringLiteral("x.csv"))));
}

// `export --model ... --view lens|patch`: the logit lens and a patching grid as figures and as CSV, and the
// patching options refused where they do not belong.
void TestCli::exportLensAndPatch()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3); // 3 layers, 2 heads
    const auto exported = [&](const QStringList& arguments, const QString& file) {
        QStringList all{QStringLiteral("export"), QStringLiteral("--model"), model.path(),
                        QStringLiteral("--out"), model.filePath(file)};
        return runHeadless(all << arguments);
    };
    const QStringList lens{QStringLiteral("--view"), QStringLiteral("lens"), QStringLiteral("--ids"),
                           QStringLiteral("4,8,15,16,23")};
    const Run svg = exported(lens, QStringLiteral("lens.svg"));
    QVERIFY_RUN(svg, svg.exitCode == 0);
    QVERIFY(QFileInfo(model.filePath(QStringLiteral("lens.svg"))).size() > 1000);
    const Run csv = exported(lens + QStringList{QStringLiteral("--answer-id"), QStringLiteral("7")},
                             QStringLiteral("lens.csv"));
    QVERIFY_RUN(csv, csv.exitCode == 0);
    QFile lensFile(model.filePath(QStringLiteral("lens.csv")));
    QVERIFY(lensFile.open(QIODevice::ReadOnly));
    const QList<QByteArray> lensLines = lensFile.readAll().trimmed().split('\n');
    QCOMPARE(lensLines.front(),
             QByteArray("layer,position,token_id,token,probability,answer_probability,answer_rank"));
    QCOMPARE(lensLines.size(), 1 + 4 * 5); // the 3 layers and the output, at 5 positions

    const QStringList patch{QStringLiteral("--view"),        QStringLiteral("patch"),
                            QStringLiteral("--clean-ids"),   QStringLiteral("4,8,15,16,23"),
                            QStringLiteral("--corrupt-ids"), QStringLiteral("4,9,15,16,23"),
                            QStringLiteral("--answer-id"),   QStringLiteral("5"),
                            QStringLiteral("--wrong-id"),    QStringLiteral("9"),
                            QStringLiteral("--what"),        QStringLiteral("resid_pre")};
    const Run png = exported(patch, QStringLiteral("patch.png"));
    QVERIFY_RUN(png, png.exitCode == 0 && !QImage(model.filePath(QStringLiteral("patch.png"))).isNull());
    const Run patchCsv =
        exported(patch + QStringList{QStringLiteral("--positions"), QStringLiteral("1..3"),
                                     QStringLiteral("--method"), QStringLiteral("attribution")},
                 QStringLiteral("patch.csv"));
    QVERIFY_RUN(patchCsv, patchCsv.exitCode == 0);
    QFile patchFile(model.filePath(QStringLiteral("patch.csv")));
    QVERIFY(patchFile.open(QIODevice::ReadOnly));
    const QList<QByteArray> patchLines = patchFile.readAll().trimmed().split('\n');
    QCOMPARE(patchLines.front(), QByteArray("layer,position,value,normalized"));
    QCOMPARE(patchLines.size(), 1 + 3 * 3); // 3 layers × positions 1 to 3
    QVERIFY(patchLines.at(1).startsWith("0,1,"));

    // Refusals: one line naming the problem, nothing written.
    const auto refused = [&](const QStringList& arguments, const char* message) {
        const Run run = exported(arguments, QStringLiteral("x.png"));
        return run.exitCode == 2 && run.err.contains(message) &&
               !QFileInfo::exists(model.filePath(QStringLiteral("x.png")));
    };
    QVERIFY(refused(patch.mid(0, 10), "--view patch needs --what SITE"));
    QVERIFY(refused(patch + QStringList{QStringLiteral("--method"), QStringLiteral("denoise")},
                    "bad --method 'denoise'"));
    QVERIFY(refused(patch + QStringList{QStringLiteral("--positions"), QStringLiteral("3..1")},
                    "bad --positions '3..1'"));
    QStringList unknownSite = patch;
    unknownSite.last() = QStringLiteral("resid_post");
    QVERIFY(refused(unknownSite, "bad --what 'resid_post'"));
    QStringList shorter = patch;
    shorter[5] = QStringLiteral("4,9,15");
    QVERIFY(refused(shorter, "3"));
    QVERIFY(
        refused(patch + QStringList{QStringLiteral("--text"), QStringLiteral("hi")}, "not --text or --ids"));
    QVERIFY(refused(lens + QStringList{QStringLiteral("--what"), QStringLiteral("resid_pre")},
                    "--what is for --view patch"));
    QVERIFY(refused({QStringLiteral("--view"), QStringLiteral("scores"), QStringLiteral("--ids"),
                     QStringLiteral("4,8"), QStringLiteral("--answer-id"), QStringLiteral("3")},
                    "--answer-id is for --view lens and --view patch"));
}

void TestCli::exportModelViewRefusals()
{
    QTemporaryDir model;
    QVERIFY(model.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, model.path(), 3);
    const QString out = model.filePath(QStringLiteral("model.png"));
    const auto refused = [&](const QStringList& arguments, const char* message) {
        QStringList all{QStringLiteral("export")};
        all << arguments;
        const Run r = runHeadless(all);
        const QStringList messages = exportMessages(r.err);
        return r.exitCode == 2 && !QFile::exists(out) && messages.size() == 1 &&
               messages.front().contains(QLatin1String(message));
    };
    const QString view = QStringLiteral("--view"), modelView = QStringLiteral("model"),
                  outOption = QStringLiteral("--out"), modelOption = QStringLiteral("--model"),
                  ids = QStringLiteral("--ids");
    QVERIFY(refused({QStringLiteral("example:love"), view, modelView, outOption, out}, "give --model MODEL"));
    QVERIFY(
        refused({modelOption, model.path(), view, modelView, outOption, out}, "either --text TEXT or --ids"));
    QVERIFY(refused({modelOption, model.path(), ids, QStringLiteral("1,99"), view, modelView, outOption, out},
                    "token id 99 (token 1) is outside the vocabulary"));
    QVERIFY(refused({modelOption, model.path(), QStringLiteral("--text"), QStringLiteral("hi"), view,
                     modelView, outOption, out},
                    "no tokenizer"));
    QVERIFY(refused({modelOption, model.path(), ids, QStringLiteral("1"), view, QStringLiteral("weights"),
                     outOption, out},
                    "--model draws --view model only"));
    QVERIFY(refused({QStringLiteral("example:love"), modelOption, model.path(), ids, QStringLiteral("1"),
                     view, modelView, outOption, out},
                    "give no session"));
    QVERIFY(refused({QStringLiteral("example:love"), ids, QStringLiteral("1"), view,
                     QStringLiteral("weights"), outOption, out},
                    "--ids is for --model"));
    // export --help names it apart from the session's views.
    const Run help = runHeadless({QStringLiteral("export"), QStringLiteral("--help")});
    QVERIFY(help.out.contains("--model MODEL"));
    QVERIFY(help.out.contains("Views of a model"));
    QVERIFY(!exportedViews().contains(modelView));
}

QKV_TEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
