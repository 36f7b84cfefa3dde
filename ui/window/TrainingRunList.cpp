// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingRunList.h"

#include "TrainingRunFolders.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace qkv::ui {

namespace {

enum Column { FolderColumn, TaskColumn, StepsColumn, StartedColumn, SavedColumn, ColumnCount };

QString savedText(const TrainingRunFolder& run)
{
    if (run.running)
        return TrainingRunList::tr("running");
    if (run.isSaved())
        return TrainingRunList::tr("saved to %1").arg(run.savedTo.join(QStringLiteral(", ")));
    return run.hasModel ? TrainingRunList::tr("no") : TrainingRunList::tr("no model");
}

} // namespace

TrainingRunList::TrainingRunList(TrainingRunFolders* folders, QWidget* parent)
    : QWidget(parent), m_folders(folders), m_tree(new QTreeWidget)
{
    setObjectName(QStringLiteral("trainingRuns"));
    m_tree->setObjectName(QStringLiteral("trainingRunTree"));
    m_tree->setRootIsDecorated(false);
    m_tree->setAlternatingRowColors(true);
    m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
    m_tree->setColumnCount(ColumnCount);
    m_tree->setHeaderLabels({tr("Folder"), tr("Task"), tr("Steps"), tr("Started"), tr("Saved")});
    m_tree->header()->setStretchLastSection(true);
    m_tree->setMinimumHeight(3 * m_tree->fontMetrics().height()); // a row or two in a low dock, it scrolls
    m_tree->setToolTip(
        tr("The runs started from this tab, newest first; double-click one to open its model"));
    m_open = new QPushButton(tr("Open in Model view"));
    m_open->setObjectName(QStringLiteral("trainingRunOpen"));
    m_open->setToolTip(tr("Open the selected run's model in the model view"));
    m_open->setWhatsThis(
        tr("<p>Opens the selected run's trained model: layer 0 as the session, on repeated "
           "random tokens of its task, and every layer and head in the Model workspace.</p>"));
    m_delete = new QPushButton(tr("Delete…"));
    m_delete->setObjectName(QStringLiteral("trainingRunDelete"));
    m_delete->setToolTip(tr("Delete the selected run's folder from disk (asks first; cannot be undone)"));
    m_delete->setWhatsThis(tr("<p>Deletes the selected run's folder (the model, training.json and the "
                              "optimizer's state) after a question. Deleting cannot be undone. A copy made "
                              "with Save Model As is not touched; a run that goes cannot be deleted.</p>"));
    m_refresh = new QPushButton(tr("Refresh"));
    m_refresh->setObjectName(QStringLiteral("trainingRunRefresh"));
    m_refresh->setToolTip(tr("Read the runs' folders again"));
    m_refresh->setWhatsThis(tr("<p>Reads the runs' folders again: the list follows this window's runs by "
                               "itself, not the runs of another QKV Lab or files changed by hand.</p>"));
    m_note = new QLabel(tr("When a run starts, unsaved runs beyond the newest %1 are deleted; runs copied "
                           "with Save Model As are kept.")
                            .arg(TrainingRunFolders::keptUnsavedRuns));
    m_note->setObjectName(QStringLiteral("trainingRunNote"));
    m_note->setWordWrap(true);
    m_note->setToolTip(QDir::toNativeSeparators(m_folders->root()));
    auto* buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    for (QPushButton* b : {m_open, m_delete, m_refresh})
        buttons->addWidget(b);
    buttons->addWidget(m_note, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 2, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(buttons);
    layout->addWidget(m_tree, 1);
    setToolTip(tr("Every run's folder, newest first: open one's model or delete it"));
    setWhatsThis(
        tr("<h3>Runs</h3><p>Every run started from the Training workspace saves its model in a folder of "
           "its own under the application's data folder (%1). This list shows them, newest first: "
           "the folder (the time the run started, UTC), its task, the steps trained, when it "
           "started and whether Save Model As copied it. When a run starts, unsaved runs beyond "
           "the newest %2 are deleted; runs that were saved, and the run that goes, never are.</p>")
            .arg(QDir::toNativeSeparators(m_folders->root()))
            .arg(TrainingRunFolders::keptUnsavedRuns));
    connect(m_tree, &QTreeWidget::itemSelectionChanged, this, &TrainingRunList::updateButtons);
    connect(m_tree, &QTreeWidget::itemDoubleClicked, this, [this] {
        if (m_open->isEnabled())
            emit openRequested(selectedFolder());
    });
    connect(m_open, &QPushButton::clicked, this, [this] { emit openRequested(selectedFolder()); });
    connect(m_delete, &QPushButton::clicked, this, [this] { deleteSelected(); });
    connect(m_refresh, &QPushButton::clicked, this, &TrainingRunList::refresh);
    updateButtons();
}

void TrainingRunList::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    refresh();
}

void TrainingRunList::refresh()
{
    const QString selected = selectedFolder();
    m_tree->clear();
    const QLocale locale;
    for (const TrainingRunFolder& run : m_folders->list()) {
        auto* item = new QTreeWidgetItem(m_tree);
        item->setText(FolderColumn, run.name);
        item->setToolTip(FolderColumn, QDir::toNativeSeparators(run.path));
        item->setData(FolderColumn, Qt::UserRole, run.path);
        item->setData(FolderColumn, Qt::UserRole + 1, run.hasModel && !run.running);
        item->setData(FolderColumn, Qt::UserRole + 2, run.running);
        item->setText(TaskColumn, run.task.isEmpty() ? QStringLiteral("—") : run.task);
        item->setText(StepsColumn, run.steps > 0 ? QString::number(run.steps) : QStringLiteral("—"));
        item->setTextAlignment(StepsColumn, Qt::AlignRight | Qt::AlignVCenter);
        item->setText(StartedColumn, locale.toString(run.started.toLocalTime(), QLocale::ShortFormat));
        item->setText(SavedColumn, savedText(run));
        item->setToolTip(SavedColumn, savedText(run));
        if (run.path == selected)
            m_tree->setCurrentItem(item);
    }
    for (int column = 0; column < SavedColumn; ++column)
        m_tree->resizeColumnToContents(column);
    updateButtons();
}

QString TrainingRunList::selectedFolder() const
{
    const QTreeWidgetItem* item = m_tree->currentItem();
    return item && item->isSelected() ? item->data(FolderColumn, Qt::UserRole).toString() : QString();
}

bool TrainingRunList::select(const QString& folder)
{
    const QString wanted = QFileInfo(folder).absoluteFilePath();
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem* item = m_tree->topLevelItem(i);
        if (item->data(FolderColumn, Qt::UserRole).toString() == wanted) {
            m_tree->setCurrentItem(item);
            item->setSelected(true);
            return true;
        }
    }
    return false;
}

int TrainingRunList::runCount() const
{
    return m_tree->topLevelItemCount();
}

void TrainingRunList::updateButtons()
{
    const QTreeWidgetItem* item = m_tree->currentItem();
    const bool selected = item && item->isSelected();
    m_open->setEnabled(selected && item->data(FolderColumn, Qt::UserRole + 1).toBool());
    m_delete->setEnabled(selected && !item->data(FolderColumn, Qt::UserRole + 2).toBool());
}

bool TrainingRunList::deleteSelected()
{
    const QString folder = selectedFolder();
    if (folder.isEmpty())
        return false;
    const TrainingRunFolder run = m_folders->read(folder);
    QString question = tr("Delete the run %1 and everything in its folder?\n%2\n\nThis cannot be undone.")
                           .arg(run.name, QDir::toNativeSeparators(run.path));
    if (run.isSaved())
        question += tr("\nThe copy saved in %1 is not touched.").arg(run.savedTo.join(QStringLiteral(", ")));
    bool confirmed = false;
    if (m_deleteQuestion) {
        confirmed = m_deleteQuestion(question);
    } else {
        QMessageBox box(QMessageBox::Warning, tr("Delete Training Run"), question, QMessageBox::Cancel, this);
        QPushButton* remove = box.addButton(tr("Delete"), QMessageBox::DestructiveRole);
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        confirmed = box.clickedButton() == remove;
    }
    if (!confirmed)
        return false;
    QString error;
    const bool removed = m_folders->remove(folder, &error);
    emit message(removed ? tr("Deleted the run %1.").arg(run.name) : error);
    refresh();
    if (removed)
        emit deleted(folder);
    return removed;
}

} // namespace qkv::ui
