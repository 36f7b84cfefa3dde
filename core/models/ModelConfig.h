// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A Hugging Face model's `config.json`: the architecture numbers a checkpoint's tensors are read against,
/// for the families QKV Lab supports (GPT-2; LLaMA, Qwen2 and Mistral).

#include "EigenTypes.h"
#include "Session.h"

#include <string>

namespace qkv {

/// The architecture family a `model_type` belongs to.
enum class ModelFamily {
    Gpt2,  ///< gpt2: learned positions, LayerNorm, fused c_attn, GELU (tanh form)
    Llama, ///< llama, qwen2, mistral: RoPE, RMSNorm, q/k/v/o projections, grouped-query attention, SiLU
};

/// The one description of a decoder-only transformer's architecture: what a Hugging Face config.json says
/// (parseModelConfig), or a new model the trainer makes (training::Architecture is this struct). The
/// defaults are a small GPT-2-shaped model, the trainer's starting point; a parsed config sets every field.
struct ModelConfig {
    std::string modelType = "gpt2"; ///< "gpt2", "llama", "qwen2" or "mistral"
    ModelFamily family = ModelFamily::Gpt2;
    Index hiddenSize = 32; ///< d_model: n_embd, hidden_size
    Index layers = 2;      ///< n_layer, num_hidden_layers
    Index heads = 2;       ///< query heads: n_head, num_attention_heads
    Index kvHeads = 2;     ///< key/value heads: num_key_value_heads (= heads without grouping; GPT-2: heads)
    Index headDim = 16;    ///< head_dim, or hiddenSize / heads
    Index intermediateSize =
        0; ///< the MLP's width: n_inner (4 × n_embd when null), intermediate_size; 0: none
    Index vocabSize = 32;
    Index maxPositions = 64;    ///< n_positions, max_position_embeddings
    double normEpsilon = 1e-5;  ///< layer_norm_epsilon (LayerNorm), rms_norm_eps (RMSNorm)
    double ropeTheta = 10000.0; ///< rope_theta (10000 when absent); 0 for GPT-2, which has no RoPE
    RopeScaling ropeScaling{};  ///< rope_scaling: none, linear or llama3 (Llama 3.1 and later)
    Index slidingWindow = 0;    ///< Mistral's sliding_window, keys a query may see (0: no window)
    bool qkvBias = true;        ///< q, k, v projections have biases (GPT-2, Qwen2; LLaMA's attention_bias)
    bool outputBias = true;     ///< the output projection has a bias (GPT-2; LLaMA's attention_bias)
    bool mlpBias = true;        ///< the MLP's projections have biases (GPT-2; LLaMA's mlp_bias)
    /// The unembedding is the embedding (GPT-2; a LLaMA-family checkpoint without lm_head.weight).
    bool tiedEmbeddings = true;
    std::string activation; ///< "gelu_new" / "gelu_pytorch_tanh" (GPT-2), "silu" (LLaMA family)
    /// Softmax, or what qkvlab_attention_normalizer names: a model QKV Lab trained with sparse attention.
    NormalizerSpec attentionNormalizer{NormalizerType::Softmax, 1.5};

    /// Query heads per key/value head.
    Index groupSize() const { return kvHeads > 0 ? heads / kvHeads : 0; }
    /// Each layer has an MLP (a model QKV Lab trained attention-only has none).
    bool hasMlp() const { return intermediateSize > 0; }
    /// LayerNorm (mean removed, a bias) rather than RMSNorm.
    bool layerNorm() const { return family == ModelFamily::Gpt2; }
    /// Learned absolute positions added to the embeddings rather than RoPE on q and k.
    bool learnedPositions() const { return family == ModelFamily::Gpt2; }
    /// The MLP is down(silu(gate(x)) ⊙ up(x)) rather than c_proj(gelu_tanh(c_fc(x))).
    bool gatedMlp() const { return family == ModelFamily::Llama; }
};

/// Parses config.json text. Throws qkv::Error whose message starts with `fileName` and names the key: not a
/// JSON object, a `model_type` that is missing or not supported (named), a required key that is missing or
/// not a positive whole number (not a positive finite number for epsilons and rope_theta), heads that do not
/// divide the hidden size (without head_dim) or key/value heads that do not divide the heads, and options
/// that change the computation in ways not supported (another activation, RoPE scaling, scaled or
/// sliding-window attention).
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& fileName);

/// Reads `path` (a config.json, or a folder holding one) and parses it as parseModelConfig does.
ModelConfig loadModelConfig(const std::string& path);

} // namespace qkv
