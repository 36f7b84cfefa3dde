// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The update rules, as PyTorch's optimizers apply them (docs/training.md): SGD, w ← w − lr·∇w, and
/// AdamW (torch.optim.AdamW with its defaults: β₁ 0.9, β₂ 0.999, ε 1e-8, weight decay 0.01, decoupled,
/// with bias correction), applied to every parameter; with the gradient clipped to a global norm and the
/// learning rate warmed up linearly, when asked.

#include "TrainingModel.h"

#include <cstdint>
#include <string>

namespace qkv::training {

enum class OptimizerKind { Sgd, AdamW };

/// "sgd", "adamw".
const char* toString(OptimizerKind kind);

struct OptimizerSettings {
    OptimizerKind kind = OptimizerKind::AdamW;
    double learningRate = 1e-3;
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weightDecay = 0.01;
    double clipNorm = 0.0;        ///< > 0: the gradient is scaled down to this global norm when above it
    std::int64_t warmupSteps = 0; ///< > 0: the rate rises linearly over this many steps (step s: lr·s/warmup)
};

/// Checks the settings; throws qkv::Error naming the option (--lr, --clip, --warmup, …).
void checkOptimizerSettings(const OptimizerSettings& settings);

/// An optimizer with its state (AdamW's moments and step count).
template <typename Scalar> class Optimizer {
public:
    Optimizer(OptimizerSettings settings, const Layout& layout);

    /// One update of `parameters` with `gradients` (which clipping may scale). Returns the learning rate
    /// used.
    double step(Tensors<Scalar>& parameters, Tensors<Scalar>& gradients);

    const OptimizerSettings& settings() const { return m_settings; }
    std::int64_t steps() const { return m_steps; }
    /// AdamW's first and second moments (empty for SGD) and its step count, to save and resume.
    const Tensors<Scalar>& firstMoments() const { return m_first; }
    const Tensors<Scalar>& secondMoments() const { return m_second; }
    void restore(std::int64_t steps, Tensors<Scalar> first, Tensors<Scalar> second);

private:
    OptimizerSettings m_settings;
    std::int64_t m_steps = 0;
    Tensors<Scalar> m_first, m_second;
};

} // namespace qkv::training
