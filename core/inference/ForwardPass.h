// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The forward pass of a model's text, on the one transformer (training/Network.h) over the model's weights,
/// in float64 or in float32 (the session's precision: a float32 pass is a float32 network, every weight,
/// activation and product in float32), by family:
/// - GPT-2: h = wte[ids] + wpe[0..n); each layer: h += attn(ln_1(h)); h += mlp(ln_2(h)), with c_attn a
///   Conv1D (x·W + b, columns q | k | v), causal softmax of q·kᵀ/√d_head, c_proj, and the MLP
///   c_proj(gelu_tanh(c_fc(x))). LayerNorm: (x − mean)/√(var + ε)·γ + β, the variance over d_model (biased).
/// - LLaMA family (llama, qwen2, mistral): h = embed_tokens[ids]; each layer: h += attn(input_layernorm(h));
///   h += mlp(post_attention_layernorm(h)), with q/k/v/o projections (torch Linear: x·Wᵀ + b), RoPE on q and
///   k (rope_theta, dimension i paired with i + d_head/2, positions from 0), grouped-query attention (query
///   head h reads key/value head h / (heads / kv_heads)), Mistral's sliding window, and the MLP
///   down(silu(gate(x)) ⊙ up(x)). RMSNorm: x / √(mean(x²) + ε) · γ.
/// A layer's heads shown as a session (sessionFromModel, ModelSession.h) are the engine's attention over the
/// stream this pass computed entering the layer, through the layer's norm: the same weights as the pass's
/// within rounding (1e-15 in float64).

#include "Model.h"
#include "ResourceLimits.h"
#include "Session.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace qkv {

/// The residual stream entering layer `layer` (n × d_model), before that layer's normalization; `layer` =
/// the number of layers gives the stream after the last one (before the final norm): the whole forward pass.
Matrix residualBeforeLayer(const Model& model, const std::vector<std::int64_t>& ids, Index layer,
                           Precision precision = Precision::Float64);

/// Told after each layer of attentionOfEveryLayer: (layers done, layers to do). Returning false cancels:
/// the pass stops after that layer. Called on the thread that runs the pass.
using LayerProgress = std::function<bool(Index done, Index layers)>;

/// Every layer's attention weights for every query head, from one forward pass (the one residualBeforeLayer
/// and sessionFromModel go through): result[layer][head] is n × n and equals, within rounding, the weights
/// the engine computes for sessionFromModel({layer, {head}, ids, precision}). `layers` stops the pass after
/// that many layers (-1: all of them). When `progress` cancels, the layers done so far are returned. Throws
/// qkv::Error as residualBeforeLayer does, and before anything is computed when the layers × heads × n²
/// weights would take more than `memoryLimit` bytes.
std::vector<std::vector<Matrix>> attentionOfEveryLayer(const Model& model,
                                                       const std::vector<std::int64_t>& ids,
                                                       Precision precision,
                                                       const LayerProgress& progress = {}, Index layers = -1,
                                                       std::uint64_t memoryLimit = defaultMemoryLimit());

} // namespace qkv
