// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A model folder's weights in the one transformer (training/Network.h), run on one sequence at a time with
/// hooks kept, replaced and differentiated to: what patching and the logit lens compute with.

#include "Network.h"
#include "TrainingModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

class Model;

template <typename Scalar> class HookedModel {
public:
    /// Reads every weight into the network's layout. Throws qkv::Error for an architecture the network
    /// cannot run (sliding-window attention), naming it.
    explicit HookedModel(const Model& model);

    const training::Architecture& architecture() const { return m_architecture; }
    const training::Tensors<Scalar>& parameters() const { return m_parameters; }
    const training::Network<Scalar>& network() const { return m_network; }

    /// A forward pass on `ids` with `request`'s hooks.
    void forward(const std::vector<std::int64_t>& ids, const transformer::HookRequest& request);
    /// The last forward's run with `request` instead, from the first layer it changes.
    void restart(const transformer::HookRequest& request);
    /// The gradient of `objective` at the last run to the hooks named.
    transformer::ActivationCache gradients(const transformer::Objective& objective,
                                           const std::vector<std::string>& names);

private:
    training::Architecture m_architecture;
    training::Network<Scalar> m_network; // before the parameters: they are read in its layout
    training::Tensors<Scalar> m_parameters;
};

} // namespace qkv
