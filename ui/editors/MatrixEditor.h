// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One matrix editor of the workbench: a title, a table over a MatrixModel, and for X and Z the token list
// with its tool buttons. Copy and paste use the spreadsheet clipboard format.

#include "MatrixRef.h"

#include <QWidget>

#include <limits>

class QAction;
class QLabel;
class QLineEdit;
class QMenu;
class QTableView;
class QToolButton;

namespace qkv::ui {

class Document;
class MatrixModel;
class TokenModel;

class MatrixEditor : public QWidget {
    Q_OBJECT
public:
    /// The table's objectName is "editor_" + the matrix name ("editor_X", "editor_W_Q"); the token list
    /// of X is "tokens_query", of Z "tokens_context". Per-head matrices follow the document's current head.
    MatrixEditor(Document* document, MatrixRef ref, QWidget* parent = nullptr);

    MatrixRef matrixRef() const;
    void setMatrixRef(MatrixRef ref);
    /// On by default for per-head matrices: show the document's current head.
    void setFollowsCurrentHead(bool follow);

    /// Significant digits the cells show (MatrixModel::setSignificantDigits); the columns follow. Also
    /// chosen from the table's context menu (actions "digits_2" … "digits_17").
    int significantDigits() const;
    void setSignificantDigits(int digits);

    QTableView* table() const { return m_table; }
    MatrixModel* model() const { return m_model; }
    /// The open dimension-name editor over a column header of X or Z (null when none is open).
    QLineEdit* dimensionNameEditor() const;
    /// The token list (hidden unless the matrix is X or Z).
    QTableView* tokenTable() const { return m_tokenView; }
    TokenModel* tokenModel() const { return m_tokenModel; }
    QAction* copyAction() const { return m_copyAction; }
    QAction* pasteAction() const { return m_pasteAction; }

public slots:
    /// Puts the selected block (or the current cell) on the clipboard, tab-separated.
    void copySelection();
    /// Writes the clipboard's block of numbers with its top-left at the current cell ((0, 0) if none).
    void paste();

signals:
    /// A refused edit or paste, for the status bar or a message box.
    void message(const QString& text);
    /// The table (or the token list) got the keyboard focus: this is now the "selected" editor.
    void activated();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    // The constructor's parts: the matrix table and its context menu, the token list and its buttons, the
    // layout, what the models and the document's selection tell the editor.
    void setUpTable();
    void setUpTableActions();
    void setUpTokenList();
    void setUpTokenButtons();
    void layOut();
    void connectModels();
    void connectSelection();
    void updateTitle();
    /// Sizes columns `first` to `last` (all by default) to their widest text, header included.
    void fitColumns(int first = 0, int last = std::numeric_limits<int>::max());
    void updateTokenPane();
    void updateTokenButtons();
    int currentTokenRow() const;
    void selectTokenRow(int row);
    void addToken();
    void insertToken();
    void removeTokens();
    void moveToken(int delta);
    /// A line edit over column `section`'s header ("dimensionNameEditor"): Enter or leaving it renames the
    /// dimension (one undo step), Escape cancels.
    void editDimensionName(int section);

    Document* m_document;
    MatrixModel* m_model;
    TokenModel* m_tokenModel;
    QLabel* m_title;
    QTableView* m_table;
    QTableView* m_tokenView;
    QWidget* m_tokenButtons; // add, insert, remove, up, down
    QToolButton* m_addButton;
    QToolButton* m_insertButton;
    QToolButton* m_removeButton;
    QToolButton* m_upButton;
    QToolButton* m_downButton;
    QAction* m_copyAction;
    QAction* m_pasteAction;
    QMenu* m_digitsMenu = nullptr;
};

} // namespace qkv::ui
