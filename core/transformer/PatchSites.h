// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The sites a patching grid can replace (docs/patching.md) and their names, where lessons and the command
/// line read them as well as the patching itself (patching/Patching.h).

#include "HookPoints.h"

#include <optional>
#include <string>
#include <vector>

namespace qkv {

/// What one cell of a patching grid replaces.
enum class PatchSite {
    ResidPre,    ///< the residual entering layer l at position p          (layers × positions)
    AttnOut,     ///< the attention block's output at layer l, position p  (layers × positions)
    MlpOut,      ///< the MLP's output at layer l, position p              (layers × positions)
    HeadOut,     ///< head h's z at layer l, every position                (layers × heads)
    HeadOutPos,  ///< head h's z at layer l, position p only               (layers × heads × positions)
    HeadPattern, ///< head h's attention weights at layer l (z = A_clean · V_corrupt)  (layers × heads)
    HeadQ,       ///< head h's q                                          (layers × heads)
    HeadK,       ///< key/value head g's k, seen by every query head of its group  (layers × kv heads)
    HeadV,       ///< key/value head g's v                                 (layers × kv heads)
};

/// The site's command-line name (resid_pre, head_out_pos, …) and back; nothing for an unknown name.
std::string patchSiteName(PatchSite site);
std::optional<PatchSite> patchSiteNamed(const std::string& name);
/// Every site, in the order above.
std::vector<PatchSite> allPatchSites();
/// True for the sites with a position axis (resid_pre, attn_out, mlp_out, head_out_pos).
bool patchSiteHasPositions(PatchSite site);

enum class PatchMethod { Exact, Attribution };
std::string patchMethodName(PatchMethod method);
std::optional<PatchMethod> patchMethodNamed(const std::string& name);

/// The hook a site's cells replace part of.
transformer::HookKind patchSiteHook(PatchSite site);

} // namespace qkv
