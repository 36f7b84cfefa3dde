// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The custom mask as something you paint: press on a cell, drag across others, release, and the whole
// rectangle is allowed or forbidden as one undo step.

#include <QModelIndex>
#include <QTableView>

namespace qkv::ui {

class Document;
class MaskModel;

/// A grid over a MaskModel. The first cell's new state (its current state flipped) decides what the
/// rectangle from it to the cell under the mouse becomes; the rectangle is shown selected while dragging
/// and applied on release (MaskModel::paintRectangle). A click is a drag over one cell: it toggles it.
/// Space toggles the current cell. The grid's objectName is "maskGrid".
class MaskEditor : public QTableView {
    Q_OBJECT
public:
    explicit MaskEditor(Document* document, QWidget* parent = nullptr);

    MaskModel* maskModel() const { return m_model; }

signals:
    /// A refused edit (a padding cell), for the status bar.
    void message(const QString& text);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    void showRectangle(const QModelIndex& corner);

    MaskModel* m_model;
    QPersistentModelIndex m_anchor; // the first cell of the drag; invalid when not dragging
    QPersistentModelIndex m_corner; // the cell under the mouse
};

} // namespace qkv::ui
