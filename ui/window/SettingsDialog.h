#pragma once
// Edit ▸ Settings: the memory limit for a session and the autosave interval, read from and written to
// Preferences.

#include <QDialog>

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

    /// Writes the values to Preferences (called on OK).
    void store() const;

private:
    QDoubleSpinBox* m_memoryGigabytes;
    QSpinBox* m_autosaveSeconds;
};

} // namespace qkv::ui
