// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

// Keeps Qt's raster fills on the thread that paints, for a program that asks for it (see RasterFills.cpp).
namespace qkv::ui::RasterFills {

/// From now on, Qt's raster paint engine fills on the painting thread instead of splitting long fills over
/// its global thread pool. Until a program calls this, QThreadPool::contains answers as Qt's own does. Also
/// links this folder's definition of QThreadPool::contains into the program, as Q_INIT_RESOURCE does for a
/// static library's resources: a static library's file is linked only when something calls into it.
void keepOnPaintingThread();

/// How many times Qt asked whether to split a fill over its global thread pool and was told not to: a test
/// that Qt calls this definition, not its own.
std::uint64_t splitsDeclined();

} // namespace qkv::ui::RasterFills
