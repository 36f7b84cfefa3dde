// SPDX-License-Identifier: GPL-3.0-or-later
#include "InterventionsPanel.h"

#include "InterventionModel.h"

#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

namespace qkv::ui {

InterventionsPanel::InterventionsPanel(Document* document, QWidget* parent)
    : QWidget(parent), m_model(new InterventionModel(document, this)), m_table(new QTableView(this)),
      m_hint(new QLabel(this)), m_layer(new QSpinBox(this)), m_head(new QSpinBox(this)),
      m_kind(new QComboBox(this)), m_factor(new QDoubleSpinBox(this)),
      m_add(new QPushButton(tr("&Add"), this)), m_remove(new QPushButton(tr("&Remove"), this))
{
    setObjectName(QStringLiteral("interventionsPanel"));
    setWhatsThis(tr(
        "<h3>Interventions</h3><p>Changes to heads inside the model's forward pass, all applied together in "
        "the Prediction tab's right-hand run. Each acts on one query head's output z (its rows of A·V, "
        "before W_O): <b>Zero</b> sets z to 0, <b>Mean</b> replaces every row by their mean over the text, "
        "<b>Scale</b> multiplies z by the factor, and <b>Open head</b> computes z from the head "
        "open in the window with every edit made to it (W_Q, τ, the normalizer, the mask…). The check box "
        "switches one off without removing it. Every change is one undo step and is saved with the "
        "session. Right-click a thumbnail of the model view to ablate or scale that head.</p>"));
    m_table->setObjectName(QStringLiteral("interventionsTable"));
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setToolTip(tr("The interventions applied to the model: tick to switch one on or off, Delete "
                           "removes the selected ones, double-click a scale factor to change it"));
    m_hint->setObjectName(QStringLiteral("interventionsHint"));
    m_hint->setWordWrap(true);

    m_layer->setObjectName(QStringLiteral("interventionLayer"));
    m_layer->setPrefix(tr("L"));
    m_layer->setToolTip(tr("The layer of the head to add an intervention on (from 0)"));
    m_head->setObjectName(QStringLiteral("interventionHead"));
    m_head->setPrefix(tr("H"));
    m_head->setToolTip(tr("The query head to add an intervention on (from 0)"));
    m_kind->setObjectName(QStringLiteral("interventionKind"));
    for (HeadIntervention::Kind kind :
         {HeadIntervention::Kind::Zero, HeadIntervention::Kind::Mean, HeadIntervention::Kind::Scale})
        m_kind->addItem(InterventionModel::kindName(kind), int(kind));
    m_kind->setToolTip(tr("Zero: z = 0; Mean: every row of z replaced by the mean row; Scale: z × factor"));
    m_factor->setObjectName(QStringLiteral("interventionFactor"));
    m_factor->setRange(-100.0, 100.0);
    m_factor->setDecimals(3);
    m_factor->setValue(2.0);
    m_factor->setPrefix(QStringLiteral("× "));
    m_factor->setToolTip(tr("The factor z is multiplied by (Scale only)"));
    m_add->setObjectName(QStringLiteral("addIntervention"));
    m_add->setToolTip(tr("Add this intervention (one undo step)"));
    m_remove->setObjectName(QStringLiteral("removeIntervention"));
    m_remove->setToolTip(tr("Remove the selected interventions (Delete; one undo step)"));
    auto* remove = new QAction(tr("Remove Intervention"), m_table);
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetShortcut);
    m_table->addAction(remove);

    auto* addRow = new QGridLayout;
    addRow->addWidget(m_layer, 0, 0);
    addRow->addWidget(m_head, 0, 1);
    addRow->addWidget(m_kind, 0, 2);
    addRow->addWidget(m_factor, 1, 0, 1, 2);
    addRow->addWidget(m_add, 1, 2);
    addRow->addWidget(m_remove, 2, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(m_hint);
    layout->addWidget(m_table, 1);
    layout->addLayout(addRow);

    connect(m_add, &QPushButton::clicked, this, &InterventionsPanel::add);
    connect(m_remove, &QPushButton::clicked, this, &InterventionsPanel::removeSelected);
    connect(remove, &QAction::triggered, this, &InterventionsPanel::removeSelected);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &InterventionsPanel::updateEnabled);
    connect(m_model, &InterventionModel::inputRejected, this, &InterventionsPanel::message);
    connect(m_model, &QAbstractItemModel::modelReset, this, &InterventionsPanel::updateEnabled);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &InterventionsPanel::updateEnabled);
    setLimits(0, 0);
}

void InterventionsPanel::setLimits(int layers, int heads)
{
    m_layer->setRange(0, std::max(0, layers - 1));
    m_head->setRange(0, std::max(0, heads - 1));
    updateEnabled();
}

void InterventionsPanel::updateEnabled()
{
    const bool linked = m_model->hasLink();
    m_hint->setText(linked ? QString() : tr("Open a model (File ▸ Open Model…) to intervene on its heads."));
    m_hint->setVisible(!linked);
    for (QWidget* widget : {static_cast<QWidget*>(m_layer), static_cast<QWidget*>(m_head),
                            static_cast<QWidget*>(m_kind), static_cast<QWidget*>(m_add)})
        widget->setEnabled(linked);
    m_factor->setEnabled(linked && m_kind->currentData().toInt() == int(HeadIntervention::Kind::Scale));
    m_remove->setEnabled(linked && m_table->selectionModel()->hasSelection());
}

void InterventionsPanel::add()
{
    HeadIntervention intervention;
    intervention.layer = m_layer->value();
    intervention.head = m_head->value();
    intervention.kind = HeadIntervention::Kind(m_kind->currentData().toInt());
    if (intervention.kind == HeadIntervention::Kind::Scale)
        intervention.factor = m_factor->value();
    m_model->addIntervention(intervention);
}

void InterventionsPanel::removeSelected()
{
    QList<int> rows;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows())
        rows << index.row();
    m_model->removeInterventions(rows);
}

} // namespace qkv::ui
