// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window's colours for the theme chosen in the settings.

#include "Preferences.h"

#include <QPalette>

namespace qkv::ui {

/// The palette of `theme`: the desktop's own for System (as the application had it before the first call),
/// the style's standard light palette for Light, a dark grey palette for Dark. Call it once before changing
/// the application's palette so that System can be restored.
QPalette themePalette(Preferences::Theme theme);

} // namespace qkv::ui
