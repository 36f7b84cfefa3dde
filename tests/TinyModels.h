// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Tiny GPT-2 and LLaMA-family model folders (config.json and model.safetensors with random weights), written
// by tests of the model layer and of `qkvlab from-model` and `qkvlab predict`.

#include "Safetensors.h"

#include <QString>

#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace qkv::test {

struct Tiny {
    bool llama = false;
    int d = 16, heads = 2, kvHeads = 2, layers = 3, inner = 48, vocab = 40, positions = 24;
    double epsilon = 1e-5, theta = 10000.0;
    bool qkvBias = true;
    int slidingWindow = 0;     ///< LLaMA-shaped only: > 0 writes a Mistral config with this sliding_window
    std::string ropeScaling;   ///< LLaMA-shaped only: written as config.json's rope_scaling when not empty
    std::string dtype = "F32"; ///< F64, F32, F16 or BF16: every value rounded to it when written
    std::string llamaType = "qwen2"; ///< LLaMA-shaped without a sliding window: "qwen2" or "llama"
    bool untiedHead = false;         ///< LLaMA-shaped only: writes lm_head.weight (else W_U is embed_tokens)
    int repeatedRow = -1;            ///< ≥ 0: W_U's row repeatedRow + 1 is written equal to row repeatedRow
    std::vector<std::pair<std::string, double>> scaledTensors; ///< tensors written with every value × factor
    std::string namePrefix; ///< GPT-2-shaped, read only: "transformer." as GPT2LMHeadModel saves its tensors
    bool withFinalNorm = true; ///< false: no ln_f / model.norm (a folder the prediction refuses)
    int headDim() const { return d / heads; }
};

/// The families the model tests run on: "gpt2"; "llama": 4 query heads over `kvHeads` key/value heads, no
/// biases, lm_head; "qwen2": q/k/v biases, tied embeddings, 4 query heads over `kvHeads`.
inline Tiny tinyOfFamily(const QString& family, const std::string& dtype, int kvHeads)
{
    Tiny tiny;
    tiny.dtype = dtype;
    if (family != QLatin1String("gpt2")) {
        tiny.llama = true;
        tiny.heads = 4;
        tiny.kvHeads = kvHeads;
        tiny.llamaType = family.toStdString();
        tiny.qkvBias = family == QLatin1String("qwen2");
        tiny.untiedHead = family == QLatin1String("llama");
    }
    return tiny;
}

/// Writes config.json and model.safetensors for `tiny` with random weights into `folder`.
inline void writeModel(const Tiny& tiny, const QString& folder, unsigned seed)
{
    std::mt19937 random(seed);
    std::normal_distribution<double> normal(0.0, 0.35);
    std::vector<SafetensorsTensor> tensors;
    const auto add = [&](const std::string& name, std::vector<std::uint64_t> shape, double centre = 0.0) {
        std::uint64_t count = 1;
        for (std::uint64_t s : shape)
            count *= s;
        SafetensorsTensor t{name, tiny.dtype, shape, std::vector<double>(count)};
        for (double& v : t.values)
            v = centre + normal(random);
        tensors.push_back(std::move(t));
    };
    const auto d = std::uint64_t(tiny.d), inner = std::uint64_t(tiny.inner);
    const auto q = std::uint64_t(tiny.heads * tiny.headDim()),
               kv = std::uint64_t(tiny.kvHeads * tiny.headDim());
    if (!tiny.llama) {
        add("wte.weight", {std::uint64_t(tiny.vocab), d});
        add("wpe.weight", {std::uint64_t(tiny.positions), d});
        for (int l = 0; l < tiny.layers; ++l) {
            const std::string p = "h." + std::to_string(l) + ".";
            add(p + "ln_1.weight", {d}, 1.0);
            add(p + "ln_1.bias", {d});
            add(p + "attn.c_attn.weight", {d, 3 * d});
            add(p + "attn.c_attn.bias", {3 * d});
            add(p + "attn.c_proj.weight", {d, d});
            add(p + "attn.c_proj.bias", {d});
            add(p + "ln_2.weight", {d}, 1.0);
            add(p + "ln_2.bias", {d});
            add(p + "mlp.c_fc.weight", {d, inner});
            add(p + "mlp.c_fc.bias", {inner});
            add(p + "mlp.c_proj.weight", {inner, d});
            add(p + "mlp.c_proj.bias", {d});
        }
        if (tiny.withFinalNorm) {
            add("ln_f.weight", {d}, 1.0);
            add("ln_f.bias", {d});
        }
    } else {
        add("model.embed_tokens.weight", {std::uint64_t(tiny.vocab), d});
        for (int l = 0; l < tiny.layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            add(p + "input_layernorm.weight", {d}, 1.0);
            add(p + "self_attn.q_proj.weight", {q, d});
            add(p + "self_attn.k_proj.weight", {kv, d});
            add(p + "self_attn.v_proj.weight", {kv, d});
            if (tiny.qkvBias) {
                add(p + "self_attn.q_proj.bias", {q});
                add(p + "self_attn.k_proj.bias", {kv});
                add(p + "self_attn.v_proj.bias", {kv});
            }
            add(p + "self_attn.o_proj.weight", {d, q});
            add(p + "post_attention_layernorm.weight", {d}, 1.0);
            add(p + "mlp.gate_proj.weight", {inner, d});
            add(p + "mlp.up_proj.weight", {inner, d});
            add(p + "mlp.down_proj.weight", {d, inner});
        }
        if (tiny.withFinalNorm)
            add("model.norm.weight", {d}, 1.0);
        if (tiny.untiedHead)
            add("lm_head.weight", {std::uint64_t(tiny.vocab), d});
    }
    if (tiny.repeatedRow >= 0) { // two tokens whose logits are equal at every position
        const std::string unembedding = !tiny.llama       ? "wte.weight"
                                        : tiny.untiedHead ? "lm_head.weight"
                                                          : "model.embed_tokens.weight";
        for (SafetensorsTensor& t : tensors)
            if (t.name == unembedding)
                for (std::size_t k = 0; k < d; ++k)
                    t.values[std::size_t(tiny.repeatedRow + 1) * d + k] =
                        t.values[std::size_t(tiny.repeatedRow) * d + k];
    }
    for (const auto& [name, factor] : tiny.scaledTensors)
        for (SafetensorsTensor& t : tensors)
            if (t.name == name)
                for (double& v : t.values)
                    v *= factor;
    writeSafetensors((folder + QStringLiteral("/model.safetensors")).toStdString(), tensors);
    std::string config;
    if (!tiny.llama)
        config = "{\"model_type\": \"gpt2\", \"n_embd\": " + std::to_string(tiny.d) +
                 ", \"n_head\": " + std::to_string(tiny.heads) +
                 ", \"n_layer\": " + std::to_string(tiny.layers) +
                 ", \"n_inner\": " + std::to_string(tiny.inner) +
                 ", \"n_positions\": " + std::to_string(tiny.positions) +
                 ", \"vocab_size\": " + std::to_string(tiny.vocab) +
                 ", \"layer_norm_epsilon\": 1e-05, \"activation_function\": \"gelu_new\"}";
    else
        config =
            "{\"model_type\": \"" + (tiny.slidingWindow > 0 ? std::string("mistral") : tiny.llamaType) +
            "\"" +
            (tiny.slidingWindow > 0 ? ", \"sliding_window\": " + std::to_string(tiny.slidingWindow) : "") +
            ", \"hidden_size\": " + std::to_string(tiny.d) +
            ", \"num_attention_heads\": " + std::to_string(tiny.heads) +
            ", \"num_key_value_heads\": " + std::to_string(tiny.kvHeads) +
            ", \"num_hidden_layers\": " + std::to_string(tiny.layers) +
            ", \"intermediate_size\": " + std::to_string(tiny.inner) +
            ", \"vocab_size\": " + std::to_string(tiny.vocab) +
            ", \"max_position_embeddings\": " + std::to_string(tiny.positions) +
            (tiny.ropeScaling.empty() ? "" : ", \"rope_scaling\": " + tiny.ropeScaling) +
            ", \"tie_word_embeddings\": " + (tiny.untiedHead ? "false" : "true") +
            ", \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"hidden_act\": \"silu\"}";
    std::ofstream(folder.toStdString() + "/config.json") << config;
}

} // namespace qkv::test
