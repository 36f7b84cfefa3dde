// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The numbers behind the Prediction view: at one position, the most probable next tokens of the unmodified
/// model beside those of the model with interventions, each with the change of its log-probability against
/// the unmodified model, the loss at every position of both, and a logit difference. Read from two
/// predictions of one run (ModelRun.h); no maths of its own beyond differences of the run's numbers.

#include "ModelRun.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace qkv {

/// A next token as one run predicts it.
struct ComparedToken {
    std::int64_t id = 0;
    double probability = 0.0;
    double logProbability = 0.0;
    /// ln p in this run minus ln p in the unmodified run; absent for the unmodified run itself.
    std::optional<double> delta;
};

/// What one run (unmodified, or with the interventions) predicts.
struct RunComparison {
    std::vector<ComparedToken> top; ///< most probable first
    std::vector<double> loss;       ///< −ln p(next token) per position; NaN at the last (no next token)
    std::optional<double> meanLoss; ///< absent for a text of one token
    std::optional<double> logitDifference; ///< logit(a) − logit(b) at the position, when a pair is given
};

struct PredictionComparison {
    Index position = 0; ///< the position compared (clamped into the text)
    RunComparison clean, modified;
};

/// Two tokens whose logit difference logit(a) − logit(b) is compared.
struct TokenPair {
    std::int64_t a = 0, b = 0;
};

/// Compares `modified` with `clean`, two predictions of the same run, at `position` (clamped into the
/// text). Reads the clean run's row of logits (Prediction::logitsAt), and the modified run's only for a
/// logit difference; `cleanLogits`, when given, is the clean run's row at the clamped position, which does
/// not change from one edit to the next. Throws qkv::Error
/// when the predictions are of different texts or a token of `pair` is outside the vocabulary.
PredictionComparison comparePredictions(const Prediction& clean, const Prediction& modified, Index position,
                                        const std::optional<TokenPair>& pair = std::nullopt,
                                        const RowVector* cleanLogits = nullptr);

/// ln p(id) at `position` for each of `ids`, given that position's logits (Prediction::logitsAt): each is
/// the prediction's own log-probability of its most probable token plus the logit gap to it, so a run's
/// normalizer is never recomputed. Without a top token it falls back to Prediction::logProbability.
std::vector<double> logProbabilitiesAt(const Prediction& prediction, Index position, const RowVector& logits,
                                       const std::vector<std::int64_t>& ids);

} // namespace qkv
