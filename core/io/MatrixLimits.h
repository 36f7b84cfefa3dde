// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The largest matrix that matrix import (delimited text, .npy, matrix files) accepts.

#include "EigenTypes.h"
#include "Session.h"

#include <algorithm>
#include <string>

namespace qkv {

/// The largest matrix the readers accept, in each direction (the session's limits, Limits in Session.h).
inline constexpr Index maxMatrixSide = std::max(Limits::maxTokens, Limits::maxDimension);

/// maxMatrixSide as messages write it.
inline const std::string maxMatrixSideText = std::to_string(maxMatrixSide);

} // namespace qkv
