// SPDX-License-Identifier: GPL-3.0-or-later
// The assembled window: opening sessions, title, status bar, import/export, save and reopen.

#include "AboutText.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "ElidedLabel.h"
#include "Examples.h"
#include "Heatmap.h"
#include "Initializers.h"
#include "MainWindow.h"
#include "MaskEditor.h"
#include "MaskModel.h"
#include "MatrixFile.h"
#include "PipelineView.h"
#include "Preferences.h"
#include "RasterFills.h"
#include "ResourceLimits.h"
#include "ResultViews.h"
#include "RowKernels.h"
#include "SessionEdits.h"
#include "SessionFile.h"
#include "SettingsDialog.h"
#include "ShortcutsDialog.h"
#include "UserGuide.h"
#include "ViewHelp.h"
#include "WindowGeometry.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TestSessions.h"

#include <qcustomplot.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QScreen>
#include <QSemaphore>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QThreadPool>
#include <QToolBar>
#include <QToolButton>
#include <QTreeWidget>
#include <QUndoStack>
#include <QWhatsThis>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <memory>

using namespace qkv;
using namespace qkv::ui;

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void opensTheDefaultExample();
    void opensASessionGivenOnTheCommandLine();
    void badFileKeepsTheOpenSession();
    void titleShowsUnsavedChanges();
    void statusBarShowsShapes();
    void shapeLabelElidesWhenNarrow();
    void docksCanBeClosedAndRestored();
    void exportAndImportMatrices_data();
    void exportAndImportMatrices();
    void importRefusesAWrongShape();
    void biasesAreEditedBesideTheirMatrices();
    void saveCloseReopen();
    void stopButtonAndEscapeStopAComputation();
    void backgroundComputationLaysOutNoDock();
    void settingsDialogSetsTheMemoryLimit();
    void windowOpensInsideTheScreen();
    void minimumSizeFitsAProjector();
    void everyTokenNamedAtThreeTokens();
    void pipelineWritesEveryValueAtThreeTokens();
    void rememberedGeometryMustFit_data();
    void rememberedGeometryMustFit();
    void oversizedRememberedGeometryIsNotRestored();
    void presentationTwiceRestoresTheDocks();
    void darkThemeMakesPlotsDark();
    void shortcutListHasEveryShortcut();
    void maskPaintedInTheWindow_data();
    void maskPaintedInTheWindow();
    void everyViewSaysWhatItShows();
    void userGuideOpensFromHelp();
    void aboutNamesTheVersionAndLibraries();
};

void TestMainWindow::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true); // settings go to a test location
    QCoreApplication::setOrganizationName(QStringLiteral("QKV Lab Tests"));
    QSettings().clear(); // a window state saved by an earlier run would change the dock layout of this one
    // As the program does (app/main.cpp): HeldThreadPool below relies on painting never waiting for the pool.
    qkv::ui::RasterFills::keepOnPaintingThread();
}

void TestMainWindow::opensTheDefaultExample()
{
    MainWindow window;
    QVERIFY(window.openSession(QString()));
    QCOMPARE(window.document()->session(), loadExample("love"));
    QVERIFY(window.windowTitle().startsWith(QStringLiteral("I love AI")));
    for (const char* name :
         {"dockEmbeddings", "dockContext", "dockWeights", "dockControls", "dockShape", "dockMask"})
        QVERIFY2(window.findChild<QDockWidget*>(QLatin1String(name)), name);
}

void TestMainWindow::opensASessionGivenOnTheCommandLine()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("cat.qkv.json"));
    saveSession(loadExample("cat-sat"), path.toStdString());
    MainWindow window;
    QVERIFY(window.openSession(path));
    QCOMPARE(window.document()->session(), loadExample("cat-sat"));
    QVERIFY(window.windowTitle().startsWith(QStringLiteral("cat.qkv.json")));
}

void TestMainWindow::badFileKeepsTheOpenSession()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.qkv.json"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{ not json");
    file.close();
    MainWindow window;
    window.openSession(QStringLiteral("example:translation"));
    // The message box would block: close it as soon as it appears.
    QTimer::singleShot(0, [] {
        if (QWidget* box = QApplication::activeModalWidget())
            box->close();
    });
    QVERIFY(!window.openSession(path));
    QCOMPARE(window.document()->session(), loadExample("translation"));
}

void TestMainWindow::titleShowsUnsavedChanges()
{
    MainWindow window;
    QVERIFY(!window.isWindowModified());
    window.document()->push(makeCellCommand(window.document(), {MatrixKind::W_Q, 0}, 0, 0, 3.0));
    QVERIFY(window.isWindowModified());
    QVERIFY(window.windowTitle().contains(QStringLiteral("[*]")));
    window.document()->undoStack()->undo();
    QVERIFY(!window.isWindowModified());
}

void TestMainWindow::shapeLabelElidesWhenNarrow()
{
    const QString full =
        QStringLiteral("n = 1024   m = 1024   d_model = 64   d_k = 32   d_v = 32   heads = 1");
    ElidedLabel label;
    label.setFullText(full);
    QCOMPARE(label.text(), full); // not shown yet: no width to fit
    label.resize(label.sizeHint());
    label.show();
    QVERIFY(QTest::qWaitForWindowExposed(&label));
    QCOMPARE(label.text(), full);
    QVERIFY(label.toolTip().isEmpty());

    label.resize(label.sizeHint().width() / 2, label.height());
    QVERIFY2(label.text().endsWith(QChar(0x2026)) && label.text().size() < full.size(),
             qPrintable(label.text()));
    QVERIFY(full.startsWith(label.text().chopped(1)));
    QCOMPARE(label.toolTip(), full);
    QVERIFY(label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width());

    label.resize(label.sizeHint());
    QCOMPARE(label.text(), full);
    QVERIFY(label.toolTip().isEmpty());
}

void TestMainWindow::statusBarShowsShapes()
{
    MainWindow window;
    window.openSession(QStringLiteral("example:translation"));
    const auto* shapes = window.findChild<QLabel*>(QStringLiteral("shapeLabel"));
    QVERIFY(shapes);
    QVERIFY2(shapes->text().contains(QStringLiteral("n = 3")) &&
                 shapes->text().contains(QStringLiteral("m = 4")),
             qPrintable(shapes->text()));
    const auto* time = window.findChild<QLabel*>(QStringLiteral("computeTimeLabel"));
    QVERIFY(time->text().contains(QStringLiteral("ms")));
    QVERIFY(!time->text().contains(QStringLiteral("float32")));

    // The precision the result was computed in, through the Attention panel's control.
    auto* precision = window.findChild<QComboBox*>(QStringLiteral("precision"));
    QVERIFY(precision);
    precision->setCurrentIndex(1);
    window.document()->waitForResult();
    QVERIFY2(time->text().startsWith(QStringLiteral("computed in float32 in ")), qPrintable(time->text()));
    QVERIFY(time->toolTip().contains(QStringLiteral("float32")));
    window.document()->undoStack()->undo();
    window.document()->waitForResult();
    QVERIFY2(!time->text().contains(QStringLiteral("float32")), qPrintable(time->text()));
}

void TestMainWindow::docksCanBeClosedAndRestored()
{
    MainWindow window;
    window.show();
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockControls"));
    dock->close();
    QVERIFY(!dock->isVisible());
    const auto actions = window.findChildren<QAction*>();
    const auto restore = std::find_if(actions.begin(), actions.end(), [](QAction* a) {
        return a->text().remove(QLatin1Char('&')) == QStringLiteral("Restore Default Layout");
    });
    QVERIFY(restore != actions.end());
    (*restore)->trigger();
    QVERIFY(dock->isVisible());
}

void TestMainWindow::exportAndImportMatrices_data()
{
    QTest::addColumn<QString>("extension");
    QTest::newRow("csv") << QStringLiteral("csv");
    QTest::newRow("npy") << QStringLiteral("npy");
}

void TestMainWindow::exportAndImportMatrices()
{
    QFETCH(QString, extension);
    QTemporaryDir dir;
    MainWindow window;
    QVERIFY(window.exportableMatrices().contains(QStringLiteral("weights (head 1)")));
    QString error;
    const QString weightsPath = dir.filePath(QStringLiteral("weights.") + extension);
    QVERIFY2(window.exportMatrix(QStringLiteral("weights (head 1)"), weightsPath, &error), qPrintable(error));
    QCOMPARE(loadMatrixFile(weightsPath.toStdString()), window.document()->result()->heads[0].weights);

    // Import a changed X into the selected editor (X by default) as one undo step.
    Matrix x = window.document()->session().X;
    x(0, 0) = 5.5;
    const QString xPath = dir.filePath(QStringLiteral("x.") + extension);
    saveMatrixFile(x, xPath.toStdString());
    QCOMPARE(window.selectedMatrix().kind, MatrixKind::X);
    QVERIFY2(window.importMatrix(xPath, &error), qPrintable(error));
    QCOMPARE(window.document()->session().X, x);
    window.document()->undoStack()->undo();
    QCOMPARE(window.document()->session().X(0, 0), 1.0);
}

void TestMainWindow::importRefusesAWrongShape()
{
    QTemporaryDir dir;
    MainWindow window;
    const QString path = dir.filePath(QStringLiteral("small.csv"));
    saveMatrixFile(Matrix::Ones(2, 2), path.toStdString());
    QString error;
    QVERIFY(!window.importMatrix(path, &error));
    QVERIFY2(error.contains(QStringLiteral("3 × 4")), qPrintable(error));
    QCOMPARE(window.document()->session(), loadExample("love"));
    QVERIFY(!window.importMatrix(dir.filePath(QStringLiteral("missing.npy")), &error));
    QVERIFY(error.contains(QStringLiteral("missing.npy")));
}

// The Dimensions panel's Biases box adds zero biases (one undo step); their tabs appear in the Weights dock,
// and an edit of b_Q moves Q by exactly that amount.
void TestMainWindow::biasesAreEditedBesideTheirMatrices()
{
    MainWindow window;
    auto* tabs = window.findChild<QTabWidget*>(QStringLiteral("weightTabs"));
    QVERIFY(tabs);
    const auto tabShown = [tabs](const QString& name) {
        for (int tab = 0; tab < tabs->count(); ++tab)
            if (tabs->tabText(tab) == name)
                return tabs->isTabVisible(tab);
        return false;
    };
    QVERIFY(!tabShown(QStringLiteral("b_Q")));
    auto* biases = window.findChild<QCheckBox*>(QStringLiteral("biases"));
    QVERIFY(biases);
    const Matrix qBefore = window.document()->result()->heads[0].Q;
    biases->setChecked(true);
    QVERIFY(tabShown(QStringLiteral("b_Q")) && tabShown(QStringLiteral("b_K")) &&
            tabShown(QStringLiteral("b_V")));
    QVERIFY(!tabShown(QStringLiteral("b_O"))); // no W_O in this example
    QVERIFY(window.exportableMatrices().contains(QStringLiteral("b_Q (head 1)")));

    window.document()->push(makeCellCommand(window.document(), {MatrixKind::b_Q, 0}, 0, 1, 0.25));
    window.document()->waitForResult();
    Matrix expected = qBefore;
    expected.col(1).array() += 0.25;
    QVERIFY(window.document()->result()->heads[0].Q.isApprox(expected, 1e-15));
    window.document()->undoStack()->undo();
    window.document()->undoStack()->undo();
    QVERIFY(!biases->isChecked());
    QVERIFY(!tabShown(QStringLiteral("b_Q")));
    QCOMPARE(window.document()->session(), loadExample("love"));
}

void TestMainWindow::saveCloseReopen()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("session.qkv.json"));
    Session saved;
    {
        MainWindow window;
        window.document()->push(makeCellCommand(window.document(), {MatrixKind::W_Q, 0}, 0, 0, 3.0));
        QString error;
        QVERIFY(window.document()->saveAs(path, &error));
        saved = window.document()->session();
        QVERIFY(window.close());
    }
    MainWindow reopened;
    QVERIFY(reopened.openSession(path));
    QCOMPARE(reopened.document()->session(), saved);
}

/// Keeps every thread of the global thread pool waiting until release() (or the end of its scope): a
/// background computation the document starts meanwhile (it runs on that pool) cannot begin, so the window
/// stays busy for as long as a test needs, on any machine. Painting the window never waits for the pool
/// (initTestCase keeps Qt's fills on the painting thread, as the program does).
class HeldThreadPool {
public:
    HeldThreadPool() : m_state(std::make_shared<State>())
    {
        QThreadPool* pool = QThreadPool::globalInstance();
        m_threads = pool->maxThreadCount();
        for (int i = 0; i < m_threads; ++i)
            pool->start([state = m_state] {
                state->holding.release();
                state->gate.acquire();
            });
        m_state->holding.acquire(m_threads); // every thread of the pool is here
    }
    ~HeldThreadPool() { release(); }
    HeldThreadPool(const HeldThreadPool&) = delete;
    HeldThreadPool& operator=(const HeldThreadPool&) = delete;

    void release()
    {
        m_state->gate.release(m_threads);
        m_threads = 0;
    }

private:
    struct State {
        QSemaphore holding;
        QSemaphore gate;
    };
    std::shared_ptr<State> m_state; // shared with the waiting tasks, which may outlive this
    int m_threads = 0;
};

void TestMainWindow::stopButtonAndEscapeStopAComputation()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* stop = window.findChild<QToolButton*>(QStringLiteral("stopButton"));
    auto* progress = window.findChild<QProgressBar*>(QStringLiteral("computeProgress"));
    QVERIFY(stop && progress);
    QVERIFY(!stop->isVisible()); // nothing computing
    // The computation waits until Escape has been pressed, however fast the machine.
    HeldThreadPool held;
    window.document()->reset(test::largeLoveSession(300, 2));
    QVERIFY(window.document()->isComputing());
    QVERIFY(!stop->isVisible()); // not in the first moment: a short computation shows nothing
    QTRY_VERIFY_WITH_TIMEOUT(stop->isVisible(), 5000);
    QVERIFY(progress->isVisible());
    QTest::keyClick(&window, Qt::Key_Escape);
    held.release();
    QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
    QVERIFY2(window.document()->resultError().startsWith(QStringLiteral("Stopped")),
             qPrintable(window.document()->resultError()));
    QVERIFY(!stop->isVisible());
    QVERIFY(!progress->isVisible());
    const auto* time = window.findChild<QLabel*>(QStringLiteral("computeTimeLabel"));
    QVERIFY2(!time->text().contains(QStringLiteral("computing")), qPrintable(time->text()));
}

/// Counts the layout requests a widget receives.
class LayoutRequests : public QObject {
public:
    int count = 0;
    bool eventFilter(QObject*, QEvent* event) override
    {
        count += event->type() == QEvent::LayoutRequest ? 1 : 0;
        return false;
    }
};

// The busy widgets shown and hidden for a long computation are laid out inside their own box: a relayout of
// the whole window (every dock, with an animation object per dock) cost each edit of a 256-token session a
// few milliseconds. For a short computation they are not shown at all.
void TestMainWindow::backgroundComputationLaysOutNoDock()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* progress = window.findChild<QProgressBar*>(QStringLiteral("computeProgress"));
    LayoutRequests requests;
    window.installEventFilter(&requests);
    // A short computation in the background (about a millisecond): no busy widgets. The first edit enables
    // Undo, and its tool button asks for a layout; the second is any edit.
    window.document()->reset(test::largeLoveSession(300, 2));
    for (const double value : {0.5, 0.25}) {
        QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
        QCoreApplication::processEvents(); // the layouts the session or the first edit asked for
        requests.count = 0;
        window.document()->push(makeCellCommand(window.document(), {MatrixKind::W_Q, 0}, 0, 0, value));
        QVERIFY(window.document()->isComputing()); // in the background
    }
    QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
    QCoreApplication::processEvents();
    QVERIFY(progress->isHidden());
    QCOMPARE(requests.count, 0);

    // A long one: the busy widgets show, at once here, and hide in their box. The computation is held until
    // they have shown, however fast the machine.
    window.setBusyDelay(0);
    window.document()->reset(test::largeLoveSession(300, 3));
    for (const double value : {0.5, 0.25}) { // again the first edit enables Undo
        QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
        QCoreApplication::processEvents();
        requests.count = 0;
        HeldThreadPool held;
        window.document()->push(makeCellCommand(window.document(), {MatrixKind::W_Q, 0}, 0, 0, value));
        QVERIFY(window.document()->isComputing());
        QTRY_VERIFY_WITH_TIMEOUT(progress->isVisible(), 5000);
        held.release();
        QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
    }
    QCoreApplication::processEvents();
    QVERIFY(progress->isHidden());
    QCOMPARE(requests.count, 0);
}

void TestMainWindow::settingsDialogSetsTheMemoryLimit()
{
    SettingsDialog dialog;
    auto* memory = dialog.findChild<QDoubleSpinBox*>(QStringLiteral("memoryLimit"));
    QVERIFY(memory);
    const auto shown = static_cast<double>(dialog.memoryLimitBytes());
    QKV_COMPARE_NEAR(shown, static_cast<double>(Preferences::memoryLimitBytes()), 0.05e9); // 0.1 GB steps
    memory->setValue(2.5);
    dialog.store();
    QCOMPARE(Preferences::memoryLimitBytes(), quint64(2500000000));
    Preferences::setMemoryLimitBytes(defaultMemoryLimit());
    QCOMPARE(Preferences::memoryLimitBytes(), defaultMemoryLimit());
}

void TestMainWindow::windowOpensInsideTheScreen()
{
    Preferences::setWindowGeometry({});
    MainWindow window;
    const QRect available = window.screen()->availableGeometry();
    const QRect expected = defaultWindowGeometry(available);
    // 90 % of the screen, centred, unless the minimum size asks for more.
    QCOMPARE(window.width(), std::max(expected.width(), window.minimumSizeHint().width()));
    QCOMPARE(window.height(), std::max(expected.height(), window.minimumSizeHint().height()));
    QCOMPARE(defaultWindowGeometry(QRect(0, 0, 1280, 720)), QRect(64, 36, 1152, 648));
    QCOMPARE(defaultWindowGeometry(QRect(0, 0, 960, 540)).size(), QSize(864, 486)); // 1920×1080 at scale 2
}

void TestMainWindow::minimumSizeFitsAProjector()
{
    MainWindow window;
    QVERIFY(window.openSession(QString()));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QSize minimum = window.minimumSizeHint();
    QVERIFY2(minimum.width() <= maximumMinimumWindowSize.width() &&
                 minimum.height() <= maximumMinimumWindowSize.height(),
             qPrintable(QStringLiteral("%1 x %2").arg(minimum.width()).arg(minimum.height())));
    window.resize(maximumMinimumWindowSize);
    QTRY_COMPARE(window.size(), maximumMinimumWindowSize);
    for (const QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (dock->isVisible() && !dock->visibleRegion().isEmpty()) {
            QVERIFY2(dock->width() >= dock->minimumSizeHint().width(), qPrintable(dock->objectName()));
            QVERIFY2(dock->height() >= dock->minimumSizeHint().height(), qPrintable(dock->objectName()));
        }
}

// The heatmaps are laid out small while the window is built; at 1280×720 the three tokens are all named.
void TestMainWindow::everyTokenNamedAtThreeTokens()
{
    MainWindow window;
    window.resize(defaultWindowGeometry(QRect(0, 0, 1280, 720)).size());
    QVERIFY(window.openSession(QString()));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* weights = window.findChild<Heatmap*>(QStringLiteral("heatmap_weights"));
    QVERIFY(weights);
    window.findChild<QTabWidget*>(QStringLiteral("resultTabs"))->setCurrentWidget(weights);
    QTRY_VERIFY(weights->isVisible() && weights->values().rows() == 3);
    QTRY_COMPARE(weights->tickPlan().rowStride, 1);
    QTRY_COMPARE(weights->tickPlan().columnStride, 1);
}

// The pipeline canvas is the view a window opens on; at 1280×720 it writes every number of "I love AI".
void TestMainWindow::pipelineWritesEveryValueAtThreeTokens()
{
    QSettings().clear(); // the default arrangement of the docks, not one an earlier test left
    MainWindow window;
    window.resize(defaultWindowGeometry(QRect(0, 0, 1280, 720)).size());
    QVERIFY(window.openSession(QString()));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* pipeline = window.findChild<PipelineView*>(QStringLiteral("pipelineView"));
    QVERIFY(pipeline);
    QCOMPARE(window.findChild<QTabWidget*>(QStringLiteral("resultTabs"))->currentWidget(), pipeline);
    QTRY_VERIFY2(pipeline->showsCellValues(),
                 qPrintable(QStringLiteral("%1×%2").arg(pipeline->width()).arg(pipeline->height())));
    for (const QString& stage : pipeline->stageNames()) {
        const auto [rows, columns] = pipeline->stageShape(stage);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < columns; ++j)
                QVERIFY2(!pipeline->cellText(stage, i, j).isEmpty(),
                         qPrintable(QStringLiteral("%1 (%2, %3) in %4×%5")
                                        .arg(stage)
                                        .arg(i)
                                        .arg(j)
                                        .arg(pipeline->width())
                                        .arg(pipeline->height())));
    }
}

void TestMainWindow::rememberedGeometryMustFit_data()
{
    QTest::addColumn<QRect>("saved");
    QTest::addColumn<bool>("fits");
    QTest::newRow("inside") << QRect(100, 80, 1000, 560) << true;
    QTest::newRow("the whole screen") << QRect(0, 0, 1280, 720) << true;
    QTest::newRow("larger") << QRect(0, 0, 1400, 900) << false;
    QTest::newRow("taller") << QRect(10, 10, 1000, 784) << false;
    QTest::newRow("off to the right") << QRect(1500, 100, 800, 500) << false;
    QTest::newRow("partly above") << QRect(100, -40, 800, 500) << false;
}

void TestMainWindow::rememberedGeometryMustFit()
{
    QFETCH(QRect, saved);
    QFETCH(bool, fits);
    QWidget widget;
    widget.setGeometry(saved);
    const QByteArray blob = widget.saveGeometry();
    QCOMPARE(savedFrameGeometry(blob).value_or(QRect()), saved);
    QCOMPARE(savedGeometryFits(blob, QRect(0, 0, 1280, 720)), fits);
    QVERIFY(!savedGeometryFits(QByteArray("not a geometry"), QRect(0, 0, 1280, 720)));
    QVERIFY(!savedGeometryFits(QByteArray(), QRect(0, 0, 1280, 720)));
}

void TestMainWindow::oversizedRememberedGeometryIsNotRestored()
{
    QWidget widget;
    const QRect available = widget.screen()->availableGeometry();
    for (const QRect& saved :
         {available.adjusted(-20, -20, 600, 400), available.translated(available.width(), 0)}) {
        widget.setGeometry(saved);
        Preferences::setWindowGeometry(widget.saveGeometry());
        MainWindow window;
        QVERIFY(window.geometry() != saved);
        QVERIFY2(available.contains(window.geometry().center()),
                 qPrintable(QStringLiteral("%1,%2").arg(window.x()).arg(window.y())));
    }
    Preferences::setWindowGeometry({});
}

void TestMainWindow::presentationTwiceRestoresTheDocks()
{
    MainWindow window;
    QVERIFY(window.openSession(QString()));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.findChild<QDockWidget*>(QStringLiteral("dockMask"))->raise();
    window.findChild<QDockWidget*>(QStringLiteral("dockHeads"))->hide();
    const auto docks = window.findChildren<QDockWidget*>();
    // The main window a dock is laid out in: its workspace's page, or the window for the lesson's dock.
    const auto page = [](const QDockWidget* dock) {
        return qobject_cast<QMainWindow*>(dock->parentWidget());
    };
    const auto dockState = [&] {
        QStringList state;
        for (const QDockWidget* dock : docks)
            state << QStringLiteral("%1 %2 %3 %4")
                         .arg(dock->objectName())
                         .arg(dock->isVisible())
                         .arg(page(dock)->dockWidgetArea(const_cast<QDockWidget*>(dock)))
                         .arg(page(dock)->tabifiedDockWidgets(const_cast<QDockWidget*>(dock)).size());
        return state;
    };
    const QStringList before = dockState();
    const auto* plot = window.findChild<QCustomPlot*>();
    QVERIFY(plot);
    const double tickPoint = plot->xAxis->tickLabelFont().pointSizeF();

    QAction* presentation = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
        if (action->shortcut() == QKeySequence(Qt::Key_F11))
            presentation = action;
    QVERIFY(presentation && presentation->isCheckable());
    presentation->trigger();
    QVERIFY(window.isPresentation());
    QVERIFY(window.isFullScreen());
    QVERIFY(!window.findChild<QDockWidget*>(QStringLiteral("dockEmbeddings"))->isVisible());
    QVERIFY(!window.findChild<QDockWidget*>(QStringLiteral("dockControls"))->isVisible());
    QVERIFY(window.findChild<QDockWidget*>(QStringLiteral("dockMath"))->isVisible());
    QKV_COMPARE_NEAR(plot->xAxis->tickLabelFont().pointSizeF(), 1.5 * tickPoint, 1e-9);

    presentation->trigger();
    QVERIFY(!window.isPresentation());
    QVERIFY(!window.isFullScreen());
    QCOMPARE(dockState(), before);
    QKV_COMPARE_NEAR(plot->xAxis->tickLabelFont().pointSizeF(), tickPoint, 1e-9);
}

void TestMainWindow::darkThemeMakesPlotsDark()
{
    Preferences::setTheme(Preferences::Theme::Dark);
    {
        MainWindow window;
        QVERIFY(window.openSession(QString()));
        const auto plots = window.findChildren<QCustomPlot*>();
        QVERIFY(!plots.isEmpty());
        for (QCustomPlot* plot : plots) {
            const QImage image = plot->toPixmap(300, 200).toImage();
            QVERIFY2(QColor(image.pixel(1, 1)).lightness() < 80,
                     qPrintable(plot->parentWidget()->objectName()));
            QVERIFY(plot->xAxis->tickLabelColor().lightness() > 160);
        }
        // Plots built after the window was styled (one per head) are dark too: the window styles its plots
        // when the theme changes, not on every edit (which replotted every hidden plot each time).
        QVERIFY(window.openSession(QStringLiteral("example:multihead")));
        QTRY_VERIFY(window.findChild<Heatmap*>(QStringLiteral("headHeatmap_1")));
        auto* headMap = window.findChild<Heatmap*>(QStringLiteral("headHeatmap_1"));
        QVERIFY(headMap);
        auto* headPlot = headMap->findChild<QCustomPlot*>();
        QVERIFY(headPlot);
        QVERIFY(QColor(headPlot->toPixmap(300, 200).toImage().pixel(1, 1)).lightness() < 80);
    }
    SettingsDialog dialog;
    auto* theme = dialog.findChild<QComboBox*>(QStringLiteral("theme"));
    QVERIFY(theme);
    QCOMPARE(dialog.theme(), Preferences::Theme::Dark);
    theme->setCurrentIndex(theme->findText(QStringLiteral("Light")));
    dialog.store();
    QCOMPARE(Preferences::theme(), Preferences::Theme::Light);
    MainWindow light;
    QVERIFY(light.openSession(QString()));
    const QImage image = light.findChild<QCustomPlot*>()->toPixmap(300, 200).toImage();
    QVERIFY(QColor(image.pixel(1, 1)).lightness() > 200);
    Preferences::setTheme(Preferences::Theme::System);
}

void TestMainWindow::shortcutListHasEveryShortcut()
{
    MainWindow window;
    const QList<ShortcutEntry> entries = shortcutEntries(window.menuBar(), &window);
    QStringList listed;
    for (const ShortcutEntry& entry : entries)
        listed << entry.action + QLatin1Char('\t') + entry.shortcut.toString();
    int withShortcut = 0;
    for (const QAction* action : window.findChildren<QAction*>()) {
        if (action->shortcut().isEmpty())
            continue;
        ++withShortcut;
        QString text = action->text();
        text.remove(QLatin1Char('&'));
        text.remove(QChar(0x2026));
        const QString wanted = text.trimmed() + QLatin1Char('\t') + action->shortcut().toString();
        QVERIFY2(listed.contains(wanted), qPrintable(wanted));
    }
    QVERIFY(withShortcut >= 10);
    // Menu order: File before Edit before View, each menu's actions together.
    QStringList menus;
    for (const ShortcutEntry& entry : entries)
        if (menus.isEmpty() || menus.last() != entry.menu) {
            QVERIFY2(!menus.contains(entry.menu), qPrintable(entry.menu));
            menus << entry.menu;
        }
    QCOMPARE(menus.mid(0, 3),
             (QStringList{QStringLiteral("File"), QStringLiteral("Edit"), QStringLiteral("View")}));
    QVERIFY(listed.contains(QStringLiteral("Presentation\tF11")));
    // The workspaces' shortcuts are in the View menu and taken by nothing else of the window.
    for (const char* workspace : {"Head\tCtrl+1", "Model\tCtrl+2", "Training\tCtrl+3"}) {
        QVERIFY2(listed.contains(QLatin1String(workspace)), workspace);
        const QKeySequence key(QString::fromLatin1(workspace).section(QLatin1Char('\t'), 1));
        const auto actions = window.findChildren<QAction*>();
        QCOMPARE(std::count_if(actions.begin(), actions.end(),
                               [&key](const QAction* action) { return action->shortcut() == key; }),
                 1);
    }

    ShortcutsDialog dialog(window.menuBar(), &window);
    const auto* tree = dialog.findChild<QTreeWidget*>(QStringLiteral("shortcutList"));
    QVERIFY(tree);
    int rows = 0;
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        rows += tree->topLevelItem(i)->childCount();
    QCOMPARE(rows, entries.size());
}

void TestMainWindow::maskPaintedInTheWindow_data()
{
    QTest::addColumn<QString>("where");
    QTest::newRow("mask dock") << QStringLiteral("dock");
    QTest::newRow("Mask tab") << QStringLiteral("heatmap");
}

// A drag across the mask dock's grid, or across the Mask tab's heatmap, allows or forbids a 2 × 3 rectangle
// (the first cell decides) in one undo step; one undo restores the mask.
void TestMainWindow::maskPaintedInTheWindow()
{
    QFETCH(QString, where);
    MainWindow window;
    window.resize(1400, 900);
    QVERIFY(window.openSession(QStringLiteral("example:causal")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    Document* document = window.document();
    document->waitForResult();
    const MaskMatrix original = document->result()->heads[0].allowed;
    const Session before = document->session();
    const int steps = document->undoStack()->count();
    // Rows 1–2, columns 2–4: (1, 2) is masked in the causal pattern, so the rectangle becomes allowed.
    const int anchorRow = 1, anchorColumn = 2, row = 2, column = 4;
    QVERIFY(original(anchorRow, anchorColumn) == 0);

    QWidget* target = nullptr;
    std::function<QPoint(int, int)> centre;
    if (where == QLatin1String("dock")) {
        auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockMask"));
        dock->show();
        dock->raise();
        auto* grid = window.findChild<MaskEditor*>(QStringLiteral("maskGrid"));
        QVERIFY(grid);
        QTRY_VERIFY(grid->isVisible());
        target = grid->viewport();
        centre = [grid](int i, int j) { return grid->visualRect(grid->model()->index(i, j)).center(); };
    } else {
        auto* results = window.findChild<ResultViews*>(QStringLiteral("resultViews"));
        Heatmap* map = results->heatmap(QStringLiteral("mask"));
        QVERIFY(map->isPaintable());
        QVERIFY(!map->toolTip().isEmpty());
        results->tabs()->setCurrentWidget(map);
        QTRY_VERIFY(map->isVisible());
        QTRY_VERIFY(map->cellCentre(0, 0) != map->cellCentre(1, 1)); // laid out
        QTRY_COMPARE(map->values().rows(), original.rows());
        target = map->childAt(map->cellCentre(0, 0));
        QVERIFY(target);
        centre = [map, target](int i, int j) { return target->mapFrom(map, map->cellCentre(i, j)); };
    }
    QTest::mousePress(target, Qt::LeftButton, {}, centre(anchorRow, anchorColumn));
    QTest::mouseMove(target, centre(anchorRow, anchorColumn + 1));
    QTest::mouseMove(target, centre(row, column));
    QCOMPARE(document->undoStack()->count(), steps); // applied on release
    if (const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR"); !folder.isEmpty()) {
        QCoreApplication::processEvents(); // the queued replot
        window.grab().save(folder + QStringLiteral("/mask-painting-") + where + QStringLiteral(".png"));
    }
    QTest::mouseRelease(target, Qt::LeftButton, {}, centre(row, column));
    QCOMPARE(document->undoStack()->count(), steps + 1);
    QVERIFY(document->session().mask.type == MaskType::Custom);

    MaskMatrix expected = original;
    expected.block(anchorRow, anchorColumn, row - anchorRow + 1, column - anchorColumn + 1).setConstant(1);
    document->waitForResult();
    QVERIFY(document->result()->heads[0].allowed == expected);
    document->undoStack()->undo();
    QVERIFY(document->session() == before);
    document->waitForResult();
    QVERIFY(document->result()->heads[0].allowed == original);
}

// Help ▸ What's This? (Shift+F1) then a click explains any view: every view and panel has a text.
void TestMainWindow::everyViewSaysWhatItShows()
{
    MainWindow window;
    QVERIFY(window.openSession(QString()));
    for (const Figure* figure : window.figures()) {
        const auto* widget = dynamic_cast<const QWidget*>(figure);
        QVERIFY(widget);
        QVERIFY2(!widget->whatsThis().isEmpty(), qPrintable(widget->objectName()));
    }
    for (const char* name :
         {"maskGrid", "controlsPanel", "shapePanel", "editor_X", "editor_W_Q", "resultTabs"}) {
        const auto* widget = window.findChild<QWidget*>(QLatin1String(name));
        QVERIFY2(widget, name);
        QVERIFY2(!widget->whatsThis().isEmpty(), name);
    }
    // The weights say how to read them.
    const QString weights = window.findChild<QWidget*>(QStringLiteral("heatmap_weights"))->whatsThis();
    for (const char* phrase : {"Rows are queries", "sums to 1", "sigmoid", "Grey cells are masked", "∅"})
        QVERIFY2(weights.contains(QString::fromUtf8(phrase)), phrase);
    for (const QString& name : viewsWithHelp())
        QVERIFY2(!whatsThisText(name).isEmpty(), qPrintable(name));

    // A What's This click on the plot inside a heatmap reaches the heatmap's text (the event goes to
    // parents).
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* map = window.findChild<QWidget*>(QStringLiteral("heatmap_weights"));
    window.findChild<QTabWidget*>(QStringLiteral("resultTabs"))->setCurrentWidget(map); // after the pipeline
    QTRY_VERIFY(map->isVisible());
    QWidget* plot = map->childAt(map->rect().center());
    QVERIFY(plot && plot != map);
    QHelpEvent click(QEvent::WhatsThis, map->rect().center() - plot->pos(), plot->mapToGlobal(QPoint(5, 5)));
    QApplication::sendEvent(plot, &click);
    const auto popups = QApplication::topLevelWidgets();
    QVERIFY(std::any_of(popups.begin(), popups.end(), [](QWidget* w) {
        return w->isVisible() && QLatin1String(w->metaObject()->className()) == QLatin1String("QWhatsThat");
    }));
    QWhatsThis::hideText();

    auto* whatsThis = window.findChild<QAction*>(QStringLiteral("whatsThis"));
    QVERIFY(whatsThis);
    QCOMPARE(whatsThis->shortcut(), QKeySequence(Qt::SHIFT | Qt::Key_F1));
    auto* toolBar = window.findChild<QToolBar*>(QStringLiteral("fileToolBar"));
    QVERIFY(toolBar && toolBar->actions().contains(whatsThis)); // one click away, as an info button
}

// Help ▸ User Guide (F1) opens the guide shipped in the resources.
void TestMainWindow::userGuideOpensFromHelp()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* action = window.findChild<QAction*>(QStringLiteral("userGuideAction"));
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(QKeySequence::HelpContents));
    action->trigger();
    auto* guide = window.findChild<UserGuide*>(QStringLiteral("userGuide"));
    QVERIFY(guide);
    QTRY_VERIFY(guide->isVisible());
    auto* text = guide->findChild<QTextBrowser*>(QStringLiteral("userGuideText"));
    QVERIFY(text);
    const QString shown = text->toPlainText();
    for (const char* heading :
         {"QKV Lab user guide", "The window", "The views", "Pipeline", "Editing", "Masks", "Normalizers",
          "Export", "Lessons", "Sessions", "Keyboard shortcuts"})
        QVERIFY2(shown.contains(QLatin1String(heading)), heading);
    if (const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR"); !folder.isEmpty())
        guide->grab().save(folder + QStringLiteral("/user-guide.png")); // to look at, under xvfb-run
    action->trigger(); // a second time: the same window, raised
    QCOMPARE(window.findChildren<UserGuide*>().size(), 1);
    guide->close();
}

void TestMainWindow::aboutNamesTheVersionAndLibraries()
{
    const QString before = QCoreApplication::applicationVersion();
    QCoreApplication::setApplicationVersion(QStringLiteral("9.8.7"));
    const QString text = aboutText();
    QCoreApplication::setApplicationVersion(before);
    for (const char* part : {"QKV Lab 9.8.7", "Qt ", "Eigen 3.", "QCustomPlot 2.", "nlohmann/json 3."})
        QVERIFY2(text.contains(QLatin1String(part)), qPrintable(text));
    // The instruction set the row kernels run with (x86-64, x86-64-v3 or x86-64-v4 on a PC).
    QVERIFY2(text.contains(QLatin1String("row kernels for ") +
                           QLatin1String(qkv::rows::kernelLevelName(qkv::rows::kernelLevel()))),
             qPrintable(text));
}

QKV_TEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
