// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Scaled against unscaled attention (the comparison figure of Brenndoerfer's article, docs/references.md):
/// the same session computed by the engine under two scale/temperature settings, one head's weights and row
/// entropies side by side.

#include "AttentionEngine.h"
#include "EigenTypes.h"
#include "Session.h"

#include <vector>

namespace qkv {

/// A way of scaling the scores: the divisor of S and the normalizer's temperature.
struct ScalingSetting {
    Scale scale;
    double temperature = 1.0;

    friend bool operator==(const ScalingSetting& a, const ScalingSetting& b)
    {
        return a.scale == b.scale && a.temperature == b.temperature;
    }
};

/// One side of the comparison: what the engine computed for one head under one setting.
struct ScalingSide {
    ScalingSetting setting;
    double divisor = 1.0;        ///< what S was divided by (scaleDivisor at the session's d_k)
    Matrix scaled;               ///< n × m, S / divisor
    Matrix weights;              ///< n × m
    std::vector<double> entropy; ///< per row (nats)
    std::vector<double> topWeight;
    double meanEntropy = 0.0; ///< over the rows with an allowed key
};

struct ScalingComparison {
    ScalingSide first;
    ScalingSide second;
};

/// The session's usual alternative: the other of √d_k and no scaling, at the session's temperature.
ScalingSetting alternativeSetting(const Session& session);

/// Computes head `head` of `session` under `first` and under `second` with computeAttention (on a copy of the
/// session holding that head only). Throws qkv::Error when a setting is invalid (a non-positive scale or
/// temperature) or the engine refuses the session, qkv::Cancelled when stopped, std::out_of_range when `head`
/// is not a head of the session.
ScalingComparison compareScaling(const Session& session, int head, const ScalingSetting& first,
                                 const ScalingSetting& second, const ComputeOptions& options = {});

/// A cross-attention session whose head computes `queries` · `keys`ᵀ exactly: X = queries (n × d),
/// Z = keys (m × d), W_Q = W_K = W_V = I_d, softmax, √d_k scaling. For the articles' examples that draw Q and
/// K directly.
Session querySessionFromMatrices(const Matrix& queries, const Matrix& keys);

} // namespace qkv
