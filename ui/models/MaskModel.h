// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The effective attention mask as an n × m grid of check boxes: rows are query tokens, columns key tokens.
// Toggling a cell turns the mask into a custom one (starting from the current pattern) in one undo step.

#include "Document.h"

#include <QAbstractTableModel>

namespace qkv::ui {

class MaskModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit MaskModel(Document* document, QObject* parent = nullptr);

    Document* document() const { return m_document; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    /// CheckStateRole and DisplayRole ("1"/"0"): whether query i attends to key j, padding included.
    /// BackgroundRole: one colour for allowed, one for masked by the pattern, one for masked by padding.
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    /// Vertical: query tokens; horizontal: key tokens (the context's in cross-attention).
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// Cells of padding tokens are not checkable: padding masks them whatever the pattern says.
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    /// CheckStateRole: pushes one command that makes the mask custom (keeping the current pattern) and sets
    /// the cell. A padding cell is refused (returns false, emits inputRejected()).
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::CheckStateRole) override;

    /// Flips the cell (what a click on the grid does).
    bool toggle(const QModelIndex& index);
    /// Allows or forbids every cell of the rectangle from `corner` to `otherCorner` (padding cells, always
    /// masked, are left as they are) as one undo command, making the mask custom. Pushes nothing when no
    /// cell would change; returns false only for an index outside the grid.
    bool setRectangle(const QModelIndex& corner, const QModelIndex& otherCorner, bool allow);
    /// What a drag from `anchor` to `corner` does, on the mask editor and on the Mask heatmap alike: the
    /// anchor's state flipped decides whether the whole rectangle is allowed or forbidden (setRectangle()).
    bool paintRectangle(const QModelIndex& anchor, const QModelIndex& corner);
    /// Whether the cell is allowed now (padding included).
    bool isAllowed(const QModelIndex& index) const;

signals:
    void inputRejected(const QString& message);

private:
    void onSessionChanged(Document::Changes changes);
    void refresh();
    bool inSession(const QModelIndex& index) const;
    bool isPadding(int row, int column) const;

    Document* m_document;
    MaskMatrix m_allowed; // the effective mask, as the views know it
};

} // namespace qkv::ui
