// SPDX-License-Identifier: GPL-3.0-or-later
// Lesson files in core: a valid lesson parsed with every key, edits applied to a session as the steps say,
// steps in the Training workspace, and refusals that name the file, the step and the key.

#include "Error.h"
#include "Examples.h"
#include "Lessons.h"

#include "TestMain.h"
#include <QtTest>

using namespace qkv;

namespace {

const std::vector<std::string> views = {"pipeline", "weights", "mask", "heads", "model"};

} // namespace

class TestLessonFiles : public QObject {
    Q_OBJECT
private slots:
    void parsesEveryKey();
    void sessionAfterEachStep();
    void trainingSteps();
    void refused_data();
    void refused();
    void builtinLessonsAreListed();
};

void TestLessonFiles::parsesEveryKey()
{
    const Lesson lesson = parseLesson("a.lesson.json", R"({"title": "T", "steps": [
        {"text": "<p>one</p>", "session": "example:causal", "view": "pipeline", "cell": [5, 1]},
        {"text": "two", "view": "weights", "edit": {"temperature": 0.5, "normalizer": "entmax", "alpha": 2.5,
         "scale": 4, "mask": {"type": "sliding", "window": 2}, "score": "cosine", "heads": 3}},
        {"text": "three", "view": "mask", "quiz": {"question": "Q?", "options": ["a", "b", "c"], "answer": 2,
         "explanation": "because"}}]})",
                                      views);
    QCOMPARE(lesson.title, std::string("T"));
    QCOMPARE(lesson.steps.size(), std::size_t(3));
    QCOMPARE(*lesson.steps[0].example, std::string("causal"));
    QCOMPARE(*lesson.steps[0].cell, std::make_pair(Index(5), Index(1)));
    const LessonEdit& edit = *lesson.steps[1].edit;
    QCOMPARE(*edit.temperature, 0.5);
    QCOMPARE(*edit.normalizer, NormalizerType::Entmax);
    QCOMPARE(*edit.alpha, 2.5);
    QVERIFY(*edit.scale == (Scale{Scale::Kind::Constant, 4.0}));
    QCOMPARE(*edit.mask, MaskType::Sliding);
    QCOMPARE(*edit.window, Index(2));
    QCOMPARE(*edit.score, ScoreFunction::Cosine);
    QCOMPARE(*edit.heads, 3);
    const LessonQuiz& quiz = *lesson.steps[2].quiz;
    QCOMPARE(quiz.options.size(), std::size_t(3));
    QVERIFY(isCorrectAnswer(quiz, 2));
    QVERIFY(!isCorrectAnswer(quiz, 0));
    QCOMPARE(quiz.explanation, std::string("because"));
}

// The session a lesson leaves: the example, then each edit on top of it, steps without either keeping it.
void TestLessonFiles::sessionAfterEachStep()
{
    const Lesson lesson = parseLesson("b.lesson.json", R"({"title": "T", "steps": [
        {"text": "1", "session": "example:multihead", "view": "heads"},
        {"text": "2", "view": "weights", "edit": {"mask": {"type": "prefix", "prefix_length": 2}}},
        {"text": "3", "view": "weights", "edit": {"heads": 3, "temperature": 2}},
        {"text": "4", "view": "pipeline"}]})",
                                      views);
    const Session example = loadExample("multihead");
    QVERIFY(lessonSessionAfter(lesson, 0) == example);
    const Session masked = lessonSessionAfter(lesson, 1);
    QCOMPARE(masked.mask.type, MaskType::Prefix);
    QCOMPARE(masked.mask.prefixLength, Index(2));
    const Session third = lessonSessionAfter(lesson, 2);
    QCOMPARE(third.headCount(), 3);
    QCOMPARE(third.W_O->rows(), 3 * example.dV()); // W_O follows the heads
    QCOMPARE(third.temperature, 2.0);
    QCOMPARE(third.mask.type, MaskType::Prefix);
    QVERIFY(validate(third).empty());
    QVERIFY(lessonSessionAfter(lesson, 3) == third);
}

// A lesson may begin in the Training workspace without a session; its steps then need no view, and one after
// a session was loaded may still act on the tab.
void TestLessonFiles::trainingSteps()
{
    const Lesson lesson = parseLesson("t.lesson.json", R"({"title": "T", "steps": [
        {"text": "1", "dock": "training"},
        {"text": "2", "training": "start"},
        {"text": "3", "training": "open", "view": "model"},
        {"text": "4", "session": "example:love", "view": "weights", "cell": [0, 2], "dock": "training"},
        {"text": "5", "view": "pipeline"}]})",
                                      views);
    QCOMPARE(lesson.steps.size(), std::size_t(5));
    QVERIFY(lesson.steps[0].showTrainingTab);
    QCOMPARE(lesson.steps[0].training, LessonTraining::None);
    QVERIFY(lesson.steps[0].view.empty());
    QCOMPARE(lesson.steps[1].training, LessonTraining::Start);
    QVERIFY(!lesson.steps[1].showTrainingTab);
    QCOMPARE(lesson.steps[2].training, LessonTraining::Open);
    QCOMPARE(lesson.steps[2].view, std::string("model"));
    QVERIFY(lesson.steps[3].showTrainingTab);
    QCOMPARE(lesson.steps[4].training, LessonTraining::None);
    QVERIFY(!lesson.steps[4].showTrainingTab);
    QVERIFY(usesTraining(lesson));
    QVERIFY(lessonSessionAfter(lesson, 4) == loadExample("love"));

    const Lesson plain = parseLesson("p.lesson.json", R"({"title": "T", "steps": [
        {"text": "1", "session": "example:love", "view": "weights"}]})",
                                     views);
    QVERIFY(!usesTraining(plain));
    QCOMPARE(plain.steps[0].training, LessonTraining::None);

    const Lesson patching = parseLesson("q.lesson.json", R"({"title": "T", "steps": [
        {"text": "1", "training": "start"},
        {"text": "2", "training": "open", "view": "model"},
        {"text": "3", "patching": {"clean_ids": [4, 5, 6], "corrupt_ids": [4, 7, 6], "answer_id": 5,
                                   "wrong_id": 7, "site": "head_out_pos", "method": "attribution"}},
        {"text": "4", "dock": "patching"}]})",
                                        views);
    const Lesson opened = parseLesson("h.lesson.json", R"({"title": "T", "steps": [
        {"text": "1", "training": "start"},
        {"text": "2", "training": "open", "view": "model"},
        {"text": "3", "head": {"layer": 1, "head": 0, "ids": [4, 5, 6]}, "view": "weights", "cell": [2, 1]},
        {"text": "4", "view": "weights", "cell": [2, 2], "dock": "score_terms"}]})",
                                      views);
    QCOMPARE(opened.steps[2].head->layer, Index(1));
    QCOMPARE(opened.steps[2].head->ids, (std::vector<std::int64_t>{4, 5, 6}));
    QCOMPARE(opened.steps[2].cell, (std::optional<std::pair<Index, Index>>{{2, 1}}));
    QVERIFY(!opened.steps[2].showScoreTerms);
    QVERIFY(opened.steps[3].showScoreTerms);
    QVERIFY(!patching.steps[1].showPatching);
    QVERIFY(patching.steps[2].showPatching);
    QVERIFY(patching.steps[3].showPatching);
    QVERIFY(!patching.steps[3].patching);
    const LessonPatching& experiment = *patching.steps[2].patching;
    QCOMPARE(experiment.clean, (std::vector<std::int64_t>{4, 5, 6}));
    QCOMPARE(experiment.corrupt, (std::vector<std::int64_t>{4, 7, 6}));
    QCOMPARE(experiment.answer, std::int64_t(5));
    QCOMPARE(experiment.wrong, std::int64_t(7));
    QCOMPARE(experiment.site, PatchSite::HeadOutPos);
    QCOMPARE(experiment.method, PatchMethod::Attribution);
}

void TestLessonFiles::refused_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    const QString first = QStringLiteral(R"({"text": "a", "session": "example:love", "view": "weights"})");
    const auto lesson = [&](const QString& second) {
        return QStringLiteral(R"({"title": "t", "steps": [)") + first + QStringLiteral(", ") + second +
               QStringLiteral("]}");
    };
    QTest::newRow("not JSON") << QStringLiteral("{") << QStringLiteral("c.lesson.json: not valid JSON");
    QTest::newRow("not an object") << QStringLiteral("[]")
                                   << QStringLiteral("c.lesson.json: expected a JSON object");
    QTest::newRow("no steps") << QStringLiteral(R"({"title": "t", "steps": []})")
                              << QStringLiteral("c.lesson.json: steps: expected a non-empty array");
    QTest::newRow("unknown key") << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "colour": 1})"))
                                 << QStringLiteral("c.lesson.json: step 2: unknown key \"colour\"");
    QTest::newRow("no view") << lesson(QStringLiteral(R"({"text": "b"})"))
                             << QStringLiteral("c.lesson.json: step 2: missing \"view\"");
    QTest::newRow("unknown view") << lesson(QStringLiteral(R"({"text": "b", "view": "variance"})"))
                                  << QStringLiteral("c.lesson.json: step 2: view: unknown view \"variance\"");
    QTest::newRow("not an example")
        << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "session": "love.qkv.json"})"))
        << QStringLiteral("c.lesson.json: step 2: session: expected \"example:NAME\"");
    QTest::newRow("cell out of range")
        << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "cell": [0, 3]})"))
        << QStringLiteral("c.lesson.json: step 2: cell: [0, 3] is outside the 3 × 3 weights");
    QTest::newRow("cell not a pair") << lesson(
                                            QStringLiteral(R"({"text": "b", "view": "mask", "cell": [0]})"))
                                     << QStringLiteral("c.lesson.json: step 2: cell: expected [row, column]");
    QTest::newRow("bad normalizer")
        << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "edit": {"normalizer": "max"}})"))
        << QStringLiteral("c.lesson.json: step 2: edit.normalizer: unknown normalizer \"max\"");
    QTest::newRow("alpha below 1")
        << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "edit": {"alpha": 0.5}})"))
        << QStringLiteral("c.lesson.json: step 2: edit.alpha: expected a number ≥ 1");
    QTest::newRow("custom mask")
        << lesson(QStringLiteral(R"({"text": "b", "view": "mask", "edit": {"mask": "custom"}})"))
        << QStringLiteral("c.lesson.json: step 2: edit.mask: unknown mask \"custom\"");
    QTest::newRow("no heads") << lesson(
                                     QStringLiteral(R"({"text": "b", "view": "mask", "edit": {"heads": 0}})"))
                              << QStringLiteral("c.lesson.json: step 2: edit.heads: expected a whole number");
    QTest::newRow("quiz without explanation")
        << lesson(QStringLiteral(
               R"({"text": "b", "view": "mask", "quiz": {"question": "q", "options": ["x", "y"], "answer": 0}})"))
        << QStringLiteral("c.lesson.json: step 2: quiz: missing \"explanation\"");
    const auto fromTraining = [](const QString& second) {
        return QStringLiteral(R"({"title": "t", "steps": [{"text": "a", "training": "start"}, )") + second +
               QStringLiteral("]}");
    };
    QTest::newRow("first step neither session nor training")
        << QStringLiteral(R"({"title": "t", "steps": [{"text": "a", "view": "mask"}]})")
        << QStringLiteral("c.lesson.json: step 1: the first step must load a session (\"session\": "
                          "\"example:NAME\") or act in the Training workspace");
    QTest::newRow("unknown training action")
        << lesson(QStringLiteral(R"({"text": "b", "training": "stop"})"))
        << QStringLiteral(
               "c.lesson.json: step 2: training: unknown action \"stop\" (expected start or open)");
    QTest::newRow("training not text") << lesson(QStringLiteral(R"({"text": "b", "training": 1})"))
                                       << QStringLiteral("c.lesson.json: step 2: training: expected text");
    QTest::newRow("unknown dock") << lesson(QStringLiteral(R"({"text": "b", "dock": "model"})"))
                                  << QStringLiteral("c.lesson.json: step 2: dock: unknown dock \"model\" "
                                                    "(expected training, patching or score_terms)");
    QTest::newRow("training step with an unknown view")
        << lesson(QStringLiteral(R"({"text": "b", "training": "open", "view": "nope"})"))
        << QStringLiteral("c.lesson.json: step 2: view: unknown view \"nope\"");
    QTest::newRow("edit with no session loaded")
        << fromTraining(QStringLiteral(R"({"text": "b", "dock": "training", "edit": {"temperature": 2}})"))
        << QStringLiteral("c.lesson.json: step 2: edit: no session of known size at this step");
    QTest::newRow("cell after a trained model opened")
        << lesson(QStringLiteral(R"({"text": "b", "training": "open", "view": "model"}, )"
                                 R"({"text": "c", "view": "weights", "cell": [0, 0]})"))
        << QStringLiteral("c.lesson.json: step 3: cell: no session of known size at this step");
    QTest::newRow("open and a session in one step")
        << lesson(QStringLiteral(
               R"({"text": "b", "training": "open", "session": "example:love", "view": "model"})"))
        << QStringLiteral("c.lesson.json: step 2: training: \"open\" replaces the session the step loads");
    const auto patching = [&](const QString& experiment) {
        return lesson(QStringLiteral(R"({"text": "b", "training": "open", "view": "model"}, )"
                                     R"({"text": "c", "patching": )") +
                      experiment + QStringLiteral("}"));
    };
    const auto head = [&](const QString& step) {
        return lesson(QStringLiteral(R"({"text": "b", "training": "open", "view": "model"}, )") + step);
    };
    QTest::newRow("head before a model is open")
        << lesson(QStringLiteral(
               R"({"text": "b", "head": {"layer": 1, "head": 0, "ids": [1, 2]}, "view": "model"})"))
        << QStringLiteral("c.lesson.json: step 2: head: needs a model");
    QTest::newRow("head without ids")
        << head(QStringLiteral(R"({"text": "c", "head": {"layer": 1, "head": 0}, "view": "model"})"))
        << QStringLiteral("c.lesson.json: step 3: head: missing \"ids\"");
    QTest::newRow("head with an unknown key")
        << head(QStringLiteral(R"({"text": "c", "head": {"layer": 1, "head": 0, "ids": [1], "tokens": 2}, )"
                               R"("view": "model"})"))
        << QStringLiteral("c.lesson.json: step 3: head: unknown key \"tokens\"");
    QTest::newRow("head and an edit in one step")
        << head(QStringLiteral(
               R"({"text": "c", "head": {"layer": 1, "head": 0, "ids": [1]}, "view": "model", )"
               R"("edit": {"temperature": 2}})"))
        << QStringLiteral("c.lesson.json: step 3: head: replaces the session");
    QTest::newRow("cell outside the head's tokens")
        << head(QStringLiteral(R"({"text": "c", "head": {"layer": 1, "head": 0, "ids": [1, 2, 3]}, )"
                               R"("view": "weights", "cell": [3, 0]})"))
        << QStringLiteral("c.lesson.json: step 3: cell: [3, 0] is outside the 3 × 3 weights of the model's "
                          "head, opened on 3 tokens");
    QTest::newRow("patching before a model is open")
        << lesson(QStringLiteral(R"({"text": "b", "dock": "patching"})"))
        << QStringLiteral("c.lesson.json: step 2: patching: needs a model");
    QTest::newRow("patching prompts of different lengths")
        << patching(QStringLiteral(R"({"clean_ids": [1, 2, 3], "corrupt_ids": [1, 2], "answer_id": 4, )"
                                   R"("wrong_id": 5, "site": "head_out"})"))
        << QStringLiteral(
               "c.lesson.json: step 3: patching: the clean prompt has 3 tokens and the corrupted one 2");
    QTest::newRow("patching an unknown site")
        << patching(QStringLiteral(R"({"clean_ids": [1, 2], "corrupt_ids": [1, 3], "answer_id": 4, )"
                                   R"("wrong_id": 5, "site": "head_z"})"))
        << QStringLiteral("c.lesson.json: step 3: patching.site: unknown site \"head_z\"");
    QTest::newRow("patching an unknown method")
        << patching(QStringLiteral(R"({"clean_ids": [1, 2], "corrupt_ids": [1, 3], "answer_id": 4, )"
                                   R"("wrong_id": 5, "site": "head_out", "method": "linear"})"))
        << QStringLiteral("c.lesson.json: step 3: patching.method: unknown method \"linear\"");
    QTest::newRow("patching without an answer")
        << patching(QStringLiteral(R"({"clean_ids": [1, 2], "corrupt_ids": [1, 3], "wrong_id": 5, )"
                                   R"("site": "head_out"})"))
        << QStringLiteral("c.lesson.json: step 3: patching: missing \"answer_id\"");
    QTest::newRow("patching a negative id")
        << patching(QStringLiteral(R"({"clean_ids": [1, -2], "corrupt_ids": [1, 3], "answer_id": 4, )"
                                   R"("wrong_id": 5, "site": "head_out"})"))
        << QStringLiteral("c.lesson.json: step 3: patching.clean_ids[1]");
    QTest::newRow("cell without a view")
        << lesson(QStringLiteral(R"({"text": "b", "dock": "training", "cell": [0, 0]})"))
        << QStringLiteral("c.lesson.json: step 2: cell: needs a \"view\"");
    // Half a million levels: the whole file is read, and refused before a deep tree is built (it crashed).
    const qsizetype levels = 500000;
    QTest::newRow("nested 500 000 deep")
        << QStringLiteral(R"({"title": "t", "steps": )") + QString(levels, u'[') + QString(levels, u']') +
               QStringLiteral("}")
        << QStringLiteral("c.lesson.json: nested more than 16 levels deep");
}

void TestLessonFiles::refused()
{
    QFETCH(QString, text);
    QFETCH(QString, message);
    try {
        parseLesson("c.lesson.json", text.toStdString(), views);
        QFAIL("accepted");
    } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.what()).startsWith(message), e.what());
    }
}

void TestLessonFiles::builtinLessonsAreListed()
{
    const std::vector<std::string> files = builtinLessonFiles();
    QVERIFY(files.size() >= 6);
    QVERIFY(std::is_sorted(files.begin(), files.end()));
    for (const std::string& file : files)
        QVERIFY(file.size() > 12 && file.compare(file.size() - 12, 12, ".lesson.json") == 0);
    QVERIFY_THROWS_EXCEPTION(Error, loadBuiltinLesson("none.lesson.json", views));
}

QKV_TEST_APPLESS_MAIN(TestLessonFiles)
#include "tst_lessonfiles.moc"
