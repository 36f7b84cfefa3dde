// SPDX-License-Identifier: GPL-3.0-or-later
#include "Network.h"

#include "Error.h"
#include "MatrixProduct.h"
#include "Normalizers.h"
#include "Parallel.h"
#include "Positions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace qkv::training {

namespace {

constexpr double pi = 3.14159265358979323846;

template <typename Scalar> using M = MatrixOf<Scalar>;
template <typename Scalar> using RowOf = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>;

/// c = a · b.
template <typename Scalar> void product(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    c.resize(a.rows(), b.cols());
    multiply<Scalar>(a, b, c, Operand::AsIs);
}

/// c = a · bᵀ.
template <typename Scalar> void productTransposed(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    c.resize(a.rows(), b.rows());
    multiply<Scalar>(a, b, c, Operand::Transposed);
}

/// c += aᵀ · b: the gradient of a weight from its input a and its output's gradient b.
/// A work matrix of this thread for `use` and a shape, kept from step to step: one buffer resized from shape
/// to shape would be freed and mapped again each time, at a page fault per 4 KB.
template <typename Scalar> M<Scalar>& buffer(int use, Index rows, Index cols)
{
    thread_local std::map<std::tuple<int, Index, Index>, M<Scalar>> buffers;
    M<Scalar>& m = buffers[{use, rows, cols}];
    m.resize(rows, cols);
    return m;
}

template <typename Scalar> void addTransposedProduct(const M<Scalar>& a, const M<Scalar>& b, M<Scalar>& c)
{
    M<Scalar>& at = buffer<Scalar>(0, a.cols(), a.rows());
    at = a.transpose();
    M<Scalar>& result = buffer<Scalar>(1, a.cols(), b.cols());
    multiply<Scalar>(at, b, result, Operand::AsIs);
    c += result;
}

/// y = x · W (+ b).
template <typename Scalar>
void linear(const M<Scalar>& x, const Tensors<Scalar>& p, int weight, int bias, M<Scalar>& y)
{
    product(x, p[std::size_t(weight)], y);
    if (bias >= 0)
        y.rowwise() += RowOf<Scalar>(p[std::size_t(bias)]);
}

/// The weight's and bias's gradients of y = x · W + b, and dx = dy · Wᵀ (added to dx when `accumulate`).
template <typename Scalar>
void linearBackward(const M<Scalar>& x, const M<Scalar>& dy, const Tensors<Scalar>& p, int weight, int bias,
                    Tensors<Scalar>& g, M<Scalar>* dx, bool accumulate)
{
    addTransposedProduct(x, dy, g[std::size_t(weight)]);
    if (bias >= 0)
        g[std::size_t(bias)] += dy.colwise().sum();
    if (dx == nullptr)
        return;
    M<Scalar>& d = buffer<Scalar>(2, dy.rows(), p[std::size_t(weight)].rows());
    multiply<Scalar>(dy, p[std::size_t(weight)], d, Operand::Transposed);
    if (accumulate)
        *dx += d;
    else
        *dx = d;
}

/// GELU in its tanh form, written x / (1 + e^(−2u)) as the forward pass writes it, and its derivative.
template <typename Scalar> Scalar gelu(Scalar x, Scalar* derivative)
{
    const Scalar c = Scalar(std::sqrt(2.0 / pi)), a = Scalar(0.044715);
    const Scalar u = c * (x + a * x * x * x);
    const Scalar s = Scalar(1) / (Scalar(1) + std::exp(Scalar(-2) * u));
    if (derivative != nullptr)
        *derivative = s + x * s * (Scalar(1) - s) * Scalar(2) * c * (Scalar(1) + Scalar(3) * a * x * x);
    return x * s;
}

template <typename Scalar> Scalar silu(Scalar x, Scalar* derivative)
{
    const Scalar s = Scalar(1) / (Scalar(1) + std::exp(-x));
    if (derivative != nullptr)
        *derivative = s * (Scalar(1) + x * (Scalar(1) - s));
    return x * s;
}

} // namespace

template <typename Scalar>
Network<Scalar>::Network(Architecture architecture, Layout layout)
    : m_architecture(std::move(architecture)), m_layout(std::move(layout))
{
    const Architecture& a = m_architecture;
    if (a.family == ModelFamily::Llama) {
        const std::vector<double> frequencies = ropeFrequencies(a.headDim, a.ropeTheta, a.ropeScaling);
        const Index pairs = a.headDim / 2;
        m_cos.resize(a.positions, pairs);
        m_sin.resize(a.positions, pairs);
        for (Index p = 0; p < a.positions; ++p)
            for (Index r = 0; r < pairs; ++r) {
                const double angle = double(p) * frequencies[std::size_t(r)];
                m_cos(p, r) = Scalar(std::cos(angle));
                m_sin(p, r) = Scalar(std::sin(angle));
            }
    }
}

template <typename Scalar>
void Network<Scalar>::normForward(const M<Scalar>& x, int gain, int bias, const Tensors<Scalar>& p,
                                  NormCache& cache) const
{
    const bool layerNorm = m_architecture.family == ModelFamily::Gpt2;
    const Index rows = x.rows(), d = x.cols();
    cache.normalized.resize(rows, d);
    cache.inverseRms.resize(rows);
    cache.out.resize(rows, d);
    const auto epsilon = Scalar(m_architecture.epsilon);
    const auto g = p[std::size_t(gain)].row(0);
    for (Index i = 0; i < rows; ++i) {
        auto centred = cache.normalized.row(i);
        centred = x.row(i);
        if (layerNorm)
            centred.array() -= centred.mean();
        const Scalar r = Scalar(1) / std::sqrt(centred.squaredNorm() / Scalar(d) + epsilon);
        cache.inverseRms[i] = r;
        centred *= r;
        cache.out.row(i) = centred.cwiseProduct(g);
    }
    if (bias >= 0)
        cache.out.rowwise() += RowOf<Scalar>(p[std::size_t(bias)]);
}

template <typename Scalar>
void Network<Scalar>::normBackward(const NormCache& cache, int gain, int bias, const Tensors<Scalar>& p,
                                   const M<Scalar>& dOut, M<Scalar>& dx, Tensors<Scalar>& g) const
{
    const bool layerNorm = m_architecture.family == ModelFamily::Gpt2;
    const Index rows = dOut.rows(), d = dOut.cols();
    g[std::size_t(gain)] += dOut.cwiseProduct(cache.normalized).colwise().sum();
    if (bias >= 0)
        g[std::size_t(bias)] += dOut.colwise().sum();
    const auto gainRow = p[std::size_t(gain)].row(0);
    thread_local RowOf<Scalar> dNormalized;
    for (Index i = 0; i < rows; ++i) {
        dNormalized = dOut.row(i).cwiseProduct(gainRow);
        const Scalar projection = dNormalized.dot(cache.normalized.row(i)) / Scalar(d);
        const Scalar mean = layerNorm ? dNormalized.mean() : Scalar(0);
        dx.row(i).array() +=
            cache.inverseRms[i] * (dNormalized.array() - projection * cache.normalized.row(i).array() - mean);
    }
}

template <typename Scalar> void Network<Scalar>::rotate(M<Scalar>& m, Index headCount, bool inverse) const
{
    const Index dh = m_architecture.headDim, pairs = dh / 2;
    for (Index row = 0; row < m.rows(); ++row) {
        const Index position = row % m_length;
        Scalar* values = m.row(row).data();
        for (Index h = 0; h < headCount; ++h) {
            Scalar* head = values + h * dh;
            for (Index r = 0; r < pairs; ++r) {
                const Scalar c = m_cos(position, r), s = inverse ? -m_sin(position, r) : m_sin(position, r);
                const Scalar x = head[r], y = head[r + pairs];
                head[r] = x * c - y * s;
                head[r + pairs] = x * s + y * c;
            }
        }
    }
}

template <typename Scalar> void Network<Scalar>::attentionForward(LayerCache& cache) const
{
    const Architecture& a = m_architecture;
    const Index n = m_length, dh = a.headDim, group = a.groupSize();
    const auto scale = Scalar(1.0 / std::sqrt(double(dh)));
    cache.z.resize(cache.q.rows(), a.heads * dh);
    cache.weights.resize(std::size_t(m_sequences * a.heads));
    const bool softmax = a.normalizer.type == NormalizerType::Softmax;
    parallelFor(m_sequences, 1, [&](Index begin, Index end) {
        NormalizerScratch scratch;
        std::vector<double> scaled, out;
        const std::vector<std::uint8_t> allowed(std::size_t(n), 1);
        for (Index b = begin; b < end; ++b)
            for (Index h = 0; h < a.heads; ++h) {
                const Index kvHead = h / group;
                const auto q = cache.q.block(b * n, h * dh, n, dh);
                const auto k = cache.k.block(b * n, kvHead * dh, n, dh);
                const auto v = cache.v.block(b * n, kvHead * dh, n, dh);
                M<Scalar>& w = cache.weights[std::size_t(b * a.heads + h)];
                w.resize(n, n);
                multiplyOnThisThread<Scalar>(q, k, w, Operand::Transposed);
                w *= scale;
                for (Index i = 0; i < n; ++i) {
                    Scalar* row = w.row(i).data();
                    if (softmax) {
                        const Scalar largest = *std::max_element(row, row + i + 1);
                        Scalar sum = 0;
                        for (Index j = 0; j <= i; ++j) {
                            row[j] = std::exp(row[j] - largest);
                            sum += row[j];
                        }
                        const Scalar inverse = Scalar(1) / sum;
                        for (Index j = 0; j <= i; ++j)
                            row[j] *= inverse;
                    } else {
                        scaled.assign(row, row + i + 1);
                        out.resize(std::size_t(i + 1));
                        normalizeRow(a.normalizer, scaled.data(), allowed.data(), i + 1, 1.0, out.data(),
                                     scratch);
                        for (Index j = 0; j <= i; ++j)
                            row[j] = Scalar(out[std::size_t(j)]);
                    }
                    std::fill(row + i + 1, row + n, Scalar(0));
                }
                multiplyOnThisThread<Scalar>(w, v, cache.z.block(b * n, h * dh, n, dh));
            }
    });
}

template <typename Scalar>
void Network<Scalar>::attentionBackward(const LayerCache& cache, const M<Scalar>& dz, M<Scalar>& dq,
                                        M<Scalar>& dk, M<Scalar>& dv) const
{
    const Architecture& a = m_architecture;
    const Index n = m_length, dh = a.headDim, group = a.groupSize();
    const auto scale = Scalar(1.0 / std::sqrt(double(dh)));
    dq.setZero(cache.q.rows(), cache.q.cols());
    dk.setZero(cache.k.rows(), cache.k.cols());
    dv.setZero(cache.v.rows(), cache.v.cols());
    // s_j = p_j^(2−α) on the support: the Jacobian of softmax (α = 1), sparsemax (α = 2) and α-entmax is
    // diag(s) − s sᵀ / Σs.
    const double alpha = a.normalizer.type == NormalizerType::Softmax     ? 1.0
                         : a.normalizer.type == NormalizerType::Sparsemax ? 2.0
                                                                          : a.normalizer.alpha;
    parallelFor(m_sequences, 1, [&](Index begin, Index end) {
        M<Scalar> dw, s, transposed, product;
        for (Index b = begin; b < end; ++b)
            for (Index h = 0; h < a.heads; ++h) {
                const Index kvHead = h / group;
                const auto q = cache.q.block(b * n, h * dh, n, dh);
                const auto k = cache.k.block(b * n, kvHead * dh, n, dh);
                const auto v = cache.v.block(b * n, kvHead * dh, n, dh);
                const auto dzh = dz.block(b * n, h * dh, n, dh);
                const M<Scalar>& w = cache.weights[std::size_t(b * a.heads + h)];
                transposed = w.transpose();
                product.resize(n, dh);
                multiplyOnThisThread<Scalar>(transposed, dzh, product);
                dv.block(b * n, kvHead * dh, n, dh) += product;
                dw.resize(n, n);
                multiplyOnThisThread<Scalar>(dzh, v, dw, Operand::Transposed);
                for (Index i = 0; i < n; ++i) {
                    Scalar* g = dw.row(i).data();
                    const Scalar* p = w.row(i).data();
                    if (alpha == 1.0) {
                        Scalar dot = 0;
                        for (Index j = 0; j <= i; ++j)
                            dot += p[j] * g[j];
                        for (Index j = 0; j <= i; ++j)
                            g[j] = p[j] * (g[j] - dot);
                    } else {
                        Scalar dot = 0, total = 0;
                        s.resize(1, i + 1);
                        for (Index j = 0; j <= i; ++j) {
                            s(0, j) = p[j] > 0
                                          ? (alpha == 2.0 ? Scalar(1) : Scalar(std::pow(p[j], 2.0 - alpha)))
                                          : Scalar(0);
                            dot += s(0, j) * g[j];
                            total += s(0, j);
                        }
                        for (Index j = 0; j <= i; ++j)
                            g[j] = s(0, j) * (g[j] - dot / total);
                    }
                    std::fill(g + i + 1, g + n, Scalar(0));
                }
                dw *= scale;
                multiplyOnThisThread<Scalar>(dw, k, dq.block(b * n, h * dh, n, dh));
                transposed = dw.transpose();
                multiplyOnThisThread<Scalar>(transposed, q, product);
                dk.block(b * n, kvHead * dh, n, dh) += product;
            }
    });
}

template <typename Scalar> double Network<Scalar>::forward(const Tensors<Scalar>& p, const Batch& batch)
{
    const Architecture& a = m_architecture;
    const Layout& layout = m_layout;
    if (batch.empty())
        throw Error("a batch needs at least one sequence");
    const Index n = Index(batch.front().size());
    for (std::size_t b = 0; b < batch.size(); ++b) {
        if (Index(batch[b].size()) != n)
            throw Error("the sequences of a batch must have the same length (sequence " + std::to_string(b) +
                        " has " + std::to_string(batch[b].size()) + " tokens, the first " +
                        std::to_string(n) + ")");
        for (std::int64_t id : batch[b])
            if (id < 0 || id >= a.vocab)
                throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                            std::to_string(a.vocab - 1) + ")");
    }
    if (n < 2)
        throw Error("a sequence needs at least 2 tokens to have a next token to predict");
    if (n > a.positions)
        throw Error("sequences of " + std::to_string(n) + " tokens are longer than the model's " +
                    std::to_string(a.positions) + " positions");
    m_batch = batch;
    m_sequences = Index(batch.size());
    m_length = n;
    const Index rows = m_sequences * n;
    M<Scalar>& h = m_final;
    h.resize(rows, a.dModel);
    for (Index b = 0; b < m_sequences; ++b)
        for (Index i = 0; i < n; ++i) {
            h.row(b * n + i) = p[std::size_t(layout.embedding)].row(batch[std::size_t(b)][std::size_t(i)]);
            if (layout.positions >= 0)
                h.row(b * n + i) += p[std::size_t(layout.positions)].row(i);
        }
    m_layers.resize(std::size_t(a.layers));
    for (Index l = 0; l < a.layers; ++l) {
        const LayerSlots& s = layout.layers[std::size_t(l)];
        LayerCache& c = m_layers[std::size_t(l)];
        normForward(h, s.norm1, s.norm1Bias, p, c.norm1);
        linear(c.norm1.out, p, s.q, s.qBias, c.q);
        linear(c.norm1.out, p, s.k, s.kBias, c.k);
        linear(c.norm1.out, p, s.v, s.vBias, c.v);
        if (a.family == ModelFamily::Llama) {
            rotate(c.q, a.heads, false);
            rotate(c.k, a.kvHeads, false);
        }
        attentionForward(c);
        linear(c.z, p, s.o, s.oBias, m_work.output);
        h += m_work.output;
        if (!a.hasMlp())
            continue;
        normForward(h, s.norm2, s.norm2Bias, p, c.norm2);
        if (a.family == ModelFamily::Gpt2) {
            linear(c.norm2.out, p, s.up, s.upBias, c.pre);
            c.activated = c.pre.unaryExpr([](Scalar x) { return gelu<Scalar>(x, nullptr); });
        } else {
            linear(c.norm2.out, p, s.gate, s.gateBias, c.pre);
            linear(c.norm2.out, p, s.up, s.upBias, c.up);
            c.activated =
                c.pre.unaryExpr([](Scalar x) { return silu<Scalar>(x, nullptr); }).cwiseProduct(c.up);
        }
        linear(c.activated, p, s.down, s.downBias, m_work.output);
        h += m_work.output;
    }
    normForward(m_final, layout.finalNorm, layout.finalNormBias, p, m_finalNorm);
    if (layout.unembedding >= 0)
        product(m_finalNorm.out, p[std::size_t(layout.unembedding)], m_logits);
    else
        productTransposed(m_finalNorm.out, p[std::size_t(layout.embedding)], m_logits);
    m_positionLosses.resize(m_sequences, n - 1);
    double total = 0.0;
    for (Index b = 0; b < m_sequences; ++b)
        for (Index i = 0; i + 1 < n; ++i) {
            const auto row = m_logits.row(b * n + i);
            const Scalar largest = row.maxCoeff();
            const Scalar sum = (row.array() - largest).exp().sum();
            const Scalar target = row(batch[std::size_t(b)][std::size_t(i + 1)]);
            const double loss = double(std::log(sum) + largest - target);
            m_positionLosses(b, i) = loss;
            total += loss;
        }
    return total / double(m_sequences * (n - 1));
}

template <typename Scalar>
const MatrixOf<Scalar>& Network<Scalar>::attention(Index sequence, Index layer, Index head) const
{
    return m_layers[std::size_t(layer)].weights[std::size_t(sequence * m_architecture.heads + head)];
}

template <typename Scalar> void Network<Scalar>::backward(const Tensors<Scalar>& p, Tensors<Scalar>& g)
{
    const Architecture& a = m_architecture;
    const Layout& layout = m_layout;
    const Index n = m_length, rows = m_sequences * n;
    if (g.size() != layout.tensors.size())
        g = zeroTensors<Scalar>(layout);
    else
        for (auto& t : g)
            t.setZero();
    // The loss's gradient with respect to the logits: (softmax − one-hot) / count, 0 at each last position.
    M<Scalar>& dLogits = m_logits;
    const auto count = Scalar(double(m_sequences * (n - 1)));
    for (Index b = 0; b < m_sequences; ++b)
        for (Index i = 0; i < n; ++i) {
            auto row = dLogits.row(b * n + i);
            if (i + 1 == n) {
                row.setZero();
                continue;
            }
            const Scalar largest = row.maxCoeff();
            row = (row.array() - largest).exp();
            row /= row.sum() * count;
            row(m_batch[std::size_t(b)][std::size_t(i + 1)]) -= Scalar(1) / count;
        }
    Work& w = m_work;
    M<Scalar>& dFinal = w.dNormed;
    if (layout.unembedding >= 0) {
        addTransposedProduct(m_finalNorm.out, dLogits, g[std::size_t(layout.unembedding)]);
        productTransposed(dLogits, p[std::size_t(layout.unembedding)], dFinal);
    } else {
        addTransposedProduct(dLogits, m_finalNorm.out, g[std::size_t(layout.embedding)]);
        product(dLogits, p[std::size_t(layout.embedding)], dFinal);
    }
    M<Scalar>& dh = w.dh;
    dh.setZero(rows, a.dModel);
    normBackward(m_finalNorm, layout.finalNorm, layout.finalNormBias, p, dFinal, dh, g);
    M<Scalar>&dHidden = w.dHidden, &dNormed = w.dNormed, &dUp = w.dUp;
    for (Index l = a.layers - 1; l >= 0; --l) {
        const LayerSlots& s = layout.layers[std::size_t(l)];
        const LayerCache& c = m_layers[std::size_t(l)];
        if (a.hasMlp()) {
            linearBackward(c.activated, dh, p, s.down, s.downBias, g, &dHidden, false);
            if (a.family == ModelFamily::Gpt2) {
                for (Index i = 0; i < dHidden.size(); ++i) {
                    Scalar derivative;
                    gelu<Scalar>(c.pre.data()[i], &derivative);
                    dHidden.data()[i] *= derivative;
                }
                linearBackward(c.norm2.out, dHidden, p, s.up, s.upBias, g, &dNormed, false);
            } else {
                dUp.resize(dHidden.rows(), dHidden.cols());
                for (Index i = 0; i < dHidden.size(); ++i) {
                    Scalar derivative;
                    const Scalar value = silu<Scalar>(c.pre.data()[i], &derivative);
                    dUp.data()[i] = dHidden.data()[i] * value;
                    dHidden.data()[i] *= c.up.data()[i] * derivative;
                }
                linearBackward(c.norm2.out, dHidden, p, s.gate, s.gateBias, g, &dNormed, false);
                linearBackward(c.norm2.out, dUp, p, s.up, s.upBias, g, &dNormed, true);
            }
            normBackward(c.norm2, s.norm2, s.norm2Bias, p, dNormed, dh, g);
        }
        M<Scalar>&dz = w.dz, &dq = w.dq, &dk = w.dk, &dv = w.dv;
        linearBackward(c.z, dh, p, s.o, s.oBias, g, &dz, false);
        attentionBackward(c, dz, dq, dk, dv);
        if (a.family == ModelFamily::Llama) {
            rotate(dq, a.heads, true);
            rotate(dk, a.kvHeads, true);
        }
        linearBackward(c.norm1.out, dq, p, s.q, s.qBias, g, &dNormed, false);
        linearBackward(c.norm1.out, dk, p, s.k, s.kBias, g, &dNormed, true);
        linearBackward(c.norm1.out, dv, p, s.v, s.vBias, g, &dNormed, true);
        normBackward(c.norm1, s.norm1, s.norm1Bias, p, dNormed, dh, g);
    }
    for (Index b = 0; b < m_sequences; ++b)
        for (Index i = 0; i < n; ++i) {
            g[std::size_t(layout.embedding)].row(m_batch[std::size_t(b)][std::size_t(i)]) +=
                dh.row(b * n + i);
            if (layout.positions >= 0)
                g[std::size_t(layout.positions)].row(i) += dh.row(b * n + i);
        }
}

template <typename Scalar>
double lossAndGradients(const Architecture& architecture, const Layout& layout,
                        const Tensors<Scalar>& parameters, const Batch& batch, Tensors<Scalar>& gradients)
{
    Network<Scalar> network(architecture, layout);
    const double loss = network.forward(parameters, batch);
    network.backward(parameters, gradients);
    return loss;
}

template <typename Scalar> double globalNorm(const Tensors<Scalar>& tensors)
{
    double sum = 0.0;
    for (const auto& t : tensors)
        sum += t.template cast<double>().squaredNorm();
    return std::sqrt(sum);
}

template class Network<double>;
template class Network<float>;
template double lossAndGradients<double>(const Architecture&, const Layout&, const Tensors<double>&,
                                         const Batch&, Tensors<double>&);
template double lossAndGradients<float>(const Architecture&, const Layout&, const Tensors<float>&,
                                        const Batch&, Tensors<float>&);
template double globalNorm<double>(const Tensors<double>&);
template double globalNorm<float>(const Tensors<float>&);

} // namespace qkv::training
