// SPDX-License-Identifier: GPL-3.0-or-later
#include "HookedModel.h"

#include "Error.h"
#include "Model.h"

namespace qkv {

namespace {

training::Architecture hookedArchitecture(const Model& model)
{
    if (model.config().slidingWindow > 0)
        throw Error(modelName(model) +
                    ": sliding-window attention is not supported by patching and the logit lens yet");
    return training::architectureOf(model);
}

} // namespace

template <typename Scalar>
HookedModel<Scalar>::HookedModel(const Model& model)
    : m_architecture(hookedArchitecture(model)),
      m_network(m_architecture, training::layoutOf(m_architecture)),
      m_parameters(training::loadParameters<Scalar>(model, m_architecture, m_network.layout()))
{
}

template <typename Scalar>
void HookedModel<Scalar>::forward(const std::vector<std::int64_t>& ids,
                                  const transformer::HookRequest& request)
{
    m_network.forward(m_parameters, {ids}, &request);
}

template <typename Scalar> void HookedModel<Scalar>::restart(const transformer::HookRequest& request)
{
    m_network.restart(m_parameters, request);
}

template <typename Scalar>
transformer::ActivationCache HookedModel<Scalar>::gradients(const transformer::Objective& objective,
                                                            const std::vector<std::string>& names)
{
    return m_network.hookGradients(m_parameters, objective, names);
}

template class HookedModel<double>;
template class HookedModel<float>;

} // namespace qkv
