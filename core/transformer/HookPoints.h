// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The activations a run can keep, replace and take gradients with respect to, named as TransformerLens
/// names them (docs/models.md): `hook_embed`, `hook_pos_embed`, `blocks.L.hook_resid_pre`,
/// `blocks.L.attn.hook_q|k|v|z|pattern`, `blocks.L.hook_attn_out`, `blocks.L.hook_mlp_out`,
/// `blocks.L.hook_resid_post`, `ln_final.hook_normalized`.
///
/// Every hook is a row-major matrix over one sequence of n tokens:
/// - d_model wide (n × d_model): embed, pos_embed, resid_pre, attn_out, mlp_out, resid_post, ln_final;
/// - per head, TransformerLens's n × heads × d_head flattened row-major (n × heads·d_head, head h in columns
///   h·d_head … h·d_head + d_head − 1): q, z over the query heads; k, v over the key/value heads (grouped
///   query attention: kv_heads·d_head wide). q and k are taken before RoPE, as TransformerLens's hook_q
///   and hook_k are;
/// - pattern: TransformerLens's heads × n × n flattened to (heads·n) × n, row h·n + i the weights of query i
///   of head h.

#include "EigenTypes.h"
#include "ModelConfig.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qkv::transformer {

enum class HookKind {
    Embed,
    PosEmbed,
    ResidPre,
    Q,
    K,
    V,
    Z,
    Pattern,
    AttnOut,
    MlpOut,
    ResidPost,
    FinalNormalized
};

struct HookPoint {
    HookKind kind = HookKind::Embed;
    Index layer = -1; ///< blocks.L hooks only
    friend bool operator==(const HookPoint& a, const HookPoint& b)
    {
        return a.kind == b.kind && a.layer == b.layer;
    }
};

/// The hook's name ("blocks.3.attn.hook_z").
std::string hookName(const HookPoint& point);
/// The hook a name means, or nothing (an unknown name, or a layer the model does not have).
std::optional<HookPoint> parseHookName(const std::string& name, const ModelConfig& config);
/// Every hook of the model, in the order a forward pass reaches them.
std::vector<std::string> allHookNames(const ModelConfig& config);

/// The hook's shape over n tokens; with `head` ≥ 0, one head's part (n × d_head, or n × n for the pattern).
struct HookShape {
    Index rows = 0, cols = 0;
};
HookShape hookShape(const HookPoint& point, const ModelConfig& config, Index tokens, Index head = -1);
/// Per-head hooks (q, k, v, z, pattern) and how many heads they have.
Index hookHeads(const HookPoint& point, const ModelConfig& config);
/// The layer a replacement at this hook first changes: 0 for the embeddings, the model's layers for the
/// final norm.
Index firstLayerChanged(const HookPoint& point, const ModelConfig& config);

/// A value handed to a run for a hook: the whole hook (head −1), or one head of a per-head hook.
struct HookReplacement {
    std::string name;
    Matrix value;
    Index head = -1;
};

/// Writes `replacement` into a value of its hook (of kind `kind`): the whole matrix, or its head's columns
/// (its head's rows for the pattern, whose heads are stacked). Shapes are checked by the caller.
template <typename Values>
void applyReplacement(const HookReplacement& replacement, HookKind kind, Index headDim, Values& value)
{
    using Scalar = typename Values::Scalar;
    if (replacement.head < 0)
        value = replacement.value.template cast<Scalar>();
    else if (kind == HookKind::Pattern)
        value.middleRows(replacement.head * value.cols(), value.cols()) =
            replacement.value.template cast<Scalar>();
    else
        value.middleCols(replacement.head * headDim, headDim) = replacement.value.template cast<Scalar>();
}

/// Activations (or gradients) by hook name.
using ActivationCache = std::map<std::string, Matrix>;

/// A change computed from the hook's value in the run itself (TransformerLens's hook functions): `edit`
/// gets the hook's whole value and what the run has kept so far, and changes the value in place (its shape
/// stays; a value that is not finite afterwards is refused, naming the hook).
struct HookEdit {
    std::string name;
    std::function<void(Matrix& value, const ActivationCache& kept)> edit;
};

/// What a run keeps and what it replaces.
struct HookRequest {
    HookRequest(std::vector<std::string> keepNames = {}, std::vector<HookReplacement> replacements = {})
        : keep(std::move(keepNames)), replace(std::move(replacements))
    {
    }

    std::vector<std::string> keep; ///< names; "*" keeps every hook
    std::vector<HookReplacement> replace;
    std::vector<HookEdit> edits; ///< applied after the replacements at their hook, in order
    /// Only one position's logits (1 × vocabulary: row `logitsRow`, −1 the last) and no loss (0): a run that
    /// reads one prediction skips the unembedding of every other row. No gradients can follow it.
    bool oneLogitsRow = false;
    Index logitsRow = -1;
    /// With oneLogitsRow, only these tokens' logits (1 × their count, in this order): a metric of a few
    /// logits skips the rest of the unembedding too.
    std::vector<std::int64_t> logitIds;
    /// ≥ 0: the run stops before this layer (the model's layer count: after the last), with no final norm
    /// and no logits; what it kept so far stays.
    Index stopBeforeLayer = -1;
    /// Asked after each layer; false stops the run (qkv::Cancelled), so a long run stops within a layer.
    std::function<bool()> proceed;
};

/// A scalar of the logits that gradients are taken of.
struct Objective {
    enum class Kind {
        Loss,            ///< the mean next-token loss
        LogitDifference, ///< logit(tokenA) − logit(tokenB) at `position`
    };
    Kind kind = Kind::Loss;
    Index position = -1; ///< −1: the last
    std::int64_t tokenA = 0, tokenB = 0;
};

} // namespace qkv::transformer
