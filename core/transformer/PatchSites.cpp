// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchSites.h"

#include <array>

namespace qkv {

using transformer::HookKind;

namespace {

struct SiteName {
    PatchSite site;
    const char* name;
    HookKind hook;
};
constexpr std::array<SiteName, 9> siteNames{{{PatchSite::ResidPre, "resid_pre", HookKind::ResidPre},
                                             {PatchSite::AttnOut, "attn_out", HookKind::AttnOut},
                                             {PatchSite::MlpOut, "mlp_out", HookKind::MlpOut},
                                             {PatchSite::HeadOut, "head_out", HookKind::Z},
                                             {PatchSite::HeadOutPos, "head_out_pos", HookKind::Z},
                                             {PatchSite::HeadPattern, "head_pattern", HookKind::Pattern},
                                             {PatchSite::HeadQ, "head_q", HookKind::Q},
                                             {PatchSite::HeadK, "head_k", HookKind::K},
                                             {PatchSite::HeadV, "head_v", HookKind::V}}};

} // namespace

std::string patchSiteName(PatchSite site)
{
    for (const SiteName& s : siteNames)
        if (s.site == site)
            return s.name;
    return {};
}

std::optional<PatchSite> patchSiteNamed(const std::string& name)
{
    for (const SiteName& s : siteNames)
        if (name == s.name)
            return s.site;
    return std::nullopt;
}

std::vector<PatchSite> allPatchSites()
{
    std::vector<PatchSite> sites;
    for (const SiteName& s : siteNames)
        sites.push_back(s.site);
    return sites;
}

bool patchSiteHasPositions(PatchSite site)
{
    return site == PatchSite::ResidPre || site == PatchSite::AttnOut || site == PatchSite::MlpOut ||
           site == PatchSite::HeadOutPos;
}

std::string patchMethodName(PatchMethod method)
{
    return method == PatchMethod::Exact ? "exact" : "attribution";
}

std::optional<PatchMethod> patchMethodNamed(const std::string& name)
{
    if (name == "exact")
        return PatchMethod::Exact;
    if (name == "attribution")
        return PatchMethod::Attribution;
    return std::nullopt;
}

transformer::HookKind patchSiteHook(PatchSite site)
{
    for (const SiteName& s : siteNames)
        if (s.site == site)
            return s.hook;
    return HookKind::ResidPre;
}

} // namespace qkv
