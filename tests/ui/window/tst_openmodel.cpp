// File ▸ Open Model… and Edit ▸ Reset to Model: the dialog checks its form before closing, the head opens as
// the session (exactly the model layer's), edits work on it, and Reset to Model brings it back as one undo
// step.

#include "Document.h"
#include "DocumentCommands.h"
#include "MainWindow.h"
#include "ModelDialog.h"
#include "ModelLoading.h"
#include "TinyModels.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

class TestOpenModel : public QObject {
    Q_OBJECT
private slots:
    void init();
    void dialogChecksItsForm();
    void openEditAndReset();
    void refusedModelChangesNothing();

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
    const Session loaded = sessionFromModel(*model, request);
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

QTEST_MAIN(TestOpenModel)
#include "tst_openmodel.moc"
