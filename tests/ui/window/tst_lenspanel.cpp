// SPDX-License-Identifier: GPL-3.0-or-later
// The Logit Lens panel of the Model workspace: the lens of the Prediction panel's text, computed off the GUI
// thread once the panel is on screen, coloured by an answer when one is typed, scrolling when the text is
// long; and the patching experiment kept with a model-linked session as an undo step that a saved file
// reopens.

#include "Document.h"
#include "DocumentCommands.h"
#include "LensPanel.h"
#include "LensView.h"
#include "MainWindow.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "Patching.h"
#include "SessionFile.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QDockWidget>
#include <QScrollBar>
#include <QUndoStack>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

class TestLensPanel : public QObject {
    Q_OBJECT
private slots:
    void init();
    void lensIsComputedOnceShown();
    void answerColoursTheCells();
    void longTextScrolls();
    void patchExperimentIsSavedWithTheSession();

private:
    /// A window with layer 1, head 0 of the tiny model open on `ids`, the model's run ready.
    void openModel(MainWindow& window, const std::vector<std::int64_t>& ids);
    static LensPanel* panel(MainWindow& window) { return window.findChild<LensPanel*>(); }
    static void showLens(MainWindow& window)
    {
        auto* dock = window.findChild<QDockWidget*>(QStringLiteral("dockLogitLens"));
        QVERIFY(dock);
        dock->show();
        dock->raise();
    }

    QTemporaryDir m_folder;
    std::shared_ptr<const Model> m_model;
    const std::vector<std::int64_t> m_ids{4, 8, 15, 16, 23, 4, 8, 15};
};

void TestLensPanel::init()
{
    QVERIFY(m_folder.isValid());
    qkv::test::Tiny tiny;
    tiny.positions = 80;                             // room for a 64-token text
    qkv::test::writeModel(tiny, m_folder.path(), 3); // GPT-2 shaped: 3 layers, 2 heads, vocabulary 40
    m_model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
}

void TestLensPanel::openModel(MainWindow& window, const std::vector<std::int64_t>& ids)
{
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ModelHeadRequest request;
    request.layer = 1;
    request.heads = {0};
    request.ids = ids;
    QString error;
    QVERIFY2(window.modelLoading()->open(m_model, request, &error, false), qPrintable(error));
    QTRY_VERIFY(window.findChild<ModelRunner*>()->run());
}

void TestLensPanel::lensIsComputedOnceShown()
{
    MainWindow window;
    openModel(window, m_ids);
    LensPanel* lens = panel(window);
    QVERIFY(lens);
    QVERIFY(!lens->view()->display().lens); // behind the Model tab: nothing computed
    showLens(window);
    QTRY_VERIFY_WITH_TIMEOUT(lens->view()->display().lens && !lens->isBusy(), 10000);
    LensView* view = lens->view();
    QCOMPARE(view->layerCount(), 4); // the residual entering each of 3 layers, and the output
    QCOMPARE(view->positionCount(), 8);
    LensOptions options;
    options.top = 5;
    const LogitLens expected = logitLens(*m_model, m_ids, options);
    for (int layer = 0; layer < 4; ++layer)
        for (int position = 0; position < 8; ++position)
            QKV_COMPARE_NEAR(
                view->cellValue(layer, position),
                expected.layers[std::size_t(layer)][std::size_t(position)].top.front().probability, 1e-12);
    QCOMPARE(view->layerLabel(3), QStringLiteral("output"));
    const QString hover = view->cellDescription(0, 2);
    QVERIFY2(hover.contains(QStringLiteral("Entering layer 0, position 2")) &&
                 hover.contains(QStringLiteral("5. ")),
             qPrintable(hover));
    QVERIFY(!view->cellRect(3, 7).isEmpty()); // 8 tokens fit: every cell on screen
}

void TestLensPanel::answerColoursTheCells()
{
    MainWindow window;
    openModel(window, m_ids);
    showLens(window);
    LensPanel* lens = panel(window);
    QTRY_VERIFY_WITH_TIMEOUT(lens->view()->display().lens && !lens->isBusy(), 10000);
    lens->setAnswer(QStringLiteral("#7"));
    QVERIFY(lens->answerError().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(lens->view()->display().lens && lens->view()->display().lens->hasAnswer, 10000);
    LensOptions options;
    options.top = 5;
    options.answer = 7;
    const LogitLens expected = logitLens(*m_model, m_ids, options);
    for (int layer = 0; layer < 4; ++layer)
        QKV_COMPARE_NEAR(lens->view()->cellValue(layer, 5),
                         expected.layers[std::size_t(layer)][5].answerProbability, 1e-12);
    const QString hover = lens->view()->cellDescription(1, 5);
    QVERIFY2(hover.contains(QStringLiteral("rank %1").arg(expected.layers[1][5].answerRank)),
             qPrintable(hover));

    // An answer the model does not have is named, and the cells go back to the top token.
    lens->setAnswer(QStringLiteral("#400"));
    QVERIFY2(lens->answerError().contains(QStringLiteral("#400")), qPrintable(lens->answerError()));
    QTRY_VERIFY_WITH_TIMEOUT(lens->view()->display().lens && !lens->view()->display().lens->hasAnswer, 10000);
}

void TestLensPanel::longTextScrolls()
{
    std::vector<std::int64_t> ids;
    for (int k = 0; k < 64; ++k)
        ids.push_back((k * 7) % 40);
    MainWindow window;
    openModel(window, ids);
    showLens(window);
    LensPanel* lens = panel(window);
    QTRY_VERIFY_WITH_TIMEOUT(lens->view()->display().lens && !lens->isBusy(), 20000);
    LensView* view = lens->view();
    QCOMPARE(view->positionCount(), 64);
    // Cells keep room for a short token: the grid scrolls sideways, and the cells out of view are not drawn.
    QScrollBar* bar = view->horizontalScrollBar();
    QVERIFY(bar->maximum() > 0);
    QVERIFY(!view->cellRect(0, 0).isEmpty());
    QVERIFY(view->cellRect(0, 63).isEmpty());
    QVERIFY(view->cellRect(0, 0).width() >= view->fontMetrics().horizontalAdvance(QStringLiteral("mmmm")));
    bar->setValue(bar->maximum());
    QVERIFY(!view->cellRect(0, 63).isEmpty());
    QVERIFY(view->cellRect(0, 0).isEmpty());
}

void TestLensPanel::patchExperimentIsSavedWithTheSession()
{
    MainWindow window;
    openModel(window, m_ids);
    Document* document = window.document();
    PatchExperiment experiment;
    experiment.clean = m_ids;
    experiment.corrupt = {4, 8, 15, 16, 23, 4, 9, 15};
    experiment.answer = 5;
    experiment.wrong = 9;
    experiment.site = PatchSite::HeadOut;
    experiment.method = PatchMethod::Attribution;
    const int steps = document->undoStack()->count();
    QVERIFY(document->recordPatchExperiment(experiment));
    QCOMPARE(document->undoStack()->count(), steps); // view state: no step, nothing to save first
    QVERIFY(!document->isModified());
    QVERIFY(document->session().model->patching == experiment);

    QTemporaryDir out;
    const QString path = out.filePath(QStringLiteral("patched.qkv.json"));
    QString error;
    QVERIFY2(document->saveAs(path, &error), qPrintable(error));
    const Session reopened = loadSession(path.toStdString());
    QVERIFY(reopened.model && reopened.model->patching == experiment);

    // Without a model link there is nowhere to keep it.
    Document plain;
    QVERIFY(!plain.recordPatchExperiment(experiment));
    QVERIFY(!plain.session().model);
}

QKV_TEST_MAIN(TestLensPanel)
#include "tst_lenspanel.moc"
