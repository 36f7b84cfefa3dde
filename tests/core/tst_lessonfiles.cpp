// Lesson files in core: a valid lesson parsed with every key, edits applied to a session as the steps say,
// and refusals that name the file, the step and the key.

#include "Error.h"
#include "Examples.h"
#include "Lessons.h"

#include "TestMain.h"
#include <QtTest>

using namespace qkv;

namespace {

const std::vector<std::string> views = {"pipeline", "weights", "mask", "heads"};

} // namespace

class TestLessonFiles : public QObject {
    Q_OBJECT
private slots:
    void parsesEveryKey();
    void sessionAfterEachStep();
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
