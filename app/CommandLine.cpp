#include "CommandLine.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "ResultJson.h"
#include "SessionFile.h"

#include <iostream>
#include <iterator>
#include <sstream>

namespace qkv::app {

namespace {

constexpr const char* usage =
    "Usage:\n"
    "  qkvlab [FILE | example:NAME]    open the workbench window (default: example:love)\n"
    "  qkvlab compute FILE | - | example:NAME\n"
    "                                  compute every matrix of the session and print them as JSON\n"
    "  qkvlab --help                   show this help\n"
    "  qkvlab --version                show the version\n";

Session readSessionArgument(const std::string& source, std::istream& in)
{
    if (source == "-") {
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        try {
            return parseSession(text);
        } catch (const Error& e) {
            throw Error(std::string("(standard input): ") + e.what());
        }
    }
    const std::string prefix = examplePrefix;
    if (source.rfind(prefix, 0) == 0)
        return loadExample(source.substr(prefix.size()));
    try {
        return loadSession(source);
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
        list += "  example:" + example.name + std::string(example.name.size() < 14 ? 14 - example.name.size() : 1, ' ') +
                example.title + "\n";
    return list;
}

} // namespace

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
        if (args.size() != 2) {
            err << "qkvlab compute: expected one argument: a session file, - for standard input, or example:NAME\n"
                << usage;
            outcome.exitCode = 2;
            return outcome;
        }
        try {
            const Session session = readSessionArgument(args[1], in);
            out << resultToJson(computeAttention(session));
            out.flush();
        } catch (const Error& e) {
            err << "qkvlab compute: " << e.what() << "\n";
            outcome.exitCode = 2;
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
        err << "qkvlab: expected at most one session to open, found " << args.size() << " arguments\n" << usage;
        outcome.handled = true;
        outcome.exitCode = 2;
        return outcome;
    }
    outcome.sessionToOpen = first;
    return outcome;
}

} // namespace qkv::app
