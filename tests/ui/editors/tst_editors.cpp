// SPDX-License-Identifier: GPL-3.0-or-later
// The matrix and mask editors: their widgets and buttons, copy and paste, the numbers they show, renaming a
// dimension in a header, keyboard shortcuts and focus, and painting the mask by dragging, each edit one undo
// step. tests/ui/models/tst_models.cpp tests the table models beneath them.

#include "Document.h"
#include "DocumentCommands.h"
#include "MaskEditor.h"
#include "MaskModel.h"
#include "MatrixEditor.h"
#include "MatrixModel.h"
#include "SessionEdits.h"
#include "TokenModel.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QToolButton>
#include <QUndoStack>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace qkv;
using namespace qkv::ui;

namespace {

void openExample(Document& document, const QString& name)
{
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:") + name, &error), qPrintable(error));
}

std::vector<std::string> strings(std::initializer_list<const char*> items)
{
    return {items.begin(), items.end()};
}

} // namespace

class TestEditors : public QObject {
    Q_OBJECT
private slots:
    void maskPaintedByDrag_data();
    void maskPaintedByDrag();

    void editorObjectNamesAndButtons();
    void editorCopyPaste();
    void editorShowsItsNumbers();
    void largeEditorColumnsFitTheirNumbers();
    void renameDimensionInHeader();
    void editorShortcutsAndFocus();
};

void TestEditors::maskPaintedByDrag_data()
{
    QTest::addColumn<QPoint>("from"); // (column, row) of the first cell
    QTest::addColumn<QPoint>("to");
    QTest::addColumn<bool>("allow"); // what the first cell's flip makes the rectangle
    // In the causal example (6 × 6), (1, 2) is masked: the 2 × 3 rectangle is allowed, (2, 2) included.
    QTest::newRow("allow 2x3 down-right") << QPoint(2, 1) << QPoint(4, 2) << true;
    // Dragged up and left, from an allowed cell: the 2 × 3 rectangle is masked.
    QTest::newRow("mask 2x3 up-left") << QPoint(3, 5) << QPoint(1, 4) << false;
    QTest::newRow("click toggles one cell") << QPoint(0, 3) << QPoint(0, 3) << false;
}

// A drag across the mask editor sets exactly the cells of its rectangle, as one undo step.
void TestEditors::maskPaintedByDrag()
{
    QFETCH(QPoint, from);
    QFETCH(QPoint, to);
    QFETCH(bool, allow);
    Document document;
    openExample(document, QStringLiteral("causal"));
    MaskEditor editor(&document);
    editor.resize(600, 400);
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    MaskModel* mask = editor.maskModel();
    const Session before = document.session();
    const int steps = document.undoStack()->count();
    const auto allowedNow = [mask] {
        MaskMatrix m(mask->rowCount(), mask->columnCount());
        for (int i = 0; i < m.rows(); ++i)
            for (int j = 0; j < m.cols(); ++j)
                m(i, j) = mask->isAllowed(mask->index(i, j)) ? 1 : 0;
        return m;
    };
    const MaskMatrix original = allowedNow();

    const auto centre = [&editor, mask](QPoint cell) {
        return editor.visualRect(mask->index(cell.y(), cell.x())).center();
    };
    QWidget* viewport = editor.viewport();
    QTest::mousePress(viewport, Qt::LeftButton, {}, centre(from));
    QTest::mouseMove(viewport, (centre(from) + centre(to)) / 2);
    QTest::mouseMove(viewport, centre(to));
    QCOMPARE(document.undoStack()->count(), steps); // applied on release, not while dragging
    QTest::mouseRelease(viewport, Qt::LeftButton, {}, centre(to));

    QCOMPARE(document.undoStack()->count(), steps + 1);
    QVERIFY(document.session().mask.type == MaskType::Custom);
    MaskMatrix expected = original;
    const int top = std::min(from.y(), to.y()), left = std::min(from.x(), to.x());
    expected.block(top, left, std::abs(to.y() - from.y()) + 1, std::abs(to.x() - from.x()) + 1)
        .setConstant(allow ? 1 : 0);
    QKV_COMPARE_NEAR(allowedNow(), expected, 0.0);
    document.waitForResult();
    QKV_COMPARE_NEAR(document.result()->heads[0].allowed, expected, 0.0);

    document.undoStack()->undo();
    QVERIFY(document.session() == before);
    QKV_COMPARE_NEAR(allowedNow(), original, 0.0);
}

void TestEditors::editorObjectNamesAndButtons()
{
    Document document;
    QWidget window;
    auto* x = new MatrixEditor(&document, MatrixRef{MatrixKind::X}, &window);
    auto* wq = new MatrixEditor(&document, MatrixRef{MatrixKind::W_Q, 0}, &window);
    auto* z = new MatrixEditor(&document, MatrixRef{MatrixKind::Z}, &window);
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("editor_X")), x->table());
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("editor_W_Q")), wq->table());
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("editor_Z")), z->table());
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("tokens_query")), x->tokenTable());
    QCOMPARE(window.findChild<QTableView*>(QStringLiteral("tokens_context")), z->tokenTable());
    QVERIFY(x->table()->model() == x->model());
    QCOMPARE(x->table()->model()->rowCount(), 3);
    QVERIFY(!x->tokenTable()->isHidden());
    QVERIFY(wq->tokenTable()->isHidden());
    for (const QToolButton* button : wq->findChildren<QToolButton*>())
        QVERIFY2(!button->objectName().contains(QLatin1String("Token")) || !button->isVisibleTo(wq),
                 qPrintable(button->objectName()));
    QCOMPARE(z->table()->model()->rowCount(), 0);
    QCOMPARE(z->tokenTable()->model()->rowCount(), 0);

    auto* add = window.findChild<QToolButton*>(QStringLiteral("addToken_query"));
    auto* insert = window.findChild<QToolButton*>(QStringLiteral("insertToken_query"));
    auto* remove = window.findChild<QToolButton*>(QStringLiteral("removeToken_query"));
    auto* up = window.findChild<QToolButton*>(QStringLiteral("moveTokenUp_query"));
    auto* down = window.findChild<QToolButton*>(QStringLiteral("moveTokenDown_query"));
    QVERIFY(add && insert && remove && up && down);
    for (QToolButton* button : {add, insert, remove, up, down})
        QVERIFY(!button->toolTip().isEmpty());

    add->click();
    QCOMPARE(document.session().tokens, strings({"I", "love", "AI", "tok3"}));
    QCOMPARE(x->table()->model()->rowCount(), 4);
    QCOMPARE(x->tokenTable()->currentIndex().row(), 3); // the new token is selected
    up->click();
    QCOMPARE(document.session().tokens, strings({"I", "love", "tok3", "AI"}));
    QCOMPARE(x->tokenTable()->currentIndex().row(), 2);
    insert->click();
    QCOMPARE(document.session().tokens, strings({"I", "love", "tok4", "tok3", "AI"}));
    x->tokenTable()->setCurrentIndex(x->tokenModel()->index(0, 0));
    down->click();
    QCOMPARE(document.session().tokens, strings({"love", "I", "tok4", "tok3", "AI"}));
    x->tokenTable()->selectionModel()->clearSelection();
    x->tokenTable()->setCurrentIndex(x->tokenModel()->index(4, 0));
    remove->click();
    QCOMPARE(document.session().tokens, strings({"love", "I", "tok4", "tok3"}));
    QCOMPARE(document.undoStack()->count(), 5);
    QVERIFY(!document.session().X.hasNaN());

    // The editor follows the head; switching the matrix renames the table.
    openExample(document, QStringLiteral("multihead"));
    document.setCurrentHead(1);
    QCOMPARE(wq->matrixRef().head, 1);
    wq->setMatrixRef(MatrixRef{MatrixKind::W_V, 1});
    QCOMPARE(wq->table()->objectName(), QStringLiteral("editor_W_V"));
    QCOMPARE(wq->matrixRef().kind, MatrixKind::W_V);
    QVERIFY(wq->findChild<QLabel*>(QStringLiteral("title"))->text().contains(QStringLiteral("W_V (head 2)")));

    // The context side appears with cross-attention.
    openExample(document, QStringLiteral("translation"));
    QCOMPARE(z->table()->model()->rowCount(), 4);
    QCOMPARE(z->tokenTable()->model()->rowCount(), 4);
    window.findChild<QToolButton*>(QStringLiteral("addToken_context"))->click();
    QCOMPARE(document.session().context->tokens.size(), std::size_t(5));
}

void TestEditors::editorCopyPaste()
{
    Document document;
    MatrixEditor editor(&document, MatrixRef{MatrixKind::W_Q, 0});
    QSignalSpy messages(&editor, &MatrixEditor::message);
    QTableView* table = editor.table();
    QClipboard* clipboard = QGuiApplication::clipboard();

    table->selectionModel()->select(QItemSelection(editor.model()->index(1, 1), editor.model()->index(2, 2)),
                                    QItemSelectionModel::Select);
    editor.copyAction()->trigger();
    QCOMPARE(clipboard->text(), QStringLiteral("1\t0\n0\t0\n"));

    clipboard->setText(QStringLiteral("9\t8\n7\t6\n"));
    table->setCurrentIndex(editor.model()->index(2, 1));
    editor.pasteAction()->trigger();
    QCOMPARE(messages.count(), 0);
    QCOMPARE(document.undoStack()->count(), 1);
    Matrix expected = Matrix(4, 3);
    expected << 1, 0, 1, 0, 1, 0, 1, 9, 8, 0, 7, 6;
    QKV_COMPARE_NEAR(document.session().heads[0].W_Q, expected, 0.0);

    // A block that does not fit: a message, nothing changed.
    table->setCurrentIndex(editor.model()->index(3, 2));
    editor.pasteAction()->trigger();
    QCOMPARE(messages.count(), 1);
    QCOMPARE(document.undoStack()->count(), 1);
    clipboard->setText(QStringLiteral("oops"));
    table->setCurrentIndex(editor.model()->index(0, 0));
    editor.pasteAction()->trigger();
    QCOMPARE(messages.count(), 2);
    QVERIFY2(messages.last().first().toString().contains(QStringLiteral("line 1, column 1")),
             qPrintable(messages.last().first().toString()));
    QKV_COMPARE_NEAR(document.session().heads[0].W_Q, expected, 0.0);

    // A refused cell edit reaches the editor's message signal too.
    QVERIFY(!editor.model()->setData(editor.model()->index(0, 0), QStringLiteral("abc")));
    QCOMPARE(messages.count(), 3);
}

void TestEditors::renameDimensionInHeader()
{
    Document document;
    openExample(document, QStringLiteral("love"));
    QWidget window;
    auto* layout = new QHBoxLayout(&window);
    auto* editor = new MatrixEditor(&document, MatrixRef{MatrixKind::X}, &window);
    layout->addWidget(editor);
    window.resize(500, 300);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    MatrixModel* model = editor->model();
    QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QStringLiteral("d2"));
    QSignalSpy headers(model, &QAbstractItemModel::headerDataChanged);

    // Double-click the header of column 2, type a name, Enter: one undo step.
    const Session before = document.session();
    const int steps = document.undoStack()->count();
    QHeaderView* header = editor->table()->horizontalHeader();
    const QPoint centre(header->sectionViewportPosition(2) + header->sectionSize(2) / 2,
                        header->height() / 2);
    QTest::mouseDClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, centre);
    QLineEdit* line = editor->dimensionNameEditor();
    QVERIFY(line != nullptr);
    QVERIFY(line->text().isEmpty()); // unnamed so far
    QTest::keyClicks(line, QStringLiteral("verb"));
    QTest::keyClick(line, Qt::Key_Return);
    QCOMPARE(document.undoStack()->count(), steps + 1);
    QCOMPARE(document.session().dims, strings({"", "", "verb", ""}));
    QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QStringLiteral("verb"));
    QVERIFY(!headers.isEmpty());
    QTRY_VERIFY(editor->dimensionNameEditor() == nullptr);
    QVERIFY(editor->table()->columnWidth(2) >=
            QFontMetrics(editor->table()->font()).horizontalAdvance(QStringLiteral("verb")));

    // Escape cancels: nothing pushed.
    QTest::mouseDClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, centre);
    line = editor->dimensionNameEditor();
    QVERIFY(line != nullptr);
    QCOMPARE(line->text(), QStringLiteral("verb"));
    QTest::keyClicks(line, QStringLiteral("XYZ"));
    QTest::keyClick(line, Qt::Key_Escape);
    QTRY_VERIFY(editor->dimensionNameEditor() == nullptr);
    QCOMPARE(document.undoStack()->count(), steps + 1);

    // The same name again pushes nothing; undo gives back the unnamed session, redo the name.
    QVERIFY(model->setHeaderData(2, Qt::Horizontal, QStringLiteral("verb")));
    QCOMPARE(document.undoStack()->count(), steps + 1);
    document.undoStack()->undo();
    QVERIFY(document.session() == before);
    QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QStringLiteral("d2"));
    document.undoStack()->redo();
    QCOMPARE(document.session().dims, strings({"", "", "verb", ""}));

    // Z names its own columns in cross-attention.
    pushEdit(&document, QStringLiteral("cross"), Document::Shape,
             [](Session& s) { setCrossAttention(s, true); });
    MatrixModel z(&document, MatrixRef{MatrixKind::Z});
    QCOMPARE(z.headerData(2, Qt::Horizontal).toString(), QStringLiteral("verb")); // copied from X
    QVERIFY(z.setHeaderData(0, Qt::Horizontal, QStringLiteral("source")));
    QCOMPARE(document.session().context->dims, strings({"source", "", "verb", ""}));
    QCOMPARE(document.session().dims, strings({"", "", "verb", ""}));
    MatrixModel wk(&document, MatrixRef{MatrixKind::W_K, 0});
    QCOMPARE(wk.headerData(0, Qt::Vertical).toString(),
             QStringLiteral("source")); // W_K's rows: Z's dimensions
    MatrixModel wq(&document, MatrixRef{MatrixKind::W_Q, 0});
    QCOMPARE(wq.headerData(0, Qt::Vertical).toString(), QStringLiteral("d0"));
}

void TestEditors::largeEditorColumnsFitTheirNumbers()
{
    // 1024 tokens × 64: too many cells to measure each text, not too many to format each. Columns fit what
    // they show (the longest text of a column decides), not the widest text the format could produce.
    Document document;
    Matrix values(1024, 64);
    for (Index i = 0; i < values.rows(); ++i)
        for (Index j = 0; j < values.cols(); ++j)
            values(i, j) = std::sin(double(i * 64 + j)) * (j == 5 ? 1e-7 : 1.0); // column 5 gets exponents
    document.push(makeMatrixCommand(&document, QStringLiteral("set X"), MatrixRef{MatrixKind::X}, values));
    QWidget window;
    auto* layout = new QHBoxLayout(&window);
    auto* editor = new MatrixEditor(&document, MatrixRef{MatrixKind::X}, &window);
    layout->addWidget(editor);
    window.resize(400, 300);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTableView* table = editor->table();
    const QFontMetrics metrics(table->font());
    const int worstCase = metrics.horizontalAdvance(QStringLiteral("-0.000e-0000"));
    for (int column : {0, 5, 63}) {
        int widest = 0;
        for (int row = 0; row < 1024; ++row)
            widest = std::max(
                widest, metrics.horizontalAdvance(editor->model()->index(row, column).data().toString()));
        QVERIFY2(table->columnWidth(column) >= widest + 4, qPrintable(QString::number(column)));
        if (column != 5)
            QVERIFY2(
                table->columnWidth(column) < worstCase,
                qPrintable(
                    QStringLiteral("%1 px, worst case %2").arg(table->columnWidth(column)).arg(worstCase)));
    }
    // An edit that makes a column's longest text longer widens it.
    const int before = table->columnWidth(0);
    document.push(makeCellCommand(&document, MatrixRef{MatrixKind::X}, 7, 0, -1.234e-200));
    QVERIFY(table->columnWidth(0) > before);
}

// No cell is elided: each shows four significant digits (or the number chosen) in a column wide enough,
// and the tooltip and the cell editor hold the full value, which reads back exactly.
void TestEditors::editorShowsItsNumbers()
{
    Document document;
    Matrix values(3, 4);
    values << -0.76345678901234567, 0.1234567890123, 12345.678901, 1e-7, //
        -1.5e-300, 3.0, -2.0 / 3.0, 0.1 + 0.2,                           //
        123456789.0, -0.000123456789, 1.0 / 7.0, -9.999999999;
    document.push(makeMatrixCommand(&document, QStringLiteral("set X"), MatrixRef{MatrixKind::X}, values));
    QWidget window;
    auto* layout = new QHBoxLayout(&window);
    auto* editor = new MatrixEditor(&document, MatrixRef{MatrixKind::X}, &window);
    layout->addWidget(editor);
    window.resize(300, 200); // narrower than the matrix: it scrolls, it does not elide
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTableView* table = editor->table();
    MatrixModel* model = editor->model();
    QCOMPARE(table->textElideMode(), Qt::ElideNone);

    for (int digits : {4, 2, 8}) {
        if (digits != 4)
            editor->setSignificantDigits(digits);
        QCOMPARE(editor->significantDigits(), digits);
        const QFontMetrics metrics(table->font());
        for (int row = 0; row < 3; ++row)
            for (int column = 0; column < 4; ++column) {
                const QModelIndex index = model->index(row, column);
                const double value = values(row, column);
                const QString shown = index.data().toString();
                QVERIFY2(!shown.contains(QChar(0x2026)) && !shown.contains(QStringLiteral("...")),
                         qPrintable(shown));
                QCOMPARE(shown, QString::number(value, 'g', digits)); // the same precision everywhere
                QVERIFY2(table->columnWidth(column) >= metrics.horizontalAdvance(shown) + 4,
                         qPrintable(QStringLiteral("%1: %2 px for %3 px of text")
                                        .arg(shown)
                                        .arg(table->columnWidth(column))
                                        .arg(metrics.horizontalAdvance(shown))));
                const QString tip = index.data(Qt::ToolTipRole).toString();
                QCOMPARE(tip.section(QStringLiteral(" = "), 1).toDouble(), value);
                QCOMPARE(index.data(Qt::EditRole).toDouble(), value);
            }
    }

    // The digits are chosen from the table's context menu too.
    auto* six = editor->findChild<QAction*>(QStringLiteral("digits_6"));
    QVERIFY(six);
    six->trigger();
    QCOMPARE(editor->significantDigits(), 6);
    QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("-0.763457"));
    QVERIFY(six->isChecked());
    editor->setSignificantDigits(4);
    QVERIFY(editor->findChild<QAction*>(QStringLiteral("digits_4"))->isChecked());

    // While editing, the editor holds the whole value; committing it unchanged changes nothing.
    const int steps = document.undoStack()->count();
    const QModelIndex index = model->index(1, 2);
    table->setCurrentIndex(index);
    table->edit(index);
    auto* line = table->findChild<QLineEdit*>();
    QVERIFY(line);
    QCOMPARE(line->text().toDouble(), -2.0 / 3.0);
    QVERIFY(line->text().size() >= 17);
    QTest::keyClick(line, Qt::Key_Return);
    QCOMPARE(document.undoStack()->count(), steps);
    QCOMPARE(document.session().X(1, 2), -2.0 / 3.0);
}

void TestEditors::editorShortcutsAndFocus()
{
    Document document;
    QWidget window;
    auto* layout = new QHBoxLayout(&window);
    auto* x = new MatrixEditor(&document, MatrixRef{MatrixKind::X}, &window);
    auto* wk = new MatrixEditor(&document, MatrixRef{MatrixKind::W_K, 0}, &window);
    layout->addWidget(x);
    layout->addWidget(wk);
    QSignalSpy xActivated(x, &MatrixEditor::activated);
    QSignalSpy wkActivated(wk, &MatrixEditor::activated);
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));

    QTRY_VERIFY(QApplication::focusWidget() != nullptr); // showing the window focused the first table
    xActivated.clear();
    wkActivated.clear();
    wk->table()->setFocus();
    QTRY_COMPARE(wkActivated.count(), 1);
    QCOMPARE(xActivated.count(), 0);

    // Ctrl+V in the W_K table pastes into W_K, not X.
    QGuiApplication::clipboard()->setText(QStringLiteral("4,5"));
    wk->table()->setCurrentIndex(wk->model()->index(0, 1));
    QTest::keySequence(wk->table(), QKeySequence::Paste);
    QCOMPARE(document.session().heads[0].W_K(0, 1), 4.0);
    QCOMPARE(document.session().heads[0].W_K(0, 2), 5.0);
    QCOMPARE(document.undoStack()->count(), 1);

    x->table()->setFocus();
    QTRY_COMPARE(xActivated.count(), 1);
    x->table()->selectionModel()->select(QItemSelection(x->model()->index(0, 0), x->model()->index(0, 3)),
                                         QItemSelectionModel::ClearAndSelect);
    QTest::keySequence(x->table(), QKeySequence::Copy);
    QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("1\t0\t1\t0\n"));

    // Typing into a cell goes through the text delegate and the model's checks.
    const QModelIndex cell = x->model()->index(1, 1);
    x->table()->setCurrentIndex(cell);
    x->table()->edit(cell);
    auto* lineEdit = x->table()->viewport()->findChild<QLineEdit*>();
    QVERIFY(lineEdit);
    QCOMPARE(lineEdit->text(), QStringLiteral("1"));
    lineEdit->selectAll();
    QTest::keyClicks(lineEdit, QStringLiteral("0.75"));
    QTest::keyClick(lineEdit, Qt::Key_Return); // the delegate commits on a queued call
    QTRY_COMPARE(document.session().X(1, 1), 0.75);
    QCOMPARE(document.undoStack()->count(), 2);

    // Text that is not a number: refused with a message, the cell keeps its value.
    QSignalSpy messages(x, &MatrixEditor::message);
    x->table()->edit(cell);
    lineEdit = x->table()->viewport()->findChild<QLineEdit*>();
    QVERIFY(lineEdit);
    lineEdit->selectAll();
    QTest::keyClicks(lineEdit, QStringLiteral("zero"));
    QTest::keyClick(lineEdit, Qt::Key_Return);
    QTRY_COMPARE(messages.count(), 1);
    QCOMPARE(document.session().X(1, 1), 0.75);
    QCOMPARE(document.undoStack()->count(), 2);

    // Typing on a cell replaces its value, as in a spreadsheet.
    const QModelIndex other = x->model()->index(2, 0);
    x->table()->setFocus();
    x->table()->setCurrentIndex(other);
    QTest::keyClick(x->table(), Qt::Key_Minus);
    lineEdit = x->table()->viewport()->findChild<QLineEdit*>();
    QVERIFY(lineEdit);
    QCOMPARE(lineEdit->text(), QStringLiteral("-")); // the old value is gone
    QTest::keyClick(lineEdit, Qt::Key_5);
    QCOMPARE(lineEdit->text(), QStringLiteral("-5"));
    QTest::keyClick(lineEdit, Qt::Key_Return);
    QTRY_COMPARE(document.session().X(2, 0), -5.0);
    QCOMPARE(document.undoStack()->count(), 3);
}

QKV_TEST_MAIN(TestEditors)
#include "tst_editors.moc"
