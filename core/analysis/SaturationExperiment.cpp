// SPDX-License-Identifier: GPL-3.0-or-later
#include "SaturationExperiment.h"

#include "AttentionEngine.h"
#include "NormalizerJacobian.h"
#include "Normalizers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qkv {

SaturationPanel saturateRow(const NormalizerSpec& spec, const std::vector<double>& scaled,
                            const std::vector<std::uint8_t>& allowed, double temperature, double factor,
                            Index upstreamKey)
{
    if (!(std::isfinite(factor) && factor > 0.0))
        throw std::invalid_argument("saturateRow: the factor c is not a finite positive number");
    if (!(std::isfinite(temperature) && temperature > 0.0))
        throw std::invalid_argument("saturateRow: the temperature is not a finite positive number");
    const auto m = static_cast<Index>(scaled.size());
    if (upstreamKey < -1 || upstreamKey >= m)
        throw std::invalid_argument("saturateRow: the upstream key is not a key of the row");

    SaturationPanel panel;
    panel.factor = factor;
    panel.scores.resize(scaled.size());
    for (std::size_t j = 0; j < scaled.size(); ++j) {
        if (!std::isfinite(scaled[j]))
            throw std::invalid_argument("saturateRow: a score is not finite");
        // c · (S'/τ) as the article multiplies the scores the softmax sees; the product may overflow.
        const double z = factor * (scaled[j] / temperature);
        const double clamped = std::clamp(z, -saturationScoreLimit, saturationScoreLimit);
        panel.clamped = panel.clamped || clamped != z;
        panel.scores[j] = clamped;
    }

    if (!allowed.empty() && allowed.size() != scaled.size())
        throw std::invalid_argument("saturateRow: the mask and the row differ in length");
    panel.weights = normalize(spec, panel.scores, 1.0, allowed);
    panel.topKey = topKey(panel.weights);
    panel.topWeight = panel.topKey >= 0 ? panel.weights[static_cast<std::size_t>(panel.topKey)] : 0.0;
    const RowStats stats = rowStatistics(panel.weights.data(), m);
    panel.entropy = stats.entropy;
    panel.support = stats.support;
    panel.upstreamKey = upstreamKey >= 0 ? upstreamKey : panel.topKey;
    panel.gradient = scoreGradient(spec, panel.weights, 1.0, unitUpstream(m, panel.upstreamKey));
    panel.gradientNorm = euclideanNorm(panel.gradient);
    return panel;
}

} // namespace qkv
