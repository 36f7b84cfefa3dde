// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A Hugging Face model folder (config.json, safetensors weights, tokenizer files), opened and checked, and
/// the names titles and token labels give it.

#include "BpeTokenizer.h"
#include "ModelConfig.h"
#include "Safetensors.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

/// What is read from a model's weights once and kept while it is open, shared by its copies: the one
/// transformer's copy of the weights in each precision (training::sharedWeights, TrainingModel.h).
struct ModelWeightCache {
    std::mutex mutex;
    std::shared_ptr<const void> float32, float64;
};

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
    ModelWeightCache& weightCache() const { return *m_weightCache; }

private:
    ModelConfig m_config;
    std::shared_ptr<Checkpoint> m_checkpoint;
    std::optional<BpeTokenizer> m_tokenizer;
    std::string m_tokenizerProblem;
    std::string m_folder;
    std::string m_prefix;
    std::shared_ptr<ModelWeightCache> m_weightCache = std::make_shared<ModelWeightCache>();
};

/// The model as titles name it: its model_type and its folder's name ("gpt2 gpt2-medium").
std::string modelName(const Model& model);

/// The model and its input as the model view titles them: `gpt2 NAME: "text"`, or `gpt2 NAME, 5 tokens`
/// when the ids were given directly (`text` empty).
std::string modelInputTitle(const Model& model, const std::string& text, std::size_t tokens);

/// The tokens' labels: the bytes each token stands for, a leading space shown as "␣" (U+2423); a token that
/// is part of a UTF-8 character shows its vocabulary entry instead; "#id" without a tokenizer.
std::vector<std::string> tokenLabels(const Model& model, const std::vector<std::int64_t>& ids);

} // namespace qkv
