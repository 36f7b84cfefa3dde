// SPDX-License-Identifier: GPL-3.0-or-later
#include "FigureNavigator.h"

#include "Figure.h"

#include <QDockWidget>
#include <QStackedWidget>
#include <QTabWidget>

namespace qkv::ui {

QStringList FigureNavigator::names() const
{
    QStringList list;
    for (const Figure* figure : m_figures)
        list << figure->figureName();
    return list;
}

QWidget* FigureNavigator::widget(const QString& name) const
{
    for (const Figure* figure : m_figures)
        if (figure->figureName() == name)
            // The window owns its views as widgets; the list is const only because export reads it.
            return const_cast<QWidget*>(dynamic_cast<const QWidget*>(figure));
    return nullptr;
}

bool FigureNavigator::show(const QString& name) const
{
    QWidget* child = widget(name);
    if (!child)
        return false;
    // Outermost last: a dock is raised after the tabs inside it are set.
    for (QWidget* parent = child->parentWidget(); parent; child = parent, parent = parent->parentWidget()) {
        if (auto* stack = qobject_cast<QStackedWidget*>(parent)) {
            if (auto* tabs = qobject_cast<QTabWidget*>(stack->parentWidget()))
                tabs->setCurrentWidget(child);
            else
                stack->setCurrentWidget(child);
        } else if (auto* dock = qobject_cast<QDockWidget*>(parent)) {
            dock->show();
            dock->raise();
        }
    }
    return true;
}

bool FigureNavigator::isShown(const QString& name) const
{
    const QWidget* view = widget(name);
    // A page behind another tab, and a dock behind another dock of its tab group, are hidden widgets.
    return view && view->isVisible() && !view->rect().isEmpty();
}

} // namespace qkv::ui
