// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelCommands.h"

#include "Error.h"
#include "Intervention.h"
#include "ModelJson.h"
#include "ModelRun.h"

#include <algorithm>
#include <iostream>
#include <map>
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

/// A model command's arguments: MODEL (--text TEXT | --ids I,J,...) [--precision P] and the options
/// `valued` names (each taking a value; those in `repeatable` may come more than once).
struct ModelArguments {
    std::string folder;
    std::map<std::string, std::vector<std::string>> options;

    const std::string* option(const std::string& name) const
    {
        const auto found = options.find(name);
        return found == options.end() ? nullptr : &found->second.back();
    }
};

/// "" when the arguments parse, else the problem.
std::string parseArguments(const std::vector<std::string>& args, const std::vector<std::string>& valued,
                           const std::vector<std::string>& repeatable, ModelArguments& parsed)
{
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg.rfind("--", 0) == 0) {
            const std::string name = arg.substr(2);
            if (std::find(valued.begin(), valued.end(), name) == valued.end())
                return "unknown option " + arg;
            if (i + 1 >= args.size())
                return arg + " needs a value";
            if (parsed.options.count(name) &&
                std::find(repeatable.begin(), repeatable.end(), name) == repeatable.end())
                return arg + " is given twice";
            parsed.options[name].push_back(args[++i]);
        } else if (arg.rfind("-", 0) == 0) {
            return "unknown option " + arg;
        } else if (!parsed.folder.empty()) {
            return "expected one model folder, found " + parsed.folder + " and " + arg;
        } else {
            parsed.folder = arg;
        }
    }
    if (parsed.folder.empty() || (parsed.option("text") == nullptr) == (parsed.option("ids") == nullptr))
        return "expected MODEL and either --text TEXT or --ids I,J,...";
    return {};
}

/// The model run the arguments ask for; throws qkv::Error naming the problem.
std::shared_ptr<const ModelRun> runModel(const ModelArguments& arguments)
{
    Precision precision = Precision::Float64;
    if (const std::string* text = arguments.option("precision")) {
        const auto parsed = precisionFromString(*text);
        if (!parsed)
            throw Error("bad --precision '" + *text + "': expected float64 or float32");
        precision = *parsed;
    }
    std::vector<std::int64_t> ids;
    if (const std::string* text = arguments.option("ids"); text && !parseIndexList(*text, ids))
        throw Error("bad --ids '" + *text + "': expected token ids separated by commas (5,17,3)");
    auto model = std::make_shared<const Model>(Model::open(arguments.folder));
    if (const std::string* text = arguments.option("text")) {
        if (!model->tokenizer())
            throw Error(model->tokenizerProblem());
        ids = model->tokenizer()->encode(*text);
    }
    return std::make_shared<const ModelRun>(model, ids, precision);
}

/// Runs `body`, turning a refusal into one line on `err` and exit status 2.
template <typename Body> CommandLineOutcome runCommand(const char* name, std::ostream& err, const Body& body)
{
    CommandLineOutcome outcome;
    outcome.handled = true;
    try {
        body();
    } catch (const Error& e) {
        err << "qkvlab " << name << ": " << e.what() << "\n";
        outcome.exitCode = 2;
    } catch (const std::bad_alloc&) {
        err << "qkvlab " << name << ": not enough memory for this model and text\n";
        outcome.exitCode = 2;
    }
    return outcome;
}

} // namespace

CommandLineOutcome runPredict(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    return runCommand("predict", err, [&] {
        ModelArguments arguments;
        if (const std::string problem = parseArguments(args, {"text", "ids", "precision", "top", "intervene"},
                                                       {"intervene"}, arguments);
            !problem.empty())
            throw Error(problem);
        PredictOptions options;
        if (const std::string* top = arguments.option("top")) {
            std::vector<std::int64_t> count;
            if (!parseIndexList(*top, count) || count.size() != 1 || count[0] > 1000000)
                throw Error("bad --top '" + *top + "': expected a whole number of tokens");
            options.top = Index(count[0]);
        }
        std::vector<Intervention> interventions;
        if (arguments.options.count("intervene"))
            for (const std::string& spec : arguments.options.at("intervene"))
                interventions.push_back(parseIntervention(spec));
        const std::shared_ptr<const ModelRun> run = runModel(arguments);
        for (std::size_t k = 0; k < interventions.size(); ++k)
            if (const std::string problem = interventionProblem(interventions[k], run->model().config());
                !problem.empty())
                throw Error("--intervene " + arguments.options.at("intervene")[k] + ": " + problem);
        out << predictionJson(run->model(), run->ids(), run->predict(interventions, options));
    });
}

CommandLineOutcome runHeads(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    return runCommand("heads", err, [&] {
        ModelArguments arguments;
        if (const std::string problem = parseArguments(args, {"text", "ids", "precision"}, {}, arguments);
            !problem.empty())
            throw Error(problem);
        out << headScoresJson(runModel(arguments)->scores());
    });
}

} // namespace qkv::app
