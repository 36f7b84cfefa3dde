// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingModel.h"

#include "Error.h"
#include "FileReading.h"
#include "Model.h"
#include "ResourceLimits.h"
#include "Safetensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <type_traits>

namespace qkv::training {

namespace {

std::string layerName(const Architecture& a, Index layer)
{
    return a.family == ModelFamily::Gpt2 ? "h." + std::to_string(layer) + "."
                                         : "model.layers." + std::to_string(layer) + ".";
}

bool isGpt2(const Architecture& a)
{
    return a.family == ModelFamily::Gpt2;
}

} // namespace

Layout layoutOf(const Architecture& a)
{
    Layout layout;
    const auto add = [&layout](const std::string& name, Index rows, Index cols) {
        layout.tensors.push_back({name, rows, cols});
        return int(layout.tensors.size()) - 1;
    };
    const Index d = a.hiddenSize, q = a.heads * a.headDim, kv = a.kvHeads * a.headDim;
    const bool gpt2 = isGpt2(a);
    layout.embedding = add(gpt2 ? "wte.weight" : "model.embed_tokens.weight", a.vocabSize, d);
    if (gpt2)
        layout.positions = add("wpe.weight", a.maxPositions, d);
    for (Index l = 0; l < a.layers; ++l) {
        const std::string p = layerName(a, l);
        LayerSlots s;
        s.norm1 = add(p + (gpt2 ? "ln_1.weight" : "input_layernorm.weight"), 1, d);
        if (gpt2)
            s.norm1Bias = add(p + "ln_1.bias", 1, d);
        const std::string attention = p + (gpt2 ? "attn." : "self_attn.");
        s.q = add(attention + "q_proj.weight", d, q);
        s.k = add(attention + "k_proj.weight", d, kv);
        s.v = add(attention + "v_proj.weight", d, kv);
        if (a.qkvBias) {
            s.qBias = add(attention + "q_proj.bias", 1, q);
            s.kBias = add(attention + "k_proj.bias", 1, kv);
            s.vBias = add(attention + "v_proj.bias", 1, kv);
        }
        s.o = add(attention + (gpt2 ? "c_proj.weight" : "o_proj.weight"), q, d);
        if (a.outputBias)
            s.oBias = add(attention + (gpt2 ? "c_proj.bias" : "o_proj.bias"), 1, d);
        if (a.hasMlp()) {
            s.norm2 = add(p + (gpt2 ? "ln_2.weight" : "post_attention_layernorm.weight"), 1, d);
            if (gpt2)
                s.norm2Bias = add(p + "ln_2.bias", 1, d);
            s.up = add(p + (gpt2 ? "mlp.c_fc.weight" : "mlp.up_proj.weight"), d, a.intermediateSize);
            if (a.mlpBias)
                s.upBias = add(p + (gpt2 ? "mlp.c_fc.bias" : "mlp.up_proj.bias"), 1, a.intermediateSize);
            if (!gpt2) {
                s.gate = add(p + "mlp.gate_proj.weight", d, a.intermediateSize);
                if (a.mlpBias)
                    s.gateBias = add(p + "mlp.gate_proj.bias", 1, a.intermediateSize);
            }
            s.down = add(p + (gpt2 ? "mlp.c_proj.weight" : "mlp.down_proj.weight"), a.intermediateSize, d);
            if (a.mlpBias)
                s.downBias = add(p + (gpt2 ? "mlp.c_proj.bias" : "mlp.down_proj.bias"), 1, d);
        }
        layout.layers.push_back(s);
    }
    layout.finalNorm = add(gpt2 ? "ln_f.weight" : "model.norm.weight", 1, d);
    if (gpt2)
        layout.finalNormBias = add("ln_f.bias", 1, d);
    if (!a.tiedEmbeddings)
        layout.unembedding = add("lm_head.weight", d, a.vocabSize);
    return layout;
}

template <typename Scalar> Tensors<Scalar> zeroTensors(const Layout& layout)
{
    Tensors<Scalar> tensors;
    tensors.reserve(layout.tensors.size());
    for (const TensorShape& t : layout.tensors)
        tensors.push_back(MatrixOf<Scalar>::Zero(t.rows, t.cols));
    return tensors;
}

void checkArchitecture(const Architecture& a)
{
    const auto refuse = [](const std::string& message) { throw Error(message); };
    if (a.layers < 1 || a.layers > 64)
        refuse("--layers " + std::to_string(a.layers) + ": expected 1 to 64 layers");
    if (a.heads < 1)
        refuse("--heads " + std::to_string(a.heads) + ": expected at least 1 head");
    if (a.hiddenSize < 2 || a.hiddenSize > 8192)
        refuse("--d-model " + std::to_string(a.hiddenSize) + ": expected 2 to 8192");
    if (a.heads > a.hiddenSize)
        refuse("--heads " + std::to_string(a.heads) + ": more heads than --d-model " +
               std::to_string(a.hiddenSize) + " allows (each head needs at least one dimension)");
    if (a.headDim < 1)
        refuse("--heads " + std::to_string(a.heads) + " does not divide --d-model " +
               std::to_string(a.hiddenSize));
    if (a.kvHeads < 1 || a.heads % a.kvHeads != 0)
        refuse("--kv-heads " + std::to_string(a.kvHeads) + ": must divide --heads " +
               std::to_string(a.heads));
    if (a.family == ModelFamily::Llama && a.headDim % 2 != 0)
        refuse("--d-model " + std::to_string(a.hiddenSize) + " / --heads " + std::to_string(a.heads) +
               " gives an odd head size, which RoPE cannot pair");
    if (a.vocabSize < 2 || a.vocabSize > 1'000'000)
        refuse("--vocab " + std::to_string(a.vocabSize) + ": expected 2 to 1000000 tokens");
    if (a.maxPositions < 2)
        refuse("the model needs at least 2 positions");
    if (a.intermediateSize < 0)
        refuse("--mlp-width " + std::to_string(a.intermediateSize) + ": expected a positive width");
    if (a.attentionNormalizer.type != NormalizerType::Softmax &&
        a.attentionNormalizer.type != NormalizerType::Sparsemax &&
        a.attentionNormalizer.type != NormalizerType::Entmax)
        refuse("--normalizer: expected softmax, sparsemax or entmax");
    if (a.attentionNormalizer.type == NormalizerType::Entmax &&
        !(a.attentionNormalizer.alpha >= 1.0 && a.attentionNormalizer.alpha <= 8.0))
        refuse("--entmax-alpha: expected a number from 1 to 8");
}

template <typename Scalar>
Tensors<Scalar> initialParameters(const Architecture& a, const Layout& layout, std::uint64_t seed)
{
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    Tensors<Scalar> tensors = zeroTensors<Scalar>(layout);
    const auto fill = [&](int slot, double deviation) {
        if (slot < 0)
            return;
        for (Index i = 0; i < tensors[slot].size(); ++i)
            tensors[slot].data()[i] = Scalar(deviation * normal(random));
    };
    const auto ones = [&](int slot) {
        if (slot >= 0)
            tensors[slot].setOnes();
    };
    const double deviation = 0.02, projection = 0.02 / std::sqrt(2.0 * double(a.layers));
    fill(layout.embedding, deviation);
    fill(layout.positions, 0.01);
    for (const LayerSlots& s : layout.layers) {
        ones(s.norm1);
        ones(s.norm2);
        fill(s.q, deviation);
        fill(s.k, deviation);
        fill(s.v, deviation);
        fill(s.o, projection);
        fill(s.up, deviation);
        fill(s.gate, deviation);
        fill(s.down, projection);
    }
    ones(layout.finalNorm);
    fill(layout.unembedding, deviation);
    return tensors;
}

Architecture architectureOf(const std::string& folder)
{
    return architectureOf(Model::open(folder));
}

Architecture architectureOf(const Model& model)
{
    const ModelConfig& c = model.config();
    const std::string folder = model.folder();
    Architecture a = c;
    a.ropeTheta = c.ropeTheta > 0 ? c.ropeTheta : 10000.0;
    const std::string configText =
        readRegularFile((std::filesystem::path(folder) / "config.json").string(), 1 << 20, "config.json");
    const nlohmann::json config = nlohmann::json::parse(configText, nullptr, false);
    if (config.is_object() && config.value("qkvlab_mlp", true) == false)
        a.intermediateSize = 0;
    return a;
}

template <typename Scalar>
Tensors<Scalar> loadParameters(const std::string& folder, const Architecture& a, const Layout& layout)
{
    return loadParameters<Scalar>(Model::open(folder), a, layout);
}

template <typename Scalar>
Tensors<Scalar> loadParameters(const Model& model, const Architecture& a, const Layout& layout)
{
    const Checkpoint& checkpoint = model.checkpoint();
    // Read straight into the network's precision: a float model's weights never pass through double.
    const auto read = [&](const std::string& name) {
        MatrixOf<Scalar> m;
        checkpoint.readMatrixInto(model.tensorName(name), m);
        return m;
    };
    const auto readRow = [&](const std::string& name) -> MatrixOf<Scalar> {
        return checkpoint.readVector(model.tensorName(name)).template cast<Scalar>();
    };
    Tensors<Scalar> tensors = zeroTensors<Scalar>(layout);
    const auto put = [&](int slot, const auto& value) {
        if (slot >= 0)
            tensors[std::size_t(slot)] = value;
    };
    const bool gpt2 = isGpt2(a);
    const Index d = a.hiddenSize, q = a.heads * a.headDim, kv = a.kvHeads * a.headDim;
    put(layout.embedding, read(gpt2 ? "wte.weight" : "model.embed_tokens.weight"));
    if (gpt2)
        put(layout.positions, read("wpe.weight"));
    for (Index l = 0; l < a.layers; ++l) {
        const LayerSlots& s = layout.layers[std::size_t(l)];
        const std::string p = layerName(a, l);
        if (gpt2) {
            put(s.norm1, readRow(p + "ln_1.weight"));
            put(s.norm1Bias, readRow(p + "ln_1.bias"));
            const MatrixOf<Scalar> w = read(p + "attn.c_attn.weight");
            const MatrixOf<Scalar> b = readRow(p + "attn.c_attn.bias");
            put(s.q, w.leftCols(d));
            put(s.k, w.middleCols(d, d));
            put(s.v, w.rightCols(d));
            put(s.qBias, b.leftCols(d));
            put(s.kBias, b.middleCols(d, d));
            put(s.vBias, b.rightCols(d));
            put(s.o, read(p + "attn.c_proj.weight"));
            put(s.oBias, readRow(p + "attn.c_proj.bias"));
            if (a.hasMlp()) {
                put(s.norm2, readRow(p + "ln_2.weight"));
                put(s.norm2Bias, readRow(p + "ln_2.bias"));
                put(s.up, read(p + "mlp.c_fc.weight"));
                put(s.upBias, readRow(p + "mlp.c_fc.bias"));
                put(s.down, read(p + "mlp.c_proj.weight"));
                put(s.downBias, readRow(p + "mlp.c_proj.bias"));
            }
            continue;
        }
        const std::string attention = p + "self_attn.";
        put(s.norm1, readRow(p + "input_layernorm.weight"));
        put(s.q, read(attention + "q_proj.weight").transpose());
        put(s.k, read(attention + "k_proj.weight").transpose());
        put(s.v, read(attention + "v_proj.weight").transpose());
        if (a.qkvBias) {
            put(s.qBias, readRow(attention + "q_proj.bias"));
            put(s.kBias, readRow(attention + "k_proj.bias"));
            put(s.vBias, readRow(attention + "v_proj.bias"));
        }
        put(s.o, read(attention + "o_proj.weight").transpose());
        if (a.outputBias)
            put(s.oBias, readRow(attention + "o_proj.bias"));
        if (a.hasMlp()) {
            put(s.norm2, readRow(p + "post_attention_layernorm.weight"));
            for (const auto& [slot, bias, name] :
                 {std::tuple{s.up, s.upBias, "up_proj"}, std::tuple{s.gate, s.gateBias, "gate_proj"},
                  std::tuple{s.down, s.downBias, "down_proj"}}) {
                put(slot, read(p + "mlp." + name + ".weight").transpose());
                if (a.mlpBias)
                    put(bias, readRow(p + "mlp." + name + ".bias"));
            }
        }
    }
    put(layout.finalNorm, readRow(gpt2 ? "ln_f.weight" : "model.norm.weight"));
    if (gpt2)
        put(layout.finalNormBias, readRow("ln_f.bias"));
    if (!a.tiedEmbeddings)
        put(layout.unembedding, read("lm_head.weight").transpose());
    (void)q;
    (void)kv;
    return tensors;
}

namespace {

/// The config.json of the architecture, as Hugging Face writes one for its family.
std::string configJson(const Architecture& a, Index inner)
{
    nlohmann::ordered_json c;
    c["model_type"] = a.modelType;
    if (isGpt2(a)) {
        c["architectures"] = {"GPT2LMHeadModel"};
        c["n_embd"] = a.hiddenSize;
        c["n_head"] = a.heads;
        c["n_layer"] = a.layers;
        c["n_inner"] = inner;
        c["n_positions"] = a.maxPositions;
        c["n_ctx"] = a.maxPositions;
        c["vocab_size"] = a.vocabSize;
        c["layer_norm_epsilon"] = a.normEpsilon;
        c["activation_function"] = "gelu_new";
        c["tie_word_embeddings"] = true;
    } else {
        c["architectures"] = {a.modelType == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
        c["hidden_size"] = a.hiddenSize;
        c["num_attention_heads"] = a.heads;
        c["num_key_value_heads"] = a.kvHeads;
        c["head_dim"] = a.headDim;
        c["num_hidden_layers"] = a.layers;
        c["intermediate_size"] = inner;
        c["vocab_size"] = a.vocabSize;
        c["max_position_embeddings"] = a.maxPositions;
        c["rms_norm_eps"] = a.normEpsilon;
        c["rope_theta"] = a.ropeTheta;
        c["hidden_act"] = "silu";
        c["tie_word_embeddings"] = a.tiedEmbeddings;
        if (a.modelType == "llama") {
            c["attention_bias"] = a.qkvBias;
            c["mlp_bias"] = a.mlpBias;
        }
    }
    c["torch_dtype"] = "float32";
    if (!a.hasMlp())
        c["qkvlab_mlp"] = false;
    if (a.attentionNormalizer.type != NormalizerType::Softmax)
        c["qkvlab_attention_normalizer"] = toString(a.attentionNormalizer.type);
    if (a.attentionNormalizer.type == NormalizerType::Entmax)
        c["qkvlab_entmax_alpha"] = a.attentionNormalizer.alpha;
    return c.dump(2) + "\n";
}

} // namespace

template <typename Scalar>
void saveModel(const std::string& folder, const Architecture& a, const Layout& layout,
               const Tensors<Scalar>& t)
{
    if (!isGpt2(a) && a.modelType == "llama" && a.qkvBias != a.outputBias)
        throw Error("a llama model has biases on all of q, k, v and o or on none");
    std::filesystem::create_directories(folder);
    const std::string dtype = std::is_same_v<Scalar, double> ? "F64" : "F32";
    std::vector<SafetensorsTensor> out;
    const auto add = [&](const std::string& name, const MatrixOf<Scalar>& m, bool vector) {
        SafetensorsTensor tensor{name, dtype, {}, std::vector<double>(std::size_t(m.size()))};
        if (vector)
            tensor.shape = {std::uint64_t(m.size())};
        else
            tensor.shape = {std::uint64_t(m.rows()), std::uint64_t(m.cols())};
        for (Index i = 0; i < m.size(); ++i)
            tensor.values[std::size_t(i)] = double(m.data()[i]);
        out.push_back(std::move(tensor));
    };
    const auto matrix = [&](const std::string& name, int slot) { add(name, t[std::size_t(slot)], false); };
    const auto transposed = [&](const std::string& name, int slot) {
        add(name, MatrixOf<Scalar>(t[std::size_t(slot)].transpose()), false);
    };
    const auto vector = [&](const std::string& name, int slot) { add(name, t[std::size_t(slot)], true); };
    const bool gpt2 = isGpt2(a);
    const Index d = a.hiddenSize, inner = a.hasMlp() ? a.intermediateSize : 1;
    const MatrixOf<Scalar> zeroUp = MatrixOf<Scalar>::Zero(d, inner),
                           zeroDown = MatrixOf<Scalar>::Zero(inner, d);
    const MatrixOf<Scalar> zeroInner = MatrixOf<Scalar>::Zero(1, inner), zeroD = MatrixOf<Scalar>::Zero(1, d);
    const MatrixOf<Scalar> onesD = MatrixOf<Scalar>::Ones(1, d);
    matrix(gpt2 ? "wte.weight" : "model.embed_tokens.weight", layout.embedding);
    if (gpt2)
        matrix("wpe.weight", layout.positions);
    for (Index l = 0; l < a.layers; ++l) {
        const LayerSlots& s = layout.layers[std::size_t(l)];
        const std::string p = layerName(a, l);
        if (gpt2) {
            vector(p + "ln_1.weight", s.norm1);
            vector(p + "ln_1.bias", s.norm1Bias);
            MatrixOf<Scalar> w(d, 3 * d), b(1, 3 * d);
            w << t[s.q], t[s.k], t[s.v];
            b << t[s.qBias], t[s.kBias], t[s.vBias];
            add(p + "attn.c_attn.weight", w, false);
            add(p + "attn.c_attn.bias", b, true);
            matrix(p + "attn.c_proj.weight", s.o);
            vector(p + "attn.c_proj.bias", s.oBias);
            if (a.hasMlp()) {
                vector(p + "ln_2.weight", s.norm2);
                vector(p + "ln_2.bias", s.norm2Bias);
                matrix(p + "mlp.c_fc.weight", s.up);
                vector(p + "mlp.c_fc.bias", s.upBias);
                matrix(p + "mlp.c_proj.weight", s.down);
                vector(p + "mlp.c_proj.bias", s.downBias);
            } else {
                add(p + "ln_2.weight", onesD, true);
                add(p + "ln_2.bias", zeroD, true);
                add(p + "mlp.c_fc.weight", zeroUp, false);
                add(p + "mlp.c_fc.bias", zeroInner, true);
                add(p + "mlp.c_proj.weight", zeroDown, false);
                add(p + "mlp.c_proj.bias", zeroD, true);
            }
            continue;
        }
        const std::string attention = p + "self_attn.";
        vector(p + "input_layernorm.weight", s.norm1);
        transposed(attention + "q_proj.weight", s.q);
        transposed(attention + "k_proj.weight", s.k);
        transposed(attention + "v_proj.weight", s.v);
        if (a.qkvBias) {
            vector(attention + "q_proj.bias", s.qBias);
            vector(attention + "k_proj.bias", s.kBias);
            vector(attention + "v_proj.bias", s.vBias);
        }
        transposed(attention + "o_proj.weight", s.o);
        if (a.outputBias)
            vector(attention + "o_proj.bias", s.oBias);
        if (a.hasMlp()) {
            vector(p + "post_attention_layernorm.weight", s.norm2);
            for (const auto& [slot, bias, name] :
                 {std::tuple{s.up, s.upBias, "up_proj"}, std::tuple{s.gate, s.gateBias, "gate_proj"},
                  std::tuple{s.down, s.downBias, "down_proj"}}) {
                transposed(p + "mlp." + name + ".weight", slot);
                if (a.mlpBias)
                    vector(p + "mlp." + name + ".bias", bias);
            }
        } else {
            add(p + "post_attention_layernorm.weight", onesD, true);
            add(p + "mlp.gate_proj.weight", MatrixOf<Scalar>::Zero(inner, d), false);
            add(p + "mlp.up_proj.weight", MatrixOf<Scalar>::Zero(inner, d), false);
            add(p + "mlp.down_proj.weight", MatrixOf<Scalar>::Zero(d, inner), false);
            if (a.mlpBias) {
                add(p + "mlp.gate_proj.bias", zeroInner, true);
                add(p + "mlp.up_proj.bias", zeroInner, true);
                add(p + "mlp.down_proj.bias", zeroD, true);
            }
        }
    }
    vector(gpt2 ? "ln_f.weight" : "model.norm.weight", layout.finalNorm);
    if (gpt2)
        vector("ln_f.bias", layout.finalNormBias);
    if (!a.tiedEmbeddings)
        transposed("lm_head.weight", layout.unembedding);
    const std::filesystem::path path(folder);
    writeSafetensors((path / "model.safetensors").string(), out, {{"format", "pt"}});
    std::ofstream config(path / "config.json", std::ios::binary);
    config << configJson(a, inner);
    if (!config.flush())
        throw Error((path / "config.json").string() + ": cannot be written");
}

template <typename Scalar> std::uint64_t parameterCount(const Tensors<Scalar>& tensors)
{
    std::uint64_t count = 0;
    for (const auto& t : tensors)
        count += std::uint64_t(t.size());
    return count;
}

template <typename Scalar> std::shared_ptr<const Weights<Scalar>> sharedWeights(const Model& model)
{
    ModelWeightCache& cache = model.weightCache();
    const std::lock_guard<std::mutex> lock(cache.mutex); // one copy, however many ask at once
    std::shared_ptr<const void>& slot = std::is_same_v<Scalar, float> ? cache.float32 : cache.float64;
    if (slot)
        return std::static_pointer_cast<const Weights<Scalar>>(slot);
    // Named here, not as a missing tensor deep in the reading: a folder of layers alone opens as a model.
    const bool gpt2 = model.config().family == ModelFamily::Gpt2;
    for (const auto& [name, what] : {std::pair{gpt2 ? "ln_f.weight" : "model.norm.weight", "the final norm"},
                                     std::pair{gpt2 ? "ln_f.bias" : "", "the final norm's bias"}})
        if (*name != '\0' && !model.checkpoint().has(model.tensorName(name)))
            throw Error(modelName(model) + ": the checkpoint has no " + model.tensorName(name) + " (" + what +
                        "), which the forward pass needs");
    auto weights = std::make_shared<Weights<Scalar>>();
    weights->architecture = architectureOf(model);
    weights->layout = layoutOf(weights->architecture);
    std::uint64_t count = 0;
    for (const TensorShape& tensor : weights->layout.tensors)
        count += std::uint64_t(tensor.rows) * std::uint64_t(tensor.cols);
    const std::uint64_t bytes = count * sizeof(Scalar), limit = defaultMemoryLimit();
    if (bytes > limit)
        throw Error(modelName(model) + ": its weights in " +
                    (std::is_same_v<Scalar, float> ? "float32" : "float64; choose precision float32") +
                    " need about " + formatBytes(bytes) + ", more than the memory limit of " +
                    formatBytes(limit));
    weights->parameters = loadParameters<Scalar>(model, weights->architecture, weights->layout);
    slot = weights;
    return weights;
}

#define QKV_TRAINING_MODEL(Scalar)                                                                           \
    template Tensors<Scalar> zeroTensors<Scalar>(const Layout&);                                             \
    template Tensors<Scalar> initialParameters<Scalar>(const Architecture&, const Layout&, std::uint64_t);   \
    template Tensors<Scalar> loadParameters<Scalar>(const std::string&, const Architecture&, const Layout&); \
    template Tensors<Scalar> loadParameters<Scalar>(const Model&, const Architecture&, const Layout&);       \
    template void saveModel<Scalar>(const std::string&, const Architecture&, const Layout&,                  \
                                    const Tensors<Scalar>&);                                                 \
    template std::uint64_t parameterCount<Scalar>(const Tensors<Scalar>&);                                   \
    template std::shared_ptr<const Weights<Scalar>> sharedWeights<Scalar>(const Model&);
QKV_TRAINING_MODEL(double)
QKV_TRAINING_MODEL(float)

} // namespace qkv::training
