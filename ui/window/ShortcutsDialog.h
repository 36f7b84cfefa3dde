// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Help ▸ Keyboard Shortcuts: every action of the menu bar that has a shortcut, by menu, generated from the
// actions themselves so the list cannot drift from them.

#include <QDialog>
#include <QKeySequence>
#include <QList>
#include <QString>

class QAction;
class QMenuBar;

namespace qkv::ui {

struct ShortcutEntry {
    QString menu;   ///< the top-level menu ("File"), submenus as "File ▸ New from Example"
    QString action; ///< the action's text without '&' and '…'
    QKeySequence shortcut;
    const QAction* source = nullptr;
};

/// Every action reachable from `menuBar` with a non-empty shortcut, in menu order (menus left to right,
/// actions top to bottom), each once; then the other actions with a shortcut inside `root` (the panels' own,
/// such as an editor's Copy), under "Panels", one entry per name and shortcut however many panels have it.
QList<ShortcutEntry> shortcutEntries(const QMenuBar* menuBar, const QWidget* root);

class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    /// Lists shortcutEntries(menuBar, parent).
    ShortcutsDialog(const QMenuBar* menuBar, QWidget* parent);
};

} // namespace qkv::ui
