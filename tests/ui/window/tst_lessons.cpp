// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons ▸ through the real window: every built-in lesson is walked step by step (the view named on screen,
// the cell named selected, the session the lesson's steps make), then back again; the lesson on the Training
// tab starts a (short) run and opens its model; refused lesson files; the quiz's answers checked.

#include "Document.h"
#include "DocumentCommands.h"
#include "FigureCatalog.h"
#include "FigureNavigator.h"
#include "LessonPanel.h"
#include "LessonPlayer.h"
#include "Lessons.h"
#include "MainWindow.h"
#include "PatchingPanel.h"
#include "TrainingPanel.h"
#include "Workspaces.h"

#include "QueuedReplots.h"
#include "TestMain.h"
#include <QButtonGroup>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

std::vector<std::string> viewNames(const MainWindow& window)
{
    std::vector<std::string> names;
    for (const QString& name : window.lessonPlayer()->viewNames())
        names.push_back(name.toStdString());
    return names;
}

// With QKV_SCREENSHOT_DIR set, the window at every step of every lesson (to look at, under xvfb-run).
void screenshot(QWidget& window, const QString& name)
{
    const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR");
    if (folder.isEmpty())
        return;
    QVERIFY(test::settleReplots(&window)); // the queued replots
    window.grab().save(QDir(folder).filePath(name + QStringLiteral(".png")));
}

template <typename T> T* child(QWidget& window, const char* name)
{
    T* widget = window.findChild<T*>(QLatin1String(name));
    if (!widget)
        qFatal("no widget named %s", name);
    return widget;
}

} // namespace

class TestLessons : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void everyViewCanBeShown();
    void walkEveryLesson_data();
    void walkEveryLesson();
    void trainingLesson_data();
    void trainingLesson();
    void openStepWaitsForARun();
    void stepEditIsOneUndoStep();
    void malformedLessonRefused_data();
    void malformedLessonRefused();
    void quizChecksAnswers();
};

// The figure-name → dock/tab mapping reaches every view of the window, whichever dock or tab holds it.
void TestLessons::everyViewCanBeShown()
{
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const FigureNavigator& navigator = window.lessonPlayer()->navigator();
    QVERIFY(navigator.names().size() >= 10);
    for (const QString& name : navigator.names()) {
        QVERIFY2(navigator.show(name), qPrintable(name));
        QTRY_VERIFY2(navigator.isShown(name), qPrintable(name));
    }
    QVERIFY(!navigator.show(QStringLiteral("no-such-view")));
}

void TestLessons::walkEveryLesson_data()
{
    QTest::addColumn<QString>("file");
    const std::vector<std::string> files = builtinLessonFiles();
    QVERIFY(files.size() >= 6);
    const MainWindow window;
    int training = 0;
    for (const std::string& file : files) {
        if (usesTraining(loadBuiltinLesson(file, viewNames(window))))
            ++training; // trainingLesson walks it
        else
            QTest::newRow(file.c_str()) << QString::fromStdString(file);
    }
    QCOMPARE(training, 3);
}

void TestLessons::walkEveryLesson()
{
    QFETCH(QString, file);
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Document* document = window.document();
    LessonPlayer* player = window.lessonPlayer();
    const Lesson lesson = loadBuiltinLesson(file.toStdString(), viewNames(window));
    // Every view a lesson names is also one `qkvlab export --view` draws.
    const FigureCatalog catalog(document);
    for (const LessonStep& step : lesson.steps)
        QVERIFY2(catalog.names().contains(QString::fromStdString(step.view)), step.view.c_str());

    const auto checkStep = [&](std::size_t k) {
        const LessonStep& step = lesson.steps[k];
        const QString where = file + QStringLiteral(" step %1").arg(k + 1);
        QCOMPARE(player->step(), static_cast<int>(k));
        QCOMPARE(child<QLabel>(window, "lessonStep")->text(),
                 QStringLiteral("Step %1 of %2").arg(k + 1).arg(lesson.steps.size()));
        QTRY_VERIFY2(player->navigator().isShown(QString::fromStdString(step.view)), qPrintable(where));
        if (step.cell) {
            QCOMPARE(document->selectedQuery(), step.cell->first);
            QCOMPARE(document->selectedKey(), step.cell->second);
        }
        QVERIFY2(document->session() == lessonSessionAfter(lesson, k, document->initializer()),
                 qPrintable(where));
        QVERIFY2(document->result(), qPrintable(where + QStringLiteral(": ") + document->resultError()));
        screenshot(window,
                   QString(file).replace(QStringLiteral(".lesson.json"), QStringLiteral("-%1")).arg(k + 1));
    };

    QVERIFY2(window.lessonPanel()->startBuiltin(file), qPrintable(window.lessonPanel()->lastError()));
    QVERIFY(player->isActive());
    QVERIFY(child<QWidget>(window, "lessonPanel")->isVisible());
    QCOMPARE(child<QLabel>(window, "lessonTitle")->text(), QString::fromStdString(lesson.title));
    auto* next = child<QPushButton>(window, "lessonNext");
    auto* back = child<QPushButton>(window, "lessonBack");
    QVERIFY(!back->isEnabled());
    checkStep(0);
    for (std::size_t k = 1; k < lesson.steps.size(); ++k) {
        QVERIFY(next->isEnabled());
        QTest::mouseClick(next, Qt::LeftButton);
        checkStep(k);
    }
    QVERIFY(!next->isEnabled());
    // Back restores each earlier step: its view, its cell and its session (the step left is undone).
    for (std::size_t k = lesson.steps.size() - 1; k > 0; --k) {
        QTest::mouseClick(back, Qt::LeftButton);
        checkStep(k - 1);
    }
    QTest::mouseClick(child<QPushButton>(window, "lessonClose"), Qt::LeftButton);
    QVERIFY(!player->isActive());
    QVERIFY(!child<QWidget>(window, "lessonPanel")->isVisible());
}

namespace {

bool opensFolder(const Session& session, const QString& folder)
{
    return session.model && QFileInfo(QString::fromStdString(session.model->folder)).canonicalFilePath() ==
                                QFileInfo(folder).canonicalFilePath();
}

} // namespace

void TestLessons::trainingLesson_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("title");
    QTest::newRow("induction heads") << QStringLiteral("09-induction-heads.lesson.json")
                                     << QStringLiteral("How induction heads form");
    QTest::newRow("patching") << QStringLiteral("10-where-the-model-copies-from.lesson.json")
                              << QStringLiteral("Where does the model copy from?");
    QTest::newRow("circuits") << QStringLiteral("11-how-an-induction-head-finds-its-key.lesson.json")
                              << QStringLiteral("How an induction head finds its key");
}

// The lessons that train, through the window, on a run cut short (the lesson is under test, not the recipe):
// their Training workspace steps bring the tab forward, the start step trains, the open step opens the
// trained model in the model view, a patching step fills the Patching panel's grid, and Back then Next again
// does not train anew.
void TestLessons::trainingLesson()
{
    QFETCH(QString, file);
    QFETCH(QString, title);
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Document* document = window.document();
    LessonPlayer* player = window.lessonPlayer();
    auto* training = window.findChild<TrainingPanel*>();
    QVERIFY(training);
    child<QSpinBox>(window, "trainingSteps")->setValue(40);
    auto* patching = window.findChild<PatchingPanel*>();
    QVERIFY(patching);
    const Lesson lesson = loadBuiltinLesson(file.toStdString(), viewNames(window));
    QVERIFY(lesson.steps.size() >= 6 && lesson.steps.size() <= 9);
    QCOMPARE(std::count_if(lesson.steps.begin(), lesson.steps.end(),
                           [](const LessonStep& step) { return step.quiz.has_value(); }),
             1);
    // The model's views are the window's, not the session's: no export of the session draws them.
    for (const LessonStep& step : lesson.steps)
        QVERIFY2(step.view.empty() || player->viewNames().contains(QString::fromStdString(step.view)),
                 step.view.c_str());
    auto* notice = child<QLabel>(window, "lessonNotice");
    auto* next = child<QPushButton>(window, "lessonNext");
    const Session before = document->session();

    QVERIFY2(window.lessonPanel()->startBuiltin(file), qPrintable(window.lessonPanel()->lastError()));
    QCOMPARE(child<QLabel>(window, "lessonTitle")->text(), title);
    int startStep = -1;
    for (std::size_t k = 0; k < lesson.steps.size(); ++k) {
        const LessonStep& step = lesson.steps[k];
        const QString where = QStringLiteral("step %1").arg(k + 1);
        if (k > 0)
            QTest::mouseClick(next, Qt::LeftButton);
        QCOMPARE(player->step(), int(k));
        if (step.training == LessonTraining::Start) {
            startStep = int(k);
            QVERIFY(training->isRunning() || training->isFinished());
            QTRY_VERIFY_WITH_TIMEOUT(training->isFinished(), 60000);
            QVERIFY(QDir(training->folder()).exists(QStringLiteral("config.json")));
        }
        if (step.training == LessonTraining::Open) {
            QVERIFY2(startStep >= 0, "the lesson opens its model after it trains it");
            QVERIFY2(opensFolder(document->session(), training->folder()), qPrintable(where));
        } else if (startStep < 0) {
            QVERIFY2(document->session() == before, qPrintable(where)); // no step before the model edits
        }
        // Each step brings the workspace of what it shows forward: the Training panel, the Patching panel, or
        // the model's views.
        if (step.showTrainingTab || step.training == LessonTraining::Start)
            QTRY_VERIFY2(training->isVisible(), qPrintable(where));
        if (step.patching) {
            QTRY_VERIFY2(patching->isVisible(), qPrintable(where));
            QTRY_VERIFY_WITH_TIMEOUT(!patching->isRunning(), 60000);
            QVERIFY2(patching->message().isEmpty(),
                     qPrintable(where + QStringLiteral(": ") + patching->message()));
            const PatchGridSlice& grid = patching->shownSlice(step.patching->method);
            QVERIFY2(grid.normalized.size() > 0 && grid.computedCells == grid.normalized.size(),
                     qPrintable(where));
        }
        if (step.head) { // the model's head on the step's tokens, the step's cell selected in it
            QTRY_VERIFY2(document->session().model && document->session().model->ids == step.head->ids &&
                             document->session().model->layer == step.head->layer &&
                             document->session().model->head == step.head->head,
                         qPrintable(where));
        }
        if (step.cell)
            QCOMPARE(std::pair(document->selectedQuery(), document->selectedKey()), *step.cell);
        if (step.showScoreTerms)
            QTRY_VERIFY2(child<QDockWidget>(window, "dockScoreTerms")->isVisible(), qPrintable(where));
        const std::optional<Workspace> workspace =
            step.showTrainingTab || step.training == LessonTraining::Start ? Workspace::Training
            : step.showPatching ? window.workspaces()->workspaceOf(patching)
                                : window.workspaces()->workspaceOf(
                                      player->navigator().widget(QString::fromStdString(step.view)));
        QVERIFY2(workspace, qPrintable(where)); // every step of the lesson shows something
        QTRY_VERIFY2(window.workspaces()->current() == *workspace, qPrintable(where));
        if (!step.view.empty())
            QTRY_VERIFY2(player->navigator().isShown(QString::fromStdString(step.view)), qPrintable(where));
        QVERIFY2(!notice->isVisible(), qPrintable(where + QStringLiteral(": ") + notice->text()));
        screenshot(window, QFileInfo(file).baseName() + QStringLiteral("-%1").arg(k + 1));
    }
    QVERIFY(startStep >= 0);
    QVERIFY(!next->isEnabled());

    // Back to the step before the start, then Next: the lesson's run is the one to look at, none starts.
    const QString folder = training->folder();
    while (player->step() > std::max(startStep - 1, 0))
        QTest::mouseClick(child<QPushButton>(window, "lessonBack"), Qt::LeftButton);
    if (startStep > 0)
        QTest::mouseClick(next, Qt::LeftButton);
    QCOMPARE(player->step(), startStep);
    QVERIFY(!training->isRunning());
    QCOMPARE(training->folder(), folder);
    QVERIFY(notice->isVisible());
    QVERIFY2(notice->text().contains(QStringLiteral("Start in the Training workspace")),
             qPrintable(notice->text()));
    screenshot(window, QFileInfo(file).baseName() + QStringLiteral("-notice"));
    QDir(folder).removeRecursively();
}

// An "open" step with no finished run says so and leaves the session; the run started from the Training
// workspace then opens its model at that step once it finishes.
void TestLessons::openStepWaitsForARun()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("open.lesson.json"));
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"({"title": "t", "steps": [{"text": "a", "training": "open", "view": "model"}]})");
    out.close();

    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* training = window.findChild<TrainingPanel*>();
    child<QSpinBox>(window, "trainingSteps")->setValue(20);
    const Session before = window.document()->session();
    QVERIFY2(window.lessonPanel()->startFile(path), qPrintable(window.lessonPanel()->lastError()));
    auto* notice = child<QLabel>(window, "lessonNotice");
    QVERIFY(notice->isVisible());
    QVERIFY2(notice->text().contains(QStringLiteral("no trained model to open yet")),
             qPrintable(notice->text()));
    QVERIFY2(notice->text().contains(QStringLiteral("press Start in the Training workspace")),
             qPrintable(notice->text()));
    QVERIFY(window.document()->session() == before);

    training->start();
    QVERIFY(training->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(opensFolder(window.document()->session(), training->folder()), 60000);
    QVERIFY(training->isFinished());
    QVERIFY(!notice->isVisible());
    QTRY_VERIFY(window.lessonPlayer()->navigator().isShown(QStringLiteral("model")));
    QDir(training->folder()).removeRecursively();
}

// A step's edit is one undo step, as a Controls panel edit is; undoing the first step brings back the session
// that was open before the lesson.
void TestLessons::stepEditIsOneUndoStep()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openSession(QStringLiteral("example:multihead")));
    Document* document = window.document();
    const Session before = document->session();
    QVERIFY(window.lessonPanel()->startBuiltin(QStringLiteral("01-love.lesson.json")));
    QCOMPARE(QString::fromStdString(document->session().title), QStringLiteral("I love AI"));
    QVERIFY(document->isModified());
    const Lesson lesson = loadBuiltinLesson("01-love.lesson.json", viewNames(window));
    std::size_t edited = 0;
    for (; !lesson.steps[edited].edit; ++edited)
        window.lessonPlayer()->next();
    QCOMPARE(document->session().temperature, *lesson.steps[edited].edit->temperature);
    QCOMPARE(document->undoStack()->count(), 2);
    document->undoStack()->undo();
    QCOMPARE(document->session().temperature, 1.0);
    document->undoStack()->undo();
    QVERIFY(document->session() == before);

    // A session opened during a lesson clears the history: Back then leaves the person's new edit alone,
    // though it sits where the step's command sat (index 1).
    window.lessonPlayer()->back();
    window.lessonPlayer()->next();
    QCOMPARE(document->undoStack()->index(), 1);
    QVERIFY(window.openSession(QStringLiteral("example:causal")));
    pushEdit(document, QStringLiteral("mine"), Document::Options, [](Session& s) { s.temperature = 3.0; });
    const Session mine = document->session();
    window.lessonPlayer()->back();
    QVERIFY(document->session() == mine);
    QCOMPARE(window.lessonPlayer()->step(), static_cast<int>(edited) - 1);
}

void TestLessons::malformedLessonRefused_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message"); // a part of the message (the file's path precedes it)
    const QByteArray first = R"({"text": "a", "session": "example:love", "view": "weights", "cell": [0, 1]})";
    QTest::newRow("bad JSON") << QByteArray(R"({"title": "t", "steps": [)")
                              << QStringLiteral("not valid JSON");
    QTest::newRow("unknown view") << QByteArray(R"({"title": "t", "steps": [)" + first +
                                                R"(, {"text": "b", "view": "nope"}]})")
                                  << QStringLiteral("step 2: view: unknown view \"nope\"");
    QTest::newRow("cell out of range") << QByteArray(R"({"title": "t", "steps": [)" + first +
                                                     R"(, {"text": "b", "view": "Q", "cell": [3, 0]}]})")
                                       << QStringLiteral("step 2: cell: [3, 0] is outside the 3 × 3 weights");
    QTest::newRow("unknown example")
        << QByteArray(R"({"title": "t", "steps": [{"text": "a", "session": "example:nope", "view": "Q"}]})")
        << QStringLiteral("step 1: session: example:nope: no built-in example by that name");
    QTest::newRow("first step without a session")
        << QByteArray(R"({"title": "t", "steps": [{"text": "a", "view": "Q"}]})")
        << QStringLiteral("step 1: the first step must load a session");
    QTest::newRow("bad edit") << QByteArray(R"({"title": "t", "steps": [)" + first +
                                            R"(, {"text": "b", "view": "Q", "edit": {"temperature": 0}}]})")
                              << QStringLiteral("step 2: edit.temperature: expected a number > 0");
    QTest::newRow("quiz answer out of range")
        << QByteArray(R"({"title": "t", "steps": [)" + first +
                      R"(, {"text": "b", "view": "Q", "quiz": {"question": "q", "options": ["x", "y"], )"
                      R"("answer": 2, "explanation": "e"}}]})")
        << QStringLiteral("step 2: quiz.answer: expected a whole number from 0 to 1");
}

// A refused file changes nothing: no lesson starts, the session and its undo history stay; the message names
// the file and the step, in the panel.
void TestLessons::malformedLessonRefused()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.lesson.json"));
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(text);
    out.close();

    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const Session before = window.document()->session();
    QVERIFY(!window.lessonPanel()->startFile(path));
    const QString error = window.lessonPanel()->lastError();
    QVERIFY2(error.startsWith(path + QStringLiteral(": ")), qPrintable(error));
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY(!window.lessonPlayer()->isActive());
    QVERIFY(window.document()->session() == before);
    QCOMPARE(window.document()->undoStack()->count(), 0);
    QVERIFY(child<QLabel>(window, "lessonQuizFeedback")->text().contains(QStringLiteral("Cannot play")));
}

// The quiz of the Query-Key-Value Mechanism tutorial (docs/references.md): a wrong pick says so and names the
// answer, the right one is confirmed; both explain.
void TestLessons::quizChecksAnswers()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QString file = QStringLiteral("07-cross-attention.lesson.json");
    const Lesson lesson = loadBuiltinLesson(file.toStdString(), viewNames(window));
    QVERIFY(window.lessonPanel()->startBuiltin(file));
    auto* feedback = child<QLabel>(window, "lessonQuizFeedback");
    int questions = 0;
    for (std::size_t k = 0; k < lesson.steps.size(); ++k) {
        if (k > 0)
            window.lessonPlayer()->next();
        const std::optional<LessonQuiz>& quiz = lesson.steps[k].quiz;
        if (!quiz) {
            QVERIFY(!child<QWidget>(window, "lessonQuiz")->isVisible());
            continue;
        }
        ++questions;
        QVERIFY(child<QWidget>(window, "lessonQuiz")->isVisible());
        QVERIFY(!feedback->isVisible());
        QCOMPARE(child<QLabel>(window, "lessonQuestion")->text(), QString::fromStdString(quiz->question));
        const std::size_t wrong = (quiz->answer + 1) % quiz->options.size();
        QTest::mouseClick(
            child<QRadioButton>(window, qPrintable(QStringLiteral("lessonOption%1").arg(wrong))),
            Qt::LeftButton);
        QVERIFY(feedback->isVisible());
        QCOMPARE(feedback->property("correct").toBool(), false);
        QVERIFY(feedback->text().contains(QStringLiteral("Not quite")));
        QVERIFY(
            feedback->text().contains(QString::fromStdString(quiz->options[quiz->answer]).toHtmlEscaped()));
        QVERIFY(feedback->text().contains(QString::fromStdString(quiz->explanation)));
        QTest::mouseClick(
            child<QRadioButton>(window, qPrintable(QStringLiteral("lessonOption%1").arg(quiz->answer))),
            Qt::LeftButton);
        QCOMPARE(feedback->property("correct").toBool(), true);
        QVERIFY(feedback->text().startsWith(QStringLiteral("<b>Correct.</b>")));
    }
    QCOMPARE(questions, 8); // the article's eight questions, the lesson's last steps
    QVERIFY(lesson.steps.back().quiz);
}

QKV_TEST_MAIN(TestLessons)
#include "tst_lessons.moc"
