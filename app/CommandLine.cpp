// SPDX-License-Identifier: GPL-3.0-or-later
#include "CommandLine.h"

#include "ArgumentParser.h"
#include "CircuitsCommand.h"
#include "ComputeCommand.h"
#include "Error.h"
#include "ExportArguments.h"
#include "HelpText.h"
#include "LensCommand.h"
#include "ModelCommands.h"
#include "PatchCommand.h"
#include "TrainCommand.h"

#include <iostream>

namespace qkv::app {

namespace {

using CommandFunction = CommandLineOutcome (*)(const ParsedArguments&, const CommandStreams&);

struct CommandEntry {
    std::string_view name; ///< as declared in CommandOptions.cpp
    CommandFunction run;
};

constexpr CommandEntry commandEntries[] = {
    {"compute", runCompute},      {"export", parseExport}, {"tokenize", runTokenize},
    {"from-model", runFromModel}, {"predict", runPredict}, {"heads", runHeads},
    {"patch", runPatch},          {"lens", runLens},       {"circuits", runCircuits},
    {"decompose", runDecompose},  {"train", runTrain},
};

CommandLineOutcome refused(std::string_view command, const std::string& message, std::ostream& err)
{
    err << "qkvlab " << command << ": " << message << "\n";
    return finished(2);
}

/// A command's arguments parsed against its options, then the command run; every refusal is one line.
CommandLineOutcome runCommand(const CommandEntry& entry, const std::vector<std::string>& args,
                              const CommandStreams& streams)
{
    const CommandSpec& command = commandSpec(entry.name);
    ParsedArguments arguments;
    try {
        arguments = parseArguments(command, std::vector<std::string>(args.begin() + 1, args.end()));
    } catch (const Error& e) {
        return refused(entry.name,
                       e.what() + std::string(" (see qkvlab ") + std::string(entry.name) + " --help)",
                       streams.err);
    }
    if (arguments.helpRequested) {
        if (entry.name == "export") { // its help lists the views, which need a QApplication
            CommandLineOutcome outcome;
            outcome.exportRequest = ExportRequest();
            outcome.exportRequest->listViews = true;
            return outcome;
        }
        streams.out << commandHelp(command);
        return finished();
    }
    try {
        return entry.run(arguments, streams);
    } catch (const Error& e) {
        return refused(entry.name, e.what(), streams.err);
    }
}

/// `qkvlab [FILE | example:NAME]`, --help, --version: a usage error also prints the usage.
CommandLineOutcome runWindowArguments(const std::vector<std::string>& args, const CommandStreams& streams)
{
    const auto usageError = [&streams](const std::string& message) {
        streams.err << "qkvlab: " << message << "\n" << programHelp();
        return finished(2);
    };
    ParsedArguments arguments;
    try {
        arguments = parseArguments(commandSpec({}), args);
    } catch (const Error& e) {
        return usageError(e.what());
    }
    if (arguments.helpRequested) {
        streams.out << programHelp();
        return finished();
    }
    if (arguments.has("version")) {
        streams.out << "qkvlab " << QKV_VERSION << "\n";
        return finished();
    }
    if (arguments.has("list-options")) {
        streams.out << optionListing();
        return finished();
    }
    if (arguments.positional.size() > 1)
        return usageError("expected at most one session to open, found " + std::to_string(args.size()) +
                          " arguments");
    CommandLineOutcome outcome;
    outcome.sessionToOpen = arguments.positional.empty() ? std::string() : arguments.positional.front();
    return outcome;
}

} // namespace

CommandLineOutcome runCommandLine(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                                  std::ostream& err)
{
    if (args.empty())
        return {};
    const CommandStreams streams{in, out, err};
    for (const CommandEntry& entry : commandEntries)
        if (args.front() == entry.name)
            return runCommand(entry, args, streams);
    return runWindowArguments(args, streams);
}

} // namespace qkv::app
