// SPDX-License-Identifier: GPL-3.0-or-later
// A new user's first session, through the widgets: the love example, an edit of W_Q and its undo, a causal
// mask, sparsemax at τ = 0.5, cross-attention with three heads, then save and reopen. With
// QKV_SCREENSHOT_DIR set, a screenshot of the window is written at every step (run under xvfb-run with
// QT_QPA_PLATFORM=xcb to see the real window).

#include "Document.h"
#include "Examples.h"
#include "Heatmap.h"
#include "MainWindow.h"

#include "FuzzyCompare.h"
#include "QueuedReplots.h"
#include "TestMain.h"
#include <QAbstractItemModel>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QUndoStack>

#include <QSettings>
#include <QTabWidget>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

void screenshot(QWidget& window, const char* step)
{
    const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR");
    if (folder.isEmpty())
        return;
    QVERIFY(test::settleReplots(&window)); // the queued replots
    window.grab().save(QDir(folder).filePath(QLatin1String(step) + QStringLiteral(".png")));
}

template <typename T> T* child(QWidget& window, const char* name)
{
    T* widget = window.findChild<T*>(QLatin1String(name));
    if (!widget)
        qFatal("no widget named %s", name);
    return widget;
}

void selectItem(QComboBox* box, const QString& text)
{
    const int index = box->findText(text, Qt::MatchContains);
    QVERIFY2(index >= 0, qPrintable(text));
    box->setCurrentIndex(index);
}

} // namespace

class TestWalkthrough : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear(); // an earlier run's window state would change this one's layout
    }
    void newUser();
};

void TestWalkthrough::newUser()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("walkthrough.qkv.json"));
    Session saved;
    {
        MainWindow window;
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(window.openSession(QStringLiteral("example:love")));
        screenshot(window, "0-pipeline"); // the view a window opens on
        auto* weights = child<Heatmap>(window, "heatmap_weights");
        child<QTabWidget>(window, "resultTabs")->setCurrentWidget(weights); // followed through the walk
        QKV_COMPARE_NEAR(weights->values()(0, 1), 0.707, 5e-4);
        screenshot(window, "1-love");

        // W_Q[0][0] from 1 to 3: the weights change at once.
        QAbstractItemModel* wq = child<QTableView>(window, "editor_W_Q")->model();
        QVERIFY(wq->setData(wq->index(0, 0), QStringLiteral("3")));
        QVERIFY(std::abs(weights->values()(0, 1) - 0.707) > 0.01);
        screenshot(window, "2-wq-edited");

        // Undo (Ctrl+Z) brings the example's numbers back.
        QTest::keySequence(&window, QKeySequence::Undo);
        QKV_COMPARE_NEAR(weights->values()(0, 1), 0.707, 5e-4);
        QCOMPARE(window.document()->session(), loadExample("love"));
        screenshot(window, "3-undone");

        selectItem(child<QComboBox>(window, "maskType"), QStringLiteral("Causal"));
        QCOMPARE(window.document()->session().mask.type, MaskType::Causal);
        QCOMPARE(weights->values()(0, 0), 1.0); // "I" sees only itself
        screenshot(window, "4-causal");
        selectItem(child<QComboBox>(window, "normalizer"), QStringLiteral("parsemax"));
        QCOMPARE(window.document()->session().normalizer.type, NormalizerType::Sparsemax);
        child<QDoubleSpinBox>(window, "temperatureSpin")->setValue(0.5);
        QCOMPARE(window.document()->session().temperature, 0.5);
        screenshot(window, "5-sparsemax-t05");
        selectItem(child<QComboBox>(window, "attentionKind"), QStringLiteral("Cross"));
        QVERIFY(window.document()->session().context.has_value());
        child<QSpinBox>(window, "heads")->setValue(3);
        QCOMPARE(window.document()->session().headCount(), 3);
        QCOMPARE(window.document()->result()->heads.size(), std::size_t(3));
        screenshot(window, "6-cross-three-heads");

        QString error;
        QVERIFY2(window.document()->saveAs(path, &error), qPrintable(error));
        saved = window.document()->session();
        QVERIFY(window.close());
    }
    MainWindow reopened;
    reopened.resize(1600, 1000);
    reopened.show();
    QVERIFY(QTest::qWaitForWindowExposed(&reopened));
    QVERIFY(reopened.openSession(path));
    QCOMPARE(reopened.document()->session(), saved);
    QCOMPARE(child<QComboBox>(reopened, "normalizer")->currentText(), QStringLiteral("Sparsemax"));
    QCOMPARE(child<QSpinBox>(reopened, "heads")->value(), 3);
    screenshot(reopened, "7-reopened");
}

QKV_TEST_MAIN(TestWalkthrough)
#include "tst_walkthrough.moc"
