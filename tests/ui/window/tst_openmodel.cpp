// SPDX-License-Identifier: GPL-3.0-or-later
// File ▸ Open Model… and Edit ▸ Reset to Model: the dialog checks its form before closing, the head opens as
// the session (exactly the model layer's), edits work on it, and Reset to Model brings it back as one undo
// step.

#include "AttentionEngine.h"
#include "ColorScale.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "FuzzyCompare.h"
#include "MainWindow.h"
#include "ModelDialog.h"
#include "ModelLoading.h"
#include "ModelOverview.h"
#include "ModelView.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

// The session a head opens as: the model layer's, linked to the model with the head itself live in it.
Session opened(const Model& model, const ModelHeadRequest& request)
{
    Session session = sessionFromModel(model, request);
    session.model = linkFor(model, request, Session());
    return session;
}

} // namespace

class TestOpenModel : public QObject {
    Q_OBJECT
private slots:
    void init();
    void dialogChecksItsForm();
    void openEditAndReset();
    void refusedModelChangesNothing();
    void oneOpenAtATime();
    void modelViewShowsEveryHead();
    void modelViewNewestTextWins();

private:
    QTemporaryDir m_folder;
};

void TestOpenModel::init()
{
    QVERIFY(m_folder.isValid());
    qkv::test::writeModel(qkv::test::Tiny{}, m_folder.path(), 3); // GPT-2 shaped: 3 layers, 2 heads
}

void TestOpenModel::dialogChecksItsForm()
{
    ModelDialog dialog;
    auto* problem = dialog.findChild<QLabel*>(QStringLiteral("modelProblem"));
    QPushButton* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    QVERIFY(problem && ok);
    QVERIFY(!ok->isEnabled());
    QVERIFY(problem->text().contains(QStringLiteral("Choose a model folder")));

    dialog.setFolder(m_folder.filePath(QStringLiteral("missing")));
    QVERIFY(!ok->isEnabled());
    QVERIFY(!problem->text().isEmpty());

    dialog.setFolder(m_folder.path());
    QVERIFY(dialog.model());
    QCOMPARE(dialog.findChild<QSpinBox*>(QStringLiteral("modelLayer"))->maximum(), 2);
    QVERIFY(problem->text().contains(QStringLiteral("Give a text or token ids")));
    // No tokenizer in this folder: a text is refused, ids are taken.
    dialog.findChild<QLineEdit*>(QStringLiteral("modelText"))->setText(QStringLiteral("hello"));
    QVERIFY(problem->text().contains(QStringLiteral("give token ids")));
    dialog.findChild<QLineEdit*>(QStringLiteral("modelText"))->clear();
    auto* ids = dialog.findChild<QLineEdit*>(QStringLiteral("modelIds"));
    ids->setText(QStringLiteral("1, 2, x"));
    QVERIFY(problem->text().contains(QStringLiteral("Token ids")));
    ids->setText(QStringLiteral("1, 2, 3"));
    auto* heads = dialog.findChild<QLineEdit*>(QStringLiteral("modelHeads"));
    heads->setText(QStringLiteral("0, 2"));
    QVERIFY(problem->text().contains(QStringLiteral("head 2 is out of range")));
    heads->setText(QStringLiteral("1"));
    QVERIFY(problem->text().isEmpty());
    QVERIFY(ok->isEnabled());
    dialog.findChild<QSpinBox*>(QStringLiteral("modelLayer"))->setValue(2);
    dialog.accept();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    QCOMPARE(dialog.request().layer, Index(2));
    QCOMPARE(dialog.request().ids, (std::vector<std::int64_t>{1, 2, 3}));
    QCOMPARE(dialog.request().heads, std::vector<Index>{1});
}

void TestOpenModel::openEditAndReset()
{
    MainWindow window;
    auto model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    ModelHeadRequest request;
    request.layer = 1;
    request.ids = {4, 8, 15, 16, 23};
    auto* reset = window.findChild<QAction*>(QStringLiteral("resetToModel"));
    QVERIFY(reset && !reset->isEnabled());
    QString error;
    QVERIFY2(window.modelLoading()->open(model, request, &error, false), qPrintable(error));
    const Session loaded = opened(*model, request);
    QVERIFY(window.document()->session() == loaded);
    QVERIFY(reset->isEnabled());
    window.document()->waitForResult();
    QVERIFY(window.document()->result());

    // Edit the trained head, then put it back; undo brings the edit back.
    pushEdit(window.document(), QStringLiteral("hotter"), Document::Options, [](Session& s) {
        s.temperature = 3.0;
        s.normalizer.type = NormalizerType::Sparsemax;
    });
    QCOMPARE(window.document()->session().temperature, 3.0);
    reset->trigger();
    QVERIFY(window.document()->session() == loaded);
    window.document()->undoStack()->undo();
    QCOMPARE(window.document()->session().temperature, 3.0);
    QCOMPARE(window.document()->session().normalizer.type, NormalizerType::Sparsemax);
}

// While a forward pass runs, a second open (a timer, a queued click) is refused with a message and the
// first one completes; the session is the first request's.
void TestOpenModel::oneOpenAtATime()
{
    MainWindow window;
    auto model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    ModelHeadRequest first, second;
    first.layer = 1;
    first.ids = {4, 8, 15};
    second.layer = 2;
    second.ids = {16, 23};
    ModelLoading* loading = window.modelLoading();
    QString secondError;
    bool secondOpened = true;
    int reentered = 0;
    connect(loading, &ModelLoading::openingChanged, &window, [&](bool opening) {
        QCOMPARE(loading->isOpening(), opening);
        if (opening && reentered++ == 0)
            secondOpened = loading->open(model, second, &secondError, false);
    });
    QString error;
    QVERIFY2(loading->open(model, first, &error, false), qPrintable(error));
    QVERIFY(!secondOpened);
    QVERIFY2(secondError.contains(QStringLiteral("still opening")), qPrintable(secondError));
    QVERIFY(!loading->isOpening());
    QVERIFY(window.document()->session() == opened(*model, first));
}

void TestOpenModel::refusedModelChangesNothing()
{
    MainWindow window;
    const Session before = window.document()->session();
    auto model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    ModelHeadRequest request;
    request.layer = 7;
    request.ids = {1};
    QString error;
    QVERIFY(!window.modelLoading()->open(model, request, &error, false));
    QVERIFY(error.contains(QStringLiteral("layer 7 is out of range")));
    QVERIFY(window.document()->session() == before);
    QVERIFY(!window.findChild<QAction*>(QStringLiteral("resetToModel"))->isEnabled());
}

// The Model workspace: every layer × head as thumbnails from one forward pass, computed in the background
// once a model is open; a click opens that layer and head as the session.
void TestOpenModel::modelViewShowsEveryHead()
{
    MainWindow window;
    auto* view = window.findChild<ModelView*>(QStringLiteral("modelView"));
    auto* overview = window.findChild<ModelOverview*>(QStringLiteral("modelOverview"));
    QVERIFY(view && overview);
    QCOMPARE(view->thumbnailCount(), 0); // no model, nothing computed
    QVERIFY(!overview->isBusy());
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));

    auto model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    ModelHeadRequest request;
    request.layer = 0;
    request.ids = {4, 8, 15, 16, 23};
    QString error;
    QVERIFY2(window.modelLoading()->open(model, request, &error, false), qPrintable(error));
    QVERIFY(window.findChild<QDockWidget*>(QStringLiteral("dockModel"))->isVisible());
    QTRY_VERIFY(!overview->isBusy());
    QCOMPARE(view->layerCount(), 3);
    QCOMPARE(view->headCount(), 2);
    QCOMPARE(view->thumbnailCount(), 3 * 2);
    QVERIFY(window.findChild<QProgressBar*>(QStringLiteral("modelViewProgress"))->isHidden());
    QCOMPARE(view->selectedLayer(), 0);
    QCOMPARE(view->selectedHead(), 0);
    QVERIFY(view->figureTitle().contains(QStringLiteral("5 tokens")));

    // Each thumbnail is its head's weights on the weights heatmap's colours, masked cells grey.
    ModelHeadRequest layer1 = request;
    layer1.layer = 1;
    layer1.heads = {1};
    const Matrix weights = computeAttention(sessionFromModel(*model, layer1)).heads[0].weights;
    const QImage image = view->thumbnail(1, 1);
    QCOMPARE(image.size(), QSize(5, 5));
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j)
            QCOMPARE(image.pixel(j, i),
                     j > i ? maskedCellColor().rgb() : paletteColor(Palette::Viridis, weights(i, j)));

    // A click opens that layer and head: the session is exactly the one the model layer makes.
    const QRect thumbnail = view->thumbnailRect(2, 1);
    QVERIFY(!thumbnail.isEmpty());
    QTest::mouseClick(view, Qt::LeftButton, {}, thumbnail.center());
    ModelHeadRequest clicked = request;
    clicked.layer = 2;
    clicked.heads = {1};
    const Session expected = opened(*model, clicked);
    QTRY_VERIFY(window.document()->session() == expected);
    window.document()->waitForResult();
    QKV_COMPARE_NEAR(window.document()->result()->heads[0].weights,
                     computeAttention(expected).heads[0].weights, 0.0);
    QCOMPARE(view->selectedLayer(), 2);
    QCOMPARE(view->selectedHead(), 1);
    QVERIFY(!overview->isBusy()); // same text: the thumbnails stay
    QCOMPARE(view->thumbnailCount(), 6);
    // Edit ▸ Reset to Model now brings back the head that was clicked.
    pushEdit(window.document(), QStringLiteral("hotter"), Document::Options,
             [](Session& s) { s.temperature = 2.0; });
    window.findChild<QAction*>(QStringLiteral("resetToModel"))->trigger();
    QVERIFY(window.document()->session() == expected);
}

void TestOpenModel::modelViewNewestTextWins()
{
    MainWindow window;
    auto* view = window.findChild<ModelView*>(QStringLiteral("modelView"));
    auto* overview = window.findChild<ModelOverview*>(QStringLiteral("modelOverview"));
    auto model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    ModelHeadRequest first;
    first.ids = {1, 2, 3, 4, 5, 6, 7};
    ModelHeadRequest second;
    second.layer = 1;
    second.ids = {9, 8, 7};
    QVERIFY(window.modelLoading()->open(model, first, nullptr, false));
    QVERIFY(window.modelLoading()->open(model, second, nullptr, false));
    QTRY_VERIFY(!overview->isBusy());
    QCOMPARE(view->thumbnailCount(), 6);
    QCOMPARE(view->thumbnail(0, 0).size(), QSize(3, 3));
    QCOMPARE(view->selectedLayer(), 1);
    const Matrix weights = attentionOfEveryLayer(*model, second.ids, Precision::Float64)[2][0];
    QCOMPARE(view->thumbnail(2, 0).pixel(0, 2), paletteColor(Palette::Viridis, weights(2, 0)));
}

QKV_TEST_MAIN(TestOpenModel)
#include "tst_openmodel.moc"
