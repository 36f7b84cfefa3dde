// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A table model over the interventions of the session's model link: layer, head, kind, parameter and a
// check box that switches each on and off. Every change (switch, factor, add, remove) is one undo command.

#include "Document.h"

#include <QAbstractTableModel>

#include <functional>

namespace qkv::ui {

class InterventionModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { EnabledColumn, LayerColumn, HeadColumn, KindColumn, ParameterColumn, ColumnCount };

    explicit InterventionModel(Document* document, QObject* parent = nullptr);

    Document* document() const { return m_document; }
    /// Whether the session has a model link (without one there is nothing to intervene on).
    bool hasLink() const;

    /// Appends `intervention` (one undo step). False, with inputRejected(), without a link or with a factor
    /// that is not a finite number.
    bool addIntervention(const HeadIntervention& intervention);
    /// Removes the rows in one step.
    bool removeInterventions(const QList<int>& rows);
    bool setEnabled(int row, bool enabled);

    /// "Zero", "Mean", "Scale", "Open head" (the session's own).
    static QString kindName(HeadIntervention::Kind kind);

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    /// Enabled column, CheckStateRole: on or off. Parameter column of a Scale row, EditRole: the factor.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    void inputRejected(const QString& message);

private:
    void onSessionChanged(Document::Changes changes);
    const std::vector<HeadIntervention>* interventions() const;
    int currentCount() const;
    void edit(const QString& text, std::function<void(std::vector<HeadIntervention>&)> change);

    Document* m_document;
    int m_rows = 0; // the count the views know; it changes only inside a reset
};

} // namespace qkv::ui
