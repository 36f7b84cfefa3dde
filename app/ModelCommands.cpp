// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelCommands.h"

#include "BpeTokenizer.h"
#include "Error.h"
#include "Intervention.h"
#include "ModelArguments.h"
#include "ModelJson.h"
#include "ModelRun.h"
#include "ModelSession.h"
#include "SessionFile.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

namespace qkv::app {

bool parseIndexList(const std::string& text, std::vector<std::int64_t>& values)
{
    values.clear();
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
            return false;
        values.push_back(std::stoll(item));
        start = comma + 1;
    }
    return !values.empty();
}

namespace {

/// The model run the arguments ask for: MODEL (--text TEXT | --ids I,J,...) [--precision P].
std::shared_ptr<const ModelRun> runModel(const ParsedArguments& arguments)
{
    const std::string usage = "expected MODEL and either --text TEXT or --ids I,J,...";
    const std::string folder = modelFolderArgument(arguments, usage);
    if (!exactlyOneOf(arguments, "text", "ids"))
        throw Error(usage);
    const Precision precision = precisionArgument(arguments);
    std::vector<std::int64_t> ids = idsArgument(arguments, "ids");
    auto model = std::make_shared<const Model>(Model::open(folder));
    if (arguments.has("text")) {
        if (!model->tokenizer())
            throw Error(model->tokenizerProblem());
        ids = model->tokenizer()->encode(arguments.value("text"));
    }
    return std::make_shared<const ModelRun>(model, ids, precision);
}

} // namespace

CommandLineOutcome runTokenize(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const std::vector<std::string>& given = arguments.positional;
    if (given.size() > 1)
        throw Error("expected one model folder, found " + given[0] + " and " + given[1]);
    if (given.empty() || !arguments.has("text"))
        throw Error("expected a model folder and --text TEXT");
    const BpeTokenizer tokenizer = BpeTokenizer::fromDirectory(given.front());
    streams.out << tokenizationJson(tokenizer, tokenizer.encode(arguments.value("text")));
    return finished();
}

CommandLineOutcome runFromModel(const ParsedArguments& arguments, const CommandStreams& streams)
{
    if (!arguments.has("layer") || arguments.positional.empty())
        throw Error("expected MODEL --layer L and either --text TEXT or --ids I,J,...");
    const std::string usage = "expected MODEL --layer L and either --text TEXT or --ids I,J,...";
    const std::string folder = modelFolderArgument(arguments, usage);
    if (!exactlyOneOf(arguments, "text", "ids"))
        throw Error(usage);
    const std::string layerText = arguments.value("layer");
    std::vector<std::int64_t> layer;
    if (!parseIndexList(layerText, layer) || layer.size() != 1)
        throw Error("bad --layer '" + layerText + "': expected a layer number, counted from 0");
    ModelHeadRequest request;
    request.layer = layer[0];
    request.ids = idsArgument(arguments, "ids");
    const std::string headsText = arguments.value("heads", "all");
    if (headsText != "all") {
        std::vector<std::int64_t> heads;
        if (!parseIndexList(headsText, heads))
            throw Error("bad --heads '" + headsText + "': expected all, or head numbers separated by commas");
        request.heads.assign(heads.begin(), heads.end());
    }
    request.precision = precisionArgument(arguments);
    try {
        const Model model = Model::open(folder);
        if (arguments.has("text")) {
            if (!model.tokenizer())
                throw Error(model.tokenizerProblem());
            request.text = arguments.value("text");
            request.ids = model.tokenizer()->encode(request.text);
        }
        Session session = sessionFromModel(model, request);
        // An absolute folder, so the window reopens the model from wherever the file is opened.
        session.model = modelLinkFor(model, request);
        session.model->folder = std::filesystem::absolute(folder).lexically_normal().string();
        if (arguments.has("out"))
            saveSession(session, arguments.value("out"));
        else
            streams.out << serializeSession(session);
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model");
    }
    return finished();
}

CommandLineOutcome runPredict(const ParsedArguments& arguments, const CommandStreams& streams)
{
    PredictOptions options;
    if (const std::optional<long long> top =
            arguments.wholeNumber("top", 0, 1000000, "a whole number of tokens"))
        options.top = Index(*top);
    const std::vector<std::string> specs = arguments.values("intervene");
    std::vector<Intervention> interventions;
    for (const std::string& spec : specs)
        interventions.push_back(parseIntervention(spec));
    try {
        const std::shared_ptr<const ModelRun> run = runModel(arguments);
        for (std::size_t k = 0; k < interventions.size(); ++k)
            if (const std::string problem = interventionProblem(interventions[k], run->model().config());
                !problem.empty())
                throw Error("--intervene " + specs[k] + ": " + problem);
        streams.out << predictionJson(run->model(), run->ids(), run->predict(interventions, options));
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and text");
    }
    return finished();
}

CommandLineOutcome runHeads(const ParsedArguments& arguments, const CommandStreams& streams)
{
    try {
        streams.out << headScoresJson(runModel(arguments)->scores());
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and text");
    }
    return finished();
}

} // namespace qkv::app
