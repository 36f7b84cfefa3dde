// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Typed keys over QSettings: what the window remembers between runs.

#include <QByteArray>
#include <QStringList>

namespace qkv::ui {

class Preferences {
public:
    static constexpr int maxRecentFiles = 8;

    static QByteArray windowGeometry();
    static void setWindowGeometry(const QByteArray& geometry);
    static QByteArray windowState();
    static void setWindowState(const QByteArray& state);
    /// A workspace's dock layout ("window/workspaces/ID/state"; empty when never saved).
    static QByteArray workspaceLayout(const QString& workspace);
    static void setWorkspaceLayout(const QString& workspace, const QByteArray& state);
    /// The workspace on show when the window last closed ("window/workspace"; empty when none).
    static QString workspace();
    static void setWorkspace(const QString& workspace);
    /// Newest first, without duplicates.
    static QStringList recentFiles();
    static void addRecentFile(const QString& path);
    static void removeRecentFile(const QString& path);
    /// Seconds between autosaves of an unsaved session ("recovery/autosaveSeconds", default 30; 0 = off).
    static int autosaveIntervalSeconds();
    static void setAutosaveIntervalSeconds(int seconds);
    /// The most memory a session may need before it is refused ("compute/memoryLimitBytes"; default and
    /// for 0: qkv::defaultMemoryLimit(), three quarters of the physical memory).
    static quint64 memoryLimitBytes();
    static void setMemoryLimitBytes(quint64 bytes);

    enum class Theme { System, Light, Dark };
    /// The colours of the window and its plots ("appearance/theme": "system", "light" or "dark"; default
    /// and for anything else: System, the palette the desktop gave the application).
    static Theme theme();
    static void setTheme(Theme theme);
};

} // namespace qkv::ui
