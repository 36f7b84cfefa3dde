// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The interventions of the session's model link as a list: each one's layer, head, kind and parameter, a
// check box to switch it on and off, Remove (Delete), and a row to add one (layer, head, kind, scale factor).
// Every change is one undo step (InterventionModel).

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace qkv::ui {

class Document;
class InterventionModel;

class InterventionsPanel : public QWidget {
    Q_OBJECT
public:
    explicit InterventionsPanel(Document* document, QWidget* parent = nullptr);

    InterventionModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    /// The model's size: the add row's layer and head go up to these (0: no model yet).
    void setLimits(int layers, int heads);

signals:
    void message(const QString& text);

private:
    void add();
    void removeSelected();
    void updateEnabled();

    InterventionModel* m_model;
    QTableView* m_table;
    QLabel* m_hint;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QComboBox* m_kind;
    QDoubleSpinBox* m_factor;
    QPushButton* m_add;
    QPushButton* m_remove;
};

} // namespace qkv::ui
