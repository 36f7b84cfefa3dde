// SPDX-License-Identifier: GPL-3.0-or-later
#include "ShortcutsDialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QSet>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace qkv::ui {

namespace {

QString plainText(QString text)
{
    text.remove(QLatin1Char('&'));
    text.remove(QChar(0x2026)); // …
    return text.trimmed();
}

void collect(const QMenu* menu, const QString& path, QList<ShortcutEntry>& entries,
             QSet<const QAction*>& seen)
{
    for (const QAction* action : menu->actions()) {
        if (action->isSeparator())
            continue;
        if (const QMenu* sub = action->menu()) {
            collect(sub, path + QStringLiteral(" ▸ ") + plainText(sub->title()), entries, seen);
            continue;
        }
        if (action->shortcut().isEmpty() || seen.contains(action))
            continue;
        seen.insert(action);
        entries.append({path, plainText(action->text()), action->shortcut(), action});
    }
}

} // namespace

QList<ShortcutEntry> shortcutEntries(const QMenuBar* menuBar, const QWidget* root)
{
    QList<ShortcutEntry> entries;
    QSet<const QAction*> seen;
    for (const QAction* top : menuBar->actions())
        if (const QMenu* menu = top->menu())
            collect(menu, plainText(menu->title()), entries, seen);
    QSet<QString> panelEntries;
    const QString panels = QObject::tr("Panels");
    for (const QAction* action : root->findChildren<QAction*>()) {
        if (seen.contains(action) || action->shortcut().isEmpty())
            continue;
        const QString text = plainText(action->text());
        const QString key =
            text + QLatin1Char('\n') + action->shortcut().toString(QKeySequence::PortableText);
        if (panelEntries.contains(key))
            continue;
        panelEntries.insert(key);
        entries.append({panels, text, action->shortcut(), action});
    }
    return entries;
}

ShortcutsDialog::ShortcutsDialog(const QMenuBar* menuBar, QWidget* parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("shortcutsDialog"));
    setWindowTitle(tr("Keyboard Shortcuts"));
    auto* tree = new QTreeWidget(this);
    tree->setObjectName(QStringLiteral("shortcutList"));
    tree->setColumnCount(2);
    tree->setHeaderLabels({tr("Action"), tr("Shortcut")});
    tree->setRootIsDecorated(false);
    tree->setSelectionMode(QAbstractItemView::NoSelection);
    QTreeWidgetItem* group = nullptr;
    for (const ShortcutEntry& entry : shortcutEntries(menuBar, parent)) {
        if (!group || group->text(0) != entry.menu) {
            group = new QTreeWidgetItem(tree, {entry.menu});
            QFont bold = group->font(0);
            bold.setBold(true);
            group->setFont(0, bold);
            group->setFirstColumnSpanned(true);
            group->setExpanded(true);
        }
        auto* item =
            new QTreeWidgetItem(group, {entry.action, entry.shortcut.toString(QKeySequence::NativeText)});
        item->setData(1, Qt::UserRole, entry.shortcut.toString(QKeySequence::PortableText));
    }
    tree->expandAll();
    tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    tree->header()->setStretchLastSection(true);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tree);
    layout->addWidget(buttons);
    resize(440, 480);
}

} // namespace qkv::ui
