// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The question asked at start when a crashed or killed instance left unsaved work behind.

#include "Autosave.h"

#include <optional>

class QWidget;

namespace qkv::ui {

/// QKV_RECOVERY=restore|discard|keep answers without a dialog (tests, scripts); unset, empty or "ask"
/// means ask. The one place that reads the variable.
std::optional<RecoveryChoice> recoveryChoiceFromEnvironment();

/// The answer from the environment, else a dialog naming the session's title, file and time: Restore,
/// Discard, or Not Now (Esc), which keeps the file for the next start.
RecoveryChoice askToRecover(const RecoveryInfo& info, QWidget* parent);

} // namespace qkv::ui
