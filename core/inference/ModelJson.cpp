// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelJson.h"

#include "JsonText.h"

namespace qkv {

using json::Json;

std::string tokenName(const Model& model, std::int64_t id)
{
    if (const BpeTokenizer* tokenizer = model.tokenizer())
        if (std::string name = tokenizer->tokenString(id); !name.empty())
            return name;
    return "#" + std::to_string(id);
}

std::string predictionJson(const Model& model, const std::vector<std::int64_t>& ids,
                           const Prediction& prediction)
{
    Json tokens = Json::array();
    for (std::int64_t id : ids)
        tokens.push_back(tokenName(model, id));
    Json positions = Json::array();
    for (const PositionPrediction& position : prediction.positions) {
        Json top = Json::array();
        for (const TokenProbability& token : position.top)
            top.push_back(
                Json{{"id", token.id}, {"token", tokenName(model, token.id)}, {"p", token.probability}});
        Json entry{{"top", std::move(top)}};
        if (position.nextId >= 0) {
            entry["next_id"] = position.nextId;
            entry["loss"] = position.loss;
        }
        positions.push_back(std::move(entry));
    }
    Json root{{"ids", ids}, {"tokens", std::move(tokens)}, {"positions", std::move(positions)}};
    if (prediction.positions.size() > 1)
        root["loss"] = prediction.meanLoss;
    return root.dump() + "\n";
}

std::string headScoresJson(const HeadScoreGrid& scores)
{
    const Matrix& first = scores.values.front();
    Json named = Json::object();
    for (HeadScore score : allHeadScores)
        named[toString(score)] = json::matrix(scores[score]);
    return Json{{"layers", first.rows()}, {"heads", first.cols()}, {"scores", std::move(named)}}.dump() +
           "\n";
}

} // namespace qkv
