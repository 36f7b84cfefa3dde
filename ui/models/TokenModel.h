// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A table model over the tokens of one side (the queries, or the cross-attention context): their text and
// padding flags. Every change, including adding, removing and moving tokens, is one undo command.

#include "Document.h"
#include "SessionEdits.h"

#include <QAbstractTableModel>
#include <QList>

namespace qkv::ui {

class TokenModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TokenColumn, PaddingColumn, ColumnCount };

    TokenModel(Document* document, Side side, QObject* parent = nullptr);

    Document* document() const { return m_document; }
    Side side() const { return m_side; }
    /// Shows the other side's tokens (resets the model).
    void setSide(Side side);

    /// Inserts "tok<N>" before `row` (0 ≤ row ≤ rowCount()); its embedding row comes from the document's
    /// initializer. Each of these returns false, emits inputRejected() and changes nothing when refused.
    bool insertToken(int row);
    bool appendToken();
    /// Removes the rows in one step; refuses to remove every token (a sequence keeps at least one).
    bool removeTokens(const QList<int>& rows);
    /// Moves the token at `from` to position `to` (indices before the move).
    bool moveToken(int from, int to);

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    /// Token column, EditRole: the new text. Padding column, CheckStateRole: the flag.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    void inputRejected(const QString& message);

private:
    void onSessionChanged(Document::Changes changes);
    int currentCount() const;
    const std::vector<std::string>* tokens() const;
    const std::vector<bool>* pad() const;
    QString sideName() const;
    bool refuse(const QString& message);

    Document* m_document;
    Side m_side;
    int m_rows = 0; // the count the views know; it changes only inside a reset
};

} // namespace qkv::ui
