// SPDX-License-Identifier: GPL-3.0-or-later
// The session file, version 1 (docs/session-file.md): round trips, atomic saves, one refusal per kind of bad
// input, the love example's values and the documented defaults.

#include "Error.h"
#include "ErrorMessage.h"
#include "Examples.h"
#include "MatrixFile.h"
#include "Patching.h"
#include "ResourceLimits.h"
#include "SessionFile.h"

#include "TestMain.h"
#include "TestMatrices.h"

#include <QtTest>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <functional>
#include <string>

#include <sys/stat.h>

using namespace qkv;
using qkv::test::errorOf;

namespace {

using test::fromRows;

QJsonObject exampleObject(const std::string& name)
{
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(exampleJson(name)));
    return doc.object();
}

std::string toText(const QJsonObject& object)
{
    return QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString();
}

QJsonObject parseSaved(const std::string& text)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &error);
    if (error.error != QJsonParseError::NoError)
        qWarning("saved text is not JSON: %s", qPrintable(error.errorString()));
    return doc.object();
}

/// The value at a dotted path ("heads.1.W_K"; numbers index arrays) replaced, or removed when `remove`.
QJsonValue changed(const QJsonValue& node, QStringList path, const QJsonValue& value, bool remove)
{
    if (path.isEmpty())
        return value;
    const QString step = path.takeFirst();
    bool isIndex = false;
    const int index = step.toInt(&isIndex);
    if (isIndex) {
        QJsonArray array = node.toArray();
        if (path.isEmpty() && remove)
            array.removeAt(index);
        else
            array[index] = changed(array.at(index), path, value, remove);
        return array;
    }
    QJsonObject object = node.toObject();
    if (path.isEmpty() && remove)
        object.remove(step);
    else
        object[step] = changed(object.value(step), path, value, remove);
    return object;
}

QJsonObject with(const QJsonObject& root, const QString& path, const QJsonValue& value)
{
    return changed(root, path.split(QLatin1Char('.')), value, false).toObject();
}

QJsonObject without(const QJsonObject& root, const QString& path)
{
    return changed(root, path.split(QLatin1Char('.')), QJsonValue(), true).toObject();
}

QJsonArray rows(std::initializer_list<std::initializer_list<double>> values)
{
    QJsonArray result;
    for (const auto& row : values) {
        QJsonArray r;
        for (double v : row)
            r.append(v);
        result.append(r);
    }
    return result;
}

QJsonArray repeatedRows(int count, const QJsonArray& row)
{
    QJsonArray result;
    for (int i = 0; i < count; ++i)
        result.append(row);
    return result;
}

/// "I love AI" with a second head (a copy of the first): d_model 4, d_k = d_v = 3, n = 3.
QJsonObject twoHeads()
{
    QJsonObject root = exampleObject("love");
    QJsonArray heads = root.value(QStringLiteral("heads")).toArray();
    heads.append(heads.at(0));
    root[QStringLiteral("heads")] = heads;
    return root;
}

/// A cross-attention session from "I love AI": m = 2 context tokens.
QJsonObject withContext()
{
    return with(exampleObject("love"), QStringLiteral("context"),
                QJsonObject{{QStringLiteral("tokens"), QJsonArray{QStringLiteral("x"), QStringLiteral("y")}},
                            {QStringLiteral("Z"), rows({{1, 0, 0, 1}, {0, 1, 1, 0}})}});
}

/// Replaces the JSON string "@@BIG@@" by a number token no double can hold.
std::string withHugeNumber(const QJsonObject& root, const char* number)
{
    std::string text = toText(root);
    const std::string marker = "\"@@BIG@@\"";
    text.replace(text.find(marker), marker.size(), number);
    return text;
}

QStringList entries(const QString& directory)
{
    return QDir(directory).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
}

bool writeFile(const QString& path, const QByteArray& content)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    return file.write(content) == content.size();
}

QByteArray readFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class TestSessionFile : public QObject {
    Q_OBJECT

private slots:
    void builtinExamplesRoundTrip_data();
    void builtinExamplesRoundTrip();
    void unknownKeysSurviveRoundTrip();
    void contextExtrasDoNotOutliveTheContext();
    void viewJsonGetAndSet();
    void dimensionNamesRoundTrip();
    void modelLinkRoundTrip();
    void patchExperimentRoundTrip();
    void patchExperimentFieldsAreRefused_data();
    void patchExperimentFieldsAreRefused();
    void dimensionNameMessagesAreExact_data();
    void dimensionNameMessagesAreExact();

    void saveWritesAFileThatLoadsBackEqual();
    void saveReplacesAnExistingFile();
    void saveIntoMissingDirectoryThrowsAndCreatesNothing();
    void saveOfInvalidSessionLeavesTheOldFile();

    void refusesBadInput_data();
    void refusesBadInput();
    void raggedHeadMessageIsExact();
    void matrixMessagesAreExact_data();
    void matrixMessagesAreExact();
    void matricesKeepEveryNumber();
    void failedParseLeavesTheOldSession();
    void failedLoadLeavesTheOldSession();
    void missingFileNamesThePath();
    void nestingDeeperThanTheLimitIsRefused_data();
    void nestingDeeperThanTheLimitIsRefused();
    void onlyRegularFilesAreRead_data();
    void onlyRegularFilesAreRead();
    void fileLargerThanTheCapIsRefusedUnread();

    void loveExampleHasTheSpecValues();
    void defaultScaleDependsOnScore_data();
    void defaultScaleDependsOnScore();
    void otherDefaults();
    void titleAndScoreAreOptional();

    void biasesRoundTrip();
    void biasMessagesAreExact_data();
    void biasMessagesAreExact();
};

// ---- round trips ------------------------------------------------------------------------------------

void TestSessionFile::builtinExamplesRoundTrip_data()
{
    QTest::addColumn<QString>("name");
    const std::vector<ExampleInfo> examples = builtinExamples();
    QVERIFY(examples.size() >= 6);
    for (const ExampleInfo& example : examples)
        QTest::newRow(example.name.c_str()) << QString::fromStdString(example.name);
}

void TestSessionFile::builtinExamplesRoundTrip()
{
    QFETCH(QString, name);
    const Session loaded = loadExample(name.toStdString());
    QVERIFY(loaded == parseSession(exampleJson(name.toStdString())));

    const std::string first = serializeSession(loaded);
    const Session reloaded = parseSession(first);
    QVERIFY(reloaded == loaded);
    const std::string second = serializeSession(reloaded);
    QCOMPARE(second, first);
    QCOMPARE(serializeSession(loaded), first); // the same session always gives the same text
}

void TestSessionFile::unknownKeysSurviveRoundTrip()
{
    QJsonObject root = withContext();
    root = with(root, QStringLiteral("heads"),
                twoHeads().value(QStringLiteral("heads")).toArray()); // heads[1] has no extras
    root = with(root, QStringLiteral("author"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("Ada")}, {QStringLiteral("year"), 1843}});
    root = with(root, QStringLiteral("tags"), QJsonArray{QStringLiteral("demo"), 2, true});
    root = with(root, QStringLiteral("heads.0.note"), QStringLiteral("first head"));
    root = with(root, QStringLiteral("heads.0.init"), QJsonObject{{QStringLiteral("seed"), 42}});
    root = with(root, QStringLiteral("mask.comment"), QStringLiteral("no mask yet"));
    root = with(root, QStringLiteral("normalizer.tried"), QJsonArray{QStringLiteral("sparsemax")});
    root = with(root, QStringLiteral("context.language"), QStringLiteral("en"));
    const QJsonObject view{{QStringLiteral("zoom"), 1.5},
                           {QStringLiteral("selected"), QJsonObject{{QStringLiteral("head"), 0}}}};
    root = with(root, QStringLiteral("view"), view);

    const Session session = parseSession(toText(root));
    const std::string saved = serializeSession(session);
    const QJsonObject out = parseSaved(saved);

    QCOMPARE(out.value(QStringLiteral("author")), root.value(QStringLiteral("author")));
    QCOMPARE(out.value(QStringLiteral("tags")), root.value(QStringLiteral("tags")));
    QCOMPARE(out.value(QStringLiteral("view")), QJsonValue(view));
    const QJsonArray heads = out.value(QStringLiteral("heads")).toArray();
    QCOMPARE(heads.size(), 2);
    QCOMPARE(heads.at(0).toObject().value(QStringLiteral("note")), QJsonValue(QStringLiteral("first head")));
    QCOMPARE(heads.at(0).toObject().value(QStringLiteral("init")),
             QJsonValue(QJsonObject{{QStringLiteral("seed"), 42}}));
    QVERIFY(!heads.at(1).toObject().contains(QStringLiteral("note")));
    QVERIFY(!heads.at(1).toObject().contains(QStringLiteral("init")));
    const QJsonObject mask = out.value(QStringLiteral("mask")).toObject();
    QCOMPARE(mask.value(QStringLiteral("type")), QJsonValue(QStringLiteral("none")));
    QCOMPARE(mask.value(QStringLiteral("comment")), QJsonValue(QStringLiteral("no mask yet")));
    QCOMPARE(out.value(QStringLiteral("normalizer")).toObject().value(QStringLiteral("tried")),
             QJsonValue(QJsonArray{QStringLiteral("sparsemax")}));
    const QJsonObject context = out.value(QStringLiteral("context")).toObject();
    QCOMPARE(context.value(QStringLiteral("language")), QJsonValue(QStringLiteral("en")));
    QCOMPARE(context.value(QStringLiteral("tokens")),
             root.value(QStringLiteral("context")).toObject().value(QStringLiteral("tokens")));

    // And the saved text is itself stable and loads back to the same session.
    const Session reloaded = parseSession(saved);
    QVERIFY(reloaded == session);
    QCOMPARE(serializeSession(reloaded), saved);
}

void TestSessionFile::contextExtrasDoNotOutliveTheContext()
{
    // Extras kept from a context must not turn into a (broken) context when the session loses it.
    Session session =
        parseSession(toText(with(withContext(), QStringLiteral("context.language"), QStringLiteral("en"))));
    QVERIFY(session.context.has_value());
    session.context.reset();
    const std::string saved = serializeSession(session);
    QVERIFY(!parseSaved(saved).contains(QStringLiteral("context")));
    Session reloaded;
    try {
        reloaded = parseSession(saved);
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QVERIFY(!reloaded.context.has_value());
    QVERIFY(reloaded.X == session.X);
}

void TestSessionFile::viewJsonGetAndSet()
{
    Session love = loadExample("love");
    const QJsonObject view = parseSaved(viewJson(love));
    QVERIFY(view.value(QStringLiteral("source")).toString().contains(QStringLiteral("Outcome School")));
    QCOMPARE(viewJson(loadExample("causal")), std::string()); // no view in that file

    setViewJson(love, R"({"zoom": 2, "panel": "weights"})");
    const QJsonObject expected{{QStringLiteral("zoom"), 2},
                               {QStringLiteral("panel"), QStringLiteral("weights")}};
    QCOMPARE(QJsonValue(parseSaved(viewJson(love))), QJsonValue(expected));
    const std::string saved = serializeSession(love);
    QCOMPARE(parseSaved(saved).value(QStringLiteral("view")), QJsonValue(expected));
    QCOMPARE(parseSaved(viewJson(parseSession(saved))), expected);

    // A bad view is refused and changes nothing.
    const Session before = love;
    QVERIFY_THROWS_EXCEPTION(Error, setViewJson(love, "[1, 2]"));
    QVERIFY_THROWS_EXCEPTION(Error, setViewJson(love, "{not json"));
    QVERIFY(love == before);

    // Empty text removes the view; a session with no other extras then has none at all.
    setViewJson(love, "");
    QCOMPARE(viewJson(love), std::string());
    QVERIFY(love.preservedJson.empty());
    QVERIFY(!parseSaved(serializeSession(love)).contains(QStringLiteral("view")));

    // Setting a view on a session that had no extras.
    Session causal = loadExample("causal");
    setViewJson(causal, R"({"a":1})");
    QCOMPARE(parseSaved(viewJson(causal)), QJsonObject({{QStringLiteral("a"), 1}}));
}

// ---- saving -----------------------------------------------------------------------------------------

void TestSessionFile::saveWritesAFileThatLoadsBackEqual()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("love.qkv.json"));
    const Session love = loadExample("love");
    saveSession(love, path.toStdString());
    QVERIFY(loadSession(path.toStdString()) == love);
    QCOMPARE(readFile(path).toStdString(), serializeSession(love));
    QCOMPARE(entries(dir.path()), QStringList{QStringLiteral("love.qkv.json")}); // no temporary left over
}

void TestSessionFile::saveReplacesAnExistingFile()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("session.qkv.json"));
    QVERIFY(writeFile(path, "old content that is not a session"));
    const QFileDevice::Permissions permissions =
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup;
    QVERIFY(QFile::setPermissions(path, permissions));

    const Session causal = loadExample("causal");
    saveSession(causal, path.toStdString());
    QVERIFY(loadSession(path.toStdString()) == causal);
    // The replaced file's permissions are kept (the "User" flags only repeat the owner's for us).
    const QFileDevice::Permissions userFlags =
        QFileDevice::ReadUser | QFileDevice::WriteUser | QFileDevice::ExeUser;
    QCOMPARE(QFile::permissions(path) & ~userFlags, permissions);

    const Session multihead = loadExample("multihead");
    saveSession(multihead, path.toStdString());
    QVERIFY(loadSession(path.toStdString()) == multihead);
    QCOMPARE(entries(dir.path()), QStringList{QStringLiteral("session.qkv.json")});
}

void TestSessionFile::saveIntoMissingDirectoryThrowsAndCreatesNothing()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString missing = dir.filePath(QStringLiteral("no-such-directory"));
    const QString path = missing + QStringLiteral("/s.qkv.json");
    const QString message = errorOf([&] { saveSession(loadExample("love"), path.toStdString()); });
    QVERIFY2(message.startsWith(path + QLatin1Char(':')), qPrintable(message));
    QVERIFY(!QFileInfo::exists(missing));
    QVERIFY(entries(dir.path()).isEmpty());
}

void TestSessionFile::saveOfInvalidSessionLeavesTheOldFile()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
    const Session love = loadExample("love");
    saveSession(love, path.toStdString());
    const QByteArray before = readFile(path);

    Session broken = love;
    broken.temperature = 0.0;
    const QString message = errorOf([&] { saveSession(broken, path.toStdString()); });
    QVERIFY2(message.contains(QStringLiteral("temperature")), qPrintable(message));
    QCOMPARE(readFile(path), before);
    QCOMPARE(entries(dir.path()), QStringList{QStringLiteral("s.qkv.json")});
}

// ---- refusals ---------------------------------------------------------------------------------------

void TestSessionFile::dimensionNamesRoundTrip()
{
    // X's names at the top level beside X, Z's inside the context beside Z; written back as they were read.
    const QJsonArray names{QStringLiteral("determiner"), QStringLiteral("noun"), QString(),
                           QStringLiteral("ä b")};
    const QJsonArray contextNames{QStringLiteral("z0"), QStringLiteral("z1"), QStringLiteral("z2"),
                                  QStringLiteral("z3")};
    const QJsonObject root = with(with(withContext(), QStringLiteral("dims"), names),
                                  QStringLiteral("context.dims"), contextNames);
    const Session session = parseSession(toText(root));
    QCOMPARE(session.dims, (std::vector<std::string>{"determiner", "noun", "", "ä b"}));
    QCOMPARE(session.context->dims, (std::vector<std::string>{"z0", "z1", "z2", "z3"}));
    QCOMPARE(session.keyDims(), session.context->dims);
    const std::string text = serializeSession(session);
    const QJsonObject saved = parseSaved(text);
    QCOMPARE(saved.value(QStringLiteral("dims")).toArray(), names);
    QCOMPARE(saved.value(QStringLiteral("context")).toObject().value(QStringLiteral("dims")).toArray(),
             contextNames);
    QVERIFY(parseSession(text) == session);
    QCOMPARE(dimensionLabel(session.dims, 0), std::string("determiner"));
    QCOMPARE(dimensionLabel(session.dims, 2), std::string("d2")); // unnamed: the default label

    // Without names nothing is written, so files that do not use them stay as they were.
    const Session plain = loadExample("love");
    QVERIFY(plain.dims.empty());
    QVERIFY(!parseSaved(serializeSession(plain)).contains(QStringLiteral("dims")));
    QCOMPARE(dimensionLabel(plain.dims, 3), std::string("d3"));
}

void TestSessionFile::dimensionNameMessagesAreExact_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    const auto row = [](const char* name, const QJsonObject& root, const QString& message) {
        QTest::newRow(name) << QByteArray::fromStdString(toText(root)) << message;
    };
    const QJsonObject love = exampleObject("love");
    row("dims not an array", with(love, QStringLiteral("dims"), QStringLiteral("determiner")),
        QStringLiteral("dims: expected an array of strings (one name per column), found a string"));
    row("dims too short",
        with(love, QStringLiteral("dims"), QJsonArray{QStringLiteral("a"), QStringLiteral("b")}),
        QStringLiteral("dims: expected 4 names (one per column of X, d_model = 4), found 2"));
    row("dims too long",
        with(love, QStringLiteral("dims"),
             QJsonArray{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d"),
                        QStringLiteral("e")}),
        QStringLiteral("dims: expected 4 names (one per column of X, d_model = 4), found 5"));
    row("dims entry a number",
        with(love, QStringLiteral("dims"),
             QJsonArray{QStringLiteral("a"), 1, QStringLiteral("c"), QStringLiteral("d")}),
        QStringLiteral("dims[1]: expected a string, found a number"));
    row("dims entry null",
        with(love, QStringLiteral("dims"),
             QJsonArray{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"), QJsonValue()}),
        QStringLiteral("dims[3]: expected a string, found null"));
    row("context.dims too short",
        with(withContext(), QStringLiteral("context.dims"), QJsonArray{QStringLiteral("a")}),
        QStringLiteral("context.dims: expected 4 names (one per column of context.Z, d_model = 4), found 1"));
    row("context.dims an object", with(withContext(), QStringLiteral("context.dims"), QJsonObject{}),
        QStringLiteral("context.dims: expected an array of strings (one name per column), found an object"));
}

void TestSessionFile::dimensionNameMessagesAreExact()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QCOMPARE(errorOf([&] { (void)parseSession(text.toStdString()); }), message);
}

void TestSessionFile::modelLinkRoundTrip()
{
    // The model a head came from and its interventions: written back as read, and equal after a round trip.
    const QJsonObject model{{QStringLiteral("folder"), QStringLiteral("/models/gpt2")},
                            {QStringLiteral("ids"), QJsonArray{464, 3797, 3332}},
                            {QStringLiteral("layer"), 5},
                            {QStringLiteral("head"), 1},
                            {QStringLiteral("interventions"),
                             QJsonArray{QJsonObject{{QStringLiteral("layer"), 5},
                                                    {QStringLiteral("head"), 1},
                                                    {QStringLiteral("kind"), QStringLiteral("session")}},
                                        QJsonObject{{QStringLiteral("layer"), 0},
                                                    {QStringLiteral("head"), 3},
                                                    {QStringLiteral("kind"), QStringLiteral("scale")},
                                                    {QStringLiteral("factor"), 2.5},
                                                    {QStringLiteral("enabled"), false}}}}};
    const Session session = parseSession(toText(with(exampleObject("love"), QStringLiteral("model"), model)));
    QVERIFY(session.model);
    QCOMPARE(session.model->folder, std::string("/models/gpt2"));
    QCOMPARE(session.model->ids, (std::vector<std::int64_t>{464, 3797, 3332}));
    QCOMPARE(session.model->layer, Index(5));
    QCOMPARE(session.model->interventions.size(), std::size_t(2));
    QCOMPARE(session.model->interventions[0].kind, HeadIntervention::Kind::Session);
    QVERIFY(session.model->interventions[0].enabled);
    QCOMPARE(session.model->interventions[1].factor, 2.5);
    QVERIFY(!session.model->interventions[1].enabled);
    const std::string text = serializeSession(session);
    QCOMPARE(parseSaved(text).value(QStringLiteral("model")).toObject(), model);
    QVERIFY(parseSession(text) == session);
    QVERIFY(!parseSaved(serializeSession(loadExample("love"))).contains(QStringLiteral("model")));
}

namespace {

/// "I love AI" linked to a model, with a patching experiment on it.
QJsonObject withPatching(const QJsonObject& patching)
{
    const QJsonObject link{{QStringLiteral("folder"), QStringLiteral("/models/gpt2")},
                           {QStringLiteral("ids"), QJsonArray{464, 3797, 3332}},
                           {QStringLiteral("layer"), 0},
                           {QStringLiteral("head"), 0},
                           {QStringLiteral("interventions"), QJsonArray()},
                           {QStringLiteral("patching"), patching}};
    return with(exampleObject("love"), QStringLiteral("model"), link);
}

QJsonObject goodPatching()
{
    return {{QStringLiteral("clean"), QJsonArray{10, 11, 12, 13}},
            {QStringLiteral("corrupt"), QJsonArray{10, 21, 12, 13}},
            {QStringLiteral("answer"), 7},
            {QStringLiteral("wrong"), 9},
            {QStringLiteral("what"), QStringLiteral("head_out_pos")},
            {QStringLiteral("method"), QStringLiteral("attribution")},
            {QStringLiteral("positions"), QJsonArray{1, 3}}};
}

} // namespace

void TestSessionFile::patchExperimentRoundTrip()
{
    // Every field read as written, written back the same, and equal after a round trip.
    const QJsonObject root = withPatching(goodPatching());
    const Session session = parseSession(toText(root));
    QVERIFY(session.model && session.model->patching);
    const PatchExperiment& experiment = *session.model->patching;
    QCOMPARE(experiment.clean, (std::vector<std::int64_t>{10, 11, 12, 13}));
    QCOMPARE(experiment.corrupt, (std::vector<std::int64_t>{10, 21, 12, 13}));
    QCOMPARE(experiment.answer, std::int64_t(7));
    QCOMPARE(experiment.wrong, std::int64_t(9));
    QVERIFY(experiment.site == PatchSite::HeadOutPos);
    QVERIFY(experiment.method == PatchMethod::Attribution);
    QVERIFY(experiment.positions == (std::pair<Index, Index>{1, 3}));
    const std::string text = serializeSession(session);
    QCOMPARE(parseSaved(text)
                 .value(QStringLiteral("model"))
                 .toObject()
                 .value(QStringLiteral("patching"))
                 .toObject(),
             goodPatching());
    QVERIFY(parseSession(text) == session);

    // The method and the positions are optional: exact, and every position.
    QJsonObject minimal = goodPatching();
    minimal.remove(QStringLiteral("method"));
    minimal.remove(QStringLiteral("positions"));
    const Session plain = parseSession(toText(withPatching(minimal)));
    QVERIFY(plain.model->patching->method == PatchMethod::Exact);
    QVERIFY(!plain.model->patching->positions);
    QVERIFY(parseSession(serializeSession(plain)) == plain);

    // A model link without an experiment means what it meant before, and is written without one.
    const Session none =
        parseSession(toText(without(withPatching(goodPatching()), QStringLiteral("model.patching"))));
    QVERIFY(none.model && !none.model->patching);
    QVERIFY(!parseSaved(serializeSession(none))
                 .value(QStringLiteral("model"))
                 .toObject()
                 .contains(QStringLiteral("patching")));
}

void TestSessionFile::patchExperimentFieldsAreRefused_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    const auto row = [](const char* name, const QJsonObject& root, const char* message) {
        QTest::newRow(name) << QByteArray::fromStdString(toText(root)) << QString::fromUtf8(message);
    };
    const auto set = [](const char* key, const QJsonValue& value) {
        return withPatching(with(goodPatching(), QString::fromUtf8(key), value));
    };
    const auto drop = [](const char* key) {
        return withPatching(without(goodPatching(), QString::fromUtf8(key)));
    };
    row("not an object", with(withPatching({}), QStringLiteral("model.patching"), QJsonArray()),
        "model.patching: expected an object, found an array");
    for (const char* key : {"clean", "corrupt", "answer", "wrong", "what"})
        row((std::string("without ") + key).c_str(), drop(key),
            (std::string("model.patching.") + key + ": missing").c_str());
    row("clean a string", set("clean", QStringLiteral("the cat")),
        "model.patching.clean: expected an array of token ids, found a string");
    row("clean empty", set("clean", QJsonArray()),
        "model.patching.clean: expected 1 to 4096 token ids, found 0");
    row("clean id negative", set("clean.2", -1),
        "model.patching.clean[2]: expected a whole number ≥ 0, found -1");
    row("corrupt id fractional", set("corrupt.1", 2.5),
        "model.patching.corrupt[1]: expected a whole number ≥ 0, found 2.5");
    row("corrupt shorter", set("corrupt", QJsonArray{1, 2, 3}),
        "model.patching.corrupt: expected as many tokens as clean (4), found 3");
    row("answer a string", set("answer", QStringLiteral("Paris")),
        "model.patching.answer: expected a number, found a string");
    row("wrong negative", set("wrong", -3), "model.patching.wrong: expected a whole number ≥ 0, found -3");
    row("what unknown", set("what", QStringLiteral("resid_post")),
        "model.patching.what: unknown site \"resid_post\" (expected resid_pre, attn_out, mlp_out, head_out, "
        "head_out_pos, head_pattern, head_q, head_k, head_v)");
    row("method unknown", set("method", QStringLiteral("denoise")),
        "model.patching.method: unknown method \"denoise\" (expected exact or attribution)");
    row("positions a number", set("positions", 2),
        "model.patching.positions: expected [first, last], found 2");
    row("positions reversed", set("positions", QJsonArray{3, 1}),
        "model.patching.positions[1]: expected a whole number ≥ 3, found 1");
    row("positions past the prompts", set("positions", QJsonArray{0, 4}),
        "model.patching.positions[1]: position 4 is past the prompts' 4 tokens");
}

void TestSessionFile::patchExperimentFieldsAreRefused()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QCOMPARE(errorOf([&] { (void)parseSession(text.toStdString()); }), message);
}

void TestSessionFile::refusesBadInput_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("path"); // the key path the message must start with

    const QJsonObject love = exampleObject("love");
    const auto row = [](const char* name, const std::string& text, const char* path) {
        QTest::newRow(name) << QByteArray::fromStdString(text) << QString::fromUtf8(path);
    };
    const auto set = [&love](const char* key, const QJsonValue& value) {
        return toText(with(love, QString::fromUtf8(key), value));
    };
    const auto drop = [](const QJsonObject& root, const char* key) {
        return toText(without(root, QString::fromUtf8(key)));
    };

    // Not valid JSON, wrong root, wrong format or version.
    row("not JSON", R"({"format": "qkvlab-session", "version": 1,)", "not valid JSON:");
    row("empty text", "", "not valid JSON:");
    row("trailing garbage", toText(love) + " }", "not valid JSON:");
    row("root is an array", "[1, 2, 3]", "(file):");
    row("root is a string", "\"session\"", "(file):");
    row("wrong format", set("format", QStringLiteral("qkvlab-notebook")), "format: ");
    row("format is a number", set("format", 1), "format: ");
    row("newer version", set("version", 2), "version: ");
    row("version 0", set("version", 0), "version: ");
    row("version is a string", set("version", QStringLiteral("1")), "version: ");

    // Missing keys.
    for (const char* key : {"format", "version", "tokens", "X", "heads"})
        row((std::string("missing ") + key).c_str(), drop(love, key),
            (std::string(key) + ": missing").c_str());
    row("missing heads[0].W_Q", drop(love, "heads.0.W_Q"), "heads[0].W_Q: missing");
    row("missing heads[0].W_K", drop(love, "heads.0.W_K"), "heads[0].W_K: missing");
    row("missing heads[0].W_V", drop(love, "heads.0.W_V"), "heads[0].W_V: missing");
    row("missing context.Z", drop(withContext(), "context.Z"), "context.Z: missing");
    row("missing context.tokens", drop(withContext(), "context.tokens"), "context.tokens: missing");
    row("missing mask.type", set("mask", QJsonObject{{QStringLiteral("window"), 2}}), "mask.type: missing");
    row("missing normalizer.type", set("normalizer", QJsonObject()), "normalizer.type: missing");
    row("general without W_S", set("score", QStringLiteral("general")), "heads[0].W_S: ");
    row("additive without W_a", set("score", QStringLiteral("additive")), "heads[0].W_a: ");

    // The model link.
    const QJsonObject link{{QStringLiteral("folder"), QStringLiteral("m")},
                           {QStringLiteral("ids"), QJsonArray{1, 2, 3}},
                           {QStringLiteral("layer"), 0},
                           {QStringLiteral("head"), 0}};
    const auto linked = [&](const char* key, const QJsonValue& value) {
        return toText(with(with(love, QStringLiteral("model"), link), QString::fromUtf8(key), value));
    };
    row("model is a string", set("model", QStringLiteral("gpt2")), "model: ");
    row("model without folder", toText(with(love, QStringLiteral("model"), QJsonObject())),
        "model.folder: missing");
    row("model id negative", linked("model.ids.1", -4), "model.ids[1]: ");
    row("model id fractional", linked("model.ids.2", 1.5), "model.ids[2]: ");
    row("model layer a string", linked("model.layer", QStringLiteral("0")), "model.layer: ");
    row("intervention kind unknown",
        linked("model.interventions",
               QJsonArray{QJsonObject{{QStringLiteral("layer"), 0},
                                      {QStringLiteral("head"), 0},
                                      {QStringLiteral("kind"), QStringLiteral("patch")}}}),
        "model.interventions[0].kind: ");
    row("scale without factor",
        linked("model.interventions",
               QJsonArray{QJsonObject{{QStringLiteral("layer"), 0},
                                      {QStringLiteral("head"), 0},
                                      {QStringLiteral("kind"), QStringLiteral("scale")}}}),
        "model.interventions[0].factor: missing");

    // Wrong types.
    row("title is a number", set("title", 7), "title: ");
    row("tokens not an array", set("tokens", QStringLiteral("I love AI")), "tokens: ");
    row("token not a string", set("tokens.1", 5), "tokens[1]: ");
    row("X is a string", set("X", QStringLiteral("[[1, 0, 1, 0]]")), "X: ");
    row("X row is a number", set("X.1", 3), "X[1]: ");
    row("X entry is a string", set("X.0.2", QStringLiteral("1")), "X[0][2]: ");
    row("X entry is null", set("X.2.3", QJsonValue()), "X[2][3]: ");
    row("temperature is a string", set("temperature", QStringLiteral("1.0")), "temperature: ");
    row("pad is an object", set("pad", QJsonObject()), "pad: ");
    row("pad entry not boolean", set("pad", QJsonArray{false, 1, false}), "pad[1]: ");
    row("mask.type is a number", set("mask.type", 1), "mask.type: ");
    row("mask is a string", set("mask", QStringLiteral("causal")), "mask: ");
    row("normalizer is a number", set("normalizer", 2), "normalizer: ");
    row("normalizer.alpha is a string",
        set("normalizer", QJsonObject{{QStringLiteral("type"), QStringLiteral("entmax")},
                                      {QStringLiteral("alpha"), QStringLiteral("2")}}),
        "normalizer.alpha: ");
    row("heads is an object", set("heads", QJsonObject()), "heads: ");
    row("head is a number", set("heads.0", 1), "heads[0]: ");
    row("score is an array", set("score", QJsonArray{QStringLiteral("dot")}), "score: ");
    row("scale is a boolean", set("scale", true), "scale: ");
    row("context is an array", set("context", QJsonArray()), "context: ");
    row("view is a string", set("view", QStringLiteral("zoom")), "view: ");
    row("mask.window is a string",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("sliding")},
                                {QStringLiteral("window"), QStringLiteral("2")}}),
        "mask.window: ");

    // Ragged or mis-shaped matrices.
    row("X row of different length", set("X.1", QJsonArray{0, 1, 0}), "X[1]: ");
    row("heads[1].W_K with 3 rows",
        toText(with(twoHeads(), QStringLiteral("heads.1.W_K"), rows({{0, 1, 0}, {1, 0, 1}, {0, 0, 1}}))),
        "heads[1].W_K: expected 4 rows, found 3");
    row("heads[1].W_Q with another d_k",
        toText(with(twoHeads(), QStringLiteral("heads.1.W_Q"), rows({{1, 0}, {0, 1}, {1, 0}, {0, 1}}))),
        "heads[1].W_Q: ");
    row("heads[0].W_V ragged", set("heads.0.W_V.2", QJsonArray{0, 0}), "heads[0].W_V[2]: ");
    row("context.Z of another d_model",
        toText(with(withContext(), QStringLiteral("context.Z"), rows({{1, 0, 0}, {0, 1, 1}}))),
        "context.Z: ");
    row("W_S of the wrong shape",
        toText(with(with(love, QStringLiteral("score"), QStringLiteral("general")),
                    QStringLiteral("heads.0.W_S"), rows({{1, 0}, {0, 1}}))),
        "heads[0].W_S: ");
    row("v_a without W_a", set("heads.0.v_a", QJsonArray{1, 2}), "heads[0].v_a: ");
    row("W_O of wrong rows", set("W_O", rows({{1, 0}, {0, 1}})), "W_O: ");
    row("mask.allowed of wrong rows",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("custom")},
                                {QStringLiteral("allowed"), rows({{1, 1, 1}, {1, 1, 1}})}}),
        "mask.allowed: ");
    row("mask.allowed row of wrong length",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("custom")},
                                {QStringLiteral("allowed"), rows({{1, 1, 1}, {1, 1}, {1, 1, 1}})}}),
        "mask.allowed[1]: ");

    // Non-finite numbers.
    row("1e999 in X", withHugeNumber(with(love, QStringLiteral("X.0.0"), QStringLiteral("@@BIG@@")), "1e999"),
        "X[0][0]: ");
    row("-1e999 in heads[0].W_V",
        withHugeNumber(with(love, QStringLiteral("heads.0.W_V.3.1"), QStringLiteral("@@BIG@@")), "-1e999"),
        "heads[0].W_V[3][1]: ");
    row("1e999 temperature",
        withHugeNumber(with(love, QStringLiteral("temperature"), QStringLiteral("@@BIG@@")), "1e999"),
        "temperature: ");
    row("1e999 as the whole file", "1e999", "(file):");

    // Token counts.
    row("too few tokens", set("tokens", QJsonArray{QStringLiteral("I"), QStringLiteral("love")}), "tokens: ");
    row("too many tokens",
        set("tokens",
            QJsonArray{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")}),
        "tokens: ");
    row("context tokens not matching Z",
        toText(with(withContext(), QStringLiteral("context.tokens"), QJsonArray{QStringLiteral("x")})),
        "context.tokens: ");
    row("pad of wrong length", set("pad", QJsonArray{false, false}), "pad: ");

    // Out-of-range options.
    row("temperature 0", set("temperature", 0), "temperature: ");
    row("temperature negative", set("temperature", -0.5), "temperature: ");
    row("scale -1", set("scale", -1), "scale: ");
    row("scale 0", set("scale", 0), "scale: ");
    row("unknown scale name", set("scale", QStringLiteral("sqrt_dv")), "scale: ");
    row("unknown score", set("score", QStringLiteral("bilinear")), "score: ");
    row("unknown mask", set("mask.type", QStringLiteral("diagonal")), "mask.type: ");
    row("unknown normalizer", set("normalizer.type", QStringLiteral("softermax")), "normalizer.type: ");
    row("normalizer.alpha 0.5",
        set("normalizer",
            QJsonObject{{QStringLiteral("type"), QStringLiteral("entmax")}, {QStringLiteral("alpha"), 0.5}}),
        "normalizer.alpha: ");
    row("mask.window 0",
        set("mask",
            QJsonObject{{QStringLiteral("type"), QStringLiteral("sliding")}, {QStringLiteral("window"), 0}}),
        "mask.window: ");
    row("mask.window 1.5",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("sliding")},
                                {QStringLiteral("window"), 1.5}}),
        "mask.window: ");
    row("mask.prefix_length -1",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("prefix")},
                                {QStringLiteral("prefix_length"), -1}}),
        "mask.prefix_length: ");
    row("custom mask without allowed",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("custom")}}), "mask.allowed: ");
    row("custom allowed with a 2",
        set("mask", QJsonObject{{QStringLiteral("type"), QStringLiteral("custom")},
                                {QStringLiteral("allowed"), rows({{1, 0, 0}, {1, 1, 2}, {1, 1, 1}})}}),
        "mask.allowed[1][2]: ");
    row("custom allowed with a string",
        set("mask",
            QJsonObject{{QStringLiteral("type"), QStringLiteral("custom")},
                        {QStringLiteral("allowed"), QJsonArray{QJsonArray{1, 0, 0}, QJsonArray{1, 1, 0},
                                                               QJsonArray{1, QStringLiteral("1"), 1}}}}),
        "mask.allowed[2][1]: ");

    // Sizes outside the limits.
    {
        QJsonArray heads;
        for (int h = 0; h < 65; ++h)
            heads.append(love.value(QStringLiteral("heads")).toArray().at(0));
        row("65 heads", set("heads", heads), "heads: ");
    }
    row("no heads", set("heads", QJsonArray()), "heads: ");
    row("X with no rows", set("X", QJsonArray()), "X: ");
    row("X with 0 columns", set("X", repeatedRows(3, QJsonArray())), "X[0]: ");
    row("W_Q with 0 columns", set("heads.0.W_Q", repeatedRows(4, QJsonArray())), "heads[0].W_Q[0]: ");
    row("W_V with 0 columns", set("heads.0.W_V", repeatedRows(4, QJsonArray())), "heads[0].W_V[0]: ");
    row("W_O with 0 columns", set("W_O", repeatedRows(3, QJsonArray())), "W_O[0]: ");
    row("n = 4097", set("X", repeatedRows(4097, QJsonArray{0})), "X: ");
    {
        // m = 4097 with d_model 1: everything else is a valid 1-dimensional session.
        QJsonObject tiny = love;
        tiny = with(tiny, QStringLiteral("X"), rows({{1}}));
        tiny = with(tiny, QStringLiteral("tokens"), QJsonArray{QStringLiteral("a")});
        tiny = with(tiny, QStringLiteral("heads"),
                    QJsonArray{QJsonObject{{QStringLiteral("W_Q"), rows({{1}})},
                                           {QStringLiteral("W_K"), rows({{1}})},
                                           {QStringLiteral("W_V"), rows({{1}})}}});
        QVERIFY(parseSession(toText(tiny)).n() == 1); // the base is valid
        QJsonArray many;
        for (int j = 0; j < 4097; ++j)
            many.append(QStringLiteral("z"));
        tiny = with(tiny, QStringLiteral("context"),
                    QJsonObject{{QStringLiteral("tokens"), many},
                                {QStringLiteral("Z"), repeatedRows(4097, QJsonArray{0})}});
        row("m = 4097", toText(tiny), "context.Z: ");
    }
}

void TestSessionFile::refusesBadInput()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, path);
    const std::string json = text.toStdString();
    bool refused = false;
    QString message;
    try {
        (void)parseSession(json);
    } catch (const Error& e) {
        refused = true;
        message = QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QStringLiteral("threw something other than qkv::Error: ") +
                         QString::fromUtf8(e.what())));
    }
    QVERIFY2(refused, "parseSession accepted the input");
    QVERIFY2(
        message.startsWith(path),
        qPrintable(QStringLiteral("message: \"%1\", expected it to start with \"%2\"").arg(message, path)));
    QVERIFY2(!message.contains(QStringLiteral("json.exception")), qPrintable(message));
    QVERIFY2(!message.contains(QLatin1Char('\n')), qPrintable(message)); // one message, one line
}

void TestSessionFile::raggedHeadMessageIsExact()
{
    const QJsonObject root =
        with(twoHeads(), QStringLiteral("heads.1.W_K"), rows({{0, 1, 0}, {1, 0, 1}, {0, 0, 1}}));
    QCOMPARE(errorOf([&] { (void)parseSession(toText(root)); }),
             QStringLiteral("heads[1].W_K: expected 4 rows, found 3"));
    // The same file with four rows is fine: the refusal is about the shape alone.
    QCOMPARE(parseSession(toText(twoHeads())).headCount(), 2);
}

namespace {

/// A three-token session with X, W_K and the mask written as given, for the matrix messages.
std::string matrixSession(const char* x, const char* wK, const char* mask)
{
    return std::string(R"({"format": "qkvlab-session", "version": 1, "tokens": ["a", "b", "c"], "X": )") + x +
           R"(, "heads": [{"W_Q": [[1, 0], [0, 1]], "W_K": )" + wK + R"(, "W_V": [[1], [2]]}], "mask": )" +
           mask + "}";
}

} // namespace

void TestSessionFile::matrixMessagesAreExact_data()
{
    // Matrices where the session has one are read straight into Eigen storage while they are rectangular and
    // all numbers (0/1/true/false for the mask); anything else must give the message the document tree gave.
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    const char* x = "[[1, 2], [3, 4], [5, 6]]";
    const char* wK = "[[1, 0], [0, 1]]";
    const char* none = R"({"type": "none"})";
    const auto row = [](const char* name, const std::string& text, const char* message) {
        QTest::newRow(name) << QByteArray::fromStdString(text) << QString::fromUtf8(message);
    };
    const auto mask = [](const char* rows) {
        return std::string(R"({"type": "custom", "allowed": )") + rows + "}";
    };
    row("X row shorter than row 0", matrixSession("[[1, 2], [3, 4], [5]]", wK, none),
        "X[2]: expected 2 numbers (like row 0), found 1");
    row("X row longer than row 0", matrixSession("[[1, 2], [3, 4, 5], [5, 6]]", wK, none),
        "X[1]: expected 2 numbers (like row 0), found 3");
    row("X string", matrixSession(R"([[1, 2], [3, "4"], [5, 6]])", wK, none),
        "X[1][1]: expected a number, found a string");
    row("X boolean", matrixSession("[[1, 2], [3, 4], [true, 6]]", wK, none),
        "X[2][0]: expected a number, found a boolean");
    row("X null row", matrixSession("[[1, 2], null, [5, 6]]", wK, none),
        "X[1]: expected an array of numbers, found null");
    row("X array in a row", matrixSession("[[1, [2]], [3, 4], [5, 6]]", wK, none),
        "X[0][1]: expected a number, found an array");
    row("X object in a row", matrixSession(R"([[1, 2], [3, {"a": 4}], [5, 6]])", wK, none),
        "X[1][1]: expected a number, found an object");
    row("X no rows", matrixSession("[]", wK, none), "X: expected 1 to 4096 rows, found 0");
    row("X empty row 0", matrixSession("[[], [3, 4], [5, 6]]", wK, none),
        "X[0]: expected 1 to 4096 columns, found 0");
    row("X empty later row", matrixSession("[[1, 2], [], [5, 6]]", wK, none),
        "X[1]: expected 2 numbers (like row 0), found 0");
    row("X a number", matrixSession("7", wK, none), "X: expected an array of rows, found a number");
    row("X number among rows", matrixSession("[[1, 2], 3, [5, 6]]", wK, none),
        "X[1]: expected an array of numbers, found a number");
    row("X overflow", matrixSession("[[1, 2], [3, 4], [5, 1e999]]", wK, none),
        "X[2][1]: not a finite number");
    row("X more rows than tokens", matrixSession("[[1, 2], [3, 4], [5, 6], [7, 8]]", wK, none),
        "tokens: expected 4 tokens (one per row), found 3");
    row("W_K too few rows", matrixSession(x, "[[1, 0]]", none), "heads[0].W_K: expected 2 rows, found 1");
    row("W_K too few columns", matrixSession(x, "[[1], [0]]", none),
        "heads[0].W_K: expected 2 columns, found 1");
    row("W_K ragged", matrixSession(x, "[[1, 0], [0]]", none),
        "heads[0].W_K[1]: expected 2 numbers (like row 0), found 1");
    row("mask cell 2", matrixSession(x, wK, mask("[[1, 0, 1], [2, 1, 1], [1, 1, 1]]").c_str()),
        "mask.allowed[1][0]: expected 0 or 1, found 2");
    row("mask cell 0.5", matrixSession(x, wK, mask("[[1, 0, 1], [1, 1, 1], [1, 0.5, 1]]").c_str()),
        "mask.allowed[2][1]: expected 0 or 1, found 0.5");
    row("mask cell string", matrixSession(x, wK, mask(R"([[1, 0, 1], [1, 1, "1"], [1, 1, 1]])").c_str()),
        "mask.allowed[1][2]: expected 0 or 1, found \"1\"");
    row("mask cell null", matrixSession(x, wK, mask("[[null, 0, 1], [1, 1, 1], [1, 1, 1]]").c_str()),
        "mask.allowed[0][0]: expected 0 or 1, found null");
    row("mask short row", matrixSession(x, wK, mask("[[1, 1, 1], [1, 1], [1, 1, 1]]").c_str()),
        "mask.allowed[1]: expected 3 entries (one per key), found 2");
    row("mask narrow", matrixSession(x, wK, mask("[[1, 1], [1, 1], [1, 1]]").c_str()),
        "mask.allowed[0]: expected 3 entries (one per key), found 2");
    row("mask two rows", matrixSession(x, wK, mask("[[1, 1, 1], [1, 1, 1]]").c_str()),
        "mask.allowed: expected 3 rows, found 2");
    row("mask row not an array", matrixSession(x, wK, mask("[[1, 1, 1], true, [1, 1, 1]]").c_str()),
        "mask.allowed[1]: expected an array of 0 and 1, found a boolean");
}

void TestSessionFile::matrixMessagesAreExact()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QCOMPARE(errorOf([&] { (void)parseSession(text.toStdString()); }), message);
    // The same from a file, read as it is parsed.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
    QVERIFY(writeFile(path, text));
    QCOMPARE(errorOf([&] { (void)loadSession(path.toStdString()); }), message);
}

void TestSessionFile::matricesKeepEveryNumber()
{
    // Every form of number, mask entries in every accepted form, a repeated key (the last one counts) and a
    // matrix under an unknown key, which is kept as written.
    const std::string text = R"({"format": "qkvlab-session", "version": 1, "tokens": ["a", "b", "c"],
        "X": [[9]],
        "X": [[1e-300, -0.0], [12345678901234567890, -3], [0.1, 2.5e10]],
        "heads": [{"W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]], "W_V": [[1], [2]]}],
        "mask": {"type": "custom", "allowed": [[true, 1, 1.0], [false, 0, -0.0], [1, -0, 0.0]]},
        "extra": {"X": [[1, 2.0], [3]], "W_O": [[0.5]]}})";
    for (const bool fromFile : {false, true}) {
        Session s;
        if (fromFile) {
            QTemporaryDir dir;
            QVERIFY(dir.isValid());
            const QString path = dir.filePath(QStringLiteral("s.qkv.json"));
            QVERIFY(writeFile(path, QByteArray::fromStdString(text)));
            s = loadSession(path.toStdString());
        } else {
            s = parseSession(text);
        }
        const Matrix expected = fromRows({{1e-300, -0.0}, {12345678901234567890.0, -3}, {0.1, 2.5e10}});
        QVERIFY(s.X == expected);
        QVERIFY(std::signbit(s.X(0, 1)));
        MaskMatrix allowed(3, 3);
        allowed << 1, 1, 1, 0, 0, 0, 1, 0, 0;
        QVERIFY(s.mask.allowed == allowed);
        const QJsonObject extra = parseSaved(serializeSession(s)).value(QStringLiteral("extra")).toObject();
        QCOMPARE(extra.value(QStringLiteral("X")).toArray(),
                 QJsonArray({QJsonArray({1, 2.0}), QJsonArray({3})}));
        QVERIFY2(serializeSession(s).find("[1, 2.0],") != std::string::npos, serializeSession(s).c_str());
    }
}

void TestSessionFile::failedParseLeavesTheOldSession()
{
    Session session = parseSession(exampleJson("causal"));
    const Session before = session;
    const std::string bad =
        toText(with(twoHeads(), QStringLiteral("heads.1.W_K"), rows({{0, 1, 0}, {1, 0, 1}, {0, 0, 1}})));
    QVERIFY_THROWS_EXCEPTION(Error, session = parseSession(bad));
    QVERIFY(session == before);
    QVERIFY_THROWS_EXCEPTION(Error, session = parseSession("{"));
    QVERIFY(session == before);
    QCOMPARE(session.title, std::string("GPT-style causal: The cat sat on the mat"));
}

void TestSessionFile::failedLoadLeavesTheOldSession()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString good = dir.filePath(QStringLiteral("good.qkv.json"));
    const QString bad = dir.filePath(QStringLiteral("bad.qkv.json"));
    saveSession(loadExample("sparsemax"), good.toStdString());
    const QByteArray badText = QByteArray::fromStdString(
        toText(with(exampleObject("love"), QStringLiteral("normalizer.type"), QStringLiteral("nope"))));
    QVERIFY(writeFile(bad, badText));

    Session session = loadSession(good.toStdString());
    const Session before = session;
    QVERIFY(session == loadExample("sparsemax"));
    QVERIFY_THROWS_EXCEPTION(Error, session = loadSession(bad.toStdString()));
    QVERIFY(session == before);
    QCOMPARE(readFile(bad), badText); // loading never touches the file
}

void TestSessionFile::missingFileNamesThePath()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("absent.qkv.json"));
    const QString message = errorOf([&] { (void)loadSession(path.toStdString()); });
    QVERIFY2(message.startsWith(path + QLatin1Char(':')), qPrintable(message));
    QVERIFY(!QFileInfo::exists(path));
}

void TestSessionFile::nestingDeeperThanTheLimitIsRefused_data()
{
    QTest::addColumn<QString>("where");   // a key path in the love example, or a prefix for X
    QTest::addColumn<int>("depth");       // levels of arrays put there
    QTest::addColumn<QString>("message"); // "" = accepted
    const QString tooDeep = QStringLiteral("nested more than %1 levels deep").arg(maxSessionNesting);
    // The root object is one level: 510 arrays under a top-level key make 511, the deepest accepted.
    QTest::newRow("unknown key, deep but allowed")
        << QStringLiteral("extra") << maxSessionNesting - 2 << QString();
    QTest::newRow("unknown key, 80000 levels") << QStringLiteral("extra") << 80000 << tooDeep;
    QTest::newRow("view, 80000 levels") << QStringLiteral("view") << 80000 << tooDeep;
    QTest::newRow("inside X, then more keys") << QStringLiteral("X") << 80000 << tooDeep;
}

void TestSessionFile::nestingDeeperThanTheLimitIsRefused()
{
    QFETCH(QString, where);
    QFETCH(int, depth);
    QFETCH(QString, message);
    // Built as text: a QJsonDocument (like any recursive writer) could not hold 80 000 levels itself.
    const std::string deep = std::string(static_cast<std::size_t>(depth), '[') + "1" +
                             std::string(static_cast<std::size_t>(depth), ']');
    std::string text = toText(exampleObject("love"));
    const std::size_t brace = text.find('{');
    const std::string key = where.toStdString();
    if (key == "X") // a deep value inside X, with the rest of the file after it
        text.insert(brace + 1, "\"X\": [[1, " + deep + "]], ");
    else
        text.insert(brace + 1, "\"" + key + "\": " + (key == "view" ? "{\"a\": " + deep + "}" : deep) + ", ");
    if (message.isEmpty()) {
        const Session s = parseSession(text);
        const Session again = parseSession(serializeSession(s)); // kept and written back
        QVERIFY(again == s);
        return;
    }
    const QString error = errorOf([&] { (void)parseSession(text); });
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY2(error.startsWith(where), qPrintable(error)); // names the key path
    QVERIFY2(error.size() < 200, qPrintable(error));      // a path cut short, not 80 000 steps
}

void TestSessionFile::onlyRegularFilesAreRead_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("message");
    QTest::newRow("folder") << QStringLiteral("<dir>") << QStringLiteral("it is a folder, not a file");
    QTest::newRow("FIFO") << QStringLiteral("<fifo>") << QStringLiteral("it is a pipe (FIFO), not a file");
    QTest::newRow("/dev/zero") << QStringLiteral("/dev/zero") << QStringLiteral("it is a device, not a file");
}

void TestSessionFile::onlyRegularFilesAreRead()
{
    QFETCH(QString, path);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    if (path == QLatin1String("<dir>")) {
        path = dir.path();
    } else if (path == QLatin1String("<fifo>")) {
        path = dir.filePath(QStringLiteral("pipe.qkv.json"));
        QVERIFY(::mkfifo(QFile::encodeName(path).constData(), 0600) == 0);
    }
    // Returns at once: a FIFO with no writer would block a plain open() forever.
    const QString error = errorOf([&] { (void)loadSession(path.toStdString()); });
    QVERIFY2(error.startsWith(path + QStringLiteral(": cannot read: ")), qPrintable(error));
    QVERIFY2(error.contains(message), qPrintable(error));
    const QString matrixError = errorOf([&] { (void)loadMatrixFile(path.toStdString()); });
    QVERIFY2(matrixError.contains(message), qPrintable(matrixError));
}

void TestSessionFile::fileLargerThanTheCapIsRefusedUnread()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("big.qkv.json"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QVERIFY(file.resize(2000)); // sparse: nothing to read if the cap is checked first
    file.close();
    const QString error = errorOf([&] { (void)loadSession(path.toStdString(), 1000); });
    QVERIFY2(error.startsWith(path + QStringLiteral(": too large: a session file may have at most 1.0 KB")),
             qPrintable(error));
    QVERIFY(sessionFileSizeLimit(defaultMemoryLimit()) >= std::uint64_t(64) << 20);
}

// ---- values and defaults ----------------------------------------------------------------------------

void TestSessionFile::loveExampleHasTheSpecValues()
{
    const Session s = loadExample("love");
    QCOMPARE(s.title, std::string("I love AI"));
    QCOMPARE(s.tokens, (std::vector<std::string>{"I", "love", "AI"}));
    QCOMPARE(s.pad, (std::vector<bool>{false, false, false}));
    QVERIFY(s.X == fromRows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}}));
    QVERIFY(!s.context.has_value());
    QCOMPARE(s.headCount(), 1);
    const Head& head = s.heads.front();
    QVERIFY(head.W_Q == fromRows({{1, 0, 1}, {0, 1, 0}, {1, 0, 0}, {0, 1, 1}}));
    QVERIFY(head.W_K == fromRows({{0, 1, 0}, {1, 0, 1}, {0, 0, 1}, {1, 1, 0}}));
    QVERIFY(head.W_V == fromRows({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}}));
    QCOMPARE(head.W_S.size(), Index(0));
    QCOMPARE(head.W_a.size(), Index(0));
    QCOMPARE(head.U_a.size(), Index(0));
    QCOMPARE(head.v_a.size(), Index(0));
    QVERIFY(!s.W_O.has_value());
    QCOMPARE(s.n(), Index(3));
    QCOMPARE(s.m(), Index(3));
    QCOMPARE(s.dModel(), Index(4));
    QCOMPARE(s.dK(), Index(3));
    QCOMPARE(s.dV(), Index(3));
    QVERIFY(s.score == ScoreFunction::Dot);
    QVERIFY(s.scale.kind == Scale::Kind::SqrtDk);
    QCOMPARE(s.temperature, 1.0);
    QVERIFY(s.mask.type == MaskType::None);
    QVERIFY(s.normalizer.type == NormalizerType::Softmax);
}

void TestSessionFile::defaultScaleDependsOnScore_data()
{
    QTest::addColumn<QString>("score");
    QTest::addColumn<int>("expectedKind");
    QTest::newRow("dot") << QStringLiteral("dot") << int(Scale::Kind::SqrtDk);
    QTest::newRow("general") << QStringLiteral("general") << int(Scale::Kind::SqrtDk);
    QTest::newRow("additive") << QStringLiteral("additive") << int(Scale::Kind::None);
    QTest::newRow("cosine") << QStringLiteral("cosine") << int(Scale::Kind::None);
}

void TestSessionFile::defaultScaleDependsOnScore()
{
    QFETCH(QString, score);
    QFETCH(int, expectedKind);
    QJsonObject root = without(exampleObject("love"), QStringLiteral("scale"));
    root = with(root, QStringLiteral("score"), score);
    // The score parameters each function needs (d_k = 3, d_a = 2).
    root = with(root, QStringLiteral("heads.0.W_S"), rows({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}));
    root = with(root, QStringLiteral("heads.0.W_a"), rows({{1, 0}, {0, 1}, {1, 1}}));
    root = with(root, QStringLiteral("heads.0.U_a"), rows({{0, 1}, {1, 0}, {1, -1}}));
    root = with(root, QStringLiteral("heads.0.v_a"), QJsonArray{0.5, -0.5});
    const Session s = parseSession(toText(root));
    QCOMPARE(QString::fromUtf8(toString(s.score)), score);
    QCOMPARE(int(s.scale.kind), expectedKind);
    QVERIFY(s.scale == defaultScale(s.score));

    // An explicit scale always wins over the default.
    const Session explicitScale = parseSession(toText(with(root, QStringLiteral("scale"), 2.5)));
    QVERIFY(explicitScale.scale.kind == Scale::Kind::Constant);
    QCOMPARE(explicitScale.scale.value, 2.5);
}

void TestSessionFile::otherDefaults()
{
    QJsonObject root = exampleObject("love");
    for (const char* key : {"pad", "scale", "temperature", "mask", "normalizer", "view"})
        root = without(root, QString::fromUtf8(key));
    const Session s = parseSession(toText(root));
    QCOMPARE(s.temperature, 1.0);
    QVERIFY(s.scale.kind == Scale::Kind::SqrtDk);
    QVERIFY(s.mask.type == MaskType::None);
    QVERIFY(s.normalizer.type == NormalizerType::Softmax);
    QCOMPARE(s.normalizer.alpha, 1.5);
    QCOMPARE(s.pad, (std::vector<bool>{false, false, false}));
    QVERIFY(s.preservedJson.empty());
    Session love = loadExample("love");
    setViewJson(love, "");
    QVERIFY(s == love); // the spelled-out defaults of the example are exactly the implicit ones

    // entmax without alpha gets α = 1.5.
    const Session entmax =
        parseSession(toText(with(root, QStringLiteral("normalizer"),
                                 QJsonObject{{QStringLiteral("type"), QStringLiteral("entmax")}})));
    QVERIFY(entmax.normalizer.type == NormalizerType::Entmax);
    QCOMPARE(entmax.normalizer.alpha, 1.5);
}

void TestSessionFile::titleAndScoreAreOptional()
{
    QJsonObject root = exampleObject("love");
    for (const char* key : {"title", "score"})
        root = without(root, QString::fromUtf8(key));
    const Session s = parseSession(toText(root));
    QCOMPARE(s.title, std::string("Untitled"));
    QVERIFY(s.score == ScoreFunction::Dot);
    QVERIFY(s.scale.kind == Scale::Kind::SqrtDk); // the default scale of the default score

    // From a file: the file's name without its suffix.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("my experiment.qkv.json"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(toText(root)));
    file.close();
    QCOMPARE(loadSession(path.toStdString()).title, std::string("my experiment"));
    QCOMPARE(titleFromPath("/a/b/notes.json"), std::string("notes"));
    QCOMPARE(titleFromPath("/a/b/plain"), std::string("plain"));
    QCOMPARE(titleFromPath("/a/b/.qkv.json"), std::string(".qkv"));
}

// ---- biases (docs/semantics.md) ---------------------------------------------------------------------

void TestSessionFile::biasesRoundTrip()
{
    // "I love AI" (d_k = d_v = 3) with two heads, W_O (6 × 2) and every bias.
    QJsonObject root = twoHeads();
    root = with(root, QStringLiteral("heads.0.b_Q"), QJsonArray{0.5, -1, 0.25});
    root = with(root, QStringLiteral("heads.0.b_K"), QJsonArray{1, 2, 3});
    root = with(root, QStringLiteral("heads.1.b_V"), QJsonArray{-0.125, 0, 1e-300});
    root = with(root, QStringLiteral("W_O"), repeatedRows(6, QJsonArray{1, 0}));
    root = with(root, QStringLiteral("b_O"), QJsonArray{0.1, -0.2});
    const Session session = parseSession(toText(root));
    QCOMPARE(session.heads[0].b_Q, (Vector(3) << 0.5, -1, 0.25).finished());
    QCOMPARE(session.heads[0].b_K, (Vector(3) << 1, 2, 3).finished());
    QCOMPARE(session.heads[0].b_V.size(), Index(0)); // absent stays absent
    QCOMPARE(session.heads[1].b_Q.size(), Index(0));
    QCOMPARE(session.heads[1].b_V, (Vector(3) << -0.125, 0, 1e-300).finished());
    QCOMPARE(session.b_O, (Vector(2) << 0.1, -0.2).finished());

    const std::string text = serializeSession(session);
    const QJsonObject saved = parseSaved(text);
    const QJsonArray heads = saved.value(QStringLiteral("heads")).toArray();
    QVERIFY(heads.at(0).toObject().contains(QStringLiteral("b_Q")));
    QVERIFY(!heads.at(0).toObject().contains(QStringLiteral("b_V")));
    QVERIFY(!heads.at(1).toObject().contains(QStringLiteral("b_Q")));
    QCOMPARE(saved.value(QStringLiteral("b_O")).toArray(), (QJsonArray{0.1, -0.2}));
    QVERIFY(parseSession(text) == session);
    QCOMPARE(serializeSession(parseSession(text)), text);

    // Without biases nothing is written: the file is what it was.
    const std::string plain = serializeSession(loadExample("love"));
    QVERIFY(plain.find("\"b_") == std::string::npos);
}

void TestSessionFile::biasMessagesAreExact_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    const auto row = [](const char* name, const QJsonObject& root, const QString& message) {
        QTest::newRow(name) << QByteArray::fromStdString(toText(root)) << message;
    };
    const QJsonObject two = twoHeads();
    row("b_Q short", with(two, QStringLiteral("heads.1.b_Q"), QJsonArray{1, 2}),
        QStringLiteral("heads[1].b_Q: expected 3 entries (d_k = 3), found 2"));
    row("b_K long", with(two, QStringLiteral("heads.0.b_K"), QJsonArray{1, 2, 3, 4}),
        QStringLiteral("heads[0].b_K: expected 3 entries (d_k = 3), found 4"));
    row("b_V empty", with(two, QStringLiteral("heads.0.b_V"), QJsonArray{}),
        QStringLiteral("heads[0].b_V: expected 3 entries (d_v = 3), found 0"));
    row("b_V a string", with(two, QStringLiteral("heads.0.b_V"), QStringLiteral("0")),
        QStringLiteral("heads[0].b_V: expected an array of numbers, found a string"));
    row("b_Q entry a string", with(two, QStringLiteral("heads.0.b_Q"), QJsonArray{1, QStringLiteral("x"), 3}),
        QStringLiteral("heads[0].b_Q[1]: expected a number, found a string"));
    row("b_O without W_O", with(two, QStringLiteral("b_O"), QJsonArray{1, 2, 3}),
        QStringLiteral("b_O: needs W_O beside it (it is the bias of the output projection)"));
    row("b_O short",
        with(with(two, QStringLiteral("W_O"), repeatedRows(6, QJsonArray{1, 0})), QStringLiteral("b_O"),
             QJsonArray{1}),
        QStringLiteral("b_O: expected 2 entries (d_out = 2), found 1"));
}

void TestSessionFile::biasMessagesAreExact()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QCOMPARE(errorOf([&] { (void)parseSession(text.toStdString()); }), message);
}

QKV_TEST_APPLESS_MAIN(TestSessionFile)
#include "tst_sessionfile.moc"
