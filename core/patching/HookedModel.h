// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A model folder's weights in the one transformer (training/Network.h), run on one sequence at a time with
/// hooks kept, replaced and differentiated to: what patching and the logit lens compute with.

#include "Network.h"
#include "TrainingModel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qkv {

class Model;

template <typename Scalar> class HookedModel {
public:
    /// The model's weights in the network's layout, shared with every other user of the open model
    /// (training::sharedWeights). Throws qkv::Error as sharedWeights does.
    explicit HookedModel(const Model& model);

    const training::Architecture& architecture() const { return m_weights->architecture; }
    const training::Tensors<Scalar>& parameters() const { return m_weights->parameters; }
    const training::Network<Scalar>& network() const { return m_network; }

    /// A forward pass on `ids` with `request`'s hooks.
    void forward(const std::vector<std::int64_t>& ids, const transformer::HookRequest& request);
    /// The last forward's run with `request` instead, from the first layer it changes.
    void restart(const transformer::HookRequest& request);
    /// The gradient of `objective` at the last run to the hooks named.
    transformer::ActivationCache gradients(const transformer::Objective& objective,
                                           const std::vector<std::string>& names);

private:
    std::shared_ptr<const training::Weights<Scalar>> m_weights;
    training::Network<Scalar> m_network;
};

} // namespace qkv
