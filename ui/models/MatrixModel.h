// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A table model over one matrix of the document (X, Z, a head's W_Q, ...). It never changes the session
// itself: an edit or a paste pushes one undo command on the document.

#include "Document.h"
#include "MatrixRef.h"

#include <QAbstractTableModel>

namespace qkv::ui {

class MatrixModel : public QAbstractTableModel {
    Q_OBJECT
public:
    MatrixModel(Document* document, MatrixRef ref, QObject* parent = nullptr);

    Document* document() const { return m_document; }
    MatrixRef matrixRef() const { return m_ref; }
    /// Shows another matrix (resets the model).
    void setMatrixRef(MatrixRef ref);

    /// When true and the matrix is per-head, the model shows the document's current head and follows it.
    /// Off by default; MatrixEditor turns it on for per-head matrices.
    bool followsCurrentHead() const { return m_followsCurrentHead; }
    void setFollowsCurrentHead(bool follow);

    /// "X[1][2]", "v_a[3] of head 2": how messages and tooltips name a cell.
    QString cellName(int row, int column) const;

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    /// Significant digits of the display text, the same for every cell (1 to 17; 4 by default).
    int significantDigits() const { return m_significantDigits; }
    void setSignificantDigits(int digits);
    /// The display text of a value: `significantDigits()` significant digits, never elided.
    QString displayText(double value) const;

    /// DisplayRole: significantDigits() significant digits; EditRole: the double; ToolTipRole: the cell's
    /// name and the value written so that it reads back exactly (shortest round-trip, up to 17 digits).
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    /// Rows of X and Z: their tokens; columns of X and Z and rows of W_Q, W_K, W_V: the d_model dimensions,
    /// named (Session::dims) or "d0", "d1", …
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// Renames a d_model column of X or Z (one undo step; "" takes the name away). Other headers are not
    /// editable: returns false.
    bool setHeaderData(int section, Qt::Orientation orientation, const QVariant& value,
                       int role = Qt::EditRole) override;
    /// Whether the columns are the d_model dimensions a person may name (X and Z).
    bool namesDimensions() const;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    /// Accepts a double or text (the C locale first, then the system locale). Anything that is not a finite
    /// number is refused: returns false, emits inputRejected() and changes nothing. An unchanged value pushes
    /// nothing.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    /// The rectangle covering `indexes` as tab-separated lines (the spreadsheet clipboard format), each value
    /// written so that it reads back exactly. Empty when `indexes` is.
    QString copyText(const QModelIndexList& indexes) const;
    /// Writes a block of numbers (tab-, semicolon- or comma-separated) with its top-left cell at `topLeft`
    /// ((0, 0) when invalid), as one undo command. Refuses text that does not parse and blocks that do not
    /// fit inside the matrix: returns false with `error` set, and changes nothing.
    bool pasteText(const QModelIndex& topLeft, const QString& text, QString* error = nullptr);

signals:
    /// A value typed into a cell was refused; the message names the cell and the text.
    void inputRejected(const QString& message);

private:
    void onSessionChanged(Document::Changes changes);
    void onCurrentHeadChanged(int head);
    bool matrixExists() const;
    int currentRows() const;
    int currentColumns() const;
    bool inSession(const QModelIndex& index) const;
    /// Emits dataChanged for the rectangle of cells that differ (bit for bit) from what the views were last
    /// told, or nothing when none does.
    void announceChangedCells();
    /// Takes the session's values as what the views were told.
    void rememberValues();

    Document* m_document;
    MatrixRef m_ref;
    bool m_followsCurrentHead = false;
    // The shape the views know; it changes only between beginResetModel() and endResetModel().
    int m_rows = 0;
    int m_columns = 0;
    int m_significantDigits = 4;
    // The values the views were last told: an edit of another matrix announces nothing here (no repaint,
    // no column measured again), an edit of this one only the cells it changed.
    Matrix m_announced;
};

} // namespace qkv::ui
