// SPDX-License-Identifier: GPL-3.0-or-later
#include "HookedModel.h"

#include "Error.h"
#include "Model.h"

namespace qkv {

template <typename Scalar>
HookedModel<Scalar>::HookedModel(const Model& model)
    : m_weights(training::sharedWeights<Scalar>(model)), m_network(m_weights->architecture, m_weights->layout)
{
}

template <typename Scalar>
void HookedModel<Scalar>::forward(const std::vector<std::int64_t>& ids,
                                  const transformer::HookRequest& request)
{
    m_network.forward(parameters(), {ids}, &request);
}

template <typename Scalar> void HookedModel<Scalar>::restart(const transformer::HookRequest& request)
{
    m_network.restart(parameters(), request);
}

template <typename Scalar>
transformer::ActivationCache HookedModel<Scalar>::gradients(const transformer::Objective& objective,
                                                            const std::vector<std::string>& names)
{
    return m_network.hookGradients(parameters(), objective, names);
}

template class HookedModel<double>;
template class HookedModel<float>;

} // namespace qkv
