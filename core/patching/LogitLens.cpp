// SPDX-License-Identifier: GPL-3.0-or-later
#include "LogitLens.h"

#include "Blocks.h"
#include "Error.h"
#include "HookedModel.h"
#include "Model.h"
#include "PassSteps.h"

#include <algorithm>
#include <cmath>

namespace qkv {

namespace {

/// 1 + #{v : logit_v > logit_a} + #{v < a : logit_v = logit_a}: the answer's place in the top list's order.
Index rankOf(const double* logits, Index vocabulary, std::int64_t answer)
{
    const double a = logits[answer];
    Index rank = 1;
    for (Index v = 0; v < vocabulary; ++v)
        rank += logits[v] > a || (logits[v] == a && v < Index(answer));
    return rank;
}

/// Every row of the stream `residual` through the final norm (with its own statistics) and W_U.
template <typename Scalar>
std::vector<LensCell> readThroughTheEnd(const HookedModel<Scalar>& model, const Matrix& residual,
                                        const LensOptions& options)
{
    const training::Architecture& a = model.architecture();
    const training::Layout& layout = model.network().layout();
    const training::Tensors<Scalar>& p = model.parameters();
    const auto bias = layout.finalNormBias >= 0
                          ? transformer::Row<Scalar>(p[std::size_t(layout.finalNormBias)])
                          : transformer::Row<Scalar>();
    std::vector<LensCell> cells;
    // A few rows at a time: n × vocabulary logits at once would be large for long texts.
    constexpr Index chunk = 32;
    for (Index first = 0; first < residual.rows(); first += chunk) {
        const Index rows = std::min(chunk, residual.rows() - first);
        transformer::NormCache<Scalar> norm;
        const MatrixOf<Scalar> stream = residual.middleRows(first, rows).template cast<Scalar>();
        transformer::normForward<Scalar>(a.layerNorm() ? transformer::NormKind::LayerNorm
                                                       : transformer::NormKind::RmsNorm,
                                         stream, p[std::size_t(layout.finalNorm)], bias, a.normEpsilon, norm);
        MatrixOf<Scalar> logits;
        if (layout.unembedding >= 0)
            transformer::product(norm.out, p[std::size_t(layout.unembedding)], logits);
        else
            transformer::productTransposed(norm.out, p[std::size_t(layout.embedding)], logits);
        const Matrix values = logits.template cast<double>();
        for (Index r = 0; r < rows; ++r) {
            const double* row = values.row(r).data();
            const double normalizer = transformer::logSumExp<double>(row, values.cols());
            if (!std::isfinite(normalizer))
                throw Error("the logit lens overflows at position " + std::to_string(first + r) +
                            "; choose precision float64");
            LensCell cell;
            cell.top = topTokens(row, values.cols(), options.top, normalizer);
            if (options.answer >= 0) {
                cell.answerProbability = std::exp(row[options.answer] - normalizer);
                cell.answerRank = rankOf(row, values.cols(), options.answer);
            }
            cells.push_back(std::move(cell));
        }
    }
    return cells;
}

template <typename Scalar>
LogitLens lensOf(const Model& model, const std::vector<std::int64_t>& ids, const LensOptions& options,
                 const PatchProgress& progress)
{
    HookedModel<Scalar> hooked(model);
    const Index layers = hooked.architecture().layers;
    transformer::HookRequest request;
    for (Index l = 0; l < layers; ++l)
        request.keep.push_back(transformer::hookName({transformer::HookKind::ResidPre, l}));
    request.keep.push_back(transformer::hookName({transformer::HookKind::ResidPost, layers - 1}));
    request.oneLogitsRow = true;
    hooked.forward(ids, request);
    const transformer::ActivationCache& cache = hooked.network().cache();
    LogitLens lens;
    lens.hasAnswer = options.answer >= 0;
    for (Index l = 0; l <= layers; ++l) {
        const transformer::HookPoint point{l < layers ? transformer::HookKind::ResidPre
                                                      : transformer::HookKind::ResidPost,
                                           l < layers ? l : layers - 1};
        lens.layers.push_back(readThroughTheEnd(hooked, cache.at(transformer::hookName(point)), options));
        if (progress && !progress(l + 1, layers + 1))
            throw Cancelled();
    }
    return lens;
}

} // namespace

LogitLens logitLens(const Model& model, const std::vector<std::int64_t>& ids, const LensOptions& options,
                    const PatchProgress& progress)
{
    const ModelConfig& c = model.config();
    models::checkIds(model, ids);
    if (options.answer >= c.vocabSize || options.answer < -1)
        throw Error("the answer token id " + std::to_string(options.answer) +
                    " is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ")");
    if (options.top < 1)
        throw Error("the lens shows at least 1 top token; " + std::to_string(options.top) + " asked for");
    if (options.precision == Precision::Float32)
        return lensOf<float>(model, ids, options, progress);
    return lensOf<double>(model, ids, options, progress);
}

} // namespace qkv
