// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The mask rules (docs/semantics.md, "Masks"), padding included.

#include "EigenTypes.h"
#include "Session.h"

namespace qkv {

/// Fills `allowed` (resized to n × m) from the session's mask type and padding flags.
void buildMask(const Session& session, MaskMatrix& allowed);

/// The pattern rule alone, without padding: may query i attend to key j?
bool patternAllows(const MaskSpec& mask, Index i, Index j);

} // namespace qkv
