// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExportArguments.h"

#include "ComputeCommand.h"
#include "Error.h"
#include "FigureExport.h"
#include "HelpText.h"
#include "Intervention.h"
#include "ModelCommands.h"
#include "ModelFigures.h"
#include "ModelSession.h"
#include "Patching.h"
#include "ResourceLimits.h"

#include <cmath>
#include <iostream>
#include <map>

namespace qkv::app {

namespace {

using ui::maximumFigureScale;
using ui::maximumFigureSide;
using ui::minimumFigureScale;
using ui::minimumFigureSide;

std::optional<int> parseWholeNumber(const std::string& text)
{
    std::size_t used = 0;
    try {
        const int value = std::stoi(text, &used);
        if (used == text.size())
            return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::optional<double> parseNumber(const std::string& text)
{
    std::size_t used = 0;
    try {
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value))
            return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::string lowercase(std::string text)
{
    for (char& c : text)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return text;
}

bool isFigureFormat(const std::string& name)
{
    return name == "png" || name == "svg" || name == "pdf";
}

constexpr const char* modelViewName = "model";

/// `export --model MODEL (--text TEXT | --ids I,J,...) [--precision P]`: the model opened and every layer's
/// attention computed into `request`; "" when done, else what is wrong.
std::string loadModelAttention(std::map<std::string, std::string>& options, ExportRequest& request)
{
    if (options.count("text") == options.count("ids"))
        return "--model needs either --text TEXT or --ids I,J,...";
    std::vector<std::int64_t> ids;
    if (options.count("ids") && !parseIndexList(options["ids"], ids))
        return "bad --ids '" + options["ids"] + "': expected token ids separated by commas (5,17,3)";
    Precision precision = Precision::Float64;
    if (options.count("precision")) {
        if (options["precision"] == "float32")
            precision = Precision::Float32;
        else if (options["precision"] != "float64")
            return "bad --precision '" + options["precision"] + "': expected float64 or float32";
    }
    try {
        const Model model = Model::open(options["model"]);
        const std::string text = options.count("text") ? options["text"] : std::string();
        if (options.count("text")) {
            if (!model.tokenizer())
                return model.tokenizerProblem();
            ids = model.tokenizer()->encode(text);
        }
        request.modelWeights = attentionOfEveryLayer(model, ids, precision);
        request.modelTitle = modelInputTitle(model, text, ids.size());
        request.model = true;
    } catch (const Error& e) {
        return e.what();
    } catch (const std::bad_alloc&) {
        return "not enough memory for every layer's attention of this text";
    }
    return std::string();
}

/// --width, --height and --scale into the figure's size; "" when they parse, else the problem.
std::string parseFigureSize(std::map<std::string, std::string>& options, int& width, int& height,
                            double& scale)
{
    for (const char* side : {"width", "height"}) {
        if (!options.count(side))
            continue;
        const std::optional<int> value = parseWholeNumber(options[side]);
        if (!value || *value < minimumFigureSide || *value > maximumFigureSide)
            return "bad --" + std::string(side) + " '" + options[side] + "': expected a whole number from " +
                   std::to_string(minimumFigureSide) + " to " + std::to_string(maximumFigureSide);
        (std::string(side) == "width" ? width : height) = *value;
    }
    if (options.count("scale")) {
        const std::optional<double> parsed = parseNumber(options["scale"]);
        if (!parsed || *parsed < minimumFigureScale || *parsed > maximumFigureScale)
            return "bad --scale '" + options["scale"] + "': expected a number from 0.25 to 8";
        scale = *parsed;
    }
    return {};
}

/// The one token --NAME's text tokenizes to, or --NAME-id's id, into `token` (left empty when neither is
/// given); "" when it parses, else the problem.
std::string tokenOption(std::map<std::string, std::string>& options, const Model& model,
                        const std::string& name, std::optional<std::int64_t>& token)
{
    const std::string idName = name + "-id";
    if (options.count(name) && options.count(idName))
        return "give --" + name + " TEXT or --" + idName + " N, not both";
    if (options.count(idName)) {
        std::vector<std::int64_t> id;
        if (!parseIndexList(options[idName], id) || id.size() != 1)
            return "bad --" + idName + " '" + options[idName] + "': expected one token id";
        token = id.front();
        return {};
    }
    if (!options.count(name))
        return {};
    if (!model.tokenizer())
        return model.tokenizerProblem();
    const std::vector<std::int64_t> ids = model.tokenizer()->encode(options[name]);
    if (ids.size() != 1)
        return "--" + name + " '" + options[name] + "' is " + std::to_string(ids.size()) +
               " tokens: expected exactly one (or give --" + idName + ")";
    token = ids.front();
    return {};
}

/// --NAME's text tokenized, or --NAME-ids, into `ids`; "" when it parses, else the problem.
std::string promptOption(std::map<std::string, std::string>& options, const Model& model,
                         const std::string& name, std::vector<std::int64_t>& ids)
{
    const std::string idsName = name + "-ids";
    if (options.count(name) == options.count(idsName))
        return "--view patch needs either --" + name + " TEXT or --" + idsName + " I,J,...";
    if (options.count(idsName))
        return parseIndexList(options[idsName], ids)
                   ? std::string()
                   : "bad --" + idsName + " '" + options[idsName] +
                         "': expected token ids separated by commas (5,17,3)";
    if (!model.tokenizer())
        return model.tokenizerProblem();
    ids = model.tokenizer()->encode(options[name]);
    return {};
}

/// `--positions I..J` (or one position I): the first and last position, inclusive.
std::optional<std::pair<Index, Index>> parsePositions(const std::string& text)
{
    const std::size_t dots = text.find("..");
    const std::optional<int> first = parseWholeNumber(text.substr(0, dots));
    const std::optional<int> last =
        dots == std::string::npos ? first : parseWholeNumber(text.substr(dots + 2));
    if (!first || !last || *first < 0 || *last < *first)
        return std::nullopt;
    return std::pair<Index, Index>{*first, *last};
}

/// `export --view patch`'s experiment: the prompts, the metric's tokens, --what, --method and --positions.
/// "" when it parses, else the problem; whether the ids fit the model is checked when it runs.
std::string parsePatchExperiment(std::map<std::string, std::string>& options, const Model& model,
                                 PatchExperiment& experiment)
{
    for (const auto& [name, ids] :
         {std::pair{"clean", &experiment.clean}, std::pair{"corrupt", &experiment.corrupt}})
        if (std::string problem = promptOption(options, model, name, *ids); !problem.empty())
            return problem;
    for (const auto& [name, token] :
         {std::pair{"answer", &experiment.answer}, std::pair{"wrong", &experiment.wrong}}) {
        std::optional<std::int64_t> picked;
        if (std::string problem = tokenOption(options, model, name, picked); !problem.empty())
            return problem;
        if (!picked)
            return "--view patch needs --" + std::string(name) + " TEXT or --" + name + "-id N";
        *token = *picked;
    }
    std::string sites;
    for (PatchSite site : allPatchSites())
        sites += (sites.empty() ? "" : ", ") + patchSiteName(site);
    if (!options.count("what"))
        return "--view patch needs --what SITE: " + sites;
    const std::optional<PatchSite> site = patchSiteNamed(options["what"]);
    if (!site)
        return "bad --what '" + options["what"] + "': expected " + sites;
    experiment.site = *site;
    if (options.count("method")) {
        const std::optional<PatchMethod> method = patchMethodNamed(options["method"]);
        if (!method)
            return "bad --method '" + options["method"] + "': expected exact or attribution";
        experiment.method = *method;
    }
    if (options.count("positions")) {
        experiment.positions = parsePositions(options["positions"]);
        if (!experiment.positions)
            return "bad --positions '" + options["positions"] +
                   "': expected I..J, positions counted from 0, I ≤ J";
    }
    return {};
}

/// The options of `export --view patch` (and of the lens, for --answer), refused with any other view.
std::string patchOptionProblem(const std::map<std::string, std::string>& options, const std::string& view)
{
    for (const char* name :
         {"clean", "clean-ids", "corrupt", "corrupt-ids", "wrong", "wrong-id", "what", "method", "positions"})
        if (options.count(name) && view != "patch")
            return "--" + std::string(name) + " is for --view patch";
    for (const char* name : {"answer", "answer-id"})
        if (options.count(name) && view != "patch" && view != "lens")
            return "--" + std::string(name) + " is for --view lens and --view patch";
    return {};
}

bool isCircuitView(const std::string& view)
{
    return view == "circuits" || view == "composition" || view == "decompose";
}

/// The options of the circuit views, refused with any other view (--head too, which a session's views read).
std::string circuitOptionProblem(const std::map<std::string, std::string>& options, const std::string& view)
{
    for (const char* name : {"layer", "head"})
        if (options.count(name) && !isCircuitView(view))
            return "--" + std::string(name) + " is for --view circuits, composition and decompose" +
                   (std::string(name) == "head" ? " (and a session's views)" : "");
    if (options.count("kind") && view != "composition")
        return "--kind is for --view composition";
    for (const char* name : {"query", "key"})
        if (options.count(name) && view != "decompose")
            return "--" + std::string(name) + " is for --view decompose";
    return {};
}

/// --NAME as a whole number counted from 0, below `count` (`owner` has `count` `things`): "" when it is,
/// else the problem.
std::string indexOption(std::map<std::string, std::string>& options, const std::string& name, Index count,
                        const std::string& owner, const std::string& things, Index& value)
{
    if (!options.count(name))
        return {};
    const std::optional<int> parsed = parseWholeNumber(options[name]);
    if (!parsed || *parsed < 0)
        return "bad --" + name + " '" + options[name] + "': expected a whole number counted from 0";
    if (*parsed >= count)
        return "--" + name + " " + options[name] + ": " + owner + " has " + std::to_string(count) + " " +
               things + (count == 1 ? " (0)" : " (0 to " + std::to_string(count - 1) + ")");
    value = *parsed;
    return {};
}

/// --layer, --head, --kind, --query and --key of the circuit views, checked against the model and the ids.
std::string parseCircuitChoice(std::map<std::string, std::string>& options, ModelExportRequest& request)
{
    const ModelConfig& config = request.model->config();
    const auto n = Index(request.ids.size());
    const std::string text = options.count("text") ? "the text" : "--ids";
    for (const std::string& problem :
         {indexOption(options, "layer", config.layers, "the model", "layers", request.circuitLayer),
          indexOption(options, "head", config.heads, "the model", "heads", request.circuitHead),
          indexOption(options, "query", n, text, "tokens", request.query),
          indexOption(options, "key", n, text, "tokens", request.key)})
        if (!problem.empty())
            return problem;
    if (options.count("kind")) {
        const std::string& kind = options["kind"];
        if (kind != "q" && kind != "k" && kind != "v")
            return "bad --kind '" + kind + "': expected q, k or v";
        request.compositionKind = kind == "q"   ? CompositionKind::Query
                                  : kind == "k" ? CompositionKind::Key
                                                : CompositionKind::Value;
    }
    if (request.view == "composition" && (request.circuitLayer == 0 || config.layers == 1))
        return "--view composition: layer 0 reads only the embeddings, no earlier head composes into it "
               "(give --layer 1 or later)";
    return {};
}

/// A model figure computed from a forward pass to the logits (every one the window's model tabs draw but the
/// attention grid, `model`, which needs no pass to the end).
bool isModelPredictionView(const std::string& view)
{
    return view != "model" && ui::ModelFigures::find(QString::fromStdString(view)).has_value();
}

/// `export --model MODEL (--text TEXT | --ids I,J,...) --view prediction|scores|sweep --out FILE [...]`:
/// checked and the model opened into outcome.modelExportRequest, or `fail` with the problem.
template <typename Fail>
CommandLineOutcome parseModelExport(std::map<std::string, std::string>& options,
                                    const std::vector<std::string>& interventions,
                                    CommandLineOutcome& outcome, const Fail& fail)
{
    ModelExportRequest request;
    request.view = options["view"];
    if (!options.count("out") || options["out"].empty())
        return fail("--out is required: the file to write");
    request.out = options["out"];
    const bool patch = request.view == "patch";
    if (const std::string problem = patchOptionProblem(options, request.view); !problem.empty())
        return fail(problem);
    if (patch && (options.count("text") || options.count("ids")))
        return fail(
            "--view patch runs the prompts of --clean and --corrupt (or --clean-ids and --corrupt-ids), "
            "not --text or --ids");
    const bool weightsOnly = request.view == "composition"; // reads no tokens: --text and --ids optional
    if (!patch && options.count("text") && options.count("ids"))
        return fail("give --text or --ids, not both");
    if (!patch && !weightsOnly && options.count("text") == options.count("ids"))
        return fail("--model needs either --text TEXT or --ids I,J,...");
    if (options.count("ids") && !parseIndexList(options["ids"], request.ids))
        return fail("bad --ids '" + options["ids"] + "': expected token ids separated by commas (5,17,3)");
    if (options.count("precision")) {
        const auto precision = precisionFromString(options["precision"]);
        if (!precision)
            return fail("bad --precision '" + options["precision"] + "': expected float64 or float32");
        request.precision = *precision;
    }
    const std::size_t dot = request.out.find_last_of("./\\");
    const std::string suffix =
        dot != std::string::npos && request.out[dot] == '.' ? lowercase(request.out.substr(dot + 1)) : "";
    request.format = options.count("format")                     ? lowercase(options["format"])
                     : isFigureFormat(suffix) || suffix == "csv" ? suffix
                                                                 : "png";
    if (const std::string problem = parseFigureSize(options, request.width, request.height, request.scale);
        !problem.empty())
        return fail(problem);
    if (options.count("position")) {
        const std::optional<int> position = parseWholeNumber(options["position"]);
        if (!position || *position < 0)
            return fail("bad --position '" + options["position"] + "': expected a position counted from 0");
        request.position = *position;
    }
    if (options.count("score"))
        request.score = options["score"];
    if (options.count("ablation")) {
        const auto kind = interventionKindFromString(options["ablation"]);
        if (!kind || (*kind != HeadIntervention::Kind::Zero && *kind != HeadIntervention::Kind::Mean))
            return fail("bad --ablation '" + options["ablation"] + "': expected zero or mean");
        request.ablation = *kind;
    }
    try {
        for (const std::string& spec : interventions)
            request.interventions.push_back(parseIntervention(spec));
        request.model = std::make_shared<const Model>(Model::open(options["model"]));
        if (options.count("text")) {
            if (!request.model->tokenizer())
                return fail(request.model->tokenizerProblem());
            request.text = options["text"];
            request.ids = request.model->tokenizer()->encode(request.text);
        }
        if (patch) {
            request.patching = PatchExperiment();
            if (const std::string problem = parsePatchExperiment(options, *request.model, *request.patching);
                !problem.empty())
                return fail(problem);
        } else if (const std::string problem = tokenOption(options, *request.model, "answer", request.answer);
                   !problem.empty()) {
            return fail(problem);
        }
        if (isCircuitView(request.view))
            if (const std::string problem = parseCircuitChoice(options, request); !problem.empty())
                return fail(problem);
        for (std::size_t k = 0; k < request.interventions.size(); ++k)
            if (const std::string problem =
                    interventionProblem(request.interventions[k], request.model->config());
                !problem.empty())
                return fail("--intervene " + interventions[k] + ": " + problem);
    } catch (const Error& e) {
        return fail(e.what());
    }
    outcome.handled = false;
    outcome.modelExportRequest = std::move(request);
    return outcome;
}

/// `export SOURCE --view NAME` or `export --model MODEL ... --view model`: checked, and the session read or
/// the model's attention computed, into outcome.exportRequest; or `fail` with the problem.
template <typename Fail>
CommandLineOutcome parseViewExport(std::map<std::string, std::string>& options, const std::string& source,
                                   bool model, std::istream& in, CommandLineOutcome& outcome,
                                   const Fail& fail)
{
    const auto hint = std::string(" (see qkvlab export --help)");
    ExportRequest request;
    request.view = options["view"];
    request.out = options["out"];
    if (request.view.empty())
        return fail("--view is empty: expected a view name or all" + hint);
    if (request.out.empty())
        return fail("--out is empty");
    if (options.count("head")) {
        const std::optional<int> head = parseWholeNumber(options["head"]);
        if (!head || *head < 0)
            return fail("bad --head '" + options["head"] + "': expected a head number counted from 0");
        request.head = *head;
    }
    if (options.count("format")) {
        request.format = lowercase(options["format"]);
        if (!isFigureFormat(request.format))
            return fail("unknown format '" + options["format"] + "': expected png, svg or pdf");
    } else {
        const std::size_t dot = request.out.find_last_of("./\\");
        const std::string suffix =
            dot != std::string::npos && request.out[dot] == '.' ? lowercase(request.out.substr(dot + 1)) : "";
        request.format = request.view != "all" && isFigureFormat(suffix) ? suffix : "png";
    }
    if (const std::string problem = parseFigureSize(options, request.width, request.height, request.scale);
        !problem.empty())
        return fail(problem);

    if (model || request.view == modelViewName) {
        if (!model)
            return fail(
                "--view model draws a model's layers and heads: give --model MODEL and --text TEXT or "
                "--ids I,J,... instead of a session" +
                hint);
        if (request.view != modelViewName)
            return fail("--model draws --view model only, not '" + request.view + "'");
        if (options.count("head"))
            return fail("--head is for a session's views: --view model draws every head");
        const std::string error = loadModelAttention(options, request);
        if (!error.empty())
            return fail(error);
        outcome.handled = false;
        outcome.exportRequest = std::move(request);
        return outcome;
    }

    try {
        request.session = readSessionArgument(source, in, defaultMemoryLimit());
        checkMemory(request.session, defaultMemoryLimit());
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("not enough memory to read this session");
    }
    const int heads = request.session.headCount();
    if (request.head >= heads)
        return fail("head " + std::to_string(request.head) + " is out of range: the session has " +
                    std::to_string(heads) +
                    (heads == 1 ? " head (0)" : " heads (0 to " + std::to_string(heads - 1) + ")"));

    outcome.handled = false;
    outcome.exportRequest = std::move(request);
    return outcome;
}

} // namespace

std::string exportUsage()
{
    return commandHelp(commandSpec("export"));
}

CommandLineOutcome parseExport(const ParsedArguments& arguments, const CommandStreams& streams)
{
    CommandLineOutcome outcome;
    outcome.handled = true;
    const auto fail = [](const std::string& message) -> CommandLineOutcome { throw Error(message); };
    const auto hint = std::string(" (see qkvlab export --help)");
    std::map<std::string, std::string> options;
    for (const OptionSpec& option : commandSpec("export").options)
        if (option.name != "intervene" && arguments.has(option.name))
            options[std::string(option.name)] = arguments.value(option.name);
    const std::vector<std::string> interventions = arguments.values("intervene");
    const std::vector<std::string>& sources = arguments.positional;
    if (sources.size() > 1)
        return fail("expected one session, found " + sources[0] + " and " + sources[1]);
    const std::string source = sources.empty() ? std::string() : sources.front();
    const bool model = options.count("model") != 0;
    if (model && !source.empty())
        return fail("--model draws the model itself: give no session (found " + source + ")");
    if (!model) {
        for (const char* name :
             {"text",      "ids",    "precision", "position", "score",       "ablation", "answer",
              "answer-id", "clean",  "clean-ids", "corrupt",  "corrupt-ids", "wrong",    "wrong-id",
              "what",      "method", "positions", "layer",    "kind",        "query",    "key"})
            if (options.count(name))
                return fail("--" + std::string(name) + " is for --model" + hint);
        if (!interventions.empty())
            return fail("--intervene is for --model" + hint);
    }
    if (model && options.count("view")) {
        if (const std::string problem = patchOptionProblem(options, options["view"]); !problem.empty())
            return fail(problem);
        if (const std::string problem = circuitOptionProblem(options, options["view"]); !problem.empty())
            return fail(problem);
    }
    if (model && options.count("view") && isModelPredictionView(options["view"]))
        return parseModelExport(options, interventions, outcome, fail);
    if (source.empty() && !model)
        return fail("expected a session: a file, - for standard input, or example:NAME" + hint);
    if (!options.count("view"))
        return fail("--view is required: a view name or all" + hint);
    if (!options.count("out"))
        return fail(options["view"] == "all" ? "--out is required: the folder to write the figures into"
                                             : "--out is required: the file to write");

    return parseViewExport(options, source, model, streams.in, outcome, fail);
}

} // namespace qkv::app
