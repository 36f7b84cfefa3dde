// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to models/: a model's tensors, read by layer and in a pass's precision, for opening a model
// (Model.cpp), the forward pass (ForwardPass.cpp) and cutting a layer's heads into a session
// (ModelSession.cpp).

#include "EigenTypes.h"
#include "Error.h"
#include "Model.h"
#include "Session.h"

#include <string>

namespace qkv::models {

/// The start of layer `layer`'s tensor names: "h.3." (GPT-2) or "model.layers.3.".
std::string layerPrefix(const Model& model, Index layer);

/// Whether the checkpoint has `name`, and the tensor itself (Model::tensorName() adds the prefix).
bool hasTensor(const Model& model, const std::string& name);
Matrix readMatrix(const Model& model, const std::string& name);
RowVector readVector(const Model& model, const std::string& name);

/// Every entry rounded to float32 (to nearest) in a float32 pass; as it is in float64.
template <typename Values> Values inPrecision(Values values, Precision precision)
{
    if (precision == Precision::Float32)
        values = values.template cast<float>().template cast<double>();
    return values;
}

inline double inPrecision(double value, Precision precision)
{
    return precision == Precision::Float32 ? double(float(value)) : value;
}

/// A 1-D tensor in the pass's precision (norm gains, biases).
RowVector readVectorIn(const Model& model, const std::string& name, Precision precision);

/// The error for a layer the model does not have.
Error layerOutOfRange(const ModelConfig& c, Index layer);

} // namespace qkv::models
