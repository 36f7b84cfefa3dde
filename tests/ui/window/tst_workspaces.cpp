// SPDX-License-Identifier: GPL-3.0-or-later
// The window's workspaces (Head, Model, Training): switching shows each one's docks and hides the others', a
// workspace's layout survives a switch and a restart, a view reached from the View menu, the figure navigator
// or a lesson step brings its workspace forward, and at 1280 × 720 every tab name is written in full.

#include "Document.h"
#include "FigureNavigator.h"
#include "LessonPlayer.h"
#include "Lessons.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "WindowGeometry.h"
#include "Workspaces.h"

#include "TestMain.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QSettings>
#include <QStandardPaths>
#include <QTabBar>
#include <QToolBar>
#include <QToolButton>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

Q_DECLARE_METATYPE(qkv::ui::Workspace)

namespace {

template <typename T> T* child(const QWidget& window, const QString& name)
{
    T* widget = window.findChild<T*>(name);
    if (!widget)
        qFatal("no child named %s", qPrintable(name));
    return widget;
}

QAction* switchAction(const MainWindow& window, Workspace workspace)
{
    return child<QAction>(window, QStringLiteral("workspaceAction_") + Workspaces::id(workspace));
}

QAction* viewAction(const MainWindow& window, const char* dock)
{
    return child<QAction>(window, QStringLiteral("viewAction_") + QLatin1String(dock));
}

QStringList visibleDocks(const QMainWindow& page)
{
    QStringList names;
    for (const QDockWidget* dock : page.findChildren<QDockWidget*>())
        if (dock->isVisible())
            names << dock->objectName();
    names.sort();
    return names;
}

// What a person sees of a workspace's layout: each shown dock, where it sits and what it is tabbed with.
QStringList layoutOf(QMainWindow& page)
{
    QStringList layout;
    for (QDockWidget* dock : page.findChildren<QDockWidget*>())
        layout << QStringLiteral("%1 hidden=%2 area=%3 tabs=%4")
                      .arg(dock->objectName())
                      .arg(dock->isHidden())
                      .arg(page.dockWidgetArea(dock))
                      .arg(page.tabifiedDockWidgets(dock).size());
    layout.sort();
    return layout;
}

std::vector<std::string> viewNames(const MainWindow& window)
{
    std::vector<std::string> names;
    for (const QString& name : window.lessonPlayer()->viewNames())
        names.push_back(name.toStdString());
    return names;
}

} // namespace

class TestWorkspaces : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void init() { QSettings().clear(); } // each window starts from the default layouts
    void switchingShowsTheWorkspacesDocks();
    void shortcutsAndModeBarSwitch();
    void layoutSurvivesASwitch();
    void layoutsSurviveARestart();
    void restoreDefaultLayoutShowsEveryDock();
    void viewMenuSwitchesWorkspace();
    void raisedDockSwitchesWorkspace();
    void navigatorSwitchesWorkspace();
    void lessonStepSwitchesWorkspace();
    void noTabNameElided_data();
    void noTabNameElided();
};

void TestWorkspaces::switchingShowsTheWorkspacesDocks()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    QCOMPARE(workspaces->current(), Workspace::Head);
    const auto expected = [](Workspace workspace) {
        const QString names =
            workspace == Workspace::Head
                ? QStringLiteral(
                      "dockCircuits dockContext dockControls dockEmbeddings dockExperiments "
                      "dockHeads dockMask dockMath dockNormalizers dockQueryKeySpace dockScoreTerms "
                      "dockShape dockThreeSpaces dockValueSpace dockWeights")
            : workspace == Workspace::Model
                ? QStringLiteral("dockHeadScores dockLogitLens dockModel dockPatching dockPrediction")
                : QStringLiteral("dockTraining");
        return names.split(QLatin1Char(' '));
    };
    for (Workspace workspace :
         {Workspace::Model, Workspace::Training, Workspace::Head, Workspace::Training}) {
        switchAction(window, workspace)->trigger();
        QCOMPARE(workspaces->current(), workspace);
        for (Workspace other : Workspaces::all()) {
            QMainWindow* page = workspaces->page(other);
            const QString where =
                Workspaces::id(workspace) + QStringLiteral(" shown, ") + Workspaces::id(other);
            QCOMPARE(page->isVisible(), other == workspace);
            // A dock behind another's tab still counts as shown by its main window; hidden pages show none.
            QCOMPARE(visibleDocks(*page), other == workspace ? expected(other) : QStringList());
            QVERIFY2(switchAction(window, other)->isChecked() == (other == workspace), qPrintable(where));
        }
    }
    // The Training panel has the whole window's room, less the menus, the tool bars and the status bar.
    auto* training = child<QDockWidget>(window, QStringLiteral("dockTraining"));
    QVERIFY2(training->height() > window.height() * 3 / 4, qPrintable(QString::number(training->height())));
    QVERIFY2(training->width() > window.width() * 3 / 4, qPrintable(QString::number(training->width())));
}

void TestWorkspaces::shortcutsAndModeBarSwitch()
{
    MainWindow window;
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    Workspaces* workspaces = window.workspaces();
    const std::pair<Qt::Key, Workspace> keys[] = {
        {Qt::Key_2, Workspace::Model}, {Qt::Key_3, Workspace::Training}, {Qt::Key_1, Workspace::Head}};
    for (const auto& [key, workspace] : keys) {
        QTest::keyClick(&window, key, Qt::ControlModifier);
        QCOMPARE(workspaces->current(), workspace);
    }
    auto* bar = child<QToolBar>(window, QStringLiteral("workspaceBar"));
    QCOMPARE(window.toolBarArea(bar), Qt::LeftToolBarArea);
    QCOMPARE(bar->orientation(), Qt::Vertical);
    for (Workspace workspace : {Workspace::Training, Workspace::Model, Workspace::Head}) {
        auto* button = qobject_cast<QToolButton*>(bar->widgetForAction(switchAction(window, workspace)));
        QVERIFY(button && button->isVisible());
        QCOMPARE(button->text(), Workspaces::title(workspace));
        QVERIFY(!button->icon().isNull());
        QTest::mouseClick(button, Qt::LeftButton);
        QCOMPARE(workspaces->current(), workspace);
        QVERIFY(button->isChecked());
    }
}

void TestWorkspaces::layoutSurvivesASwitch()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    workspaces->setCurrent(Workspace::Model);
    QMainWindow* model = workspaces->page(Workspace::Model);
    auto* prediction = child<QDockWidget>(window, QStringLiteral("dockPrediction"));
    auto* headScores = child<QDockWidget>(window, QStringLiteral("dockHeadScores"));
    model->tabifyDockWidget(headScores, prediction);
    headScores->raise();
    const QStringList before = layoutOf(*model);
    QCOMPARE(model->tabifiedDockWidgets(prediction).size(), 2); // Head Scores and Patching

    workspaces->setCurrent(Workspace::Head);
    workspaces->setCurrent(Workspace::Training);
    workspaces->setCurrent(Workspace::Model);
    QCOMPARE(layoutOf(*model), before);
    QTRY_VERIFY(headScores->isVisible() && !headScores->visibleRegion().isEmpty());
    QVERIFY(prediction->visibleRegion().isEmpty()); // still behind Head Scores' tab
}

void TestWorkspaces::layoutsSurviveARestart()
{
    QStringList modelLayout;
    QStringList headLayout;
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        Workspaces* workspaces = window.workspaces();
        QMainWindow* head = workspaces->page(Workspace::Head);
        QMainWindow* model = workspaces->page(Workspace::Model);
        child<QDockWidget>(window, QStringLiteral("dockMath"))->hide();
        model->addDockWidget(Qt::BottomDockWidgetArea,
                             child<QDockWidget>(window, QStringLiteral("dockPrediction")));
        child<QDockWidget>(window, QStringLiteral("dockHeadScores"))->hide();
        workspaces->setCurrent(Workspace::Training);
        headLayout = layoutOf(*head);
        modelLayout = layoutOf(*model);
        QVERIFY(window.close()); // nothing unsaved: closing remembers the window
    }
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    QCOMPARE(workspaces->current(), Workspace::Training);
    QCOMPARE(layoutOf(*workspaces->page(Workspace::Head)), headLayout);
    QCOMPARE(layoutOf(*workspaces->page(Workspace::Model)), modelLayout);
    QCOMPARE(workspaces->page(Workspace::Model)
                 ->dockWidgetArea(child<QDockWidget>(window, QStringLiteral("dockPrediction"))),
             Qt::BottomDockWidgetArea);
    QVERIFY(child<QDockWidget>(window, QStringLiteral("dockMath"))->isHidden());
    QVERIFY(child<QDockWidget>(window, QStringLiteral("dockHeadScores"))->isHidden());
}

void TestWorkspaces::restoreDefaultLayoutShowsEveryDock()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    QMainWindow* model = workspaces->page(Workspace::Model);
    const QStringList defaultLayout = layoutOf(*model);
    child<QDockWidget>(window, QStringLiteral("dockHeadScores"))->hide();
    model->addDockWidget(Qt::BottomDockWidgetArea,
                         child<QDockWidget>(window, QStringLiteral("dockPrediction")));
    child<QDockWidget>(window, QStringLiteral("dockMath"))->hide();
    QVERIFY(layoutOf(*model) != defaultLayout);
    QAction* reset = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
        if (action->text() == QLatin1String("&Restore Default Layout"))
            reset = action;
    QVERIFY(reset);
    reset->trigger();
    QCOMPARE(layoutOf(*model), defaultLayout);
    QVERIFY(!child<QDockWidget>(window, QStringLiteral("dockMath"))->isHidden());
    QCOMPARE(workspaces->current(), Workspace::Head); // resetting the layouts does not move the person
}

// View ▸ lists every dock; its entry shows the dock in its workspace (switching to it), and closes it only
// from its own workspace.
void TestWorkspaces::viewMenuSwitchesWorkspace()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    auto* prediction = child<QDockWidget>(window, QStringLiteral("dockPrediction"));
    QAction* showPrediction = viewAction(window, "dockPrediction");
    QVERIFY(showPrediction->isChecked()); // shown in its workspace, though not on screen now
    showPrediction->trigger();            // a checked entry from elsewhere: shows, does not close
    QCOMPARE(workspaces->current(), Workspace::Model);
    QTRY_VERIFY(prediction->isVisible() && !prediction->visibleRegion().isEmpty());
    QVERIFY(showPrediction->isChecked());

    showPrediction->trigger(); // now from its own workspace: closes it
    QVERIFY(prediction->isHidden());
    QVERIFY(!showPrediction->isChecked());
    QAction* showHeads = viewAction(window, "dockHeads");
    showHeads->trigger();
    QCOMPARE(workspaces->current(), Workspace::Head);
    auto* heads = child<QDockWidget>(window, QStringLiteral("dockHeads"));
    QTRY_VERIFY(heads->isVisible() && !heads->visibleRegion().isEmpty());
    showPrediction->trigger(); // unchecked: shows it again, in its workspace
    QCOMPARE(workspaces->current(), Workspace::Model);
    QVERIFY(prediction->isVisible());
    QVERIFY(showPrediction->isChecked());
}

// Whoever shows and raises a dock (a test, a panel, a lesson) finds it on screen.
void TestWorkspaces::raisedDockSwitchesWorkspace()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    for (const char* name : {"dockTraining", "dockNormalizers", "dockHeadScores", "dockMask"}) {
        auto* dock = child<QDockWidget>(window, QLatin1String(name));
        dock->show();
        dock->raise();
        QCOMPARE(workspaces->current(), workspaces->workspaceOf(dock).value());
        QTRY_VERIFY2(dock->isVisible() && !dock->visibleRegion().isEmpty(), name);
    }
}

void TestWorkspaces::navigatorSwitchesWorkspace()
{
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    const FigureNavigator& navigator = window.lessonPlayer()->navigator();
    QList<Workspace> reached;
    // Twice round, so that every view is reached from a workspace other than its own.
    for (int round = 0; round < 2; ++round)
        for (const QString& name : navigator.names()) {
            QVERIFY2(navigator.show(name), qPrintable(name));
            const std::optional<Workspace> workspace = workspaces->workspaceOf(navigator.widget(name));
            QVERIFY2(workspace, qPrintable(name));
            QCOMPARE(workspaces->current(), *workspace);
            QTRY_VERIFY2(navigator.isShown(name), qPrintable(name));
            if (!reached.contains(*workspace))
                reached << *workspace;
        }
    QCOMPARE(reached.size(), 2); // the head's views and the model's; the Training panel is no figure
}

// A lesson's steps name views in the Head and Model workspaces and the Training panel; each step shows its
// own.
void TestWorkspaces::lessonStepSwitchesWorkspace()
{
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Workspaces* workspaces = window.workspaces();
    LessonPlayer* player = window.lessonPlayer();
    const std::string text = R"({"title": "Across workspaces", "steps": [
        {"text": "The model", "session": "example:love", "view": "prediction"},
        {"text": "The weights", "view": "weights"},
        {"text": "Training", "dock": "training"},
        {"text": "The spaces", "view": "spaces"}]})";
    player->start(parseLesson("across.lesson.json", text, viewNames(window)));
    const Workspace expected[] = {Workspace::Model, Workspace::Head, Workspace::Training, Workspace::Head};
    const char* views[] = {"prediction", "weights", nullptr, "spaces"};
    for (int step = 0; step < 4; ++step) {
        if (step > 0)
            player->next();
        QCOMPARE(player->step(), step);
        QCOMPARE(workspaces->current(), expected[step]);
        if (views[step])
            QTRY_VERIFY2(player->navigator().isShown(QLatin1String(views[step])), views[step]);
        else
            QTRY_VERIFY(child<QDockWidget>(window, QStringLiteral("dockTraining"))->isVisible());
    }
    player->back();
    QCOMPARE(workspaces->current(), Workspace::Training);
}

void TestWorkspaces::noTabNameElided_data()
{
    QTest::addColumn<QSize>("size");
    QTest::addColumn<Workspace>("workspace");
    const QSize opened = defaultWindowGeometry(QRect(0, 0, 1280, 720)).size();
    for (Workspace workspace : Workspaces::all()) {
        QTest::addRow("%s, opened on 1280x720", qPrintable(Workspaces::id(workspace))) << opened << workspace;
        QTest::addRow("%s, 1280x720", qPrintable(Workspaces::id(workspace))) << QSize(1280, 720) << workspace;
    }
    // 1920 × 1080 at a scale factor of 2, opened at 90 %: the docks' tabs (the heatmaps' tabs scroll).
    QTest::addRow("head, docks at 864x486") << QSize(864, 486) << Workspace::Head;
}

// Every tab bar on screen (the docks' tabs, the experiments', the heatmaps') writes its names in full and
// needs no scroll buttons.
void TestWorkspaces::noTabNameElided()
{
    QFETCH(QSize, size);
    QFETCH(Workspace, workspace);
    MainWindow window;
    QVERIFY(window.openSession(QString()));
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.workspaces()->setCurrent(workspace);
    QTRY_COMPARE(window.size(), size);
    QCoreApplication::processEvents(); // the docks' tab bars are laid out once their page is shown
    int checked = 0;
    for (const QTabBar* bar : window.workspaces()->page(workspace)->findChildren<QTabBar*>()) {
        const bool dockTabs = bar->parentWidget() == window.workspaces()->page(workspace);
        if (!bar->isVisible() || (size.width() < 1000 && !dockTabs))
            continue;
        for (const QToolButton* scroll : bar->findChildren<QToolButton*>())
            QVERIFY2(!scroll->isVisible(), qPrintable(bar->tabText(0)));
        for (int tab = 0; tab < bar->count(); ++tab) {
            if (!bar->isTabVisible(tab))
                continue;
            const QString name = bar->tabText(tab);
            const int needed = bar->fontMetrics().horizontalAdvance(name);
            QVERIFY2(bar->tabRect(tab).width() >= needed, qPrintable(QStringLiteral("\"%1\": %2 px for %3")
                                                                         .arg(name)
                                                                         .arg(bar->tabRect(tab).width())
                                                                         .arg(needed)));
            ++checked;
        }
    }
    if (workspace == Workspace::Head && size.width() >= 1000)
        QVERIFY2(checked >= 12, qPrintable(QString::number(checked))); // docks, experiments, heatmaps
}

QKV_TEST_MAIN(TestWorkspaces)
#include "tst_workspaces.moc"
