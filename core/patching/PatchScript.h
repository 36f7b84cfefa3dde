// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A patching grid exported as code (docs/patching.md): a self-contained Python script, needing only
/// PyTorch (its safetensors reader is written out in the script), that rebuilds the model of a GPT-2 or
/// LLaMA-family folder in float64, recomputes the grid by the same method (exact: re-running the corrupted
/// prompt with each activation replaced; attribution: torch.autograd on the corrupted run) and prints the
/// same JSON as `qkvlab patch`.

#include "EigenTypes.h"
#include "Patching.h"

#include <string>
#include <vector>

namespace qkv {

struct ModelConfig;

/// What the script recomputes, and the labels it prints unchanged.
struct PatchScriptRequest {
    std::string modelFolder; ///< the folder the script reads when it is given none
    PatchPair pair;
    PatchSite site = PatchSite::ResidPre;
    PatchMethod method = PatchMethod::Exact;
    Index firstPosition = 0, lastPosition = 0; ///< inclusive, both within the prompts
    std::vector<std::string> cleanTokens, corruptTokens;
    /// The grid's labels: the layers, the columns (positions, heads or key/value heads) and, for
    /// head_out_pos only, the positions of its third axis.
    std::vector<std::string> rows, cols, positions;
};

/// The script's text. Throws qkv::Error for a model it cannot rebuild (attention other than softmax,
/// sliding-window attention), naming what.
std::string patchScript(const PatchScriptRequest& request, const ModelConfig& config);

} // namespace qkv
