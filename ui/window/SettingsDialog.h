// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Edit ▸ Settings: the memory limit for a session, the autosave interval and the colour theme, read from and
// written to Preferences.

#include "Preferences.h"

#include <QDialog>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace qkv::ui {

class SettingsDialog : public QDialog {
    Q_OBJECT
public:
    explicit SettingsDialog(QWidget* parent = nullptr);

    /// Bytes; what the memory spin box shows.
    quint64 memoryLimitBytes() const;
    int autosaveIntervalSeconds() const;
    Preferences::Theme theme() const;

    /// Writes the values to Preferences (called on OK).
    void store() const;

private:
    QDoubleSpinBox* m_memoryGigabytes;
    QSpinBox* m_autosaveSeconds;
    QComboBox* m_theme;
};

} // namespace qkv::ui
