// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The trainer's forward pass with its caches and the backward pass through it, derived by hand for the
/// blocks a model folder holds (docs/training.md): embeddings (and learned positions), per layer a pre-norm
/// (LayerNorm or RMSNorm) causal attention with RoPE or without, grouped-query heads, a softmax, sparsemax
/// or α-entmax normalizer and the output projection, an optional MLP (GELU in its tanh form, or SiLU-gated),
/// the final norm and the unembedding. The loss is the mean, over every sequence and every position but
/// the last, of −ln p(the next token): Hugging Face's causal language-model loss.
///
/// Float64 or float32 throughout (Scalar); sums of the loss are kept in double.

#include "TrainingModel.h"

#include <cstdint>
#include <vector>

namespace qkv::training {

/// A batch: B sequences of token ids, all of the same length n ≥ 2.
using Batch = std::vector<std::vector<std::int64_t>>;

template <typename Scalar> class Network {
public:
    Network(Architecture architecture, Layout layout);

    /// The forward pass on `batch` with `parameters`; returns the mean loss and keeps what backward()
    /// needs. Throws qkv::Error for an empty batch, sequences of different lengths or shorter than 2
    /// tokens, more tokens than the model's positions, and a token outside the vocabulary.
    double forward(const Tensors<Scalar>& parameters, const Batch& batch);

    /// The gradient of the last forward()'s loss with respect to every parameter, into `gradients`
    /// (resized and overwritten). `parameters` must be the ones forward() used.
    void backward(const Tensors<Scalar>& parameters, Tensors<Scalar>& gradients);

    /// The last forward()'s logits ((B·n) × vocabulary, row b·n + i for sequence b, position i), until
    /// backward() turns them into the loss's gradient.
    const MatrixOf<Scalar>& logits() const { return m_logits; }
    /// The loss at every position of the last forward() (B × (n − 1)).
    const Matrix& positionLosses() const { return m_positionLosses; }
    /// The attention weights (n × n) of sequence `sequence`, layer `layer`, query head `head` in the last
    /// forward().
    const MatrixOf<Scalar>& attention(Index sequence, Index layer, Index head) const;

    const Architecture& architecture() const { return m_architecture; }
    const Layout& layout() const { return m_layout; }

private:
    struct NormCache {
        MatrixOf<Scalar> normalized; // x̂ before the gain (and bias)
        Eigen::Matrix<Scalar, Eigen::Dynamic, 1> inverseRms;
        MatrixOf<Scalar> out;
    };
    struct LayerCache {
        NormCache norm1;
        MatrixOf<Scalar> q, k, v, z;
        std::vector<MatrixOf<Scalar>> weights; // per (sequence, head): n × n
        NormCache norm2;
        MatrixOf<Scalar> pre, up, activated; // the MLP's hidden values
    };

    void normForward(const MatrixOf<Scalar>& x, int gain, int bias, const Tensors<Scalar>& p,
                     NormCache& cache) const;
    void normBackward(const NormCache& cache, int gain, int bias, const Tensors<Scalar>& p,
                      const MatrixOf<Scalar>& dOut, MatrixOf<Scalar>& dx, Tensors<Scalar>& g) const;
    void attentionForward(LayerCache& cache) const;
    void attentionBackward(const LayerCache& cache, const MatrixOf<Scalar>& dz, MatrixOf<Scalar>& dq,
                           MatrixOf<Scalar>& dk, MatrixOf<Scalar>& dv) const;
    void rotate(MatrixOf<Scalar>& m, Index headCount, bool inverse) const;

    /// Buffers reused from step to step.
    struct Work {
        MatrixOf<Scalar> output, dh, dHidden, dNormed, dUp, dz, dq, dk, dv;
    };

    Architecture m_architecture;
    Layout m_layout;
    Batch m_batch;
    Index m_sequences = 0, m_length = 0;
    std::vector<LayerCache> m_layers;
    MatrixOf<Scalar> m_final; // the residual stream after the last layer
    NormCache m_finalNorm;
    MatrixOf<Scalar> m_logits;
    Matrix m_positionLosses;
    MatrixOf<Scalar> m_cos, m_sin; // RoPE: positions × head_dim/2
    Work m_work;
};

/// The loss of `batch` and its gradient (a Network built and used once).
template <typename Scalar>
double lossAndGradients(const Architecture& architecture, const Layout& layout,
                        const Tensors<Scalar>& parameters, const Batch& batch, Tensors<Scalar>& gradients);

/// The Euclidean norm of every tensor together.
template <typename Scalar> double globalNorm(const Tensors<Scalar>& tensors);

} // namespace qkv::training
