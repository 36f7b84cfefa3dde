// SPDX-License-Identifier: GPL-3.0-or-later
#include "Workspaces.h"

#include "Preferences.h"

#include <QAction>
#include <QActionGroup>
#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QPainter>
#include <QPainterPath>
#include <QToolBar>

namespace qkv::ui {

namespace {

constexpr int iconSize = 64; // drawn large, shown smaller: sharp at a scale factor of 2

// The icons are drawn rather than taken from the desktop's theme, which may have none: a mask-like heatmap
// for a head, a grid of layers × heads for the model, a falling loss curve for training.
QIcon workspaceIcon(Workspace workspace)
{
    QPixmap pixmap(iconSize, iconSize);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    const QColor accent(0x3b, 0x7d, 0xd8);
    const QColor muted(0x8a, 0x94, 0xa6);
    switch (workspace) {
    case Workspace::Head:
        for (int row = 0; row < 4; ++row)
            for (int column = 0; column <= row; ++column) {
                QColor cell = accent;
                cell.setAlphaF(column == row ? 1.0f : 0.35f + 0.15f * static_cast<float>(column));
                painter.fillRect(QRectF(6 + column * 13.5, 6 + row * 13.5, 12, 12), cell);
            }
        break;
    case Workspace::Model:
        for (int layer = 0; layer < 3; ++layer)
            for (int head = 0; head < 3; ++head)
                painter.fillRect(QRectF(5 + head * 19, 5 + layer * 19, 16, 16),
                                 (layer + head) % 3 == 1 ? accent : muted);
        break;
    case Workspace::Training: {
        painter.setPen(QPen(muted, 4));
        painter.drawLine(QPointF(8, 6), QPointF(8, 56));
        painter.drawLine(QPointF(8, 56), QPointF(60, 56));
        QPainterPath loss(QPointF(12, 10));
        loss.cubicTo(QPointF(22, 46), QPointF(30, 44), QPointF(58, 48));
        painter.setPen(QPen(accent, 5, Qt::SolidLine, Qt::RoundCap));
        painter.drawPath(loss);
        break;
    }
    }
    return QIcon(pixmap);
}

} // namespace

const QList<Workspace>& Workspaces::all()
{
    static const QList<Workspace> workspaces{Workspace::Head, Workspace::Model, Workspace::Training};
    return workspaces;
}

QString Workspaces::id(Workspace workspace)
{
    switch (workspace) {
    case Workspace::Head:
        return QStringLiteral("head");
    case Workspace::Model:
        return QStringLiteral("model");
    case Workspace::Training:
        break;
    }
    return QStringLiteral("training");
}

QString Workspaces::title(Workspace workspace)
{
    switch (workspace) {
    case Workspace::Head:
        return tr("Head");
    case Workspace::Model:
        return tr("Model");
    case Workspace::Training:
        break;
    }
    return tr("Training");
}

Workspaces::Workspaces(QWidget* parent) : QStackedWidget(parent), m_switches(new QActionGroup(this))
{
    setObjectName(QStringLiteral("workspaces"));
    const QStringList tips{
        tr("The head's workbench: its inputs and settings, the pipeline, the heatmaps and the head's views"),
        tr("The whole model: every layer and head, the prediction and the head scores"),
        tr("Train a small transformer and watch its heads form")};
    for (Workspace workspace : all()) {
        const int index = static_cast<int>(workspace);
        auto* page = new QMainWindow(this);
        page->setWindowFlags(Qt::Widget); // a page of the window, not a window of its own
        page->setObjectName(QStringLiteral("workspace_") + id(workspace));
        page->setDockNestingEnabled(true);
        addWidget(page);
        m_pages << page;
        m_docks << QList<QDockWidget*>();

        QAction* action = m_switches->addAction(workspaceIcon(workspace), title(workspace));
        action->setObjectName(QStringLiteral("workspaceAction_") + id(workspace));
        action->setCheckable(true);
        action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + index)));
        action->setToolTip(QStringLiteral("%1 (%2)").arg(
            tips[index], action->shortcut().toString(QKeySequence::NativeText)));
        action->setStatusTip(tips[index]);
        connect(action, &QAction::triggered, this, [this, workspace] { setCurrent(workspace); });
    }
    m_switches->setExclusive(true);
    m_switches->actions().front()->setChecked(true);
    connect(this, &QStackedWidget::currentChanged, this, [this](int index) {
        m_switches->actions().at(index)->setChecked(true);
        emit workspaceChanged(all().at(index));
    });
}

QMainWindow* Workspaces::page(Workspace workspace) const
{
    return m_pages.at(static_cast<int>(workspace));
}

Workspace Workspaces::current() const
{
    return all().at(currentIndex());
}

void Workspaces::setCurrent(Workspace workspace)
{
    setCurrentIndex(static_cast<int>(workspace));
}

std::optional<Workspace> Workspaces::workspaceOf(const QWidget* widget) const
{
    // parentWidget() goes through a floating dock to the page it belongs to.
    for (; widget; widget = widget->parentWidget())
        for (Workspace workspace : all())
            if (widget == page(workspace))
                return workspace;
    return std::nullopt;
}

QDockWidget* Workspaces::addDock(Workspace workspace, const QString& title, const QString& name,
                                 QWidget* widget, Qt::DockWidgetArea area)
{
    QMainWindow* owner = page(workspace);
    auto* dock = new QDockWidget(title, owner);
    dock->setObjectName(name);
    dock->setWidget(widget);
    owner->addDockWidget(area, dock);
    m_docks[static_cast<int>(workspace)] << dock;
    dock->installEventFilter(this);

    // Not the dock's own toggle: from another workspace, "hide" would hide a dock the person wants to see.
    auto* action = new QAction(title, this);
    action->setObjectName(QStringLiteral("viewAction_") + name);
    action->setCheckable(true);
    action->setChecked(true);
    action->setStatusTip(tr("Show the %1 panel (in the %2 workspace); again to close it")
                             .arg(title, Workspaces::title(workspace)));
    connect(dock->toggleViewAction(), &QAction::toggled, action, &QAction::setChecked);
    connect(action, &QAction::triggered, this, [this, dock, action, workspace](bool checked) {
        if (!checked && workspace == current()) {
            dock->hide();
            return;
        }
        action->setChecked(true);
        reveal(dock);
    });
    m_dockActions << action;
    return dock;
}

QList<QDockWidget*> Workspaces::docks(Workspace workspace) const
{
    return m_docks.at(static_cast<int>(workspace));
}

void Workspaces::reveal(QDockWidget* dock)
{
    if (const std::optional<Workspace> workspace = workspaceOf(dock))
        setCurrent(*workspace);
    dock->show();
    dock->raise();
}

QToolBar* Workspaces::createModeBar(QWidget* parent)
{
    auto* bar = new QToolBar(tr("Workspaces"), parent);
    bar->setObjectName(QStringLiteral("workspaceBar"));
    bar->setOrientation(Qt::Vertical);
    bar->setMovable(false);
    bar->setFloatable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextUnderIcon);
    bar->setIconSize(QSize(24, 24));
    QFont font = bar->font(); // the bar is as wide as its longest name: a smaller one leaves the views room
    font.setPointSizeF(font.pointSizeF() * 0.9);
    bar->setFont(font);
    bar->toggleViewAction()->setVisible(false); // the way between workspaces is not for closing
    bar->addActions(m_switches->actions());
    return bar;
}

QList<QAction*> Workspaces::menuActions() const
{
    QList<QAction*> actions = m_switches->actions();
    int dock = 0;
    for (Workspace workspace : all()) {
        auto* separator = new QAction(const_cast<Workspaces*>(this));
        separator->setSeparator(true);
        actions << separator;
        for (qsizetype k = 0; k < docks(workspace).size(); ++k)
            actions << m_dockActions.at(dock++);
    }
    return actions;
}

void Workspaces::finishSetUp()
{
    m_defaultLayouts = saveLayouts();
    QList<QByteArray> remembered;
    for (Workspace workspace : all())
        remembered << Preferences::workspaceLayout(id(workspace));
    restoreLayouts(remembered);
    const QString last = Preferences::workspace();
    for (Workspace workspace : all())
        if (id(workspace) == last)
            setCurrent(workspace);
    // QWidget::raise() says nothing when the widget is its parent's last child already; a hidden widget kept
    // last on each page makes every raise of a dock a move, which the dock is told of.
    for (QMainWindow* page : std::as_const(m_pages)) {
        auto* lid = new QWidget(page);
        lid->setObjectName(QStringLiteral("raiseLid"));
        lid->hide();
        m_lids << lid;
    }
    m_followRaisedDocks = true;
}

QList<QByteArray> Workspaces::saveLayouts() const
{
    QList<QByteArray> layouts;
    for (const QMainWindow* page : m_pages)
        layouts << page->saveState();
    return layouts;
}

void Workspaces::restoreLayouts(const QList<QByteArray>& layouts)
{
    const bool following = m_followRaisedDocks;
    m_followRaisedDocks = false; // restoring raises docks of pages not on show
    for (int index = 0; index < m_pages.size() && index < layouts.size(); ++index)
        if (!layouts.at(index).isEmpty())
            m_pages.at(index)->restoreState(layouts.at(index));
    m_followRaisedDocks = following;
}

void Workspaces::rememberLayouts() const
{
    const QList<QByteArray> layouts = saveLayouts();
    for (Workspace workspace : all())
        Preferences::setWorkspaceLayout(id(workspace), layouts.at(static_cast<int>(workspace)));
    Preferences::setWorkspace(id(current()));
}

void Workspaces::restoreDefaultLayouts()
{
    for (const QList<QDockWidget*>& docks : std::as_const(m_docks))
        for (QDockWidget* dock : docks)
            dock->show();
    restoreLayouts(m_defaultLayouts);
}

bool Workspaces::eventFilter(QObject* watched, QEvent* event)
{
    // Whoever raises a dock (FigureNavigator, a lesson step, a model just opened) means to show it.
    auto* dock = qobject_cast<QDockWidget*>(watched);
    if (event->type() == QEvent::ZOrderChange && dock && !m_lids.isEmpty()) {
        const std::optional<Workspace> workspace = workspaceOf(dock);
        if (m_followRaisedDocks && workspace && *workspace != current() && !dock->isHidden() &&
            !dock->isFloating())
            setCurrent(*workspace);
        if (workspace) {
            watched->event(event); // the dock brings its tab forward while it is still the last child
            m_lids.at(static_cast<int>(*workspace))->raise();
            return true;
        }
    }
    return QStackedWidget::eventFilter(watched, event);
}

} // namespace qkv::ui
