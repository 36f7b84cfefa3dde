// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelTensors.h"

namespace qkv::models {

std::string layerPrefix(const Model& model, Index layer)
{
    return model.config().family == ModelFamily::Gpt2 ? "h." + std::to_string(layer) + "."
                                                      : "model.layers." + std::to_string(layer) + ".";
}

bool hasTensor(const Model& model, const std::string& name)
{
    return model.checkpoint().has(model.tensorName(name));
}

Matrix readMatrix(const Model& model, const std::string& name)
{
    return model.checkpoint().readMatrix(model.tensorName(name));
}

RowVector readVector(const Model& model, const std::string& name)
{
    return model.checkpoint().readVector(model.tensorName(name));
}

RowVector readVectorIn(const Model& model, const std::string& name, Precision precision)
{
    return inPrecision(readVector(model, name), precision);
}

Error layerOutOfRange(const ModelConfig& c, Index layer)
{
    return Error("layer " + std::to_string(layer) + " is out of range (the model has " +
                 std::to_string(c.layers) + " layers, 0 to " + std::to_string(c.layers - 1) + ")");
}

} // namespace qkv::models
