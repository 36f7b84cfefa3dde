// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Text of token labels on plots: the one place that cuts a label short and falls back to indices.

#include "EigenTypes.h"
#include "Session.h"

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace qkv::ui {

/// Labels longer than this many characters are cut short with an ellipsis on plots.
inline constexpr int maximumLabelCharacters = 12;

/// `label` cut to `maxCharacters` (its last one an ellipsis) when it is longer.
QString elidedLabel(const QString& label, int maxCharacters = maximumLabelCharacters);

/// `labels` when there are `count` of them, else the indices "0", "1", … (as for a result of an older
/// session size).
QStringList labelsOrIndices(const QStringList& labels, Index count);

/// The token texts as labels, or the indices when there are not `count` of them.
QStringList tokenLabels(const std::vector<std::string>& tokens, Index count);

/// The labels of `count` d_model dimensions: their names (Session::dims), "d<i>" for those without one.
QStringList dimensionLabels(const std::vector<std::string>& dims, Index count);

/// A probability as a percentage: "41.2%", "3.25%" under 10%, two significant digits under 0.1%
/// ("0.0042%"); "—" when it is not finite.
QString probabilityText(double probability);

/// The token at `index`, or its number when there is none.
QString tokenLabel(const std::vector<std::string>& tokens, Index index);

} // namespace qkv::ui
