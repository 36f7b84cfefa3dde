// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixEditor.h"

#include "Document.h"
#include "MatrixModel.h"
#include "TokenModel.h"

#include <QAction>
#include <QActionGroup>
#include <QClipboard>
#include <QEvent>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QScrollBar>
#include <QStyle>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace qkv::ui {

namespace {

// Cells are edited as text, so that anything typed reaches MatrixModel::setData (which refuses what is not
// a finite number with a message) and no spin box rounds or clamps the value.
class NumberDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override
    {
        auto* editor = new QLineEdit(parent);
        editor->setFrame(false);
        editor->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        return editor;
    }
    void setEditorData(QWidget* editor, const QModelIndex& index) const override
    {
        const double value = index.data(Qt::EditRole).toDouble();
        static_cast<QLineEdit*>(editor)->setText(QString::number(value, 'g', QLocale::FloatingPointShortest));
    }
    void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override
    {
        model->setData(index, static_cast<QLineEdit*>(editor)->text(), Qt::EditRole);
    }
};

// A model reset (a new shape, another head) would drop the current cell; put it back, clamped.
void keepCurrentAcrossResets(QTableView* view)
{
    auto saved = std::make_shared<QPoint>(-1, -1);
    QAbstractItemModel* model = view->model();
    QObject::connect(model, &QAbstractItemModel::modelAboutToBeReset, view, [view, saved] {
        const QModelIndex current = view->currentIndex();
        *saved = current.isValid() ? QPoint(current.column(), current.row()) : QPoint(-1, -1);
    });
    QObject::connect(model, &QAbstractItemModel::modelReset, view, [view, model, saved] {
        if (saved->y() < 0 || model->rowCount() == 0 || model->columnCount() == 0)
            return;
        const int row = std::min(saved->y(), model->rowCount() - 1);
        const int column = std::min(saved->x(), model->columnCount() - 1);
        view->setCurrentIndex(model->index(row, column));
    });
}

QToolButton* makeToolButton(QWidget* parent, const QString& text, const QString& toolTip)
{
    auto* button = new QToolButton(parent);
    button->setText(text);
    button->setToolTip(toolTip);
    button->setAutoRaise(true);
    return button;
}

} // namespace

MatrixEditor::MatrixEditor(Document* document, MatrixRef ref, QWidget* parent)
    : QWidget(parent), m_document(document), m_model(new MatrixModel(document, ref, this)),
      m_tokenModel(new TokenModel(document, Side::Query, this)), m_title(new QLabel(this)),
      m_table(new QTableView(this)), m_tokenView(new QTableView(this)), m_tokenButtons(new QWidget(this))
{
    m_model->setFollowsCurrentHead(ref.isPerHead());

    m_title->setObjectName(QStringLiteral("title"));
    m_title->setTextFormat(Qt::PlainText);

    setUpTable();
    setUpTableActions();
    setUpTokenList();
    setUpTokenButtons();
    layOut();
    connectModels();
    connectSelection();
    updateTokenPane();
    updateTitle();
    fitColumns();
}

void MatrixEditor::setUpTable()
{
    // The matrix table: columns as wide as what they show (fitColumns), never elided.
    const QFontMetrics metrics(m_table->font());
    m_table->setModel(m_model);
    m_table->setItemDelegate(new NumberDelegate(m_table));
    m_table->setTextElideMode(Qt::ElideNone);
    m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                             QAbstractItemView::AnyKeyPressed);
    m_table->horizontalHeader()->setMinimumSectionSize(metrics.horizontalAdvance(QStringLiteral("00")) + 8);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->verticalHeader()->setDefaultSectionSize(metrics.height() + 6);
    m_table->installEventFilter(this);
    keepCurrentAcrossResets(m_table);
}

void MatrixEditor::setUpTableActions()
{
    m_copyAction = new QAction(tr("&Copy"), this);
    m_copyAction->setObjectName(QStringLiteral("copy"));
    m_copyAction->setShortcut(QKeySequence::Copy);
    m_copyAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_copyAction->setToolTip(tr("Copy the selected cells as tab-separated numbers"));
    connect(m_copyAction, &QAction::triggered, this, &MatrixEditor::copySelection);
    m_pasteAction = new QAction(tr("&Paste"), this);
    m_pasteAction->setObjectName(QStringLiteral("paste"));
    m_pasteAction->setShortcut(QKeySequence::Paste);
    m_pasteAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_pasteAction->setToolTip(tr("Paste a block of numbers (from a spreadsheet or CSV) at the current cell"));
    connect(m_pasteAction, &QAction::triggered, this, &MatrixEditor::paste);
    m_table->addAction(m_copyAction);
    m_table->addAction(m_pasteAction);
    // How many significant digits the cells show: a submenu of the table's context menu.
    auto* digitsMenu = new QMenu(tr("Significant &Digits"), this);
    auto* digitsGroup = new QActionGroup(digitsMenu);
    for (int digits : {2, 3, 4, 5, 6, 8, 10, 17}) {
        QAction* action = digitsMenu->addAction(QString::number(digits));
        action->setObjectName(QStringLiteral("digits_%1").arg(digits));
        action->setCheckable(true);
        action->setChecked(digits == m_model->significantDigits());
        digitsGroup->addAction(action);
        connect(action, &QAction::triggered, this, [this, digits] { setSignificantDigits(digits); });
    }
    m_digitsMenu = digitsMenu;
    m_table->addAction(digitsMenu->menuAction());
    m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
}

void MatrixEditor::setUpTokenList()
{
    const QFontMetrics metrics(m_table->font());
    // The token list beside X or Z, row for row with the matrix.
    m_tokenView->setModel(m_tokenModel);
    m_tokenView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tokenView->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_tokenView->verticalHeader()->setDefaultSectionSize(metrics.height() + 6);
    m_tokenView->horizontalHeader()->setStretchLastSection(true);
    m_tokenView->setColumnWidth(TokenModel::TokenColumn, metrics.horizontalAdvance(QStringLiteral("wwwwww")));
    m_tokenView->setMaximumWidth(metrics.horizontalAdvance(QStringLiteral("wwwwwwwwwwww")) + 40);
    m_tokenView->installEventFilter(this);
    keepCurrentAcrossResets(m_tokenView);
    connect(m_tokenView->verticalScrollBar(), &QScrollBar::valueChanged, m_table->verticalScrollBar(),
            &QScrollBar::setValue);
    connect(m_table->verticalScrollBar(), &QScrollBar::valueChanged, m_tokenView->verticalScrollBar(),
            &QScrollBar::setValue);
}

void MatrixEditor::setUpTokenButtons()
{
    m_addButton = makeToolButton(m_tokenButtons, tr("Add"), tr("Add a token at the end"));
    m_insertButton =
        makeToolButton(m_tokenButtons, tr("Insert"), tr("Insert a token before the current one"));
    m_removeButton = makeToolButton(m_tokenButtons, tr("Remove"), tr("Remove the selected tokens"));
    m_upButton = makeToolButton(m_tokenButtons, tr("Up"), tr("Move the current token up"));
    m_downButton = makeToolButton(m_tokenButtons, tr("Down"), tr("Move the current token down"));
    connect(m_addButton, &QToolButton::clicked, this, &MatrixEditor::addToken);
    connect(m_insertButton, &QToolButton::clicked, this, &MatrixEditor::insertToken);
    connect(m_removeButton, &QToolButton::clicked, this, &MatrixEditor::removeTokens);
    connect(m_upButton, &QToolButton::clicked, this, [this] { moveToken(-1); });
    connect(m_downButton, &QToolButton::clicked, this, [this] { moveToken(+1); });

    auto* buttons = new QHBoxLayout(m_tokenButtons);
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->setSpacing(0);
    for (QToolButton* button : {m_addButton, m_insertButton, m_removeButton, m_upButton, m_downButton})
        buttons->addWidget(button);
    buttons->addStretch();
}

void MatrixEditor::layOut()
{
    // The token buttons go below both tables: beside the token list they would take the matrix's width.
    auto* body = new QHBoxLayout;
    body->setContentsMargins(0, 0, 0, 0);
    body->addWidget(m_tokenView);
    body->addWidget(m_table, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->setSpacing(2);
    layout->addWidget(m_title);
    layout->addLayout(body, 1);
    layout->addWidget(m_tokenButtons);
}

void MatrixEditor::connectModels()
{
    connect(m_model, &MatrixModel::inputRejected, this, &MatrixEditor::message);
    connect(m_tokenModel, &TokenModel::inputRejected, this, &MatrixEditor::message);
    connect(m_model, &QAbstractItemModel::modelReset, this, &MatrixEditor::updateTitle);
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] { fitColumns(); });
    // The model announces only the cells an edit changed: only their columns are measured again.
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex& topLeft, const QModelIndex& bottomRight) {
                fitColumns(topLeft.column(), bottomRight.column());
            });
    connect(m_model, &QAbstractItemModel::headerDataChanged, this,
            [this](Qt::Orientation orientation, int first, int last) {
                if (orientation == Qt::Horizontal) // a renamed dimension may be wider than its numbers
                    fitColumns(first, last);
            });
    connect(m_table->horizontalHeader(), &QHeaderView::sectionDoubleClicked, this,
            &MatrixEditor::editDimensionName);
    connect(m_tokenModel, &QAbstractItemModel::modelReset, this, &MatrixEditor::updateTokenButtons);
    connect(m_tokenView->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &MatrixEditor::updateTokenButtons);
}

void MatrixEditor::connectSelection()
{
    // Linked selection: a row of X is a query, a row of Z a key (of X too in self-attention, where the
    // selected key is shown by the token list).
    connect(m_table->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) {
                if (!current.isValid())
                    return;
                if (matrixRef().kind == MatrixKind::X)
                    m_document->setSelection(current.row(), m_document->selectedKey());
                else if (matrixRef().kind == MatrixKind::Z)
                    m_document->setSelection(m_document->selectedQuery(), current.row());
            });
    connect(m_document, &Document::selectionChanged, this, [this](Index query, Index key) {
        const MatrixKind kind = matrixRef().kind;
        if (kind != MatrixKind::X && kind != MatrixKind::Z)
            return;
        const int row = static_cast<int>(kind == MatrixKind::X ? query : key);
        const QModelIndex current = m_table->currentIndex();
        if (row < m_model->rowCount() && (!current.isValid() || current.row() != row))
            m_table->setCurrentIndex(m_model->index(row, current.isValid() ? current.column() : 0));
    });
}

int MatrixEditor::significantDigits() const
{
    return m_model->significantDigits();
}

void MatrixEditor::setSignificantDigits(int digits)
{
    m_model->setSignificantDigits(digits); // dataChanged: the columns follow
    for (QAction* action : m_digitsMenu->actions())
        action->setChecked(action->objectName() ==
                           QStringLiteral("digits_%1").arg(m_model->significantDigits()));
}

void MatrixEditor::fitColumns(int first, int last)
{
    // Each column as wide as its widest text (header included). Measuring text is what costs: up to
    // measuredCells every text is measured; up to formattedCells every text is formatted and the longest
    // (in characters) measured; past that, every column gets the widest text the format can produce (a
    // column as wide as "-0.000e-0000" at 1024 tokens left less than one readable column in the X dock).
    QHeaderView* header = m_table->horizontalHeader();
    const QFontMetrics metrics(m_table->font());
    const int padding = 2 * m_table->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, m_table) + 8;
    const int rows = m_model->rowCount(), columns = m_model->columnCount();
    if (rows == 0 || columns == 0 || !exists(m_document->session(), m_model->matrixRef()))
        return;
    first = std::max(first, 0);
    last = std::min(last, columns - 1);
    constexpr qint64 measuredCells = 20'000;
    constexpr qint64 formattedCells = 300'000;
    const qint64 cells = qint64(rows) * columns;
    if (cells > formattedCells) {
        // a sign, "0.000" or an exponent beside the digits
        const QString widest = QStringLiteral("-0.000e-") + QString(m_model->significantDigits(), u'0');
        const int width = metrics.horizontalAdvance(widest) + padding;
        header->setDefaultSectionSize(width);
        for (int column = first; column <= last; ++column)
            header->resizeSection(column, width);
        return;
    }
    const Eigen::Map<const Matrix> values = matrixView(m_document->session(), m_model->matrixRef());
    for (int column = first; column <= last && column < values.cols(); ++column) {
        int width = metrics.horizontalAdvance(m_model->headerData(column, Qt::Horizontal).toString());
        QString longest;
        for (int row = 0; row < rows && row < values.rows(); ++row) {
            QString text = m_model->displayText(values(row, column));
            if (cells <= measuredCells)
                width = std::max(width, metrics.horizontalAdvance(text));
            else if (text.size() > longest.size())
                longest = std::move(text);
        }
        width = std::max(width, metrics.horizontalAdvance(longest));
        header->resizeSection(column, width + padding);
    }
}

QLineEdit* MatrixEditor::dimensionNameEditor() const
{
    return m_table->horizontalHeader()->findChild<QLineEdit*>(QStringLiteral("dimensionNameEditor"));
}

void MatrixEditor::editDimensionName(int section)
{
    if (!m_model->namesDimensions() || section < 0 || section >= m_model->columnCount())
        return;
    QHeaderView* header = m_table->horizontalHeader();
    delete dimensionNameEditor(); // one at a time
    auto* editor = new QLineEdit(header->viewport());
    editor->setObjectName(QStringLiteral("dimensionNameEditor"));
    editor->setText(m_model->headerData(section, Qt::Horizontal, Qt::EditRole).toString());
    editor->setPlaceholderText(QStringLiteral("d%1").arg(section));
    editor->setToolTip(
        tr("The name of dimension %1 of d_model (empty: none). Enter renames, Esc cancels.").arg(section));
    const int width = std::max(header->sectionSize(section),
                               editor->fontMetrics().horizontalAdvance(QStringLiteral("determiner")) + 12);
    editor->setGeometry(header->sectionViewportPosition(section), 0, width, header->height());
    editor->installEventFilter(this);
    // editingFinished comes on Enter and again when the focus leaves: the first one renames.
    connect(editor, &QLineEdit::editingFinished, this, [this, editor, section] {
        if (editor->property("done").toBool())
            return;
        editor->setProperty("done", true);
        const QString name = editor->text();
        editor->deleteLater();
        m_model->setHeaderData(section, Qt::Horizontal, name, Qt::EditRole);
    });
    editor->show();
    editor->setFocus(Qt::OtherFocusReason);
    editor->selectAll();
}

MatrixRef MatrixEditor::matrixRef() const
{
    return m_model->matrixRef();
}

void MatrixEditor::setMatrixRef(MatrixRef ref)
{
    m_model->setMatrixRef(ref);
    updateTokenPane();
    updateTitle();
}

void MatrixEditor::setFollowsCurrentHead(bool follow)
{
    m_model->setFollowsCurrentHead(follow);
}

void MatrixEditor::updateTitle()
{
    const MatrixRef ref = m_model->matrixRef();
    if (m_model->rowCount() == 0) {
        m_title->setText(tr("%1 (not in this session)").arg(displayName(ref)));
        return;
    }
    m_title->setText(QStringLiteral("%1  %2 × %3")
                         .arg(displayName(ref))
                         .arg(m_model->rowCount())
                         .arg(m_model->columnCount()));
}

void MatrixEditor::updateTokenPane()
{
    const MatrixKind kind = m_model->matrixRef().kind;
    m_table->setObjectName(QStringLiteral("editor_") + matrixName(kind));
    const bool tokens = kind == MatrixKind::X || kind == MatrixKind::Z;
    m_tokenView->setVisible(tokens);
    // The token list beside the table names the rows already: the table's own row names would take the
    // width of a column twice over in a narrow dock.
    m_table->verticalHeader()->setVisible(!tokens);
    m_tokenButtons->setVisible(tokens);
    if (!tokens)
        return;
    const Side side = kind == MatrixKind::X ? Side::Query : Side::Context;
    const QString sideName = side == Side::Query ? QStringLiteral("query") : QStringLiteral("context");
    if (m_tokenModel->side() != side)
        m_tokenModel->setSide(side);
    m_tokenView->setObjectName(QStringLiteral("tokens_") + sideName);
    m_addButton->setObjectName(QStringLiteral("addToken_") + sideName);
    m_insertButton->setObjectName(QStringLiteral("insertToken_") + sideName);
    m_removeButton->setObjectName(QStringLiteral("removeToken_") + sideName);
    m_upButton->setObjectName(QStringLiteral("moveTokenUp_") + sideName);
    m_downButton->setObjectName(QStringLiteral("moveTokenDown_") + sideName);
    updateTokenButtons();
}

int MatrixEditor::currentTokenRow() const
{
    const QModelIndex current = m_tokenView->currentIndex();
    return current.isValid() ? current.row() : -1;
}

void MatrixEditor::selectTokenRow(int row)
{
    if (row < 0 || row >= m_tokenModel->rowCount())
        return;
    m_tokenView->setCurrentIndex(m_tokenModel->index(row, TokenModel::TokenColumn));
    m_tokenView->selectRow(row);
    updateTokenButtons();
}

void MatrixEditor::updateTokenButtons()
{
    const int count = m_tokenModel->rowCount();
    const int row = currentTokenRow();
    const bool any = count > 0; // a context exists (the query side always has tokens)
    m_addButton->setEnabled(any);
    m_insertButton->setEnabled(any);
    m_removeButton->setEnabled(count > 1);
    m_upButton->setEnabled(row > 0);
    m_downButton->setEnabled(row >= 0 && row + 1 < count);
}

void MatrixEditor::addToken()
{
    if (m_tokenModel->appendToken())
        selectTokenRow(m_tokenModel->rowCount() - 1);
}

void MatrixEditor::insertToken()
{
    const int row = std::max(currentTokenRow(), 0);
    if (m_tokenModel->insertToken(row))
        selectTokenRow(row);
}

void MatrixEditor::removeTokens()
{
    QList<int> rows;
    const QModelIndexList selected = m_tokenView->selectionModel()->selectedIndexes();
    for (const QModelIndex& index : selected)
        if (!rows.contains(index.row()))
            rows.append(index.row());
    if (rows.isEmpty() && currentTokenRow() >= 0)
        rows.append(currentTokenRow());
    const int first = rows.isEmpty() ? 0 : *std::min_element(rows.begin(), rows.end());
    if (m_tokenModel->removeTokens(rows))
        selectTokenRow(std::min(first, m_tokenModel->rowCount() - 1));
}

void MatrixEditor::moveToken(int delta)
{
    const int row = currentTokenRow();
    if (row < 0)
        return;
    if (m_tokenModel->moveToken(row, row + delta))
        selectTokenRow(row + delta);
}

void MatrixEditor::copySelection()
{
    // The corners of the selection's bounding rectangle, not every selected index (Select All on a
    // 4096 × 4096 matrix would list 16 million).
    QModelIndexList indexes;
    for (const QItemSelectionRange& range : m_table->selectionModel()->selection())
        indexes << range.topLeft() << range.bottomRight();
    if (indexes.isEmpty() && m_table->currentIndex().isValid())
        indexes.append(m_table->currentIndex());
    const QString text = m_model->copyText(indexes);
    if (text.isEmpty()) {
        emit message(tr("Select the cells to copy first."));
        return;
    }
    QGuiApplication::clipboard()->setText(text);
}

void MatrixEditor::paste()
{
    const QString text = QGuiApplication::clipboard()->text();
    if (text.trimmed().isEmpty()) {
        emit message(tr("The clipboard holds no numbers to paste."));
        return;
    }
    const QModelIndex current = m_table->currentIndex();
    QString error;
    if (!m_model->pasteText(current.isValid() ? current : m_model->index(0, 0), text, &error))
        emit message(error);
}

bool MatrixEditor::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::FocusIn && (watched == m_table || watched == m_tokenView))
        emit activated();
    if (event->type() == QEvent::KeyPress && watched == dimensionNameEditor() &&
        static_cast<QKeyEvent*>(event)->key() == Qt::Key_Escape) {
        watched->setProperty("done", true); // cancelled: the focus leaving it must not rename
        watched->deleteLater();
        m_table->setFocus(Qt::OtherFocusReason);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace qkv::ui
