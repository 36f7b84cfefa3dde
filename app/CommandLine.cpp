// SPDX-License-Identifier: GPL-3.0-or-later
#include "CommandLine.h"

#include "AttentionEngine.h"
#include "BpeTokenizer.h"
#include "Error.h"
#include "Examples.h"
#include "FigureExport.h"
#include "FileReading.h"
#include "Intervention.h"
#include "ModelCommands.h"
#include "ModelSession.h"
#include "ResourceLimits.h"
#include "ResultJson.h"
#include "SessionFile.h"
#include "TrainCommand.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

namespace qkv::app {

namespace {

constexpr const char* usage =
    "Usage:\n"
    "  qkvlab [FILE | example:NAME]    open the workbench window (default: example:love)\n"
    "  qkvlab compute [--max-memory SIZE] FILE | - | example:NAME\n"
    "                                  compute every matrix of the session and print them as JSON;\n"
    "                                  a session estimated to need more than SIZE (e.g. 4G, 512M, 50%;\n"
    "                                  default: 3/4 of the physical memory) is refused\n"
    "  qkvlab export FILE | - | example:NAME --view NAME|all --out PATH|DIR\n"
    "         [--head H] [--format png|svg|pdf] [--width W --height H] [--scale S]\n"
    "                                  draw a view (or every view) as a PNG, SVG or PDF figure without a\n"
    "                                  window; qkvlab export --help lists the views\n"
    "  qkvlab tokenize MODEL --text TEXT\n"
    "                                  print the token ids and tokens of TEXT as JSON; MODEL is a folder\n"
    "                                  with tokenizer.json, or GPT-2's vocab.json and merges.txt\n"
    "  qkvlab from-model MODEL --layer L (--text TEXT | --ids I,J,...) [--heads all|H,H,...]\n"
    "         [--precision float64|float32] [--out FILE]\n"
    "                                  write a session of layer L's attention heads of a Hugging Face\n"
    "                                  GPT-2 or LLaMA-family model folder (config.json, safetensors)\n"
    "  qkvlab predict MODEL (--text TEXT | --ids I,J,...) [--precision float64|float32] [--top K]\n"
    "         [--intervene L.H=zero|mean|scale:C|session:FILE]...\n"
    "                                  run the model to its next-token distribution at every position and\n"
    "                                  print the top K tokens and the loss as JSON; each --intervene "
    "changes\n"
    "                                  one query head's output (layers and heads counted from 0)\n"
    "  qkvlab heads MODEL (--text TEXT | --ids I,J,...) [--precision float64|float32]\n"
    "                                  print every head's previous-token, duplicate-token, induction,\n"
    "                                  first-token, self and entropy scores on the text as JSON\n"
    "  qkvlab train [--init MODEL | --layers L --heads H --d-model D [--mlp] [--vocab V]\n"
    "         [--positions learned|rope]] (--task NAME [task options] | --data-ids FILE) [--steps N]\n"
    "         [--batch B] [--lr X] [--optimizer adamw|sgd] [--seed S] [--precision float64|float32]\n"
    "         --out DIR\n"
    "                                  train a small transformer and save it as a model folder;\n"
    "                                  qkvlab train --help lists every option\n"
    "  qkvlab --help                   show this help\n"
    "  qkvlab --version                show the version\n";

constexpr const char* exportUsageText =
    "Usage: qkvlab export FILE | - | example:NAME --view NAME|all --out PATH|DIR [options]\n"
    "Draws a view of the session as a figure file, without a window (no display needed).\n"
    "  --view NAME   the view to draw (listed below), or all: one file per view (NAME.SUFFIX) into --out\n"
    "  --out PATH    the file to write; with --view all, the folder (created if needed)\n"
    "  --head H      the head to draw, counted from 0 (default 0)\n"
    "  --format F    png, svg or pdf (default: from the suffix of --out, else png)\n"
    "  --width W     the figure's size in pixels of 1/96 inch, each from 16 to 20000\n"
    "  --height H    (default: each view's own size)\n"
    "  --scale S     PNG pixels per figure pixel, from 0.25 to 8 (default 1; 2: sharper, same layout)\n"
    "\n"
    "Usage: qkvlab export --model MODEL (--text TEXT | --ids I,J,...) --view model --out PATH [options]\n"
    "Draws every layer and head of a model's attention for the text (the window's Model tab), from one\n"
    "forward pass; no session is given. MODEL is a Hugging Face GPT-2 or LLaMA-family folder.\n"
    "  --model MODEL      the model folder (config.json, safetensors, tokenizer files for --text)\n"
    "  --text TEXT        the text, tokenized by the model's tokenizer\n"
    "  --ids I,J,...      or its token ids\n"
    "  --precision P      float64 (default) or float32\n"
    "  --format, --width, --height, --scale as above.\n"
    "\n"
    "Usage: qkvlab export --model MODEL (--text TEXT | --ids I,J,...) --view prediction|scores|sweep\n"
    "       --out PATH [options]\n"
    "Draws the model's prediction (the Prediction tab), a head score of every head, or the change in loss\n"
    "when each head in turn is ablated (the Head Scores tab); the grids also as CSV (--format csv).\n"
    "  --intervene L.H=CHANGE   prediction: the heads changed in the right-hand run (repeatable; as "
    "predict)\n"
    "  --position P       prediction: the position whose next token is shown (default: the last)\n"
    "  --score NAME       scores: previous_token, duplicate_token, induction (default), first_token, self,\n"
    "                     entropy\n"
    "  --ablation KIND    sweep: zero (default) or mean\n"
    "Prints the paths written. Exits 2 with a message when an argument, the session or a file is refused.\n";

using ui::maximumFigureScale;
using ui::maximumFigureSide;
using ui::minimumFigureScale;
using ui::minimumFigureSide;

Session readSessionArgument(const std::string& source, std::istream& in, std::uint64_t memoryLimit)
{
    const std::uint64_t maxBytes = sessionFileSizeLimit(memoryLimit);
    if (source == "-") {
        try {
            return parseSession(readStream(in, maxBytes, "(standard input)", "a session file"));
        } catch (const Error& e) {
            const std::string message = e.what();
            throw Error(message.rfind("(standard input)", 0) == 0 ? message : "(standard input): " + message);
        }
    }
    const std::string prefix = examplePrefix;
    if (source.rfind(prefix, 0) == 0)
        return loadExample(source.substr(prefix.size()));
    try {
        return loadSession(source, maxBytes);
    } catch (const Error& e) {
        const std::string message = e.what();
        // loadSession names the path itself when the file cannot be read; otherwise add it.
        throw Error(message.rfind(source + ":", 0) == 0 ? message : source + ": " + message);
    }
}

std::string examplesList()
{
    std::string list = "\nBuilt-in examples:\n";
    for (const ExampleInfo& example : builtinExamples())
        list += "  example:" + example.name +
                std::string(example.name.size() < 14 ? 14 - example.name.size() : 1, ' ') + example.title +
                "\n";
    return list;
}

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
            return "bad " + std::string(side) + " '" + options[side] + "': expected a whole number from " +
                   std::to_string(minimumFigureSide) + " to " + std::to_string(maximumFigureSide);
        (std::string(side) == "width" ? width : height) = *value;
    }
    if (options.count("scale")) {
        const std::optional<double> parsed = parseNumber(options["scale"]);
        if (!parsed || *parsed < minimumFigureScale || *parsed > maximumFigureScale)
            return "bad scale '" + options["scale"] + "': expected a number from 0.25 to 8";
        scale = *parsed;
    }
    return {};
}

bool isModelPredictionView(const std::string& view)
{
    return view == "prediction" || view == "scores" || view == "sweep";
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
    if (options.count("text") == options.count("ids"))
        return fail("--model needs either --text TEXT or --ids I,J,...");
    if (options.count("ids") && !parseIndexList(options["ids"], request.ids))
        return fail("bad --ids '" + options["ids"] + "': expected token ids separated by commas (5,17,3)");
    if (options.count("precision")) {
        const auto precision = precisionFromString(options["precision"]);
        if (!precision)
            return fail("bad --precision '" + options["precision"] + "': expected float64 or float32");
        request.precision = *precision;
    }
    if (options.count("head"))
        return fail("--head is for a session's views");
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

// `export SOURCE --view NAME ...`: everything that can be checked without the views themselves. The view name
// is checked by the export command, which knows the views.
CommandLineOutcome parseExport(const std::vector<std::string>& args, std::istream& in, std::ostream& err)
{
    CommandLineOutcome outcome;
    outcome.handled = true;
    const auto fail = [&outcome, &err](const std::string& message) {
        err << "qkvlab export: " << message << "\n";
        outcome.exitCode = 2;
        return outcome;
    };
    const auto hint = std::string(" (see qkvlab export --help)");

    std::string source;
    std::map<std::string, std::string> options;
    std::vector<std::string> interventions;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            outcome.handled = false;
            outcome.exportRequest = ExportRequest();
            outcome.exportRequest->listViews = true;
            return outcome;
        }
        if (arg.rfind("--", 0) == 0) {
            const std::size_t equals = arg.find('=');
            const std::string name =
                arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
            if (name != "view" && name != "out" && name != "head" && name != "format" && name != "width" &&
                name != "height" && name != "scale" && name != "model" && name != "text" && name != "ids" &&
                name != "precision" && name != "intervene" && name != "position" && name != "score" &&
                name != "ablation")
                return fail("unknown option --" + name + hint);
            if (name == "intervene") { // repeatable
                if (equals == std::string::npos && i + 1 >= args.size())
                    return fail("--intervene needs a value" + hint);
                interventions.push_back(equals != std::string::npos ? arg.substr(equals + 1) : args[++i]);
                continue;
            }
            if (options.count(name))
                return fail("--" + name + " is given twice");
            if (equals != std::string::npos) {
                options[name] = arg.substr(equals + 1);
            } else if (i + 1 < args.size()) {
                options[name] = args[++i];
            } else {
                return fail("--" + name + " needs a value" + hint);
            }
            continue;
        }
        if (arg.rfind("-", 0) == 0 && arg != "-")
            return fail("unknown option " + arg + hint);
        if (!source.empty())
            return fail("expected one session, found " + source + " and " + arg);
        source = arg;
    }
    const bool model = options.count("model") != 0;
    if (model && !source.empty())
        return fail("--model draws the model itself: give no session (found " + source + ")");
    if (!model) {
        for (const char* name : {"text", "ids", "precision", "position", "score", "ablation"})
            if (options.count(name))
                return fail("--" + std::string(name) + " is for --model" + hint);
        if (!interventions.empty())
            return fail("--intervene is for --model" + hint);
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
            return fail("bad head '" + options["head"] + "': expected a head number counted from 0");
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

CommandLineOutcome runFromModel(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    CommandLineOutcome outcome;
    outcome.handled = true;
    const auto fail = [&](const std::string& message) {
        err << "qkvlab from-model: " << message << "\n";
        outcome.exitCode = 2;
        return outcome;
    };
    std::string folder, text, outPath, layerText, idsText, headsText = "all", precisionText = "float64";
    bool hasText = false;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        const auto value = [&](std::string& into) {
            if (i + 1 >= args.size())
                return false;
            into = args[++i];
            return true;
        };
        bool ok = true;
        if (arg == "--layer")
            ok = value(layerText);
        else if (arg == "--text")
            ok = hasText = value(text);
        else if (arg == "--ids")
            ok = value(idsText);
        else if (arg == "--heads")
            ok = value(headsText);
        else if (arg == "--precision")
            ok = value(precisionText);
        else if (arg == "--out")
            ok = value(outPath);
        else if (arg.rfind("-", 0) == 0)
            return fail("unknown option " + arg);
        else if (!folder.empty())
            return fail("expected one model folder, found " + folder + " and " + arg);
        else
            folder = arg;
        if (!ok)
            return fail(arg + " needs a value");
    }
    if (folder.empty() || layerText.empty() || hasText == !idsText.empty())
        return fail("expected MODEL --layer L and either --text TEXT or --ids I,J,...");
    std::vector<std::int64_t> layer;
    if (!parseIndexList(layerText, layer) || layer.size() != 1)
        return fail("bad --layer '" + layerText + "': expected a layer number, counted from 0");
    ModelHeadRequest request;
    request.layer = layer[0];
    if (!idsText.empty() && !parseIndexList(idsText, request.ids))
        return fail("bad --ids '" + idsText + "': expected token ids separated by commas (5,17,3)");
    if (headsText != "all") {
        std::vector<std::int64_t> heads;
        if (!parseIndexList(headsText, heads))
            return fail("bad --heads '" + headsText + "': expected all, or head numbers separated by commas");
        request.heads.assign(heads.begin(), heads.end());
    }
    if (precisionText == "float32")
        request.precision = Precision::Float32;
    else if (precisionText != "float64")
        return fail("bad --precision '" + precisionText + "': expected float64 or float32");
    try {
        const Model model = Model::open(folder);
        if (hasText) {
            if (!model.tokenizer())
                return fail(model.tokenizerProblem());
            request.ids = model.tokenizer()->encode(text);
            request.text = text;
        }
        Session session = sessionFromModel(model, request);
        // An absolute folder, so the window reopens the model from wherever the file is opened.
        session.model = modelLinkFor(model, request);
        session.model->folder = std::filesystem::absolute(folder).lexically_normal().string();
        if (outPath.empty())
            out << serializeSession(session);
        else
            saveSession(session, outPath);
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("not enough memory for this model");
    }
    return outcome;
}

} // namespace

std::string exportUsage()
{
    return exportUsageText;
}

CommandLineOutcome runCommandLine(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                                  std::ostream& err)
{
    CommandLineOutcome outcome;
    if (args.empty())
        return outcome;
    const std::string& first = args.front();
    if (first == "--help" || first == "-h") {
        out << usage << examplesList();
        outcome.handled = true;
        return outcome;
    }
    if (first == "--version" || first == "-v") {
        out << "qkvlab " << QKV_VERSION << "\n";
        outcome.handled = true;
        return outcome;
    }
    if (first == "compute") {
        outcome.handled = true;
        const auto fail = [&](const std::string& message) {
            err << "qkvlab compute: " << message << "\n";
            outcome.exitCode = 2;
            return outcome;
        };
        std::string source;
        std::uint64_t memoryLimit = defaultMemoryLimit();
        for (std::size_t i = 1; i < args.size(); ++i) {
            const std::string& arg = args[i];
            if (arg == "--max-memory" || arg.rfind("--max-memory=", 0) == 0) {
                std::string value;
                if (arg.size() > 12)
                    value = arg.substr(13);
                else if (i + 1 < args.size())
                    value = args[++i];
                memoryLimit = parseByteSize(value);
                if (memoryLimit == 0)
                    return fail("bad --max-memory '" + value +
                                "': expected a size such as 4G, 512M, 2048 (bytes) or 50% (of the memory)");
            } else if (arg.rfind("-", 0) == 0 && arg != "-") {
                return fail("unknown option " + arg);
            } else if (!source.empty()) {
                return fail("expected one session, found " + source + " and " + arg);
            } else {
                source = arg;
            }
        }
        if (source.empty()) {
            err << "qkvlab compute: expected one argument: a session file, - for standard input, or "
                   "example:NAME\n"
                << usage;
            outcome.exitCode = 2;
            return outcome;
        }
        try {
            const Session session = readSessionArgument(source, in, memoryLimit);
            // The result is all compute holds: its JSON is written as it goes, through a 64 KiB buffer.
            checkMemory(session, memoryLimit);
            const AttentionResult result = computeAttention(session);
            try {
                writeResultJson(result, out);
            } catch (const Error& e) {
                return fail(std::string("(standard output): ") + e.what());
            }
        } catch (const Error& e) {
            return fail(e.what());
        } catch (const std::bad_alloc&) {
            return fail("not enough memory for this session (try a smaller session or --max-memory)");
        }
        return outcome;
    }
    if (first == "export")
        return parseExport(args, in, err);
    if (first == "from-model")
        return runFromModel(args, out, err);
    if (first == "predict")
        return runPredict(args, out, err);
    if (first == "heads")
        return runHeads(args, out, err);
    if (first == "train")
        return runTrain(args, out, err);
    if (first == "tokenize") {
        outcome.handled = true;
        const auto fail = [&](const std::string& message) {
            err << "qkvlab tokenize: " << message << "\n";
            outcome.exitCode = 2;
            return outcome;
        };
        std::string model, text;
        bool hasText = false;
        for (std::size_t i = 1; i < args.size(); ++i) {
            if (args[i] == "--text") {
                if (i + 1 >= args.size())
                    return fail("--text needs a text");
                text = args[++i];
                hasText = true;
            } else if (args[i].rfind("--text=", 0) == 0) {
                text = args[i].substr(7);
                hasText = true;
            } else if (args[i].rfind("-", 0) == 0) {
                return fail("unknown option " + args[i]);
            } else if (!model.empty()) {
                return fail("expected one model folder, found " + model + " and " + args[i]);
            } else {
                model = args[i];
            }
        }
        if (model.empty() || !hasText)
            return fail("expected a model folder and --text TEXT");
        try {
            const BpeTokenizer tokenizer = BpeTokenizer::fromDirectory(model);
            out << tokenizationJson(tokenizer, tokenizer.encode(text));
        } catch (const Error& e) {
            return fail(e.what());
        }
        return outcome;
    }
    if (first.rfind("-", 0) == 0 && first != "-") {
        err << "qkvlab: unknown option " << first << "\n" << usage;
        outcome.handled = true;
        outcome.exitCode = 2;
        return outcome;
    }
    if (args.size() > 1) {
        err << "qkvlab: expected at most one session to open, found " << args.size() << " arguments\n"
            << usage;
        outcome.handled = true;
        outcome.exitCode = 2;
        return outcome;
    }
    outcome.sessionToOpen = first;
    return outcome;
}

} // namespace qkv::app
