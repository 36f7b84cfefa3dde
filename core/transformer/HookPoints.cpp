// SPDX-License-Identifier: GPL-3.0-or-later
#include "HookPoints.h"

#include <cstdlib>

namespace qkv::transformer {

namespace {

struct Suffix {
    HookKind kind;
    const char* text;
};
// The hooks of a block, in the order a forward pass reaches them.
constexpr Suffix blockHooks[] = {{HookKind::ResidPre, "hook_resid_pre"},
                                 {HookKind::Q, "attn.hook_q"},
                                 {HookKind::K, "attn.hook_k"},
                                 {HookKind::V, "attn.hook_v"},
                                 {HookKind::Pattern, "attn.hook_pattern"},
                                 {HookKind::Z, "attn.hook_z"},
                                 {HookKind::AttnOut, "hook_attn_out"},
                                 {HookKind::MlpOut, "hook_mlp_out"},
                                 {HookKind::ResidPost, "hook_resid_post"}};

} // namespace

std::string hookName(const HookPoint& point)
{
    switch (point.kind) {
    case HookKind::Embed:
        return "hook_embed";
    case HookKind::PosEmbed:
        return "hook_pos_embed";
    case HookKind::FinalNormalized:
        return "ln_final.hook_normalized";
    default:
        break;
    }
    for (const Suffix& s : blockHooks)
        if (s.kind == point.kind)
            return "blocks." + std::to_string(point.layer) + "." + s.text;
    return {};
}

std::optional<HookPoint> parseHookName(const std::string& name, const ModelConfig& config)
{
    if (name == "hook_embed")
        return HookPoint{HookKind::Embed, -1};
    if (name == "hook_pos_embed" && config.learnedPositions())
        return HookPoint{HookKind::PosEmbed, -1};
    if (name == "ln_final.hook_normalized")
        return HookPoint{HookKind::FinalNormalized, -1};
    const std::string prefix = "blocks.";
    if (name.compare(0, prefix.size(), prefix) != 0)
        return std::nullopt;
    const std::size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos || dot == prefix.size())
        return std::nullopt;
    const std::string number = name.substr(prefix.size(), dot - prefix.size());
    if (number.find_first_not_of("0123456789") != std::string::npos || number.size() > 6)
        return std::nullopt;
    const Index layer = std::atol(number.c_str());
    if (layer >= config.layers)
        return std::nullopt;
    const std::string rest = name.substr(dot + 1);
    for (const Suffix& s : blockHooks)
        if (rest == s.text && (s.kind != HookKind::MlpOut || config.hasMlp()))
            return HookPoint{s.kind, layer};
    return std::nullopt;
}

std::vector<std::string> allHookNames(const ModelConfig& config)
{
    std::vector<std::string> names{"hook_embed"};
    if (config.learnedPositions())
        names.push_back("hook_pos_embed");
    for (Index l = 0; l < config.layers; ++l)
        for (const Suffix& s : blockHooks)
            if (s.kind != HookKind::MlpOut || config.hasMlp())
                names.push_back(hookName({s.kind, l}));
    names.push_back("ln_final.hook_normalized");
    return names;
}

Index hookHeads(const HookPoint& point, const ModelConfig& config)
{
    switch (point.kind) {
    case HookKind::Q:
    case HookKind::Z:
    case HookKind::Pattern:
        return config.heads;
    case HookKind::K:
    case HookKind::V:
        return config.kvHeads;
    default:
        return 0;
    }
}

HookShape hookShape(const HookPoint& point, const ModelConfig& config, Index tokens, Index head)
{
    const Index heads = hookHeads(point, config);
    if (point.kind == HookKind::Pattern)
        return head >= 0 ? HookShape{tokens, tokens} : HookShape{heads * tokens, tokens};
    if (heads > 0)
        return {tokens, (head >= 0 ? 1 : heads) * config.headDim};
    return {tokens, config.hiddenSize};
}

Index firstLayerChanged(const HookPoint& point, const ModelConfig& config)
{
    switch (point.kind) {
    case HookKind::Embed:
    case HookKind::PosEmbed:
        return 0;
    case HookKind::FinalNormalized:
        return config.layers;
    default:
        return point.layer;
    }
}

} // namespace qkv::transformer
