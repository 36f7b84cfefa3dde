// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Why a head attends where it does, and what it writes (docs/circuits.md; Elhage et al., "A Mathematical
/// Framework for Transformer Circuits"): the QK circuit W_QK = W_Q·W_Kᵀ and the OV circuit W_OV = W_V·W_O of
/// one head, their spectra, the full circuits through the vocabulary and the copying score.
///
/// Everything is computed from the factors: singular values from the R factors of the two sides' QR
/// decompositions (the nonzero singular values of A·Bᵀ are those of R_A·R_Bᵀ), eigenvalues from the small
/// product taken the other way round (the nonzero eigenvalues of A·B are those of B·A). No d × d or V × V
/// matrix is formed.

#include "EigenTypes.h"

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace qkv {

class Model;
struct Session;

namespace training {
template <typename Scalar> struct Weights;
}

/// One head's matrices, in y = x·W orientation: W_Q and W_K (d × d_h), W_V (d × d_v), W_O (d_v × d_out, or
/// empty when the head has none). A model's head comes folded: each input side times diag(γ) of its norm.
struct HeadFactors {
    Matrix query, key, value, output;
};

/// The singular values of a product (descending) and its Frobenius norm.
struct Spectrum {
    std::vector<double> singularValues;
    double frobenius = 0;
};

/// Eigenvalues listed by |λ| descending (then by real part, then imaginary part, descending).
using Eigenvalues = std::vector<std::complex<double>>;

/// What a head's weights alone say: the QK circuit's spectrum; the OV circuit's spectrum when the head has
/// W_O, and its eigenvalues when W_O writes back into the space W_V reads (d_out = d).
struct CircuitSpectra {
    Spectrum qk;
    std::optional<Spectrum> ov;
    Eigenvalues ovEigenvalues;
};

/// Throws qkv::Error when the factors' shapes do not fit together or a result is not finite.
CircuitSpectra circuitSpectra(const HeadFactors& head);

/// The singular values and norm of a·bᵀ (a: r × k, b: c × k), from the R factors of a and b.
Spectrum productSpectrum(const Matrix& a, const Matrix& b);
/// The upper-triangular R of a's thin QR decomposition (min(rows, cols) × cols): ‖a·M‖ = ‖R·M‖ for any M.
Matrix triangularFactor(const Matrix& a);
/// Σ Re λ / Σ |λ| (0 when every λ is 0).
double copyingScore(const Eigenvalues& eigenvalues);

/// A session's head as it holds it, nothing folded (W_O's rows of that head, when the session has W_O).
HeadFactors sessionHeadFactors(const Session& session, int head);

/// A token and a value of it (a logit, a score), for the top lists.
struct TokenValue {
    std::int64_t id = 0;
    double value = 0;
};

/// The full OV circuit W_E·W_OV·W̃_U: its d_h nonzero eigenvalues and the copying score.
struct FullOvCircuit {
    Eigenvalues eigenvalues;
    double copyingScore = 0;
};

/// An open model's heads as circuits, over its weights in float64 (read once and shared with every other
/// user of the model, training::sharedWeights).
class ModelCircuits {
public:
    /// Throws qkv::Error as sharedWeights does.
    explicit ModelCircuits(const Model& model);

    Index layers() const;
    Index heads() const;
    Index vocabulary() const;

    /// The folded factors of query head `head` of `layer` (its grouped key/value head's W_K and W_V). Throws
    /// qkv::Error for a layer or head out of range, naming it and the model's counts.
    HeadFactors head(Index layer, Index head) const;
    /// W_O·diag(γ_f)·W_U: d_h × V, what one unit of the head's z writes into each logit. The costly half of
    /// fullOv and ovTop (d_h·d·V products): pass it to both when both are wanted.
    Matrix outputToLogits(Index layer, Index head) const;
    FullOvCircuit fullOv(Index layer, Index head, const Matrix* toLogits = nullptr) const;

    /// W_E[ids[i]]·W_QK·W_E[ids[j]]ᵀ for every i, j (n × n). Throws for an id outside the vocabulary.
    Matrix tokenQk(Index layer, Index head, const std::vector<std::int64_t>& ids) const;
    /// For each id, the `top` largest entries of W_E[id]·W_OV·W̃_U: what attending to it writes into the
    /// logits; ties by id.
    std::vector<std::vector<TokenValue>> ovTop(Index layer, Index head, const std::vector<std::int64_t>& ids,
                                               Index top, const Matrix* toLogits = nullptr) const;
    /// The `top` keys of the vocabulary a token as query seeks most: the largest W_E[query]·W_QK·W_E[v]ᵀ.
    std::vector<TokenValue> topKeys(Index layer, Index head, std::int64_t query, Index top) const;

    const training::Weights<double>& weights() const { return *m_weights; }

private:
    void checkHead(Index layer, Index head) const;
    void checkIds(const std::vector<std::int64_t>& ids) const;
    Matrix embeddingRows(const std::vector<std::int64_t>& ids) const;

    std::shared_ptr<const training::Weights<double>> m_weights;
};

/// The `count` largest entries of a row, by value descending, ties by id.
std::vector<TokenValue> largestEntries(const Eigen::Ref<const RowVector>& row, Index count);

} // namespace qkv
