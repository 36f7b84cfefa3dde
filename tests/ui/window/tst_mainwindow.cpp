// The assembled window: opening sessions, title, status bar, import/export, save and reopen.

#include "Document.h"
#include "DocumentCommands.h"
#include "Examples.h"
#include "Initializers.h"
#include "MainWindow.h"
#include "MatrixFile.h"
#include "Preferences.h"
#include "ResourceLimits.h"
#include "SessionEdits.h"
#include "SessionFile.h"
#include "SettingsDialog.h"

#include "FuzzyCompare.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QProgressBar>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

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
    void docksCanBeClosedAndRestored();
    void exportAndImportMatrices_data();
    void exportAndImportMatrices();
    void importRefusesAWrongShape();
    void saveCloseReopen();
    void stopButtonAndEscapeStopAComputation();
    void settingsDialogSetsTheMemoryLimit();
};

void TestMainWindow::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true); // settings go to a test location
    QCoreApplication::setOrganizationName(QStringLiteral("QKV Lab Tests"));
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

void TestMainWindow::stopButtonAndEscapeStopAComputation()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* stop = window.findChild<QToolButton*>(QStringLiteral("stopButton"));
    auto* progress = window.findChild<QProgressBar*>(QStringLiteral("computeProgress"));
    QVERIFY(stop && progress);
    QVERIFY(!stop->isVisible()); // nothing computing
    Session big = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 2};
    for (Index i = 0; i < 2500; ++i)
        insertToken(big, Side::Query, 0, "t", init);
    resizeDModel(big, 64, init);
    resizeDK(big, 64, init);
    resizeDV(big, 64, init);
    window.document()->reset(big);
    if (window.document()->isComputing()) { // a fast machine may already have finished
        QVERIFY(stop->isVisible());
        QVERIFY(progress->isVisible());
        QTest::keyClick(&window, Qt::Key_Escape);
    }
    QTRY_VERIFY_WITH_TIMEOUT(!window.document()->isComputing(), 60000);
    QVERIFY(!stop->isVisible());
    QVERIFY(!progress->isVisible());
    const auto* time = window.findChild<QLabel*>(QStringLiteral("computeTimeLabel"));
    QVERIFY2(!time->text().contains(QStringLiteral("computing")), qPrintable(time->text()));
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

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
