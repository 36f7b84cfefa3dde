// SPDX-License-Identifier: GPL-3.0-or-later
#include "Blocks.h"

#include "Error.h"
#include "MatrixProduct.h"
#include "Normalizers.h"
#include "Parallel.h"
#include "Positions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace qkv::transformer {

namespace {

/// A work matrix of this thread for `use` and a shape, kept from call to call: one buffer resized from shape
/// to shape would be freed and mapped again each time, at a page fault per 4 KB.
template <typename Scalar> M<Scalar>& buffer(int use, Index rows, Index cols)
{
    thread_local std::map<std::tuple<int, Index, Index>, M<Scalar>> buffers;
    M<Scalar>& m = buffers[{use, rows, cols}];
    m.resize(rows, cols);
    return m;
}

} // namespace

Sequences Sequences::uniform(Index count, Index length)
{
    return ofLengths(std::vector<Index>(std::size_t(count), length));
}

Sequences Sequences::ofLengths(const std::vector<Index>& lengths)
{
    Sequences s;
    s.lengths = lengths;
    for (Index length : lengths) {
        s.offsets.push_back(s.rows);
        s.rows += length;
    }
    return s;
}

std::vector<Index> Sequences::positions() const
{
    std::vector<Index> out(static_cast<std::size_t>(rows));
    for (std::size_t b = 0; b < lengths.size(); ++b)
        for (Index i = 0; i < lengths[b]; ++i)
            out[std::size_t(offsets[b] + i)] = i;
    return out;
}

template <typename Scalar> void product(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    c.resize(a.rows(), b.cols());
    multiply<Scalar>(a, b, c, Operand::AsIs);
}

template <typename Scalar> void productTransposed(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    c.resize(a.rows(), b.rows());
    multiply<Scalar>(a, b, c, Operand::Transposed);
}

template <typename Scalar> void addTransposedProduct(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    M<Scalar>& at = buffer<Scalar>(0, a.cols(), a.rows());
    at = a.transpose();
    M<Scalar>& result = buffer<Scalar>(1, a.cols(), b.cols());
    multiply<Scalar>(at, b, result, Operand::AsIs);
    c += result;
}

template <typename Scalar>
void embeddingForward(const M<Scalar>& table, const std::vector<std::int64_t>& ids, M<Scalar>& out)
{
    out.resize(Index(ids.size()), table.cols());
    for (std::size_t r = 0; r < ids.size(); ++r)
        out.row(Index(r)) = table.row(Index(ids[r]));
}

template <typename Scalar>
void embeddingBackward(const std::vector<std::int64_t>& ids, const M<Scalar>& dOut, M<Scalar>& dTable)
{
    for (std::size_t r = 0; r < ids.size(); ++r)
        dTable.row(Index(ids[r])) += dOut.row(Index(r));
}

template <typename Scalar>
void positionsForward(const M<Scalar>& table, const std::vector<Index>& positions, M<Scalar>& out)
{
    out.resize(Index(positions.size()), table.cols());
    for (std::size_t r = 0; r < positions.size(); ++r)
        out.row(Index(r)) = table.row(positions[r]);
}

template <typename Scalar>
void positionsBackward(const std::vector<Index>& positions, const M<Scalar>& dOut, M<Scalar>& dTable)
{
    for (std::size_t r = 0; r < positions.size(); ++r)
        dTable.row(positions[r]) += dOut.row(Index(r));
}

template <typename Scalar>
void linearForward(const M<Scalar>& x, const M<Scalar>& weight, const M<Scalar>* bias, M<Scalar>& y)
{
    product(x, weight, y);
    if (bias != nullptr)
        y.rowwise() += Row<Scalar>(*bias);
}

template <typename Scalar>
void linearBackward(const M<Scalar>& x, const M<Scalar>& dy, const M<Scalar>& weight, M<Scalar>* dWeight,
                    M<Scalar>* dBias, M<Scalar>* dx, bool accumulate)
{
    if (dWeight != nullptr)
        addTransposedProduct(x, dy, *dWeight);
    if (dBias != nullptr)
        *dBias += dy.colwise().sum();
    if (dx == nullptr)
        return;
    M<Scalar>& d = buffer<Scalar>(2, dy.rows(), weight.rows());
    multiply<Scalar>(dy, weight, d, Operand::Transposed);
    if (accumulate)
        *dx += d;
    else
        *dx = d;
}

template <typename Scalar>
void normForward(NormKind kind, const M<Scalar>& x, const ConstRowRef<Scalar>& gain,
                 const ConstRowRef<Scalar>& bias, double epsilon, NormCache<Scalar>& cache)
{
    const Index rows = x.rows(), d = x.cols();
    cache.normalized.resize(rows, d);
    cache.inverseScale.resize(rows);
    cache.out.resize(rows, d);
    const auto e = Scalar(epsilon);
    // Rows on the engine's threads: each row's arithmetic is the same with any count.
    const Index grain = std::max<Index>(1, (Index(1) << 14) / std::max<Index>(1, d));
    parallelFor(rows, grain, [&](Index begin, Index end) {
        for (Index i = begin; i < end; ++i) {
            auto centred = cache.normalized.row(i);
            centred = x.row(i);
            if (kind == NormKind::LayerNorm)
                centred.array() -= centred.mean();
            const Scalar r = Scalar(1) / std::sqrt(centred.squaredNorm() / Scalar(d) + e);
            cache.inverseScale[i] = r;
            centred *= r;
            cache.out.row(i) = centred.cwiseProduct(gain);
            if (bias.size() > 0)
                cache.out.row(i) += bias;
        }
    });
}

template <typename Scalar>
void normBackward(NormKind kind, const NormCache<Scalar>& cache, const ConstRowRef<Scalar>& gain,
                  const M<Scalar>& dOut, M<Scalar>& dx, M<Scalar>* dGain, M<Scalar>* dBias)
{
    const Index rows = dOut.rows(), d = dOut.cols();
    if (dGain != nullptr)
        *dGain += dOut.cwiseProduct(cache.normalized).colwise().sum();
    if (dBias != nullptr)
        *dBias += dOut.colwise().sum();
    thread_local Row<Scalar> dNormalized;
    for (Index i = 0; i < rows; ++i) {
        dNormalized = dOut.row(i).cwiseProduct(gain);
        const Scalar projection = dNormalized.dot(cache.normalized.row(i)) / Scalar(d);
        const Scalar mean = kind == NormKind::LayerNorm ? dNormalized.mean() : Scalar(0);
        dx.row(i).array() += cache.inverseScale[i] *
                             (dNormalized.array() - projection * cache.normalized.row(i).array() - mean);
    }
}

template <typename Scalar>
void activationForward(const M<Scalar>& pre, const M<Scalar>* up, M<Scalar>& activated)
{
    // Entry by entry, in chunks of rows on the engine's threads (the same bits with any count).
    activated.resize(pre.rows(), pre.cols());
    const Index grain = std::max<Index>(1, (Index(1) << 14) / std::max<Index>(1, pre.cols()));
    parallelFor(pre.rows(), grain, [&](Index begin, Index end) {
        const auto rows = pre.middleRows(begin, end - begin);
        if (up == nullptr)
            activated.middleRows(begin, end - begin) =
                rows.unaryExpr([](Scalar x) { return geluTanh<Scalar>(x); });
        else
            activated.middleRows(begin, end - begin) =
                rows.unaryExpr([](Scalar x) { return silu<Scalar>(x); })
                    .cwiseProduct(up->middleRows(begin, end - begin));
    });
}

template <typename Scalar>
void activationBackward(const M<Scalar>& pre, const M<Scalar>* up, M<Scalar>& dHidden, M<Scalar>* dUp)
{
    if (up == nullptr) {
        for (Index i = 0; i < dHidden.size(); ++i) {
            Scalar derivative;
            geluTanh<Scalar>(pre.data()[i], &derivative);
            dHidden.data()[i] *= derivative;
        }
        return;
    }
    dUp->resize(dHidden.rows(), dHidden.cols());
    for (Index i = 0; i < dHidden.size(); ++i) {
        Scalar derivative;
        const Scalar value = silu<Scalar>(pre.data()[i], &derivative);
        dUp->data()[i] = dHidden.data()[i] * value;
        dHidden.data()[i] *= up->data()[i] * derivative;
    }
}

template <typename Scalar>
RopeTable<Scalar> ropeTable(Index headDim, double theta, const RopeScaling& scaling, Index positions)
{
    RopeTable<Scalar> table;
    table.headDim = headDim;
    const std::vector<double> frequencies = ropeFrequencies(headDim, theta, scaling);
    const Index pairs = headDim / 2;
    table.cos.resize(positions, pairs);
    table.sin.resize(positions, pairs);
    for (Index p = 0; p < positions; ++p)
        for (Index r = 0; r < pairs; ++r) {
            const double angle = double(p) * frequencies[std::size_t(r)];
            table.cos(p, r) = Scalar(std::cos(angle));
            table.sin(p, r) = Scalar(std::sin(angle));
        }
    return table;
}

namespace {

template <typename Scalar>
void rotate(const RopeTable<Scalar>& table, const std::vector<Index>& positions, Index headCount,
            M<Scalar>& m, bool inverse)
{
    const Index dh = table.headDim, pairs = dh / 2;
    for (Index row = 0; row < m.rows(); ++row) {
        const Index position = positions[std::size_t(row)];
        Scalar* values = m.row(row).data();
        for (Index h = 0; h < headCount; ++h) {
            Scalar* head = values + h * dh;
            for (Index r = 0; r < pairs; ++r) {
                const Scalar c = table.cos(position, r);
                const Scalar s = inverse ? -table.sin(position, r) : table.sin(position, r);
                const Scalar x = head[r], y = head[r + pairs];
                head[r] = x * c - y * s;
                head[r + pairs] = x * s + y * c;
            }
        }
    }
}

} // namespace

template <typename Scalar>
void ropeForward(const RopeTable<Scalar>& table, const std::vector<Index>& positions, Index headCount,
                 M<Scalar>& m)
{
    rotate(table, positions, headCount, m, false);
}

template <typename Scalar>
void ropeBackward(const RopeTable<Scalar>& table, const std::vector<Index>& positions, Index headCount,
                  M<Scalar>& dm)
{
    rotate(table, positions, headCount, dm, true); // the rotation's transpose is its inverse
}

template <typename Scalar>
void attentionForward(const AttentionShape& shape, const Sequences& sequences, const M<Scalar>& q,
                      const M<Scalar>& k, const M<Scalar>& v, std::vector<M<Scalar>>& weights, M<Scalar>& z)
{
    const Index dh = shape.headDim, group = shape.groupSize();
    const auto scale = Scalar(1.0 / std::sqrt(double(dh)));
    z.resize(q.rows(), shape.heads * dh);
    weights.resize(std::size_t(sequences.count() * shape.heads));
    const bool softmax = shape.normalizer.type == NormalizerType::Softmax;
    parallelFor(sequences.count() * shape.heads, 1, [&](Index begin, Index end) {
        NormalizerScratch scratch;
        std::vector<double> scaled, out;
        std::vector<std::uint8_t> allowed;
        for (Index pair = begin; pair < end; ++pair) {
            const Index b = pair / shape.heads, h = pair % shape.heads;
            const Index first = sequences.offsets[std::size_t(b)], n = sequences.lengths[std::size_t(b)];
            allowed.assign(std::size_t(n), 1);
            const Index kvHead = h / group;
            const auto qh = q.block(first, h * dh, n, dh);
            const auto kh = k.block(first, kvHead * dh, n, dh);
            const auto vh = v.block(first, kvHead * dh, n, dh);
            M<Scalar>& w = weights[std::size_t(pair)];
            w.resize(n, n);
            multiplyOnThisThread<Scalar>(qh, kh, w, Operand::Transposed);
            w *= scale;
            for (Index i = 0; i < n; ++i) {
                // The keys row i sees: j ≤ i, and i − j < window with one.
                const Index from = shape.window > 0 ? std::max<Index>(0, i - shape.window + 1) : 0;
                Scalar* row = w.row(i).data();
                std::fill(row, row + from, Scalar(0));
                Scalar* seen = row + from;
                const Index count = i + 1 - from;
                if (softmax) {
                    const Scalar largest = *std::max_element(seen, seen + count);
                    Scalar sum = 0;
                    for (Index j = 0; j < count; ++j) {
                        seen[j] = std::exp(seen[j] - largest);
                        sum += seen[j];
                    }
                    const Scalar inverse = Scalar(1) / sum;
                    for (Index j = 0; j < count; ++j)
                        seen[j] *= inverse;
                } else {
                    scaled.assign(seen, seen + count);
                    out.resize(std::size_t(count));
                    normalizeRow(shape.normalizer, scaled.data(), allowed.data(), count, 1.0, out.data(),
                                 scratch);
                    for (Index j = 0; j < count; ++j)
                        seen[j] = Scalar(out[std::size_t(j)]);
                }
                std::fill(row + i + 1, row + n, Scalar(0));
            }
            multiplyOnThisThread<Scalar>(w, vh, z.block(first, h * dh, n, dh));
        }
    });
}

template <typename Scalar>
void patternBackward(const NormalizerSpec& normalizer, const M<Scalar>& weights, M<Scalar>& dw)
{
    // s_j = p_j^(2−α) on the support: the Jacobian of softmax (α = 1), sparsemax (α = 2) and α-entmax is
    // diag(s) − s sᵀ / Σs.
    const double alpha = normalizer.type == NormalizerType::Softmax     ? 1.0
                         : normalizer.type == NormalizerType::Sparsemax ? 2.0
                                                                        : normalizer.alpha;
    const Index n = weights.rows();
    thread_local std::vector<Scalar> s;
    for (Index i = 0; i < n; ++i) {
        Scalar* g = dw.row(i).data();
        const Scalar* p = weights.row(i).data();
        if (alpha == 1.0) {
            Scalar dot = 0;
            for (Index j = 0; j <= i; ++j)
                dot += p[j] * g[j];
            for (Index j = 0; j <= i; ++j)
                g[j] = p[j] * (g[j] - dot);
        } else {
            Scalar dot = 0, total = 0;
            s.resize(std::size_t(i + 1));
            for (Index j = 0; j <= i; ++j) {
                s[std::size_t(j)] =
                    p[j] > 0 ? (alpha == 2.0 ? Scalar(1) : Scalar(std::pow(p[j], 2.0 - alpha))) : Scalar(0);
                dot += s[std::size_t(j)] * g[j];
                total += s[std::size_t(j)];
            }
            for (Index j = 0; j <= i; ++j)
                g[j] = s[std::size_t(j)] * (g[j] - dot / total);
        }
        std::fill(g + i + 1, g + n, Scalar(0));
    }
}

template <typename Scalar>
void attentionBackward(const AttentionShape& shape, const Sequences& sequences, const M<Scalar>& q,
                       const M<Scalar>& k, const M<Scalar>& v, const std::vector<M<Scalar>>& weights,
                       const M<Scalar>& dz, M<Scalar>& dq, M<Scalar>& dk, M<Scalar>& dv,
                       const std::vector<M<Scalar>>* dPattern)
{
    const Index dh = shape.headDim, group = shape.groupSize();
    const auto scale = Scalar(1.0 / std::sqrt(double(dh)));
    dq.setZero(q.rows(), q.cols());
    dk.setZero(k.rows(), k.cols());
    dv.setZero(v.rows(), v.cols());
    parallelFor(sequences.count(), 1, [&](Index begin, Index end) {
        M<Scalar> dw, transposed, part;
        for (Index b = begin; b < end; ++b) {
            const Index first = sequences.offsets[std::size_t(b)], n = sequences.lengths[std::size_t(b)];
            for (Index h = 0; h < shape.heads; ++h) {
                const Index kvHead = h / group;
                const auto qh = q.block(first, h * dh, n, dh);
                const auto kh = k.block(first, kvHead * dh, n, dh);
                const auto vh = v.block(first, kvHead * dh, n, dh);
                const auto dzh = dz.block(first, h * dh, n, dh);
                const M<Scalar>& w = weights[std::size_t(b * shape.heads + h)];
                transposed = w.transpose();
                part.resize(n, dh);
                multiplyOnThisThread<Scalar>(transposed, dzh, part);
                dv.block(first, kvHead * dh, n, dh) += part;
                dw.resize(n, n);
                multiplyOnThisThread<Scalar>(dzh, vh, dw, Operand::Transposed);
                if (dPattern != nullptr)
                    dw += (*dPattern)[std::size_t(b * shape.heads + h)];
                patternBackward(shape.normalizer, w, dw);
                dw *= scale;
                multiplyOnThisThread<Scalar>(dw, kh, dq.block(first, h * dh, n, dh));
                transposed = dw.transpose();
                multiplyOnThisThread<Scalar>(transposed, qh, part);
                dk.block(first, kvHead * dh, n, dh) += part;
            }
        }
    });
}

template <typename Scalar> Scalar logSumExp(const Scalar* row, Index count)
{
    // Eigen's vectorized exp: a scalar one per entry was a tenth of a pass over GPT-2's vocabulary.
    const Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>> values(row, count);
    const Scalar top = values.maxCoeff();
    return top + std::log((values - top).exp().sum());
}

template <typename Scalar>
double crossEntropyForward(const M<Scalar>& logits, const std::vector<std::int64_t>& targets,
                           std::vector<double>* rowLosses, std::vector<double>* logNormalizers)
{
    const Index rows = logits.rows();
    std::vector<double> losses(std::size_t(rows), 0.0);
    if (logNormalizers != nullptr)
        logNormalizers->assign(std::size_t(rows), 0.0);
    parallelFor(rows, 1, [&](Index begin, Index end) {
        for (Index r = begin; r < end; ++r) {
            const std::int64_t target = targets[std::size_t(r)];
            if (target < 0 && logNormalizers == nullptr)
                continue;
            const Scalar normalizer = logSumExp(logits.row(r).data(), logits.cols());
            if (logNormalizers != nullptr)
                (*logNormalizers)[std::size_t(r)] = double(normalizer);
            if (target >= 0)
                losses[std::size_t(r)] = double(normalizer - logits(r, Index(target)));
        }
    });
    // Summed in row order: the same bits with any number of threads.
    double total = 0.0;
    Index count = 0;
    for (Index r = 0; r < rows; ++r)
        if (targets[std::size_t(r)] >= 0)
            total += losses[std::size_t(r)], ++count;
    if (rowLosses != nullptr)
        *rowLosses = std::move(losses);
    return count > 0 ? total / double(count) : 0.0;
}

template <typename Scalar>
void crossEntropyBackward(M<Scalar>& logits, const std::vector<std::int64_t>& targets)
{
    const auto count =
        Scalar(double(std::count_if(targets.begin(), targets.end(), [](std::int64_t t) { return t >= 0; })));
    for (Index r = 0; r < logits.rows(); ++r) {
        auto row = logits.row(r);
        const std::int64_t target = targets[std::size_t(r)];
        if (target < 0) {
            row.setZero();
            continue;
        }
        const Scalar largest = row.maxCoeff();
        row = (row.array() - largest).exp();
        row /= row.sum() * count;
        row(Index(target)) -= Scalar(1) / count;
    }
}

std::vector<std::int64_t> nextTokenTargets(const Sequences& sequences, const std::vector<std::int64_t>& ids)
{
    std::vector<std::int64_t> targets(std::size_t(sequences.rows), -1);
    for (std::size_t b = 0; b < sequences.lengths.size(); ++b)
        for (Index i = 0; i + 1 < sequences.lengths[b]; ++i)
            targets[std::size_t(sequences.offsets[b] + i)] = ids[std::size_t(sequences.offsets[b] + i + 1)];
    return targets;
}

#define QKV_BLOCKS(S)                                                                                        \
    template void product<S>(const M<S>&, const M<S>&, M<S>&);                                               \
    template void productTransposed<S>(const M<S>&, const M<S>&, M<S>&);                                     \
    template void addTransposedProduct<S>(const M<S>&, const M<S>&, M<S>&);                                  \
    template void embeddingForward<S>(const M<S>&, const std::vector<std::int64_t>&, M<S>&);                 \
    template void embeddingBackward<S>(const std::vector<std::int64_t>&, const M<S>&, M<S>&);                \
    template void positionsForward<S>(const M<S>&, const std::vector<Index>&, M<S>&);                        \
    template void positionsBackward<S>(const std::vector<Index>&, const M<S>&, M<S>&);                       \
    template void linearForward<S>(const M<S>&, const M<S>&, const M<S>*, M<S>&);                            \
    template void linearBackward<S>(const M<S>&, const M<S>&, const M<S>&, M<S>*, M<S>*, M<S>*, bool);       \
    template void normForward<S>(NormKind, const M<S>&, const ConstRowRef<S>&, const ConstRowRef<S>&,        \
                                 double, NormCache<S>&);                                                     \
    template void normBackward<S>(NormKind, const NormCache<S>&, const ConstRowRef<S>&, const M<S>&, M<S>&,  \
                                  M<S>*, M<S>*);                                                             \
    template void activationForward<S>(const M<S>&, const M<S>*, M<S>&);                                     \
    template void activationBackward<S>(const M<S>&, const M<S>*, M<S>&, M<S>*);                             \
    template RopeTable<S> ropeTable<S>(Index, double, const RopeScaling&, Index);                            \
    template void ropeForward<S>(const RopeTable<S>&, const std::vector<Index>&, Index, M<S>&);              \
    template void ropeBackward<S>(const RopeTable<S>&, const std::vector<Index>&, Index, M<S>&);             \
    template void attentionForward<S>(const AttentionShape&, const Sequences&, const M<S>&, const M<S>&,     \
                                      const M<S>&, std::vector<M<S>>&, M<S>&);                               \
    template void attentionBackward<S>(const AttentionShape&, const Sequences&, const M<S>&, const M<S>&,    \
                                       const M<S>&, const std::vector<M<S>>&, const M<S>&, M<S>&, M<S>&,     \
                                       M<S>&, const std::vector<M<S>>*);                                     \
    template void patternBackward<S>(const NormalizerSpec&, const M<S>&, M<S>&);                             \
    template S logSumExp<S>(const S*, Index);                                                                \
    template double crossEntropyForward<S>(const M<S>&, const std::vector<std::int64_t>&,                    \
                                           std::vector<double>*, std::vector<double>*);                      \
    template void crossEntropyBackward<S>(M<S>&, const std::vector<std::int64_t>&);
QKV_BLOCKS(double)
QKV_BLOCKS(float)

} // namespace qkv::transformer
