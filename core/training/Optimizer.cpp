// SPDX-License-Identifier: GPL-3.0-or-later
#include "Optimizer.h"

#include "Error.h"
#include "Network.h"

#include <cmath>

namespace qkv::training {

const char* toString(OptimizerKind kind)
{
    return kind == OptimizerKind::Sgd ? "sgd" : "adamw";
}

void checkOptimizerSettings(const OptimizerSettings& s)
{
    if (!(s.learningRate > 0.0) || !std::isfinite(s.learningRate) || s.learningRate > 100.0)
        throw Error("--lr: expected a learning rate above 0 and at most 100");
    if (!(s.clipNorm >= 0.0) || !std::isfinite(s.clipNorm))
        throw Error("--clip: expected a gradient norm of 0 (no clipping) or more");
    if (s.warmupSteps < 0)
        throw Error("--warmup: expected 0 or more steps");
    if (!(s.weightDecay >= 0.0) || !std::isfinite(s.weightDecay))
        throw Error("--weight-decay: expected 0 or more");
}

template <typename Scalar>
Optimizer<Scalar>::Optimizer(OptimizerSettings settings, const Layout& layout) : m_settings(settings)
{
    if (settings.kind == OptimizerKind::AdamW) {
        m_first = zeroTensors<Scalar>(layout);
        m_second = zeroTensors<Scalar>(layout);
    }
}

template <typename Scalar>
void Optimizer<Scalar>::restore(std::int64_t steps, Tensors<Scalar> first, Tensors<Scalar> second)
{
    m_steps = steps;
    if (m_settings.kind == OptimizerKind::AdamW) {
        m_first = std::move(first);
        m_second = std::move(second);
    }
}

template <typename Scalar>
double Optimizer<Scalar>::step(Tensors<Scalar>& parameters, Tensors<Scalar>& gradients)
{
    ++m_steps;
    const OptimizerSettings& s = m_settings;
    if (s.clipNorm > 0.0) {
        // As torch.nn.utils.clip_grad_norm_: scaled by max_norm / (norm + 1e-6) when that is below 1.
        const double norm = globalNorm(gradients);
        const double coefficient = s.clipNorm / (norm + 1e-6);
        if (coefficient < 1.0)
            for (auto& g : gradients)
                g *= Scalar(coefficient);
    }
    double lr = s.learningRate;
    if (s.warmupSteps > 0 && m_steps < s.warmupSteps)
        lr *= double(m_steps) / double(s.warmupSteps);
    if (s.kind == OptimizerKind::Sgd) {
        for (std::size_t t = 0; t < parameters.size(); ++t)
            parameters[t] -= Scalar(lr) * gradients[t];
        return lr;
    }
    // torch.optim.AdamW's single-tensor update, operation by operation.
    const auto decay = Scalar(1.0 - lr * s.weightDecay);
    const double correction1 = 1.0 - std::pow(s.beta1, double(m_steps));
    const double correction2 = 1.0 - std::pow(s.beta2, double(m_steps));
    const auto stepSize = Scalar(lr / correction1);
    const auto correction2Root = Scalar(std::sqrt(correction2));
    const auto oneMinusBeta1 = Scalar(1.0 - s.beta1), beta2 = Scalar(s.beta2),
               oneMinusBeta2 = Scalar(1.0 - s.beta2);
    const auto epsilon = Scalar(s.epsilon);
    for (std::size_t t = 0; t < parameters.size(); ++t) {
        Scalar* w = parameters[t].data();
        const Scalar* g = gradients[t].data();
        Scalar* m = m_first[t].data();
        Scalar* v = m_second[t].data();
        for (Index i = 0; i < parameters[t].size(); ++i) {
            w[i] *= decay;
            m[i] += oneMinusBeta1 * (g[i] - m[i]);
            v[i] = v[i] * beta2 + oneMinusBeta2 * g[i] * g[i];
            const Scalar denominator = std::sqrt(v[i]) / correction2Root + epsilon;
            w[i] -= stepSize * (m[i] / denominator);
        }
    }
    return lr;
}

template class Optimizer<double>;
template class Optimizer<float>;

} // namespace qkv::training
