// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where the window opens: a size taken from the screen, and a remembered geometry only when it still fits.

#include <QByteArray>
#include <QRect>

#include <optional>

namespace qkv::ui {

/// The largest minimum size the window may have: 1920×1080 at a scale factor of 2 leaves 960×540, less a
/// title bar (a 1280×720 projector then fits easily).
inline constexpr QSize maximumMinimumWindowSize{960, 510};

/// The first geometry of the window on a screen whose available area is `available`: nine tenths of it in
/// each direction, centred.
QRect defaultWindowGeometry(const QRect& available);

/// The frame rectangle (decorations included) that QWidget::restoreGeometry() would give the window for
/// `saved`, a QWidget::saveGeometry() blob; nullopt when it is not one.
std::optional<QRect> savedFrameGeometry(const QByteArray& saved);

/// Whether restoring `saved` puts the whole window inside `available`.
bool savedGeometryFits(const QByteArray& saved, const QRect& available);

} // namespace qkv::ui
