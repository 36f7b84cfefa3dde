// SPDX-License-Identifier: GPL-3.0-or-later
#include "Decompose.h"

#include "AttentionEngine.h"
#include "Blocks.h"
#include "Error.h"
#include "HookedModel.h"
#include "Model.h"
#include "ModelSession.h"
#include "PassSteps.h"
#include "Positions.h"

#include <cmath>

namespace qkv {

namespace {

using transformer::HookKind;
using transformer::hookName;

/// The residual stream at one position as named parts whose sum it is.
struct Components {
    std::vector<std::string> names;
    Matrix rows; ///< one row of d_model per name
};

Components componentsAt(const HookedModel<double>& hooked, Index layer, Index position)
{
    const training::Architecture& a = hooked.architecture();
    const training::Layout& layout = hooked.network().layout();
    const training::Tensors<double>& p = hooked.parameters();
    const transformer::ActivationCache& cache = hooked.network().cache();
    const Index dh = a.headDim;
    std::vector<std::string> names;
    std::vector<RowVector> rows;
    const auto add = [&](std::string name, RowVector row) {
        names.push_back(std::move(name));
        rows.push_back(std::move(row));
    };
    add("embed", cache.at(hookName({HookKind::Embed, -1})).row(position));
    if (a.learnedPositions())
        add("pos", cache.at(hookName({HookKind::PosEmbed, -1})).row(position));
    for (Index l = 0; l < layer; ++l) {
        const training::LayerSlots& s = layout.layers[std::size_t(l)];
        const RowVector z = cache.at(hookName({HookKind::Z, l})).row(position);
        const std::string prefix = "L" + std::to_string(l);
        for (Index h = 0; h < a.heads; ++h)
            add(prefix + "H" + std::to_string(h),
                z.segment(h * dh, dh) * p[std::size_t(s.o)].middleRows(h * dh, dh));
        if (s.oBias >= 0)
            add(prefix + ".b_O", p[std::size_t(s.oBias)].row(0));
        if (a.hasMlp())
            add(prefix + ".mlp", cache.at(hookName({HookKind::MlpOut, l})).row(position));
    }
    Components components{std::move(names), Matrix(Index(rows.size()), a.hiddenSize)};
    for (std::size_t i = 0; i < rows.size(); ++i)
        components.rows.row(Index(i)) = rows[i];
    return components;
}

/// One side (query or key) of the head at `position`: a row of d_h per component, then the bias part, each
/// rotated by RoPE where the model has it.
Matrix sideParts(const HookedModel<double>& hooked, const Components& components, Index layer, Index position,
                 int weightSlot, int biasSlot, Index column)
{
    const training::Architecture& a = hooked.architecture();
    const training::LayerSlots& s = hooked.network().layout().layers[std::size_t(layer)];
    const training::Tensors<double>& p = hooked.parameters();
    const Index dh = a.headDim, count = components.rows.rows();
    // The divisor comes from the whole stream at the position; with it fixed the norm is affine.
    const Matrix stream = components.rows.colwise().sum();
    transformer::NormCache<double> norm;
    const RowVector noBias;
    const RowVector gain = p[std::size_t(s.norm1)].row(0);
    const transformer::NormKind kind =
        a.layerNorm() ? transformer::NormKind::LayerNorm : transformer::NormKind::RmsNorm;
    transformer::normForward<double>(kind, stream, gain, noBias, a.normEpsilon, norm);
    const double inverseScale = norm.inverseScale(0);
    Matrix normed(count + 1, a.hiddenSize);
    for (Index c = 0; c < count; ++c) {
        RowVector x = components.rows.row(c);
        if (a.layerNorm())
            x.array() -= x.mean();
        normed.row(c) = (x * inverseScale).cwiseProduct(gain);
    }
    normed.row(count).setZero();
    if (s.norm1Bias >= 0)
        normed.row(count) = p[std::size_t(s.norm1Bias)].row(0);
    Matrix parts = normed * p[std::size_t(weightSlot)].middleCols(column * dh, dh);
    if (biasSlot >= 0)
        parts.row(count) += p[std::size_t(biasSlot)].row(0).segment(column * dh, dh);
    if (!a.learnedPositions()) // RoPE
        for (Index c = 0; c <= count; ++c) {
            Matrix row = parts.row(c);
            applyRope<double>(row, a.ropeTheta, RopePairing::Half, position, a.ropeScaling);
            parts.row(c) = row;
        }
    return parts;
}

double engineScore(const Model& model, const DecomposeRequest& request)
{
    ModelHeadRequest head;
    head.layer = request.layer;
    head.heads = {request.head};
    head.ids = request.ids;
    const AttentionResult result = computeAttention(sessionFromModel(model, head));
    return result.heads.front().scaled(request.query, request.key);
}

void checkRequest(const Model& model, const DecomposeRequest& request)
{
    const ModelConfig& c = model.config();
    const auto range = [](Index count) {
        return count == 1 ? std::string("0") : "0 to " + std::to_string(count - 1);
    };
    if (request.layer < 0 || request.layer >= c.layers)
        throw Error("layer " + std::to_string(request.layer) + " is out of range: the model has layers " +
                    range(c.layers));
    if (request.head < 0 || request.head >= c.heads)
        throw Error("head " + std::to_string(request.head) + " is out of range: the model has heads " +
                    range(c.heads));
    models::checkIds(model, request.ids);
    const Index n = Index(request.ids.size());
    for (const auto& [position, what] : {std::pair{request.query, "query"}, std::pair{request.key, "key"}})
        if (position < 0 || position >= n)
            throw Error(std::string("the ") + what + " position " + std::to_string(position) +
                        " is out of range: the text has positions " + range(n));
}

} // namespace

ScoreDecomposition decomposeScore(const Model& model, const DecomposeRequest& request)
{
    checkRequest(model, request);
    HookedModel<double> hooked(model);
    const training::Architecture& a = hooked.architecture();
    const Index l = request.layer;
    transformer::HookRequest keep({hookName({HookKind::Embed, -1})});
    if (a.learnedPositions())
        keep.keep.push_back(hookName({HookKind::PosEmbed, -1}));
    for (Index earlier = 0; earlier < l; ++earlier) {
        keep.keep.push_back(hookName({HookKind::Z, earlier}));
        if (a.hasMlp())
            keep.keep.push_back(hookName({HookKind::MlpOut, earlier}));
    }
    keep.stopBeforeLayer = l;
    hooked.forward(request.ids, keep);

    const training::LayerSlots& s = hooked.network().layout().layers[std::size_t(l)];
    const Components queries = componentsAt(hooked, l, request.query);
    const Components keys = componentsAt(hooked, l, request.key);
    const Index group = request.head / a.groupSize();
    const Matrix q = sideParts(hooked, queries, l, request.query, s.q, s.qBias, request.head);
    const Matrix k = sideParts(hooked, keys, l, request.key, s.k, s.kBias, group);

    ScoreDecomposition decomposition;
    decomposition.components = queries.names;
    decomposition.components.push_back("bias");
    decomposition.terms = q * k.transpose() / std::sqrt(double(a.headDim));
    if (!isAllFinite(decomposition.terms))
        throw Error("the score's terms are not finite: the weights overflow");
    for (Index c = 0; c < decomposition.terms.rows(); ++c) {
        decomposition.query.push_back(decomposition.terms.row(c).sum());
        decomposition.key.push_back(decomposition.terms.col(c).sum());
    }
    decomposition.score = engineScore(model, request);
    return decomposition;
}

} // namespace qkv
