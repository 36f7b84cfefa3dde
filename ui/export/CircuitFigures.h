// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model figures of a head's circuits, registered in ModelFigures: the token × token QK table
// ("circuits"), the composition scores into the head ("composition") and one score taken apart
// ("decompose"), each a labelled heatmap, with the same matrix as CSV.

#include "ModelFigures.h"

#include <string>

namespace qkv::ui {

class Heatmap;

/// "circuits": W_E[ids[i]]·W_QK·W_E[ids[j]]ᵀ of input.circuit's head for every pair of the input's tokens.
RegisteredModelFigure circuitsFigure();
/// "composition": the scores of input.circuit.kind into its head, earlier layers by heads.
RegisteredModelFigure compositionFigure();
/// "decompose": the score of input.circuit's query and key positions as query-side × key-side components.
RegisteredModelFigure decomposeFigure();

/// input.circuit with its defaults resolved against the model and the ids (the last layer, the last
/// position) and checked: throws qkv::Error naming what is out of range.
CircuitChoice resolvedChoice(const ModelFigureInput& input);

/// Shows `display` on `heatmap`: its labels, titles and colours.
void setLabelledGrid(Heatmap& heatmap, const LabelledGridDisplay& display);
/// The matrix as CSV: a header line of an empty field and the column labels, then each row's label and values
/// (labels quoted, numbers shortest-round-trip).
std::string labelledGridCsv(const LabelledGridDisplay& display);

} // namespace qkv::ui
