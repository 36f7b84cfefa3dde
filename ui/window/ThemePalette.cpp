// SPDX-License-Identifier: GPL-3.0-or-later
#include "ThemePalette.h"

#include <QApplication>
#include <QStyle>

namespace qkv::ui {

namespace {

// The palette the desktop gave the application, before any theme of ours replaced it.
const QPalette& systemPalette()
{
    static const QPalette palette = QApplication::palette();
    return palette;
}

QPalette darkPalette()
{
    QPalette p;
    const QColor window(45, 45, 48), base(30, 30, 32), text(225, 225, 225), disabled(128, 128, 128);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, window);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Light, window.lighter(150));
    p.setColor(QPalette::Midlight, window.lighter(125));
    p.setColor(QPalette::Mid, window.lighter(110));
    p.setColor(QPalette::Dark, window.darker(150));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Highlight, QColor(42, 130, 218));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(100, 170, 255));
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    return p;
}

} // namespace

QPalette themePalette(Preferences::Theme theme)
{
    const QPalette& system = systemPalette(); // taken before the first change
    switch (theme) {
    case Preferences::Theme::Light:
        return QApplication::style()->standardPalette();
    case Preferences::Theme::Dark:
        return darkPalette();
    case Preferences::Theme::System:
        break;
    }
    return system;
}

} // namespace qkv::ui
