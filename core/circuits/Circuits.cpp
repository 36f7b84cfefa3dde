// SPDX-License-Identifier: GPL-3.0-or-later
#include "Circuits.h"

#include "Error.h"
#include "MatrixProduct.h"
#include "Model.h"
#include "Session.h"
#include "TrainingModel.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <algorithm>
#include <numeric>
#include <string>

namespace qkv {

namespace {

using DynamicMatrix = Eigen::MatrixXd; // column-major, as Eigen's decompositions prefer

void checkFinite(const Matrix& values, const std::string& what)
{
    if (!isAllFinite(values))
        throw Error(what + " is not finite: the weights overflow");
}

Eigenvalues sortedEigenvalues(const DynamicMatrix& square)
{
    const Eigen::EigenSolver<DynamicMatrix> solver(square, false);
    if (solver.info() != Eigen::Success)
        throw Error("the eigenvalues did not converge");
    Eigenvalues values(solver.eigenvalues().begin(), solver.eigenvalues().end());
    std::sort(values.begin(), values.end(), [](std::complex<double> a, std::complex<double> b) {
        if (std::abs(a) != std::abs(b))
            return std::abs(a) > std::abs(b);
        if (a.real() != b.real())
            return a.real() > b.real();
        return a.imag() > b.imag();
    });
    return values;
}

std::string rangeText(Index count)
{
    return count == 1 ? "0" : "0 to " + std::to_string(count - 1);
}

} // namespace

Matrix triangularFactor(const Matrix& a)
{
    const Eigen::HouseholderQR<DynamicMatrix> qr(a);
    const Index rank = std::min(a.rows(), a.cols());
    return qr.matrixQR().topRows(rank).triangularView<Eigen::Upper>();
}

Spectrum productSpectrum(const Matrix& a, const Matrix& b)
{
    const DynamicMatrix core = triangularFactor(a) * triangularFactor(b).transpose();
    Spectrum spectrum;
    spectrum.frobenius = core.norm();
    const Eigen::BDCSVD<DynamicMatrix> svd(core);
    const Eigen::VectorXd& values = svd.singularValues();
    spectrum.singularValues.assign(values.data(), values.data() + values.size());
    return spectrum;
}

double copyingScore(const Eigenvalues& eigenvalues)
{
    double real = 0, magnitude = 0;
    for (const std::complex<double>& value : eigenvalues) {
        real += value.real();
        magnitude += std::abs(value);
    }
    return magnitude > 0 ? real / magnitude : 0.0;
}

CircuitSpectra circuitSpectra(const HeadFactors& head)
{
    if (head.query.rows() != head.key.rows() || head.query.cols() != head.key.cols())
        throw Error("W_Q is " + std::to_string(head.query.rows()) + " × " +
                    std::to_string(head.query.cols()) + " and W_K " + std::to_string(head.key.rows()) +
                    " × " + std::to_string(head.key.cols()) + "; the QK circuit needs the same shape");
    if (head.output.size() > 0 && head.output.rows() != head.value.cols())
        throw Error("W_O has " + std::to_string(head.output.rows()) +
                    " rows for a head of d_v = " + std::to_string(head.value.cols()));
    for (const auto& [matrix, name] : {std::pair{&head.query, "W_Q"}, std::pair{&head.key, "W_K"},
                                       std::pair{&head.value, "W_V"}, std::pair{&head.output, "W_O"}})
        checkFinite(*matrix, name);
    CircuitSpectra spectra;
    spectra.qk = productSpectrum(head.query, head.key);
    if (head.output.size() > 0) {
        spectra.ov = productSpectrum(head.value, head.output.transpose());
        if (head.output.cols() == head.value.rows())
            spectra.ovEigenvalues = sortedEigenvalues(DynamicMatrix(head.output * head.value));
    }
    return spectra;
}

HeadFactors sessionHeadFactors(const Session& session, int head)
{
    if (head < 0 || head >= session.headCount())
        throw Error("head " + std::to_string(head) + " is out of range: the session has heads " +
                    rangeText(session.headCount()));
    const Head& h = session.heads[std::size_t(head)];
    HeadFactors factors{h.W_Q, h.W_K, h.W_V, {}};
    if (session.W_O)
        factors.output = session.W_O->middleRows(head * session.dV(), session.dV());
    return factors;
}

std::vector<TokenValue> largestEntries(const Eigen::Ref<const RowVector>& row, Index count)
{
    std::vector<std::int64_t> ids(std::size_t(row.size()));
    std::iota(ids.begin(), ids.end(), std::int64_t(0));
    const auto first = ids.begin() + std::min<Index>(std::max<Index>(count, 0), row.size());
    std::partial_sort(ids.begin(), first, ids.end(), [&row](std::int64_t a, std::int64_t b) {
        return row(a) != row(b) ? row(a) > row(b) : a < b;
    });
    std::vector<TokenValue> top;
    for (auto it = ids.begin(); it != first; ++it)
        top.push_back({*it, row(*it)});
    return top;
}

// ---- A model's heads -----------------------------------------------------------------------------------

ModelCircuits::ModelCircuits(const Model& model) : m_weights(training::sharedWeights<double>(model)) {}

Index ModelCircuits::layers() const
{
    return m_weights->architecture.layers;
}
Index ModelCircuits::heads() const
{
    return m_weights->architecture.heads;
}
Index ModelCircuits::vocabulary() const
{
    return m_weights->architecture.vocabSize;
}

void ModelCircuits::checkHead(Index layer, Index head) const
{
    if (layer < 0 || layer >= layers())
        throw Error("layer " + std::to_string(layer) + " is out of range: the model has layers " +
                    rangeText(layers()));
    if (head < 0 || head >= heads())
        throw Error("head " + std::to_string(head) + " is out of range: the model has heads " +
                    rangeText(heads()));
}

void ModelCircuits::checkIds(const std::vector<std::int64_t>& ids) const
{
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocabulary())
            throw Error("token " + std::to_string(i) + " (id " + std::to_string(ids[i]) +
                        ") is outside the vocabulary (" + rangeText(vocabulary()) + ")");
}

HeadFactors ModelCircuits::head(Index layer, Index head) const
{
    checkHead(layer, head);
    const training::Architecture& a = m_weights->architecture;
    const training::LayerSlots& s = m_weights->layout.layers[std::size_t(layer)];
    const training::Tensors<double>& p = m_weights->parameters;
    const Index dh = a.headDim, group = head / a.groupSize();
    const auto folded = [&](int slot, Index column) {
        Matrix side = p[std::size_t(slot)].middleCols(column * dh, dh);
        if (s.norm1 >= 0)
            side = p[std::size_t(s.norm1)].row(0).transpose().asDiagonal() * side;
        return side;
    };
    return {folded(s.q, head), folded(s.k, group), folded(s.v, group),
            p[std::size_t(s.o)].middleRows(head * dh, dh)};
}

Matrix ModelCircuits::embeddingRows(const std::vector<std::int64_t>& ids) const
{
    const Matrix& embedding = m_weights->parameters[std::size_t(m_weights->layout.embedding)];
    Matrix rows(Index(ids.size()), embedding.cols());
    for (std::size_t i = 0; i < ids.size(); ++i)
        rows.row(Index(i)) = embedding.row(Index(ids[i]));
    return rows;
}

Matrix ModelCircuits::outputToLogits(Index layer, Index head) const
{
    // logits = x·diag(γ_f)·W_U, read from the rows x that the head writes.
    const training::Layout& layout = m_weights->layout;
    const training::Tensors<double>& p = m_weights->parameters;
    Matrix written = this->head(layer, head).output;
    if (layout.finalNorm >= 0)
        written = written * p[std::size_t(layout.finalNorm)].row(0).asDiagonal();
    Matrix logits(written.rows(), vocabulary());
    if (layout.unembedding >= 0)
        multiply<double>(written, p[std::size_t(layout.unembedding)], logits);
    else
        multiply<double>(written, p[std::size_t(layout.embedding)], logits, Operand::Transposed);
    return logits;
}

FullOvCircuit ModelCircuits::fullOv(Index layer, Index head, const Matrix* toLogits) const
{
    // W_E·W_OV·W̃_U's nonzero eigenvalues are those of (W_O·W̃_U)·(W_E·W̃_V): d_h × d_h.
    const Matrix computed = toLogits ? Matrix() : outputToLogits(layer, head);
    const Matrix& written = toLogits ? *toLogits : computed;
    const Matrix& embedding = m_weights->parameters[std::size_t(m_weights->layout.embedding)];
    Matrix read(embedding.rows(), written.rows());
    multiply<double>(embedding, this->head(layer, head).value, read);
    Matrix square(written.rows(), written.rows());
    multiply<double>(written, read, square);
    checkFinite(square,
                "layer " + std::to_string(layer) + " head " + std::to_string(head) + "'s full OV circuit");
    FullOvCircuit circuit;
    circuit.eigenvalues = sortedEigenvalues(DynamicMatrix(square));
    circuit.copyingScore = copyingScore(circuit.eigenvalues);
    return circuit;
}

Matrix ModelCircuits::tokenQk(Index layer, Index head, const std::vector<std::int64_t>& ids) const
{
    checkHead(layer, head);
    checkIds(ids);
    const HeadFactors factors = this->head(layer, head);
    const Matrix rows = embeddingRows(ids);
    return (rows * factors.query) * (rows * factors.key).transpose();
}

std::vector<std::vector<TokenValue>> ModelCircuits::ovTop(Index layer, Index head,
                                                          const std::vector<std::int64_t>& ids, Index top,
                                                          const Matrix* toLogits) const
{
    checkHead(layer, head);
    checkIds(ids);
    const HeadFactors factors = this->head(layer, head);
    const Matrix z = embeddingRows(ids) * factors.value;
    Matrix logits(z.rows(), vocabulary());
    multiply<double>(z, toLogits ? *toLogits : outputToLogits(layer, head), logits);
    checkFinite(logits, "the OV circuit's logits");
    std::vector<std::vector<TokenValue>> tops;
    for (Index i = 0; i < logits.rows(); ++i)
        tops.push_back(largestEntries(logits.row(i), top));
    return tops;
}

std::vector<TokenValue> ModelCircuits::topKeys(Index layer, Index head, std::int64_t query, Index top) const
{
    checkHead(layer, head);
    checkIds({query});
    // W_E[query]·W̃_Q·W̃_Kᵀ is one row of d_model; every key token's score is its product with that row.
    const HeadFactors factors = this->head(layer, head);
    const Matrix sought = (embeddingRows({query}) * factors.query) * factors.key.transpose();
    Matrix scores(1, vocabulary());
    multiply<double>(sought, m_weights->parameters[std::size_t(m_weights->layout.embedding)], scores,
                     Operand::Transposed);
    checkFinite(scores, "the QK circuit's scores");
    return largestEntries(scores.row(0), top);
}

} // namespace qkv
