// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model figures of the residual stream and of activation patching, registered in ModelFigures: the logit
// lens ("lens") and the normalized patching grid ("patch"), with what each writes as CSV.

#include "ModelFigures.h"

#include <string>

namespace qkv::ui {

class Heatmap;

/// "lens": the logit lens of the input's model on its ids (the answer's probability colouring the cells when
/// input.answer is set), drawn by a LensView.
RegisteredModelFigure lensFigure();
/// "patch": the grid of input.patching (computed here, or input.patchGrid when the window computed it),
/// normalized, drawn by a Heatmap in colours diverging about 0.
RegisteredModelFigure patchFigure();

/// The lens's display: `lens` computed on `ids` of `model`, its token ids labelled.
LensDisplay lensDisplay(const Model& model, const std::vector<std::int64_t>& ids,
                        std::shared_ptr<const LogitLens> lens, std::optional<std::int64_t> answer,
                        const QString& title);
/// One line per cell: "layer,position,token_id,token,probability" for the most probable token, then
/// ",answer_probability,answer_rank" with an answer; the layer L is the output; tokens quoted as CSV quotes.
std::string lensCsv(const LensDisplay& display);

/// A CSV field in double quotes, its own quotes doubled: safe for any token (commas, quotes, line breaks).
std::string quotedCsvField(const QString& text);

/// The heatmap's display of `patched`, run on `model` with `experiment`.
PatchGridDisplay patchGridDisplay(const Model& model, const PatchExperiment& experiment, PatchedGrid patched);
/// Shows `display` on `heatmap`: diverging colours centred at 0, rows and columns labelled.
void setPatchGrid(Heatmap& heatmap, const PatchGridDisplay& display);
/// One line per cell: "layer,position|head|kv_head[,position],value,normalized", positions counted in the
/// prompt (from the grid's first position), values written shortest-round-trip.
std::string patchGridCsv(const PatchGrid& grid);
/// The second column's name in patchGridCsv: "position", "head" (head_out_pos too) or "kv_head".
std::string patchColumnName(PatchSite site);

} // namespace qkv::ui
