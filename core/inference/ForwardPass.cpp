// SPDX-License-Identifier: GPL-3.0-or-later
#include "ForwardPass.h"

#include "Blocks.h"
#include "Error.h"
#include "HookPoints.h"
#include "LayerAttention.h"
#include "ModelTensors.h"
#include "Network.h"
#include "PassSteps.h"
#include "TrainingModel.h"

#include <memory>
#include <string>

namespace qkv {

using models::inPrecision;
using models::layerOutOfRange;
using models::layerPrefix;
using models::readVectorIn;

// The norms are the blocks' (Blocks.h), evaluated in double from their (float32) inputs; a float32 session
// rounds their results, so they are within half a float32 unit of the exact value.
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

std::function<bool()> models::proceedAfterEachLayer(std::function<bool(Index, Index)> progress, Index layers)
{
    if (!progress)
        return {};
    return [progress = std::move(progress), layers, done = Index(0)]() mutable {
        return progress(++done, layers);
    };
}

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

namespace {

/// The one transformer on the model's weights, run through the first layers of a text.
template <typename Scalar> struct LayerRun {
    std::shared_ptr<const training::Weights<Scalar>> weights;
    training::Network<Scalar> network;

    explicit LayerRun(const Model& model)
        : weights(training::sharedWeights<Scalar>(model)), network(weights->architecture, weights->layout)
    {
    }

    /// `ids` through the first `layers` layers (all of them: to the logits), keeping `keep`; `progress` is
    /// told each layer done, and stops the run (qkv::Cancelled) when it returns false.
    void run(const Model& model, const std::vector<std::int64_t>& ids, Index layers,
             std::vector<std::string> keep, const LayerProgress& progress = {})
    {
        const ModelConfig& c = model.config();
        models::checkIds(model, ids);
        if (layers < 0 || layers > c.layers)
            throw layerOutOfRange(c, layers);
        transformer::HookRequest request(std::move(keep));
        request.stopBeforeLayer = layers;
        request.proceed = models::proceedAfterEachLayer(progress, layers);
        network.forward(weights->parameters, {ids}, &request);
    }
};

template <typename Scalar>
Matrix residualIn(const Model& model, const std::vector<std::int64_t>& ids, Index layer)
{
    const Index layers = model.config().layers;
    // After the last layer, the stream is the last layer's output.
    const std::string name = layer < layers
                                 ? transformer::hookName({transformer::HookKind::ResidPre, layer})
                                 : transformer::hookName({transformer::HookKind::ResidPost, layers - 1});
    LayerRun<Scalar> pass(model);
    pass.run(model, ids, layer, {name});
    return pass.network.cache().at(name);
}

template <typename Scalar>
std::vector<std::vector<Matrix>> attentionOf(const Model& model, const std::vector<std::int64_t>& ids,
                                             Index layers, const LayerProgress& progress)
{
    Index done = 0;
    LayerRun<Scalar> pass(model);
    try {
        pass.run(model, ids, layers, {}, [&](Index layer, Index total) {
            done = layer;
            return !progress || progress(layer, total);
        });
    } catch (const Cancelled&) {
        // the layers done are returned
    }
    std::vector<std::vector<Matrix>> weights;
    for (Index l = 0; l < done; ++l) {
        std::vector<Matrix> layer;
        for (Index h = 0; h < model.config().heads; ++h)
            layer.push_back(pass.network.attention(0, l, h).template cast<double>());
        weights.push_back(std::move(layer));
    }
    return weights;
}

} // namespace

Matrix residualBeforeLayer(const Model& model, const std::vector<std::int64_t>& ids, Index layer,
                           Precision precision)
{
    return precision == Precision::Float32 ? residualIn<float>(model, ids, layer)
                                           : residualIn<double>(model, ids, layer);
}

std::vector<std::vector<Matrix>> attentionOfEveryLayer(const Model& model,
                                                       const std::vector<std::int64_t>& ids,
                                                       Precision precision, const LayerProgress& progress,
                                                       Index layers, std::uint64_t memoryLimit)
{
    const ModelConfig& c = model.config();
    if (layers < 0)
        layers = c.layers;
    if (layers > c.layers)
        throw layerOutOfRange(c, layers);
    // Checked before the pass: at 2048 tokens a 24-layer, 14-head model's weights alone take 11 GB.
    const double n = static_cast<double>(ids.size());
    const double bytes = static_cast<double>(layers) * static_cast<double>(c.heads) * n * n *
                         static_cast<double>(sizeof(double));
    if (memoryLimit > 0 && bytes > double(memoryLimit))
        throw Error("every layer's and head's attention for " + std::to_string(ids.size()) +
                    " tokens needs about " + formatBytes(static_cast<std::uint64_t>(bytes)) +
                    ", more than the memory limit of " + formatBytes(memoryLimit) + "; use a shorter text");
    if (layers == 0)
        return {};
    return precision == Precision::Float32 ? attentionOf<float>(model, ids, layers, progress)
                                           : attentionOf<double>(model, ids, layers, progress);
}

} // namespace qkv
