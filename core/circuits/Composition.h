// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// How much an earlier head's output is read by a later head's query, key or value (docs/circuits.md):
/// TransformerLens's `all_composition_scores`, q = ‖W_OV¹·W_QK²‖_F / (‖W_OV¹‖_F·‖W_QK²‖_F), k the same with
/// W_QK²ᵀ, v with W_OV², over the folded weights of a model.
///
/// The norms are taken on d_h × d_h forms: with A = Q_A·R_A (thin QR), ‖A·M·Bᵀ‖ = ‖R_A·M·R_Bᵀ‖, so each pair
/// is one block of a product of R_V¹·W_O¹ (every earlier head, stacked) with W̃_Q²·R_K²ᵀ, W̃_K²·R_Q²ᵀ and
/// W̃_V²·R_O²ᵀ (every head of the later layer, side by side): one large product per layer.

#include "EigenTypes.h"

#include <functional>
#include <vector>

namespace qkv {

namespace training {
template <typename Scalar> struct Weights;
}

enum class CompositionKind { Query, Key, Value };

/// Every score of every pair (l₁, h₁) → (l₂, h₂) with l₁ < l₂; 0 elsewhere and where it was not asked for.
struct CompositionScores {
    Index layers = 0, heads = 0;
    std::vector<double> query, key, value; ///< (l₂, h₂, l₁, h₁) row-major

    double at(CompositionKind kind, Index fromLayer, Index fromHead, Index toLayer, Index toHead) const;
    /// The scores into one head: its layer's earlier layers as rows, their heads as columns.
    Matrix into(CompositionKind kind, Index toLayer, Index toHead) const;
};

/// Asked after each later layer (done, total); false stops the computation (qkv::Cancelled).
using CompositionProgress = std::function<bool(Index done, Index total)>;

/// The scores into every head (`toLayer` −1) or into the heads of one layer, or one head of it (`toHead`
/// ≥ 0), from the model's weights in Scalar (the products in Scalar, the norms in float64). Throws
/// qkv::Error for a layer or head out of range or scores that are not finite.
template <typename Scalar>
CompositionScores compositionScores(const training::Weights<Scalar>& weights, Index toLayer = -1,
                                    Index toHead = -1, const CompositionProgress& progress = {});

} // namespace qkv
