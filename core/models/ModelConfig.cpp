// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelConfig.h"

#include "Error.h"
#include "FileReading.h"
#include "JsonText.h"
#include "QuotedExcerpt.h"

#include <cmath>
#include <optional>

#include <sys/stat.h>

namespace qkv {

using json::Json;

namespace {

/// config.json is a few KB; anything near this is not one.
constexpr std::uint64_t maxConfigBytes = 16ull << 20;
/// No size in a real model comes near this; it keeps products of sizes far from overflowing.
constexpr std::uint64_t largestSize = 1ull << 31;

/// Reads the keys of one config object, refusing with messages that start with the file and name the key.
class ConfigReader {
public:
    ConfigReader(const Json& root, std::string fileName) : root_(root), fileName_(std::move(fileName)) {}

    [[noreturn]] void refuse(const std::string& problem) const { throw Error(fileName_ + ": " + problem); }

    /// The value of `key`, or none when it is absent or null.
    const Json* find(const char* key) const
    {
        const auto it = root_.find(key);
        return it == root_.end() || it->is_null() ? nullptr : &*it;
    }

    Index size(const char* key) const
    {
        const Json* value = find(key);
        if (value == nullptr)
            refuse(std::string(key) + ": missing (a positive whole number)");
        return sizeValue(key, *value);
    }
    Index size(const char* key, Index fallback) const
    {
        const Json* value = find(key);
        return value == nullptr ? fallback : sizeValue(key, *value);
    }

    double positive(const char* key) const
    {
        const Json* value = find(key);
        if (value == nullptr)
            refuse(std::string(key) + ": missing (a positive number)");
        return positiveValue(key, *value);
    }
    double positive(const char* key, double fallback) const
    {
        const Json* value = find(key);
        return value == nullptr ? fallback : positiveValue(key, *value);
    }

    bool flag(const char* key, bool fallback) const
    {
        const Json* value = find(key);
        if (value == nullptr)
            return fallback;
        if (!value->is_boolean())
            refuse(std::string(key) + ": expected true or false, found " + quotedExcerpt(value->dump()));
        return value->get<bool>();
    }

    std::string text(const char* key, const char* fallback) const
    {
        const Json* value = find(key);
        if (value == nullptr)
            return fallback;
        if (!value->is_string())
            refuse(std::string(key) + ": expected a string, found " + quotedExcerpt(value->dump()));
        return value->get<std::string>();
    }

    Index sizeValue(const char* key, const Json& value) const
    {
        if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0 ||
            value.get<std::uint64_t>() > largestSize)
            refuse(std::string(key) + ": expected a positive whole number (at most " +
                   std::to_string(largestSize) + "), found " + quotedExcerpt(value.dump()));
        return static_cast<Index>(value.get<std::uint64_t>());
    }
    double positiveValue(const char* key, const Json& value) const
    {
        if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0.0)
            refuse(std::string(key) + ": expected a positive number, found " + quotedExcerpt(value.dump()));
        return value.get<double>();
    }

private:
    const Json& root_;
    std::string fileName_;
};

void requireDivisible(const ConfigReader& config, Index whole, const char* wholeKey, Index part,
                      const char* partKey)
{
    if (whole % part != 0)
        config.refuse(std::string(wholeKey) + " " + std::to_string(whole) + " is not divisible by " +
                      partKey + " " + std::to_string(part));
}

ModelConfig readGpt2(const ConfigReader& config)
{
    ModelConfig c;
    c.family = ModelFamily::Gpt2;
    c.ropeTheta = 0.0;
    c.hiddenSize = config.size("n_embd");
    c.heads = config.size("n_head");
    c.kvHeads = c.heads;
    c.layers = config.size("n_layer");
    c.maxPositions = config.size("n_positions");
    c.vocabSize = config.size("vocab_size");
    c.normEpsilon = config.positive("layer_norm_epsilon");
    requireDivisible(config, c.hiddenSize, "n_embd", c.heads, "n_head");
    c.headDim = c.hiddenSize / c.heads;
    c.intermediateSize = config.size("n_inner", 4 * c.hiddenSize);
    c.qkvBias = c.outputBias = c.mlpBias = true;
    c.activation = config.text("activation_function", "gelu_new");
    if (c.activation != "gelu_new" && c.activation != "gelu_pytorch_tanh")
        config.refuse("activation_function: " + quotedExcerpt(c.activation) +
                      " is not supported (gelu_new or gelu_pytorch_tanh: GELU in its tanh form)");
    if (!config.flag("scale_attn_weights", true))
        config.refuse("scale_attn_weights: false (attention without 1/√d_k) is not supported");
    if (config.flag("scale_attn_by_inverse_layer_idx", false))
        config.refuse(
            "scale_attn_by_inverse_layer_idx: true (scores divided by the layer number) is not supported");
    return c;
}

/// rope_scaling as transformers reads it: "default" (none), "linear" (factor) and "llama3" (factor,
/// low_freq_factor, high_freq_factor, original_max_position_embeddings); the type under "rope_type" or the
/// older "type". Others (dynamic, yarn, longrope) change more than the frequencies and are refused.
RopeScaling readRopeScaling(const ConfigReader& config, const Json& scaling)
{
    const Json type =
        scaling.is_object() ? scaling.value("rope_type", scaling.value("type", Json())) : Json();
    const std::string name = type.is_string() ? type.get<std::string>() : std::string();
    RopeScaling result;
    if (name == "default")
        return result;
    if (name != "linear" && name != "llama3")
        config.refuse("rope_scaling: " + quotedExcerpt(scaling.dump(), 60) +
                      " is not supported (RoPE scaling: default, linear and llama3 are)");
    const ConfigReader inner(scaling, "");
    const auto number = [&](const char* key) {
        const std::string path = std::string("rope_scaling.") + key;
        const Json* value = inner.find(key);
        if (value == nullptr)
            config.refuse(path + ": missing (a positive number)");
        return config.positiveValue(path.c_str(), *value);
    };
    result.type = name == "linear" ? RopeScalingType::Linear : RopeScalingType::Llama3;
    result.factor = number("factor");
    if (result.type == RopeScalingType::Llama3) {
        result.lowFrequencyFactor = number("low_freq_factor");
        result.highFrequencyFactor = number("high_freq_factor");
        result.originalMaxPositions = number("original_max_position_embeddings");
        if (!(result.highFrequencyFactor > result.lowFrequencyFactor))
            config.refuse("rope_scaling.high_freq_factor: expected more than low_freq_factor");
    }
    return result;
}

ModelConfig readLlama(const ConfigReader& config, const std::string& modelType)
{
    ModelConfig c;
    c.family = ModelFamily::Llama;
    c.qkvBias = c.outputBias = c.mlpBias = false;
    c.tiedEmbeddings = config.flag("tie_word_embeddings", true);
    c.hiddenSize = config.size("hidden_size");
    c.heads = config.size("num_attention_heads");
    c.kvHeads = config.size("num_key_value_heads", c.heads);
    c.layers = config.size("num_hidden_layers");
    c.intermediateSize = config.size("intermediate_size");
    c.vocabSize = config.size("vocab_size");
    c.maxPositions = config.size("max_position_embeddings");
    c.normEpsilon = config.positive("rms_norm_eps");
    c.ropeTheta = config.positive("rope_theta", 10000.0);
    if (config.find("head_dim") != nullptr) {
        c.headDim = config.size("head_dim");
    } else {
        requireDivisible(config, c.hiddenSize, "hidden_size", c.heads, "num_attention_heads");
        c.headDim = c.hiddenSize / c.heads;
    }
    requireDivisible(config, c.heads, "num_attention_heads", c.kvHeads, "num_key_value_heads");
    // Qwen2 always has q, k and v biases (its config has no key for them); LLaMA's attention_bias puts
    // biases on all four projections; Mistral has none.
    if (modelType == "qwen2") {
        c.qkvBias = true;
    } else if (modelType == "llama") {
        c.qkvBias = c.outputBias = config.flag("attention_bias", false);
        c.mlpBias = config.flag("mlp_bias", false);
    }
    c.activation = config.text("hidden_act", "silu");
    if (c.activation != "silu")
        config.refuse("hidden_act: " + quotedExcerpt(c.activation) + " is not supported (silu)");
    if (const Json* scaling = config.find("rope_scaling"))
        c.ropeScaling = readRopeScaling(config, *scaling);
    if (modelType == "mistral")
        c.slidingWindow = config.size("sliding_window", 0);
    if (modelType == "qwen2" && config.flag("use_sliding_window", false))
        config.refuse("use_sliding_window: true (sliding-window attention) is not supported");
    return c;
}

} // namespace

ModelConfig parseModelConfig(const std::string& jsonText, const std::string& fileName)
{
    Json root;
    try {
        root = json::parseJsonStrictly(jsonText, json::JsonLimits{});
    } catch (const Error& e) {
        throw Error(fileName + ": " + e.what());
    }
    const ConfigReader config(root, fileName);
    if (!root.is_object())
        config.refuse("expected a JSON object (a Hugging Face config.json)");
    const Json* type = config.find("model_type");
    if (type == nullptr || !type->is_string())
        config.refuse("model_type: missing (\"gpt2\", \"llama\", \"qwen2\" or \"mistral\")");
    const std::string modelType = type->get<std::string>();
    ModelConfig c;
    if (modelType == "gpt2")
        c = readGpt2(config);
    else if (modelType == "llama" || modelType == "qwen2" || modelType == "mistral")
        c = readLlama(config, modelType);
    else
        config.refuse("model_type: " + quotedExcerpt(modelType, 100) +
                      " is not supported (gpt2, llama, qwen2 or mistral)");
    c.modelType = modelType;
    // A model QKV Lab trained with sparse attention says so; its heads then normalize as they were trained.
    const std::string normalizer = config.text("qkvlab_attention_normalizer", "softmax");
    const auto normalizerType = normalizerFromString(normalizer);
    if (!normalizerType ||
        (*normalizerType != NormalizerType::Softmax && *normalizerType != NormalizerType::Sparsemax &&
         *normalizerType != NormalizerType::Entmax))
        config.refuse("qkvlab_attention_normalizer: " + quotedExcerpt(normalizer, 100) +
                      " is not supported (softmax, sparsemax or entmax)");
    c.attentionNormalizer.type = *normalizerType;
    if (*normalizerType == NormalizerType::Entmax) {
        c.attentionNormalizer.alpha = config.positive("qkvlab_entmax_alpha", 1.5);
        if (c.attentionNormalizer.alpha < 1.0 || c.attentionNormalizer.alpha > 8.0)
            config.refuse("qkvlab_entmax_alpha: expected a number from 1 to 8");
    }
    return c;
}

ModelConfig loadModelConfig(const std::string& path)
{
    struct stat info {};
    const bool isFolder = ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
    const std::string file = isFolder ? (path.back() == '/' ? path : path + "/") + "config.json" : path;
    return parseModelConfig(readRegularFile(file, maxConfigBytes, "a model config"), file);
}

} // namespace qkv
