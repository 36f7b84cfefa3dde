// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Every menu and toolbar action of the window, defined in one place with its shortcut and tooltip.

#include <QObject>

class QAction;
class QMenu;
class QMenuBar;
class QToolBar;
class QUndoStack;
class QWidget;

namespace qkv::ui {

struct Actions {
    QAction* newEmpty;
    QMenu* newFromExample; ///< one action per built-in example, data() = its name
    QAction* open;
    QAction* openModel;    ///< Ctrl+Shift+O: a head of a Hugging Face model (ModelLoading)
    QAction* resetToModel; ///< the model's head as loaded, after edits; enabled once one is loaded
    QMenu* recentFiles;    ///< filled by the window
    QAction* save;
    QAction* saveAs;
    QAction* importMatrix;
    QAction* exportMatrix;
    QAction* exportFigure;
    QAction* exportAllFigures;
    QAction* quit;
    QAction* undo;
    QAction* redo;
    QAction* stopComputation; ///< Esc: stops a running background computation
    QAction* takeSnapshot;    ///< Ctrl+K: keeps the current inputs under a name (the Snapshots view)
    QAction* settings;
    QAction* resetLayout;
    QAction* presentation;    ///< F11, checkable: full screen, larger text, editor docks hidden
    QAction* lockColorRanges; ///< checkable: every heatmap keeps its colour scale
    QAction* keyboardShortcuts;
    QAction* userGuide; ///< F1: the user guide shipped in the resources
    QAction* whatsThis; ///< Shift+F1: then a click on a view explains it (QWhatsThis mode)
    QAction* about;

    /// Creates the actions and the two submenus, all owned by `parent` (a menu needs a widget parent),
    /// the undo/redo pair bound to `undoStack`.
    static Actions create(QWidget* parent, QUndoStack* undoStack);
    /// File, Edit, View and Help menus; `docks` lists the dock toggle actions for the View menu.
    void fillMenuBar(QMenuBar* menuBar, const QList<QAction*>& dockToggles) const;
    void fillToolBar(QToolBar* toolBar) const;
};

} // namespace qkv::ui
