// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window's workspaces (Head, Model, Training), each a dock layout of its own with the whole window's
// room: one QMainWindow page per workspace in a stack, switched from a vertical mode bar, from View ▸
// (Ctrl+1, 2, 3) and by raising any dock of a workspace not on show.

#include <QByteArray>
#include <QList>
#include <QStackedWidget>

#include <optional>

class QAction;
class QActionGroup;
class QDockWidget;
class QMainWindow;
class QToolBar;

namespace qkv::ui {

enum class Workspace { Head, Model, Training };

class Workspaces : public QStackedWidget {
    Q_OBJECT
public:
    static constexpr int count = 3;
    static const QList<Workspace>& all();
    /// Its name in settings and object names ("head", "model", "training").
    static QString id(Workspace workspace);
    /// Its name on the mode bar and in the View menu ("Head").
    static QString title(Workspace workspace);

    explicit Workspaces(QWidget* parent = nullptr);

    /// The page of `workspace`: a main window without menus whose docks and central widget are its layout.
    QMainWindow* page(Workspace workspace) const;
    Workspace current() const;
    void setCurrent(Workspace workspace);
    /// The workspace whose page holds `widget` (a floating dock too); nullopt for a widget outside them.
    std::optional<Workspace> workspaceOf(const QWidget* widget) const;

    /// A dock of `workspace` holding `widget` in `area`, with an entry of its own in the View menu.
    QDockWidget* addDock(Workspace workspace, const QString& title, const QString& name, QWidget* widget,
                         Qt::DockWidgetArea area);
    QList<QDockWidget*> docks(Workspace workspace) const;
    /// Brings `dock` on screen: its workspace first, then the dock shown and raised above its tab group.
    void reveal(QDockWidget* dock);

    /// The vertical bar of the workspaces' buttons (icon and text), for the window's left edge.
    QToolBar* createModeBar(QWidget* parent);
    /// View ▸: one checkable action per workspace (Ctrl+1, 2, 3), then each workspace's docks.
    QList<QAction*> menuActions() const;

    /// Call once every dock is placed: the layouts Restore Default Layout goes back to, then the layouts and
    /// the workspace remembered from the last run (Preferences); from then on a raised dock switches to its
    /// workspace.
    void finishSetUp();
    /// Every page's dock layout (QMainWindow::saveState), in the order of all().
    QList<QByteArray> saveLayouts() const;
    void restoreLayouts(const QList<QByteArray>& layouts);
    /// Writes every page's layout and the current workspace to Preferences (on close).
    void rememberLayouts() const;
    /// Every dock shown again in its first place, in every workspace.
    void restoreDefaultLayouts();

signals:
    void workspaceChanged(qkv::ui::Workspace workspace);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QList<QMainWindow*> m_pages;
    QList<QList<QDockWidget*>> m_docks; ///< per page
    QList<QAction*> m_dockActions;      ///< the View menu's entries, in the order the docks were added
    QActionGroup* m_switches;
    QList<QByteArray> m_defaultLayouts;
    QList<QWidget*> m_lids;           ///< per page: a hidden widget kept above the docks (eventFilter)
    bool m_followRaisedDocks = false; ///< off while the pages are built or a layout is restored
};

} // namespace qkv::ui
