// SPDX-License-Identifier: GPL-3.0-or-later
#include "SettingsDialog.h"

#include "Autosave.h"
#include "Preferences.h"
#include "ResourceLimits.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

namespace qkv::ui {

namespace {

constexpr double bytesPerGigabyte = 1e9; // as formatBytes() writes sizes

} // namespace

SettingsDialog::SettingsDialog(QWidget* parent)
    : QDialog(parent), m_memoryGigabytes(new QDoubleSpinBox(this)), m_autosaveSeconds(new QSpinBox(this)),
      m_theme(new QComboBox(this))
{
    setObjectName(QStringLiteral("settingsDialog"));
    setWindowTitle(tr("Settings"));
    const double physical = static_cast<double>(physicalMemoryBytes()) / bytesPerGigabyte;

    m_memoryGigabytes->setObjectName(QStringLiteral("memoryLimit"));
    m_memoryGigabytes->setSuffix(tr(" GB"));
    m_memoryGigabytes->setDecimals(1);
    m_memoryGigabytes->setRange(0.1, std::max(1.0, std::ceil(physical * 4)));
    m_memoryGigabytes->setValue(static_cast<double>(Preferences::memoryLimitBytes()) / bytesPerGigabyte);
    m_memoryGigabytes->setToolTip(
        tr("A session whose results would need more memory than this is refused with a message instead of "
           "being computed. Default: three quarters of this machine's %1 GB.")
            .arg(physical, 0, 'f', 1));

    m_autosaveSeconds->setObjectName(QStringLiteral("autosaveInterval"));
    m_autosaveSeconds->setRange(0, 3600);
    m_autosaveSeconds->setSuffix(tr(" s"));
    m_autosaveSeconds->setSpecialValueText(tr("off"));
    m_autosaveSeconds->setValue(Preferences::autosaveIntervalSeconds());
    m_autosaveSeconds->setToolTip(tr("How often an unsaved session is copied to the recovery folder, so a "
                                     "crash loses at most this much work (0: only after structural edits)."));

    m_theme->setObjectName(QStringLiteral("theme"));
    m_theme->addItem(tr("System"), static_cast<int>(Preferences::Theme::System));
    m_theme->addItem(tr("Light"), static_cast<int>(Preferences::Theme::Light));
    m_theme->addItem(tr("Dark"), static_cast<int>(Preferences::Theme::Dark));
    m_theme->setCurrentIndex(m_theme->findData(static_cast<int>(Preferences::theme())));
    m_theme->setToolTip(
        tr("The colours of the window and its plots: the desktop's, or light or dark whatever "
           "the desktop uses. Exported figures keep the colours on screen."));

    auto* form = new QFormLayout;
    form->addRow(tr("Memory limit for a session:"), m_memoryGigabytes);
    form->addRow(tr("Autosave unsaved work every:"), m_autosaveSeconds);
    form->addRow(tr("Theme:"), m_theme);

    auto* buttons = new QDialogButtonBox(
        QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this, [this] {
        m_memoryGigabytes->setValue(static_cast<double>(defaultMemoryLimit()) / bytesPerGigabyte);
        m_autosaveSeconds->setValue(Autosave::defaultIntervalSeconds);
        m_theme->setCurrentIndex(m_theme->findData(static_cast<int>(Preferences::Theme::System)));
    });

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
}

quint64 SettingsDialog::memoryLimitBytes() const
{
    return static_cast<quint64>(std::llround(m_memoryGigabytes->value() * bytesPerGigabyte));
}

int SettingsDialog::autosaveIntervalSeconds() const
{
    return m_autosaveSeconds->value();
}

Preferences::Theme SettingsDialog::theme() const
{
    return static_cast<Preferences::Theme>(m_theme->currentData().toInt());
}

void SettingsDialog::store() const
{
    Preferences::setTheme(theme());
    Preferences::setMemoryLimitBytes(memoryLimitBytes());
    Preferences::setAutosaveIntervalSeconds(autosaveIntervalSeconds());
}

} // namespace qkv::ui
