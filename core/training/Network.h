// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The trainer's forward pass with its caches and the backward pass through it, derived by hand for the
/// blocks a model folder holds (docs/training.md): embeddings (and learned positions), per layer a pre-norm
/// (LayerNorm or RMSNorm) causal attention with RoPE or without, grouped-query heads, a softmax, sparsemax
/// or α-entmax normalizer and the output projection, an optional MLP (GELU in its tanh form, or SiLU-gated),
/// the final norm and the unembedding, each computed by the blocks of core/transformer (Blocks.h). The loss
/// is the mean, over every sequence and every position but its last, of −ln p(the next token): Hugging
/// Face's causal language-model loss.
///
/// Float64 or float32 throughout (Scalar); sums of the loss are kept in double.

#include "Blocks.h"
#include "HookPoints.h"
#include "TrainingModel.h"

#include <cstdint>
#include <vector>

namespace qkv::training {

/// A batch: B sequences of token ids, each of at least 2 tokens; their lengths may differ (a ragged batch
/// is what Hugging Face computes on a right-padded batch whose padding is labelled −100).
using Batch = std::vector<std::vector<std::int64_t>>;

using transformer::ActivationCache;
using transformer::HookRequest;
using transformer::Objective;

/// The transformer of core/transformer/Blocks.h over a parameter list: forward with its caches, backward
/// to every parameter, and, over one sequence, any hook kept, replaced, restarted from and differentiated
/// to (HookPoints.h).
template <typename Scalar> class Network {
public:
    Network(Architecture architecture, Layout layout);

    /// The forward pass on `batch` with `parameters`; returns the mean loss (over every sequence's
    /// positions but its last) and keeps what backward() needs. With `hooks` (one sequence only), the
    /// hooks named are kept (cache()) and the replacements applied (a one-token sequence is then allowed:
    /// its loss is 0). Throws qkv::Error for an empty batch, a sequence shorter than 2 tokens (1 with hooks)
    /// or longer than the model's positions, a token outside the
    /// vocabulary, an unknown hook name or a replacement of the wrong shape (naming the hook and shapes).
    double forward(const Tensors<Scalar>& parameters, const Batch& batch, const HookRequest* hooks = nullptr);

    /// The same run as forward(parameters, batch of the last forward, hooks), computed from the first layer
    /// the replacements change: the layers below are the last forward()'s (never an earlier restart's), so
    /// restarts may follow one another in any order.
    double restart(const Tensors<Scalar>& parameters, const HookRequest& hooks);

    /// A run of one sequence `ids` from layer `from`, given `stream`, the stream entering that layer (n ×
    /// d_model, as an earlier run kept it at blocks.L.hook_resid_pre): what several threads each compute on
    /// a network of their own from one shared run. `hooks` may not change a layer below `from`; no gradients
    /// follow it, and attention() of a layer below `from` is not this run's.
    double runFrom(const Tensors<Scalar>& parameters, const std::vector<std::int64_t>& ids, Index from,
                   const MatrixOf<Scalar>& stream, const HookRequest& hooks);

    /// The gradient of the last forward()'s loss with respect to every parameter, into `gradients`
    /// (resized and overwritten). `parameters` must be the ones forward() used.
    void backward(const Tensors<Scalar>& parameters, Tensors<Scalar>& gradients);

    /// The gradient of `objective` (a scalar of the last forward's logits, one sequence) with respect to
    /// every hook (all of them when `names` is empty), as if each were an input of the run: through the
    /// replaced values, not into what they replaced. Parameter gradients into `gradients` when not null.
    ActivationCache hookGradients(const Tensors<Scalar>& parameters, const Objective& objective,
                                  const std::vector<std::string>& names = {},
                                  Tensors<Scalar>* gradients = nullptr);

    /// The stream entering every layer and after the last, as the last forward() computed it (one sequence,
    /// run to the end).
    const std::vector<MatrixOf<Scalar>>& forwardStream() const { return m_forwardStream; }
    /// The hooks the last forward kept.
    const ActivationCache& cache() const { return m_cache; }
    /// The last forward()'s logits (rows × vocabulary, sequences one after another; 1 × vocabulary after a
    /// run with oneLogitsRow), until backward() turns them into the loss's gradient.
    const MatrixOf<Scalar>& logits() const { return m_logits; }
    /// ln Σ exp of every row of the last run's logits (none after a run with oneLogitsRow).
    const std::vector<double>& logNormalizers() const { return m_logNormalizers; }
    /// The loss at every position of the last forward() (B × (longest − 1); 0 past a sequence's end).
    const Matrix& positionLosses() const { return m_positionLosses; }
    /// The attention weights (n × n) of sequence `sequence`, layer `layer`, query head `head` in the last
    /// forward().
    const MatrixOf<Scalar>& attention(Index sequence, Index layer, Index head) const;

    const Architecture& architecture() const { return m_architecture; }
    const Layout& layout() const { return m_layout; }

private:
    using NormCache = transformer::NormCache<Scalar>;
    struct LayerCache {
        MatrixOf<Scalar> residPre;
        NormCache norm1;
        MatrixOf<Scalar> q, k, v, z;
        std::vector<MatrixOf<Scalar>> weights; // per (sequence, head): n × n
        MatrixOf<Scalar> residMid;
        NormCache norm2;
        MatrixOf<Scalar> pre, up, activated; // the MLP's hidden values
    };
    struct Hooks;

    void checkBatch(const Batch& batch, bool hooked) const;
    void setBatch(const Batch& batch);
    void checkDifferentiable() const;
    double run(const Tensors<Scalar>& p, Index fromLayer, Hooks* hooks);
    void runLayer(const Tensors<Scalar>& p, Index l, MatrixOf<Scalar>& h, Hooks* hooks);
    void mlpBackward(const Tensors<Scalar>& p, Tensors<Scalar>* g, Index l, MatrixOf<Scalar>& dResid);
    void unembeddingBackwardRows(const Tensors<Scalar>& p, const MatrixOf<Scalar>& dLogits,
                                 MatrixOf<Scalar>& dFinal) const;
    void backwardFrom(const Tensors<Scalar>& p, Tensors<Scalar>* g, ActivationCache* hookGrads,
                      const std::vector<std::string>& names);
    transformer::NormKind normKind() const;

    Architecture m_architecture;
    Layout m_layout;
    Batch m_batch;
    std::vector<std::int64_t> m_ids, m_targets; // every row's id and next-token target (−1: none)
    transformer::Sequences m_sequences;
    std::vector<Index> m_positions;
    std::vector<LayerCache> m_layers;
    MatrixOf<Scalar> m_embedded;
    MatrixOf<Scalar> m_final; // the residual stream after the last layer
    // The stream entering every layer and after the last, as the last forward() left it (one sequence).
    std::vector<MatrixOf<Scalar>> m_forwardStream;
    NormCache m_finalNorm;
    MatrixOf<Scalar> m_logits;
    MatrixOf<Scalar> m_lastNormed; // the last row of the final norm's output, for oneLogitsRow
    Matrix m_positionLosses;
    std::vector<double> m_logNormalizers;
    transformer::RopeTable<Scalar> m_rope;
    HookRequest m_hooks;       // the last forward's
    Index m_firstRunLayer = 0; // the last run's first layer (runFrom)
    ActivationCache m_cache;
    MatrixOf<Scalar> m_dz, m_dq, m_dk, m_dv, m_dHidden, m_dNormed, m_dUp, m_output;
};

/// The loss of `batch` and its gradient (a Network built and used once).
template <typename Scalar>
double lossAndGradients(const Architecture& architecture, const Layout& layout,
                        const Tensors<Scalar>& parameters, const Batch& batch, Tensors<Scalar>& gradients);

/// The Euclidean norm of every tensor together.
template <typename Scalar> double globalNorm(const Tensors<Scalar>& tensors);

} // namespace qkv::training
