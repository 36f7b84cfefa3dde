// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to models/: the steps of the forward pass (ForwardPass.cpp), for the pass to the logits with
// interventions (ModelRun.cpp), which runs its own loop over the layers.

#include "EigenTypes.h"
#include "MatrixProduct.h"
#include "Model.h"
#include "Session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::models {

/// What a forward pass reuses from one product to the next: the weight matrix a product reads, and its
/// float32 operands. Fresh buffers at every product would cost a page fault per 4 KB.
struct PassBuffers {
    Matrix weight;
    MatrixF weightF, inputF, productF;
};

/// Refuses no ids, an id outside the vocabulary and more tokens than the model's positions.
void checkIds(const Model& model, const std::vector<std::int64_t>& ids);

/// The residual stream before the first layer: token (and GPT-2's position) embeddings.
Matrix embed(const Model& model, const std::vector<std::int64_t>& ids, Precision precision);

/// residual += update, entry by entry, rounded to float32 in a float32 pass.
void addInto(Matrix& residual, const Matrix& update, Precision precision);

/// Refuses a residual stream that is not finite after `part` ("attention", "MLP") of `layer`.
void checkFinite(const Matrix& residual, Index layer, const char* part, Precision precision);

/// The rest of a layer once its attention output is known: residual += attention output, then += the MLP's
/// update (with `withMlp`), each checked for overflow.
void finishLayer(const Model& model, Matrix& residual, const Matrix& attentionOutput, Index layer,
                 Precision precision, PassBuffers& buffers, bool withMlp = true);

/// The layer's MLP on the residual stream (its norm first): the update to add.
Matrix mlp(const Model& model, const Matrix& residual, Index layer, Precision precision,
           PassBuffers& buffers);

/// x · W (or x · Wᵀ) for the checkpoint's tensor `name`, in the pass's precision.
Matrix productWithTensor(const Model& model, const Matrix& x, const std::string& name, Precision precision,
                         PassBuffers& buffers, Operand form = Operand::AsIs);

Matrix layerNorm(const Matrix& x, const RowVector& gain, const RowVector& bias, double epsilon);
Matrix rmsNorm(const Matrix& x, const RowVector& gain, double epsilon);

} // namespace qkv::models
