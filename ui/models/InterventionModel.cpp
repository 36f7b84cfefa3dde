// SPDX-License-Identifier: GPL-3.0-or-later
#include "InterventionModel.h"

#include "DocumentCommands.h"

#include <algorithm>
#include <cmath>

namespace qkv::ui {

InterventionModel::InterventionModel(Document* document, QObject* parent)
    : QAbstractTableModel(parent), m_document(document), m_rows(currentCount())
{
    connect(m_document, &Document::sessionChanged, this, &InterventionModel::onSessionChanged);
}

bool InterventionModel::hasLink() const
{
    return m_document->session().model.has_value();
}

const std::vector<HeadIntervention>* InterventionModel::interventions() const
{
    const Session& session = m_document->session();
    return session.model ? &session.model->interventions : nullptr;
}

int InterventionModel::currentCount() const
{
    const std::vector<HeadIntervention>* list = interventions();
    return list ? static_cast<int>(list->size()) : 0;
}

void InterventionModel::onSessionChanged(Document::Changes)
{
    // Any edit may replace the list (undo, Open, Reset to Model): rows are few, so reset.
    beginResetModel();
    m_rows = currentCount();
    endResetModel();
}

QString InterventionModel::kindName(HeadIntervention::Kind kind)
{
    switch (kind) {
    case HeadIntervention::Kind::Zero:
        return tr("Zero");
    case HeadIntervention::Kind::Mean:
        return tr("Mean");
    case HeadIntervention::Kind::Scale:
        return tr("Scale");
    case HeadIntervention::Kind::Session:
        return tr("Open head");
    }
    return QString();
}

void InterventionModel::edit(const QString& text, std::function<void(std::vector<HeadIntervention>&)> change)
{
    pushEdit(m_document, text, Document::Model, [change = std::move(change)](Session& session) {
        if (session.model)
            change(session.model->interventions);
    });
}

bool InterventionModel::addIntervention(const HeadIntervention& intervention)
{
    if (!hasLink()) {
        emit inputRejected(tr("Open a model first: interventions act on the model the session's head came "
                              "from"));
        return false;
    }
    if (intervention.kind == HeadIntervention::Kind::Scale && !std::isfinite(intervention.factor)) {
        emit inputRejected(tr("The scale factor must be a finite number"));
        return false;
    }
    if (intervention.layer < 0 || intervention.head < 0) {
        emit inputRejected(tr("Layers and heads count from 0"));
        return false;
    }
    edit(tr("Add Intervention L%1.H%2 %3")
             .arg(intervention.layer)
             .arg(intervention.head)
             .arg(kindName(intervention.kind).toLower()),
         [intervention](std::vector<HeadIntervention>& list) { list.push_back(intervention); });
    return true;
}

bool InterventionModel::removeInterventions(const QList<int>& rows)
{
    QList<int> valid;
    for (int row : rows)
        if (row >= 0 && row < m_rows && !valid.contains(row))
            valid << row;
    if (valid.isEmpty())
        return false;
    std::sort(valid.begin(), valid.end(), std::greater<>());
    edit(valid.size() == 1 ? tr("Remove Intervention") : tr("Remove %1 Interventions").arg(valid.size()),
         [valid](std::vector<HeadIntervention>& list) {
             for (int row : valid)
                 if (std::size_t(row) < list.size())
                     list.erase(list.begin() + row);
         });
    return true;
}

bool InterventionModel::setEnabled(int row, bool enabled)
{
    const std::vector<HeadIntervention>* list = interventions();
    if (!list || row < 0 || std::size_t(row) >= list->size() || (*list)[std::size_t(row)].enabled == enabled)
        return false;
    edit(enabled ? tr("Switch Intervention On") : tr("Switch Intervention Off"),
         [row, enabled](std::vector<HeadIntervention>& all) {
             if (std::size_t(row) < all.size())
                 all[std::size_t(row)].enabled = enabled;
         });
    return true;
}

int InterventionModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int InterventionModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant InterventionModel::data(const QModelIndex& index, int role) const
{
    const std::vector<HeadIntervention>* list = interventions();
    if (!index.isValid() || !list || std::size_t(index.row()) >= list->size())
        return {};
    const HeadIntervention& intervention = (*list)[std::size_t(index.row())];
    const bool scale = intervention.kind == HeadIntervention::Kind::Scale;
    switch (role) {
    case Qt::CheckStateRole:
        return index.column() == EnabledColumn ? QVariant(intervention.enabled ? Qt::Checked : Qt::Unchecked)
                                               : QVariant();
    case Qt::DisplayRole:
    case Qt::EditRole:
        switch (index.column()) {
        case LayerColumn:
            return qlonglong(intervention.layer);
        case HeadColumn:
            return qlonglong(intervention.head);
        case KindColumn:
            return kindName(intervention.kind);
        case ParameterColumn:
            if (role == Qt::EditRole && scale)
                return intervention.factor;
            return scale ? QStringLiteral("× %1").arg(intervention.factor, 0, 'g', 4) : QString();
        default:
            return {};
        }
    case Qt::ToolTipRole:
        switch (intervention.kind) {
        case HeadIntervention::Kind::Zero:
            return tr("The head's output z is zeroed (zero ablation)");
        case HeadIntervention::Kind::Mean:
            return tr("Every row of the head's output z is replaced by their mean over the text (mean "
                      "ablation)");
        case HeadIntervention::Kind::Scale:
            return tr("The head's output z is multiplied by the factor (double-click the parameter to "
                      "change it)");
        case HeadIntervention::Kind::Session:
            return tr("The head is computed from this session's head, with every edit made to it");
        }
        return {};
    default:
        return {};
    }
}

QVariant InterventionModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case EnabledColumn:
        return tr("On");
    case LayerColumn:
        return tr("Layer");
    case HeadColumn:
        return tr("Head");
    case KindColumn:
        return tr("Kind");
    case ParameterColumn:
        return tr("Parameter");
    default:
        return {};
    }
}

Qt::ItemFlags InterventionModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (index.column() == EnabledColumn)
        flags |= Qt::ItemIsUserCheckable;
    const std::vector<HeadIntervention>* list = interventions();
    if (index.column() == ParameterColumn && list && std::size_t(index.row()) < list->size() &&
        (*list)[std::size_t(index.row())].kind == HeadIntervention::Kind::Scale)
        flags |= Qt::ItemIsEditable;
    return flags;
}

bool InterventionModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    const std::vector<HeadIntervention>* list = interventions();
    if (!index.isValid() || !list || std::size_t(index.row()) >= list->size())
        return false;
    if (index.column() == EnabledColumn && role == Qt::CheckStateRole)
        return setEnabled(index.row(), value.toInt() == Qt::Checked);
    if (index.column() != ParameterColumn || role != Qt::EditRole ||
        (*list)[std::size_t(index.row())].kind != HeadIntervention::Kind::Scale)
        return false;
    bool ok = false;
    const double factor = value.toDouble(&ok);
    if (!ok || !std::isfinite(factor)) {
        emit inputRejected(tr("The scale factor must be a finite number"));
        return false;
    }
    if (factor == (*list)[std::size_t(index.row())].factor)
        return false;
    const int row = index.row();
    edit(tr("Scale Factor"), [row, factor](std::vector<HeadIntervention>& all) {
        if (std::size_t(row) < all.size())
            all[std::size_t(row)].factor = factor;
    });
    return true;
}

} // namespace qkv::ui
