// SPDX-License-Identifier: GPL-3.0-or-later
#include "Preferences.h"

#include "Autosave.h"
#include "ResourceLimits.h"

#include <QSettings>

#include <algorithm>

namespace qkv::ui {

namespace {
const QString geometryKey = QStringLiteral("window/geometry");
const QString stateKey = QStringLiteral("window/state");
const QString workspaceKey = QStringLiteral("window/workspace");
const QString recentKey = QStringLiteral("files/recent");
const QString autosaveKey = QStringLiteral("recovery/autosaveSeconds");
const QString memoryLimitKey = QStringLiteral("compute/memoryLimitBytes");
const QString themeKey = QStringLiteral("appearance/theme");
} // namespace

QByteArray Preferences::windowGeometry()
{
    return QSettings().value(geometryKey).toByteArray();
}
void Preferences::setWindowGeometry(const QByteArray& geometry)
{
    QSettings().setValue(geometryKey, geometry);
}
QByteArray Preferences::windowState()
{
    return QSettings().value(stateKey).toByteArray();
}
void Preferences::setWindowState(const QByteArray& state)
{
    QSettings().setValue(stateKey, state);
}
QByteArray Preferences::workspaceLayout(const QString& workspace)
{
    return QSettings().value(QStringLiteral("window/workspaces/%1/state").arg(workspace)).toByteArray();
}
void Preferences::setWorkspaceLayout(const QString& workspace, const QByteArray& state)
{
    QSettings().setValue(QStringLiteral("window/workspaces/%1/state").arg(workspace), state);
}
QString Preferences::workspace()
{
    return QSettings().value(workspaceKey).toString();
}
void Preferences::setWorkspace(const QString& workspace)
{
    QSettings().setValue(workspaceKey, workspace);
}
QStringList Preferences::recentFiles()
{
    return QSettings().value(recentKey).toStringList();
}

void Preferences::addRecentFile(const QString& path)
{
    QStringList files = recentFiles();
    files.removeAll(path);
    files.prepend(path);
    while (files.size() > maxRecentFiles)
        files.removeLast();
    QSettings().setValue(recentKey, files);
}

void Preferences::removeRecentFile(const QString& path)
{
    QStringList files = recentFiles();
    files.removeAll(path);
    QSettings().setValue(recentKey, files);
}

int Preferences::autosaveIntervalSeconds()
{
    bool ok = false;
    const int seconds = QSettings().value(autosaveKey, Autosave::defaultIntervalSeconds).toInt(&ok);
    return ok ? std::max(seconds, 0) : Autosave::defaultIntervalSeconds;
}

void Preferences::setAutosaveIntervalSeconds(int seconds)
{
    QSettings().setValue(autosaveKey, std::max(seconds, 0));
}

quint64 Preferences::memoryLimitBytes()
{
    const quint64 bytes = QSettings().value(memoryLimitKey, 0).toULongLong();
    return bytes > 0 ? bytes : defaultMemoryLimit();
}

void Preferences::setMemoryLimitBytes(quint64 bytes)
{
    QSettings().setValue(memoryLimitKey, bytes == defaultMemoryLimit() ? 0 : bytes);
}

Preferences::Theme Preferences::theme()
{
    const QString name = QSettings().value(themeKey).toString();
    if (name == QLatin1String("light"))
        return Theme::Light;
    if (name == QLatin1String("dark"))
        return Theme::Dark;
    return Theme::System;
}

void Preferences::setTheme(Theme theme)
{
    QSettings().setValue(themeKey, theme == Theme::Light  ? QStringLiteral("light")
                                   : theme == Theme::Dark ? QStringLiteral("dark")
                                                          : QStringLiteral("system"));
}

} // namespace qkv::ui
