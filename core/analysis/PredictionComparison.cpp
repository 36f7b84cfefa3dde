// SPDX-License-Identifier: GPL-3.0-or-later
#include "PredictionComparison.h"

#include "Error.h"

#include <algorithm>
#include <limits>
#include <string>

namespace qkv {

namespace {

void checkToken(std::int64_t id, Index vocabulary)
{
    if (id < 0 || id >= vocabulary)
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                    std::to_string(vocabulary - 1) + ")");
}

// `logits` is the run's row at `position`, read only for the pair's logit difference.
RunComparison compareRun(const Prediction& prediction, Index position, const RowVector& logits,
                         const std::optional<TokenPair>& pair)
{
    RunComparison run;
    for (const TokenProbability& token : prediction.positions[std::size_t(position)].top)
        run.top.push_back({token.id, token.probability, token.logProbability, std::nullopt});
    const std::size_t n = prediction.positions.size();
    for (std::size_t i = 0; i < n; ++i)
        run.loss.push_back(i + 1 < n ? prediction.positions[i].loss
                                     : std::numeric_limits<double>::quiet_NaN());
    if (n > 1)
        run.meanLoss = prediction.meanLoss;
    if (pair)
        run.logitDifference = logits[Index(pair->a)] - logits[Index(pair->b)];
    return run;
}

} // namespace

std::vector<double> logProbabilitiesAt(const Prediction& prediction, Index position, const RowVector& logits,
                                       const std::vector<std::int64_t>& ids)
{
    const std::vector<TokenProbability>& top = prediction.positions.at(std::size_t(position)).top;
    std::vector<double> out;
    out.reserve(ids.size());
    for (std::int64_t id : ids) {
        checkToken(id, logits.size());
        // ln p(id) − ln p(t) = logit(id) − logit(t): the normalizer is the run's own.
        out.push_back(top.empty()
                          ? prediction.logProbability(position, id)
                          : top.front().logProbability + (logits[Index(id)] - logits[Index(top.front().id)]));
    }
    return out;
}

PredictionComparison comparePredictions(const Prediction& clean, const Prediction& modified, Index position,
                                        const std::optional<TokenPair>& pair, const RowVector* cleanLogits)
{
    if (clean.positions.size() != modified.positions.size() || clean.positions.empty())
        throw Error("the predictions compared are not of the same text (" +
                    std::to_string(clean.positions.size()) + " and " +
                    std::to_string(modified.positions.size()) + " positions)");
    PredictionComparison comparison;
    comparison.position = std::clamp<Index>(position, 0, Index(clean.positions.size()) - 1);
    const Index at = comparison.position;
    const RowVector cleanRow = cleanLogits ? *cleanLogits : clean.logitsAt(at);
    if (pair) {
        checkToken(pair->a, cleanRow.size());
        checkToken(pair->b, cleanRow.size());
    }
    const bool same = &clean == &modified;
    // The modified run's row is read for a logit difference only: its top tokens carry their own ln p.
    const RowVector modifiedRow = same || !pair ? cleanRow : modified.logitsAt(at);
    comparison.clean = compareRun(clean, at, cleanRow, pair);
    comparison.modified = compareRun(modified, at, modifiedRow, pair);
    std::vector<std::int64_t> ids;
    for (const ComparedToken& token : comparison.modified.top)
        ids.push_back(token.id);
    const std::vector<double> before =
        same ? std::vector<double>() : logProbabilitiesAt(clean, at, cleanRow, ids);
    for (std::size_t k = 0; k < ids.size(); ++k) {
        ComparedToken& token = comparison.modified.top[k];
        token.delta = same ? 0.0 : token.logProbability - before[k];
    }
    return comparison;
}

} // namespace qkv
