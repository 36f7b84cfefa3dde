// SPDX-License-Identifier: GPL-3.0-or-later
#include "ForwardPass.h"

#include "AttentionEngine.h"
#include "Blocks.h"
#include "Error.h"
#include "LayerAttention.h"
#include "MatrixProduct.h"
#include "ModelTensors.h"
#include "Parallel.h"
#include "PassSteps.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace qkv {

using models::allHeads;
using models::hasTensor;
using models::inPrecision;
using models::layerOutOfRange;
using models::layerPrefix;
using models::layerSession;
using models::normalizedForAttention;
using models::PassBuffers;
using models::readVectorIn;

namespace {

/// f(value, row, column) applied to every entry of `values` in place, each result rounded to float32 in a
/// float32 pass: one pass, in chunks of rows on the engine's threads (the element-wise steps are too large a
/// part of a forward pass for one thread). The same bits as an entry-by-entry loop, with any number of
/// threads.
template <typename EntryFunction>
void transformEntries(Matrix& values, Precision precision, const EntryFunction& f)
{
    const Index columns = values.cols();
    const Index grain = std::max<Index>(1, (Index(1) << 14) / std::max<Index>(1, columns));
    parallelFor(values.rows(), grain, [&](Index begin, Index end) {
        for (Index i = begin; i < end; ++i) {
            double* row = values.row(i).data();
            for (Index j = 0; j < columns; ++j) {
                const double v = f(row[j], i, j);
                row[j] = inPrecision(v, precision);
            }
        }
    });
}

} // namespace

/// x · W (or x · Wᵀ) for the checkpoint's tensor W = `name`, through the engine's product routine; in a
/// float32 pass a float32 product (float32 accumulation, as PyTorch's), W read straight into float32.
Matrix models::productWithTensor(const Model& model, const Matrix& x, const std::string& name,
                                 Precision precision, PassBuffers& buffers, Operand form)
{
    const auto columnsOf = [form](const auto& w) { return form == Operand::AsIs ? w.cols() : w.rows(); };
    const Checkpoint& checkpoint = model.checkpoint();
    const std::string tensor = model.tensorName(name);
    if (precision == Precision::Float32) {
        buffers.inputF = x.cast<float>();
        const auto multiplyBy = [&](const ConstRows<float>& w) {
            buffers.productF.resize(x.rows(), columnsOf(w));
            multiply<float>(buffers.inputF, w, buffers.productF, form);
        };
        if (const auto stored = checkpoint.storedFloat32(tensor)) { // an F32 checkpoint: no copy
            multiplyBy(*stored);
        } else {
            checkpoint.readMatrixInto(tensor, buffers.weightF);
            multiplyBy(buffers.weightF);
        }
        return buffers.productF.cast<double>();
    }
    checkpoint.readMatrixInto(tensor, buffers.weight);
    Matrix c(x.rows(), columnsOf(buffers.weight));
    multiply<double>(x, buffers.weight, c, form);
    return c;
}

// The norms and the activation functions are the blocks' (Blocks.h), evaluated in double from their
// (float32) inputs; a float32 pass rounds their results, so they are within half a float32 unit of the exact
// value (PyTorch's float32 kernels: within a few units).
Matrix models::layerNorm(const Matrix& x, const RowVector& gain, const RowVector& bias, double epsilon)
{
    transformer::NormCache<double> cache;
    transformer::normForward<double>(transformer::NormKind::LayerNorm, x, gain, bias, epsilon, cache);
    return std::move(cache.out);
}

Matrix models::rmsNorm(const Matrix& x, const RowVector& gain, double epsilon)
{
    transformer::NormCache<double> cache;
    transformer::normForward<double>(transformer::NormKind::RmsNorm, x, gain, RowVector(), epsilon, cache);
    return std::move(cache.out);
}

namespace {

double geluTanh(double x)
{
    return transformer::geluTanh<double>(x);
}

double silu(double x)
{
    return transformer::silu<double>(x);
}

} // namespace

Matrix models::mlp(const Model& model, const Matrix& x, Index layer, Precision precision,
                   PassBuffers& buffers)
{
    const ModelConfig& c = model.config();
    const std::string prefix = layerPrefix(model, layer);
    const auto vector = [&](const std::string& name) { return readVectorIn(model, name, precision); };
    const auto rounded = [precision](double v) { return inPrecision(v, precision); };
    if (c.family == ModelFamily::Gpt2) {
        const Matrix m = inPrecision(
            layerNorm(x, vector(prefix + "ln_2.weight"), vector(prefix + "ln_2.bias"), c.normEpsilon),
            precision);
        Matrix hidden = productWithTensor(model, m, prefix + "mlp.c_fc.weight", precision, buffers);
        const RowVector fcBias = vector(prefix + "mlp.c_fc.bias");
        transformEntries(hidden, precision,
                         [&](double v, Index, Index j) { return geluTanh(rounded(v + fcBias[j])); });
        Matrix out = productWithTensor(model, hidden, prefix + "mlp.c_proj.weight", precision, buffers);
        const RowVector projBias = vector(prefix + "mlp.c_proj.bias");
        transformEntries(out, precision, [&](double v, Index, Index j) { return v + projBias[j]; });
        return out;
    }
    const Matrix m =
        inPrecision(rmsNorm(x, vector(prefix + "post_attention_layernorm.weight"), c.normEpsilon), precision);
    const auto linear = [&](const Matrix& in, const char* name) {
        Matrix out = productWithTensor(model, in, prefix + "mlp." + name + ".weight", precision, buffers,
                                       Operand::Transposed);
        const std::string biasName = prefix + "mlp." + name + ".bias";
        const RowVector bias = hasTensor(model, biasName) ? vector(biasName) : RowVector();
        transformEntries(out, precision,
                         [&](double v, Index, Index j) { return bias.size() > 0 ? v + bias[j] : v; });
        return out;
    };
    Matrix gate = linear(m, "gate_proj");
    const Matrix up = linear(m, "up_proj");
    transformEntries(gate, precision,
                     [&](double v, Index i, Index j) { return rounded(silu(v)) * up(i, j); });
    return linear(gate, "down_proj");
}

void models::checkIds(const Model& model, const std::vector<std::int64_t>& ids)
{
    const ModelConfig& c = model.config();
    if (ids.empty())
        throw Error("no tokens: give a text or at least one token id");
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= c.vocabSize)
            throw Error("token id " + std::to_string(ids[i]) + " (token " + std::to_string(i) +
                        ") is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ")");
    if (c.maxPositions > 0 && Index(ids.size()) > c.maxPositions)
        throw Error(std::to_string(ids.size()) + " tokens are more than the model's " +
                    std::to_string(c.maxPositions) + " positions");
}

Matrix models::embed(const Model& model, const std::vector<std::int64_t>& ids, Precision precision)
{
    const ModelConfig& c = model.config();
    checkIds(model, ids);
    const auto n = Index(ids.size());
    // Only the rows of the tokens and positions used are read (GPT-2's table has 50257 rows).
    const std::vector<Index> rows(ids.begin(), ids.end());
    Matrix residual = inPrecision(
        model.checkpoint().readRows(
            model.tensorName(c.family == ModelFamily::Gpt2 ? "wte.weight" : "model.embed_tokens.weight"),
            rows),
        precision);
    if (c.family == ModelFamily::Gpt2) {
        std::vector<Index> positions(static_cast<std::size_t>(n));
        std::iota(positions.begin(), positions.end(), Index{0});
        residual = inPrecision(Matrix(residual + inPrecision(model.checkpoint().readRows(
                                                                 model.tensorName("wpe.weight"), positions),
                                                             precision)),
                               precision);
    }
    return residual;
}

void models::addInto(Matrix& residual, const Matrix& update, Precision precision)
{
    transformEntries(residual, precision, [&](double v, Index i, Index j) { return v + update(i, j); });
}

void models::checkFinite(const Matrix& residual, Index layer, const char* part, Precision precision)
{
    if (!isAllFinite(residual))
        throw Error("layer " + std::to_string(layer) + ": the residual stream overflows " +
                    (precision == Precision::Float32 ? "float32 after the " : "float64 after the ") + part +
                    (precision == Precision::Float32 ? "; choose precision float64" : ""));
}

void models::finishLayer(const Model& model, Matrix& residual, const Matrix& attentionOutput, Index layer,
                         Precision precision, PassBuffers& buffers, bool withMlp)
{
    addInto(residual, attentionOutput, precision);
    checkFinite(residual, layer, "attention", precision);
    if (!withMlp)
        return;
    addInto(residual, mlp(model, residual, layer, precision, buffers), precision);
    checkFinite(residual, layer, "MLP", precision);
}

namespace {

/// Called once per layer of the forward pass with the result of its attention (every head, in the pass's
/// precision); false stops the pass.
using LayerVisitor = std::function<bool(Index layer, const AttentionResult& result)>;

/// The forward pass, the one loop every caller goes through: the residual stream after `layers` layers.
/// With `lastMlp` false, the last layer stops after its attention (its MLP is not needed by the caller).
Matrix forwardPass(const Model& model, const std::vector<std::int64_t>& ids, Index layers, bool lastMlp,
                   Precision precision, const LayerVisitor& visit)
{
    const ModelConfig& c = model.config();
    models::checkIds(model, ids);
    if (layers < 0 || layers > c.layers)
        throw layerOutOfRange(c, layers);
    Matrix residual = models::embed(model, ids, precision);
    AttentionResult result; // reused: a layer's buffers (12 heads × 3 n × n at GPT-2's size) are the next's
    PassBuffers buffers;
    // A float32 pass hands the engine its weights in float32, in buffers reused from layer to layer.
    Float32Weights float32Weights;
    Float32Weights* const float32 = precision == Precision::Float32 ? &float32Weights : nullptr;
    ComputeOptions options;
    options.float32Weights = float32;
    for (Index l = 0; l < layers; ++l) {
        const Session attention = layerSession(model, normalizedForAttention(model, residual, l, precision),
                                               l, allHeads(c), precision, float32);
        computeAttention(attention, result, options);
        if (visit && !visit(l, result))
            break;
        models::finishLayer(model, residual, result.output, l, precision, buffers, lastMlp || l + 1 < layers);
    }
    return residual;
}

} // namespace

/// The attention input of `layer`: the normalized residual stream.
Matrix models::normalizedForAttention(const Model& model, const Matrix& residual, Index layer,
                                      Precision precision)
{
    const std::string prefix = layerPrefix(model, layer);
    const auto vector = [&](const std::string& name) { return readVectorIn(model, name, precision); };
    if (model.config().family == ModelFamily::Gpt2)
        return inPrecision(models::layerNorm(residual, vector(prefix + "ln_1.weight"),
                                             vector(prefix + "ln_1.bias"), model.config().normEpsilon),
                           precision);
    return inPrecision(
        models::rmsNorm(residual, vector(prefix + "input_layernorm.weight"), model.config().normEpsilon),
        precision);
}

Matrix residualBeforeLayer(const Model& model, const std::vector<std::int64_t>& ids, Index layer,
                           Precision precision)
{
    return forwardPass(model, ids, layer, true, precision, {});
}

std::vector<std::vector<Matrix>> attentionOfEveryLayer(const Model& model,
                                                       const std::vector<std::int64_t>& ids,
                                                       Precision precision, const LayerProgress& progress,
                                                       Index layers, std::uint64_t memoryLimit)
{
    const ModelConfig& c = model.config();
    if (layers < 0)
        layers = c.layers;
    // Checked before the pass: at 2048 tokens a 24-layer, 14-head model's weights alone take 11 GB.
    const double n = static_cast<double>(ids.size());
    const double bytes = static_cast<double>(std::min(layers, c.layers)) * static_cast<double>(c.heads) * n *
                         n * static_cast<double>(sizeof(double));
    if (memoryLimit > 0 && bytes > double(memoryLimit))
        throw Error("every layer's and head's attention for " + std::to_string(ids.size()) +
                    " tokens needs about " + formatBytes(static_cast<std::uint64_t>(bytes)) +
                    ", more than the memory limit of " + formatBytes(memoryLimit) + "; use a shorter text");
    std::vector<std::vector<Matrix>> weights;
    forwardPass(model, ids, layers, false, precision, [&](Index, const AttentionResult& result) {
        std::vector<Matrix> layer;
        layer.reserve(result.heads.size());
        for (const HeadResult& head : result.heads)
            layer.push_back(head.weights);
        weights.push_back(std::move(layer));
        return !progress || progress(Index(weights.size()), layers);
    });
    return weights;
}

} // namespace qkv
