// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Brings a view on screen by its figure name: the tab holding it made current, the dock holding it shown and
// raised above the docks tabbed with it.

#include <QList>
#include <QString>
#include <QStringList>

class QWidget;

namespace qkv::ui {

class Figure;

/// Finds a figure's containers by walking up from the figure's widget, so any view placed in a tab or a dock
/// of the window is reachable without a table to keep in step with the window's layout.
class FigureNavigator {
public:
    explicit FigureNavigator(QList<const Figure*> figures) : m_figures(std::move(figures)) {}

    QStringList names() const;
    /// The widget of the figure named `name` (null when none).
    QWidget* widget(const QString& name) const;
    /// Makes every tab holding `name` current and shows and raises its dock; false for an unknown name.
    bool show(const QString& name) const;
    /// Whether the figure is on screen now (visible and not behind another tab or dock).
    bool isShown(const QString& name) const;

private:
    QList<const Figure*> m_figures;
};

} // namespace qkv::ui
