// SPDX-License-Identifier: GPL-3.0-or-later
#include "Composition.h"

#include "Circuits.h"
#include "Error.h"
#include "MatrixProduct.h"
#include "Parallel.h"
#include "TrainingModel.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace qkv {

namespace {

/// One layer's folded factors in float64: what the left (earlier head) and right (later head) sides need.
struct LayerFactors {
    std::vector<Matrix> left;     ///< per query head: R_V·W_O, d_h × d
    std::vector<double> leftNorm; ///< ‖W_OV‖_F
    std::vector<Matrix> right; ///< per query head: [W̃_Q·R_Kᵀ | W̃_K·R_Qᵀ | W̃_V·R_Oᵀ], d × 3·d_h
    std::vector<double> qkNorm, ovNorm;
};

/// r padded with zero rows to d_h rows (a model narrower than its heads has fewer than d_h).
Matrix paddedRows(const Matrix& r, Index dh)
{
    Matrix padded = Matrix::Zero(dh, r.cols());
    padded.topRows(r.rows()) = r;
    return padded;
}

template <typename Scalar>
LayerFactors layerFactors(const training::Weights<Scalar>& w, Index layer, bool left, bool right)
{
    const training::Architecture& a = w.architecture;
    const training::LayerSlots& s = w.layout.layers[std::size_t(layer)];
    const training::Tensors<Scalar>& p = w.parameters;
    const Index dh = a.headDim, heads = a.heads;
    const auto folded = [&](int slot, Index column) {
        Matrix side = p[std::size_t(slot)].middleCols(column * dh, dh).template cast<double>();
        if (s.norm1 >= 0)
            side = p[std::size_t(s.norm1)].row(0).template cast<double>().transpose().asDiagonal() * side;
        return side;
    };
    LayerFactors f;
    f.left.resize(std::size_t(heads));
    f.leftNorm.resize(std::size_t(heads));
    f.right.resize(std::size_t(heads));
    f.qkNorm.resize(std::size_t(heads));
    f.ovNorm.resize(std::size_t(heads));
    parallelFor(heads, 1, [&](Index begin, Index end) {
        for (Index h = begin; h < end; ++h) {
            const Index g = h / a.groupSize();
            const std::size_t i = std::size_t(h);
            const Matrix wq = folded(s.q, h), wk = folded(s.k, g), wv = folded(s.v, g);
            const Matrix wo = p[std::size_t(s.o)].middleRows(h * dh, dh).template cast<double>();
            const Matrix rv = paddedRows(triangularFactor(wv), dh);
            if (left) {
                f.left[i] = rv * wo;
                f.leftNorm[i] = f.left[i].norm();
            }
            if (right) {
                const Matrix rq = paddedRows(triangularFactor(wq), dh),
                             rk = paddedRows(triangularFactor(wk), dh);
                const Matrix ro = paddedRows(triangularFactor(wo.transpose()), dh);
                Matrix sides(a.hiddenSize, 3 * dh);
                sides.middleCols(0, dh) = wq * rk.transpose();
                sides.middleCols(dh, dh) = wk * rq.transpose();
                sides.middleCols(2 * dh, dh) = wv * ro.transpose();
                f.qkNorm[i] = (rq * rk.transpose()).norm();
                f.ovNorm[i] = (rv * wo).norm();
                f.right[i] = std::move(sides);
            }
        }
    });
    return f;
}

/// The Frobenius norm of the size × size block at (row, column), summed in float64.
template <typename Scalar> double blockNorm(const MatrixOf<Scalar>& m, Index row, Index column, Index size)
{
    double sum = 0;
    for (Index i = 0; i < size; ++i) {
        const Scalar* entry = m.data() + (row + i) * m.cols() + column;
        for (Index j = 0; j < size; ++j)
            sum += double(entry[j]) * double(entry[j]);
    }
    return std::sqrt(sum);
}

std::string rangeText(Index count)
{
    return count == 1 ? "0" : "0 to " + std::to_string(count - 1);
}

} // namespace

double CompositionScores::at(CompositionKind kind, Index fromLayer, Index fromHead, Index toLayer,
                             Index toHead) const
{
    const std::vector<double>& scores = kind == CompositionKind::Query ? query
                                        : kind == CompositionKind::Key ? key
                                                                       : value;
    return scores[std::size_t(((toLayer * heads + toHead) * layers + fromLayer) * heads + fromHead)];
}

Matrix CompositionScores::into(CompositionKind kind, Index toLayer, Index toHead) const
{
    Matrix scores(toLayer, heads);
    for (Index l = 0; l < toLayer; ++l)
        for (Index h = 0; h < heads; ++h)
            scores(l, h) = at(kind, l, h, toLayer, toHead);
    return scores;
}

template <typename Scalar>
CompositionScores compositionScores(const training::Weights<Scalar>& w, Index toLayer, Index toHead,
                                    const CompositionProgress& progress)
{
    const training::Architecture& a = w.architecture;
    const Index layers = a.layers, heads = a.heads, dh = a.headDim;
    if (toLayer < -1 || toLayer >= layers)
        throw Error("layer " + std::to_string(toLayer) + " is out of range: the model has layers " +
                    rangeText(layers));
    if (toHead < -1 || toHead >= heads)
        throw Error("head " + std::to_string(toHead) + " is out of range: the model has heads " +
                    rangeText(heads));
    CompositionScores scores;
    scores.layers = layers;
    scores.heads = heads;
    const std::size_t size = std::size_t(layers * heads * layers * heads);
    scores.query.assign(size, 0.0);
    scores.key.assign(size, 0.0);
    scores.value.assign(size, 0.0);
    const Index lastLayer = toLayer < 0 ? layers - 1 : toLayer, firstLayer = toLayer < 0 ? 1 : toLayer;
    const Index firstHead = toHead < 0 ? 0 : toHead, targets = toHead < 0 ? heads : 1;
    // Every earlier head's R_V·W_O, stacked: d_h rows each, layer after layer.
    MatrixOf<Scalar> left(lastLayer * heads * dh, a.hiddenSize);
    std::vector<double> leftNorm;
    for (Index l = 0; l <= lastLayer; ++l) {
        const bool isTarget = l >= firstLayer;
        const LayerFactors f = layerFactors(w, l, l < lastLayer, isTarget);
        if (isTarget) {
            MatrixOf<Scalar> right(a.hiddenSize, targets * 3 * dh);
            for (Index t = 0; t < targets; ++t)
                right.middleCols(t * 3 * dh, 3 * dh) =
                    f.right[std::size_t(firstHead + t)].template cast<Scalar>();
            // Rows by whole layers, at most about 2²⁴ entries of the product at once.
            const Index rowsPerLayer = heads * dh;
            const Index chunkLayers = std::max<Index>(1, (Index(1) << 24) / (rowsPerLayer * right.cols()));
            for (Index from = 0; from < l; from += chunkLayers) {
                const Index count = std::min(chunkLayers, l - from);
                MatrixOf<Scalar> product(count * rowsPerLayer, right.cols());
                multiply<Scalar>(left.middleRows(from * rowsPerLayer, count * rowsPerLayer), right, product);
                parallelFor(count * heads, 4, [&](Index begin, Index end) {
                    for (Index r = begin; r < end; ++r)
                        for (Index t = 0; t < targets; ++t)
                            for (int mode = 0; mode < 3; ++mode) {
                                const std::size_t target = std::size_t(firstHead + t);
                                const double denominator = leftNorm[std::size_t(from * heads + r)] *
                                                           (mode == 2 ? f.ovNorm[target] : f.qkNorm[target]);
                                std::vector<double>& out = mode == 0   ? scores.query
                                                           : mode == 1 ? scores.key
                                                                       : scores.value;
                                out[std::size_t(((l * heads + Index(target)) * layers) * heads +
                                                from * heads + r)] =
                                    denominator > 0
                                        ? blockNorm(product, r * dh, (t * 3 + mode) * dh, dh) / denominator
                                        : 0.0;
                            }
                });
            }
            if (progress && !progress(l - firstLayer + 1, lastLayer - firstLayer + 1))
                throw Cancelled();
        }
        if (l < lastLayer)
            for (Index h = 0; h < heads; ++h) {
                left.middleRows((l * heads + h) * dh, dh) = f.left[std::size_t(h)].template cast<Scalar>();
                leftNorm.push_back(f.leftNorm[std::size_t(h)]);
            }
    }
    for (const std::vector<double>* values : {&scores.query, &scores.key, &scores.value})
        if (!std::all_of(values->begin(), values->end(), [](double x) { return std::isfinite(x); }))
            throw Error("the composition scores are not finite: the weights overflow");
    return scores;
}

template CompositionScores compositionScores<double>(const training::Weights<double>&, Index, Index,
                                                     const CompositionProgress&);
template CompositionScores compositionScores<float>(const training::Weights<float>&, Index, Index,
                                                    const CompositionProgress&);

} // namespace qkv
