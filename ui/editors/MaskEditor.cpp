// SPDX-License-Identifier: GPL-3.0-or-later
#include "MaskEditor.h"

#include "MaskModel.h"

#include <QHeaderView>
#include <QItemSelection>
#include <QKeyEvent>
#include <QMouseEvent>

namespace qkv::ui {

MaskEditor::MaskEditor(Document* document, QWidget* parent)
    : QTableView(parent), m_model(new MaskModel(document, this))
{
    setObjectName(QStringLiteral("maskGrid"));
    setModel(m_model);
    setSelectionMode(QAbstractItemView::ContiguousSelection);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setToolTip(tr("Click a cell to allow or mask that key for that query, or drag across cells to allow or "
                  "mask a rectangle (the first cell decides which); the mask becomes custom"));
    connect(m_model, &MaskModel::inputRejected, this, &MaskEditor::message);
}

void MaskEditor::mousePressEvent(QMouseEvent* event)
{
    const QModelIndex index = indexAt(event->position().toPoint());
    if (event->button() != Qt::LeftButton || !index.isValid()) {
        QTableView::mousePressEvent(event);
        return;
    }
    m_anchor = index;
    setCurrentIndex(index);
    showRectangle(index);
    event->accept();
}

void MaskEditor::mouseMoveEvent(QMouseEvent* event)
{
    if (!m_anchor.isValid()) {
        QTableView::mouseMoveEvent(event);
        return;
    }
    const QModelIndex index = indexAt(event->position().toPoint());
    if (index.isValid() && index != m_corner)
        showRectangle(index);
    event->accept();
}

void MaskEditor::mouseReleaseEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton || !m_anchor.isValid()) {
        QTableView::mouseReleaseEvent(event);
        return;
    }
    const QModelIndex index = indexAt(event->position().toPoint());
    if (index.isValid())
        m_corner = index;
    const QModelIndex anchor = m_anchor, corner = m_corner;
    m_anchor = QPersistentModelIndex();
    m_corner = QPersistentModelIndex();
    if (anchor.isValid() && corner.isValid()) // not dropped by a model reset meanwhile
        m_model->paintRectangle(anchor, corner);
    event->accept();
}

void MaskEditor::keyPressEvent(QKeyEvent* event)
{
    if (event->key() == Qt::Key_Space && currentIndex().isValid()) {
        m_model->toggle(currentIndex());
        event->accept();
        return;
    }
    QTableView::keyPressEvent(event);
}

void MaskEditor::showRectangle(const QModelIndex& corner)
{
    m_corner = corner;
    selectionModel()->select(QItemSelection(m_anchor, corner), QItemSelectionModel::ClearAndSelect);
}

} // namespace qkv::ui
