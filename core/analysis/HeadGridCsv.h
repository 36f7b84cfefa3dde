// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A layers × heads grid (head scores, an ablation sweep, a logit attribution) as CSV text.

#include "EigenTypes.h"

#include <string>

namespace qkv {

/// A header row "layer,H0,H1,…", then one row per layer: its index, then each head's value written
/// shortest-round-trip (as formatDelimited writes matrices), every line ending in '\n'.
std::string headGridCsv(const Matrix& values);

} // namespace qkv
