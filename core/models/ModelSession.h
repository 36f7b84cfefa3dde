#pragma once
/// @file
/// A head of a real model as a session (issue 12): a Hugging Face folder (config.json, safetensors weights,
/// tokenizer files) opened, the forward pass run up to a layer, and that layer's attention made into an
/// ordinary session whose weights are the model's attention probabilities.
///
/// The forward pass, in float64 or in float32 (the session's precision; a model's own precision: every
/// weight, activation and the residual stream rounded to float32, every product a float32 product, norms
/// and activation functions evaluated from float32 inputs and rounded to float32), by family:
/// - GPT-2: h = wte[ids] + wpe[0..n); each layer: h += attn(ln_1(h)); h += mlp(ln_2(h)), with c_attn a
///   Conv1D (x·W + b, columns q | k | v), causal softmax of q·kᵀ/√d_head, c_proj, and the MLP
///   c_proj(gelu_tanh(c_fc(x))). LayerNorm: (x − mean)/√(var + ε)·γ + β, the variance over d_model (biased).
/// - LLaMA family (llama, qwen2, mistral): h = embed_tokens[ids]; each layer: h += attn(input_layernorm(h));
///   h += mlp(post_attention_layernorm(h)), with q/k/v/o projections (torch Linear: x·Wᵀ + b), RoPE on q and
///   k (rope_theta, dimension i paired with i + d_head/2, positions from 0), grouped-query attention (query
///   head h reads key/value head h / (heads / kv_heads)), and the MLP down(silu(gate(x)) ⊙ up(x)). RMSNorm:
///   x / √(mean(x²) + ε) · γ.
/// Each layer's attention is computed by the engine itself, from the same session this file makes for the
/// layer that is asked for, so the session shown is exactly the attention the forward pass used.

#include "BpeTokenizer.h"
#include "ModelConfig.h"
#include "ResourceLimits.h"
#include "Safetensors.h"
#include "Session.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

/// A model folder, opened: its config, its weights (memory-mapped; only the headers are read) and its
/// tokenizer when it has one. Every tensor the forward pass needs is checked by name and shape against the
/// config when opened, so a missing or misshapen tensor is named before anything is computed.
class Model {
public:
    static Model open(const std::string& folder);

    const ModelConfig& config() const { return m_config; }
    const Checkpoint& checkpoint() const { return *m_checkpoint; }
    const std::string& folder() const { return m_folder; }
    /// The tokenizer, or nullptr when the folder has none (or one QKV Lab cannot read: tokenizerProblem()).
    const BpeTokenizer* tokenizer() const { return m_tokenizer ? &*m_tokenizer : nullptr; }
    const std::string& tokenizerProblem() const { return m_tokenizerProblem; }
    /// The name of a tensor in this checkpoint (GPT-2's may carry a "transformer." prefix).
    std::string tensorName(const std::string& name) const { return m_prefix + name; }

private:
    ModelConfig m_config;
    std::shared_ptr<Checkpoint> m_checkpoint;
    std::optional<BpeTokenizer> m_tokenizer;
    std::string m_tokenizerProblem;
    std::string m_folder;
    std::string m_prefix;
};

/// What from-model is asked for: a layer and query heads (counted from 0), token ids, a precision.
struct ModelHeadRequest {
    Index layer = 0;
    std::vector<Index> heads; ///< empty: every query head
    std::vector<std::int64_t> ids;
    Precision precision = Precision::Float64;
    std::string text; ///< for the title, when the ids came from a text
};

/// The model as titles name it: its model_type and its folder's name ("gpt2 gpt2-medium").
std::string modelName(const Model& model);

/// The model and its input as the model view titles them: `gpt2 NAME: "text"`, or `gpt2 NAME, 5 tokens`
/// when the ids were given directly (`text` empty).
std::string modelInputTitle(const Model& model, const std::string& text, std::size_t tokens);

/// The tokens' labels: the bytes each token stands for, a leading space shown as "␣" (U+2423); a token that
/// is part of a UTF-8 character shows its vocabulary entry instead; "#id" without a tokenizer.
std::vector<std::string> tokenLabels(const Model& model, const std::vector<std::int64_t>& ids);

/// The residual stream entering layer `layer` (n × d_model), before that layer's normalization; `layer` =
/// the number of layers gives the stream after the last one (before the final norm): the whole forward pass.
Matrix residualBeforeLayer(const Model& model, const std::vector<std::int64_t>& ids, Index layer,
                           Precision precision = Precision::Float64);

/// Told after each layer of attentionOfEveryLayer: (layers done, layers to do). Returning false cancels:
/// the pass stops after that layer. Called on the thread that runs the pass.
using LayerProgress = std::function<bool(Index done, Index layers)>;

/// Every layer's attention weights for every query head, from one forward pass (the one residualBeforeLayer
/// and sessionFromModel go through): result[layer][head] is n × n and equals the weights the engine
/// computes for sessionFromModel({layer, {head}, ids, precision}). `layers` stops the pass after that many
/// layers (-1: all of them). When `progress` cancels, the layers done so far are returned. Throws qkv::Error
/// as residualBeforeLayer does, and before anything is computed when the layers × heads × n² weights would
/// take more than `memoryLimit` bytes.
std::vector<std::vector<Matrix>> attentionOfEveryLayer(const Model& model,
                                                       const std::vector<std::int64_t>& ids,
                                                       Precision precision,
                                                       const LayerProgress& progress = {}, Index layers = -1,
                                                       std::uint64_t memoryLimit = defaultMemoryLimit());

/// The session for the request: X is the normalized residual stream entering the layer's attention, the
/// heads carry that layer's W_Q, W_K, W_V and biases (a grouped key/value head copied into each query head
/// that reads it), W_O holds the rows of the chosen heads (so with every head chosen, output is the layer's
/// attention output) and b_O, causal mask, √d_k, softmax, and RoPE for the LLaMA family. Throws qkv::Error
/// naming the problem: a layer or head out of range, an id outside the vocabulary, no ids, more tokens
/// than the model's positions.
Session sessionFromModel(const Model& model, const ModelHeadRequest& request);

} // namespace qkv
