// SPDX-License-Identifier: GPL-3.0-or-later
#include "Model.h"

#include "Error.h"
#include "ModelTensors.h"

#include <filesystem>

namespace qkv {

namespace {

using models::hasTensor;
using models::layerPrefix;

/// Checks that the checkpoint has `name` with exactly `shape`, naming both when it does not.
void requireTensor(const Model& model, const std::string& name, const std::vector<std::uint64_t>& shape)
{
    const std::string full = model.tensorName(name);
    if (!model.checkpoint().has(full))
        throw Error(model.folder() + ": the checkpoint has no tensor \"" + full + "\"");
    const std::vector<std::uint64_t>& found = model.checkpoint().info(full).shape;
    if (found != shape) {
        const auto text = [](const std::vector<std::uint64_t>& s) {
            std::string out = "[";
            for (std::size_t i = 0; i < s.size(); ++i)
                out += (i ? ", " : "") + std::to_string(s[i]);
            return out + "]";
        };
        throw Error(model.folder() + ": tensor \"" + full + "\" has shape " + text(found) +
                    ", the config says " + text(shape));
    }
}

} // namespace

Model Model::open(const std::string& folder)
{
    Model model;
    model.m_folder = folder;
    model.m_config = loadModelConfig(folder);
    model.m_checkpoint = std::make_shared<Checkpoint>(Checkpoint::open(folder));
    // The checkpoint, not tie_word_embeddings, says where the unembedding is (ModelRun reads lm_head when
    // there is one).
    model.m_config.tiedEmbeddings =
        model.m_config.family == ModelFamily::Gpt2 || !model.m_checkpoint->has("lm_head.weight");
    const ModelConfig& c = model.m_config;
    const auto d = std::uint64_t(c.hiddenSize);
    if (c.family == ModelFamily::Gpt2) {
        model.m_prefix = model.m_checkpoint->has("transformer.wte.weight") ? "transformer." : "";
        requireTensor(model, "wte.weight", {std::uint64_t(c.vocabSize), d});
        requireTensor(model, "wpe.weight", {std::uint64_t(c.maxPositions), d});
    } else {
        requireTensor(model, "model.embed_tokens.weight", {std::uint64_t(c.vocabSize), d});
    }
    const auto q = std::uint64_t(c.heads * c.headDim), kv = std::uint64_t(c.kvHeads * c.headDim),
               inner = std::uint64_t(c.intermediateSize);
    for (Index layer = 0; layer < c.layers; ++layer) {
        const std::string p = layerPrefix(model, layer);
        if (c.family == ModelFamily::Gpt2) {
            for (const char* norm : {"ln_1", "ln_2"}) {
                requireTensor(model, p + norm + ".weight", {d});
                requireTensor(model, p + norm + ".bias", {d});
            }
            requireTensor(model, p + "attn.c_attn.weight", {d, 3 * d});
            requireTensor(model, p + "attn.c_proj.weight", {d, d});
            requireTensor(model, p + "mlp.c_fc.weight", {d, inner});
            requireTensor(model, p + "mlp.c_fc.bias", {inner});
            requireTensor(model, p + "mlp.c_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.c_proj.bias", {d});
            if (hasTensor(model, p + "attn.c_attn.bias"))
                requireTensor(model, p + "attn.c_attn.bias", {3 * d});
            if (hasTensor(model, p + "attn.c_proj.bias"))
                requireTensor(model, p + "attn.c_proj.bias", {d});
        } else {
            requireTensor(model, p + "input_layernorm.weight", {d});
            requireTensor(model, p + "post_attention_layernorm.weight", {d});
            requireTensor(model, p + "self_attn.q_proj.weight", {q, d});
            requireTensor(model, p + "self_attn.k_proj.weight", {kv, d});
            requireTensor(model, p + "self_attn.v_proj.weight", {kv, d});
            requireTensor(model, p + "self_attn.o_proj.weight", {d, q});
            for (const auto& [name, size] : {std::pair<const char*, std::uint64_t>{"q_proj", q},
                                             {"k_proj", kv},
                                             {"v_proj", kv},
                                             {"o_proj", d}})
                if (hasTensor(model, p + "self_attn." + name + ".bias"))
                    requireTensor(model, p + "self_attn." + name + ".bias", {size});
            requireTensor(model, p + "mlp.gate_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.up_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.down_proj.weight", {d, inner});
        }
    }
    try {
        model.m_tokenizer.emplace(BpeTokenizer::fromDirectory(folder));
    } catch (const Error& e) {
        model.m_tokenizerProblem = e.what(); // the model still opens: ids can be given directly
    }
    return model;
}

std::string modelName(const Model& model)
{
    const std::string name = std::filesystem::path(model.folder()).filename().string();
    return model.config().modelType + " " + (name.empty() ? model.folder() : name);
}

std::string modelInputTitle(const Model& model, const std::string& text, std::size_t tokens)
{
    return modelName(model) + (text.empty()
                                   ? ", " + std::to_string(tokens) + (tokens == 1 ? " token" : " tokens")
                                   : ": \"" + text + "\"");
}

std::vector<std::string> tokenLabels(const Model& model, const std::vector<std::int64_t>& ids)
{
    std::vector<std::string> labels;
    for (std::int64_t id : ids) {
        const BpeTokenizer* tokenizer = model.tokenizer();
        if (!tokenizer || tokenizer->tokenString(id).empty()) {
            labels.push_back("#" + std::to_string(id));
            continue;
        }
        std::string bytes = tokenizer->tokenBytes(id);
        if (!isValidUtf8(bytes)) { // part of a character: its vocabulary entry says which bytes
            labels.push_back(tokenizer->tokenString(id));
            continue;
        }
        if (!bytes.empty() && bytes[0] == ' ')
            bytes.replace(0, 1, "\u2423");
        labels.push_back(bytes);
    }
    return labels;
}

} // namespace qkv
