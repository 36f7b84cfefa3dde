// SPDX-License-Identifier: GPL-3.0-or-later
#include "LensCommand.h"

#include "Error.h"
#include "LogitLens.h"
#include "Model.h"
#include "ModelArguments.h"
#include "ModelJson.h"
#include "TerminalProgress.h"

#include <nlohmann/json.hpp>

namespace qkv::app {

namespace {

using Json = nlohmann::ordered_json;

std::string lensJson(const Model& model, const LogitLens& lens)
{
    Json layers = Json::array();
    for (const std::vector<LensCell>& layer : lens.layers) {
        Json positions = Json::array();
        for (const LensCell& cell : layer) {
            Json top = Json::array();
            for (const TokenProbability& token : cell.top)
                top.push_back(
                    Json{{"id", token.id}, {"token", tokenName(model, token.id)}, {"p", token.probability}});
            Json entry{{"top", std::move(top)}};
            if (lens.hasAnswer) {
                entry["answer_p"] = cell.answerProbability;
                entry["answer_rank"] = cell.answerRank;
            }
            positions.push_back(std::move(entry));
        }
        layers.push_back(std::move(positions));
    }
    return Json{{"layers", std::move(layers)}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace

CommandLineOutcome runLens(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const std::string usage = "expected MODEL and either --text TEXT or --ids I,J,...";
    const std::string folder = modelFolderArgument(arguments, usage);
    if (!exactlyOneOf(arguments, "text", "ids"))
        throw Error(usage);
    LensOptions options;
    if (const std::optional<long long> top = arguments.wholeNumber("top", 1, 1000000))
        options.top = Index(*top);
    try {
        const Model model = Model::open(folder);
        const std::vector<std::int64_t> ids = tokensArgument(model, arguments, "text", "ids");
        if (const std::optional<std::int64_t> answer = tokenArgument(model, arguments, "answer", "answer-id"))
            options.answer = *answer;
        TerminalProgress progress(streams.err, "qkvlab lens", "layers");
        const LogitLens lens = logitLens(
            model, ids, options, [&progress](Index done, Index total) { return progress(done, total); });
        streams.out << lensJson(model, lens);
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and text");
    }
    return finished();
}

} // namespace qkv::app
