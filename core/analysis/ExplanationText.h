// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The step-by-step explanation of one cell (a CellExplanation from explainCell()) written out as plain text
/// or as LaTeX, for the step-by-step panel and its "copy as text / LaTeX" buttons; and a PrecisionComparison
/// the same two ways.

#include "Explain.h"

#include <string>

namespace qkv {

/// Plain UTF-8 text, one step per line, with '*' for products as the worked examples write them
/// (for the "I love AI" example: "2*2 + 0*1 + 1*1 = 5", "5 / √3 = 2.887", "17.935 / 25.368 = 0.707").
/// Integers are written without decimals, inputs with up to 4 decimals, derived values with 3. Long rows
/// and vectors are shortened with "...".
std::string toPlainText(const CellExplanation& explanation);

/// The same steps as a LaTeX align* environment (needs amsmath), with token text escaped.
std::string toLatex(const CellExplanation& explanation);

/// What the result's precision did to the weights of one row (a PrecisionComparison from comparePrecision()),
/// as a few lines of plain text: each listed key's weight in float64 and in the result's precision with
/// their difference in ulps, the largest difference in units of float32's ε, and each row sum's distance
/// from 1. Weights are written with 9 significant digits (enough to tell float32 values apart).
std::string toPlainText(const PrecisionComparison& comparison);

/// The same lines as a LaTeX align* environment.
std::string toLatex(const PrecisionComparison& comparison);

/// Escapes text for LaTeX (both in text mode and inside \text{}): \ { } $ & # ^ _ % ~ and control characters.
std::string escapeLatex(const std::string& text);

} // namespace qkv
