// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A decoder-only transformer as the trainer holds it (docs/training.md): its architecture, the list of
/// its parameter tensors and where each block finds its own, initialized at random, read from a model
/// folder, or written to one that the forward pass reads back.
///
/// Every weight is kept in the orientation of y = x · W (rows: inputs, columns: outputs), whatever the
/// checkpoint's; GPT-2's fused c_attn is kept as three tensors (q, k, v). Vectors (norm gains, biases) are
/// 1 × n. The tied unembedding is the embedding itself (logits = f · Eᵀ).

#include "EigenTypes.h"
#include "ModelConfig.h"
#include "Session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qkv {
class Model;
}

namespace qkv::training {

/// The model's architecture: the one description models/ and training/ share (ModelConfig.h). A new model
/// starts from its defaults; a model folder's is read by architectureOf().
using Architecture = ModelConfig;

/// Where a layer's tensors are in the parameter list; −1 for a tensor the layer does not have.
struct LayerSlots {
    int norm1 = -1, norm1Bias = -1;
    int q = -1, qBias = -1, k = -1, kBias = -1, v = -1, vBias = -1, o = -1, oBias = -1;
    int norm2 = -1, norm2Bias = -1;
    int up = -1, upBias = -1;     ///< GPT-2's c_fc; the LLaMA family's up_proj
    int gate = -1, gateBias = -1; ///< the LLaMA family's gate_proj
    int down = -1, downBias = -1; ///< GPT-2's c_proj; down_proj
};

struct TensorShape {
    std::string name;
    Index rows = 0, cols = 0;
};

/// Every parameter tensor's name and shape, in a fixed order, and where each block finds its own.
struct Layout {
    std::vector<TensorShape> tensors;
    int embedding = -1, positions = -1, finalNorm = -1, finalNormBias = -1, unembedding = -1;
    std::vector<LayerSlots> layers;
};

Layout layoutOf(const Architecture& architecture);

/// The parameter tensors of a model (as Layout lists them), or their gradients, or an optimizer's moments.
template <typename Scalar> using Tensors = std::vector<MatrixOf<Scalar>>;

/// Zero tensors of every parameter's shape.
template <typename Scalar> Tensors<Scalar> zeroTensors(const Layout& layout);

/// Checks the architecture; throws qkv::Error naming the option (--heads, --d-model, …) that is wrong.
void checkArchitecture(const Architecture& architecture);

/// A fresh model as GPT-2 initializes one: weights normal with standard deviation 0.02 (the output
/// projections of each block 0.02/√(2·layers)), biases 0, norm gains 1; reproducible from `seed`.
template <typename Scalar>
Tensors<Scalar> initialParameters(const Architecture& architecture, const Layout& layout, std::uint64_t seed);

/// A model folder's architecture, as the forward pass reads it. A folder written by saveModel without an
/// MLP says so in config.json (qkvlab_mlp: false) and is read back without one.
Architecture architectureOf(const std::string& folder);
/// The same for a model already open.
Architecture architectureOf(const Model& model);

/// The folder's tensors, in the layout of its architecture. Throws qkv::Error naming the file and tensor.
template <typename Scalar>
Tensors<Scalar> loadParameters(const std::string& folder, const Architecture& architecture,
                               const Layout& layout);
template <typename Scalar>
Tensors<Scalar> loadParameters(const Model& model, const Architecture& architecture, const Layout& layout);

/// A model folder's weights in the one transformer's layout: what the prediction, patching and the lens
/// compute with.
template <typename Scalar> struct Weights {
    Architecture architecture;
    Layout layout;
    Tensors<Scalar> parameters;
};

/// The open model's weights in `Scalar`, read on first use and kept while the model is open (shared by
/// every caller, from any thread). Throws qkv::Error naming the tensor that cannot be read, or when the copy
/// would take more than the memory limit (ResourceLimits.h), saying how much.
template <typename Scalar> std::shared_ptr<const Weights<Scalar>> sharedWeights(const Model& model);

/// Writes config.json and model.safetensors (F64 for double, F32 for float) into `folder` (created when
/// missing) in the format the forward pass reads. A model without an MLP is written with an MLP of width 1
/// whose weights are 0 (its output is exactly 0), so every reader of GPT-2 and LLaMA folders opens it.
template <typename Scalar>
void saveModel(const std::string& folder, const Architecture& architecture, const Layout& layout,
               const Tensors<Scalar>& parameters);

/// The number of scalars in the tensors.
template <typename Scalar> std::uint64_t parameterCount(const Tensors<Scalar>& tensors);

} // namespace qkv::training
