// SPDX-License-Identifier: GPL-3.0-or-later
#include "HelpText.h"

#include "Examples.h"

#include <sstream>

namespace qkv::app {

namespace {

constexpr std::size_t lineWidth = 100;
constexpr std::size_t optionColumn = 24; // where an option's description starts

/// `text` broken into lines of at most lineWidth characters, each after `indent` spaces.
std::string wrapped(std::string_view text, std::size_t indent)
{
    std::string result, line;
    std::istringstream words{std::string(text)};
    std::string word;
    while (words >> word) {
        if (!line.empty() && indent + line.size() + 1 + word.size() > lineWidth) {
            result += std::string(indent, ' ') + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty())
        result += std::string(indent, ' ') + line + "\n";
    return result;
}

/// "qkvlab NAME " before each form of the synopsis; continuation lines indented below it.
std::string synopsisLines(const CommandSpec& command, std::string_view firstPrefix,
                          std::string_view otherPrefix)
{
    const std::string program =
        command.name.empty() ? "qkvlab " : "qkvlab " + std::string(command.name) + " ";
    std::string result;
    std::istringstream lines{std::string(command.synopsis)};
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
        const bool continuation = line.rfind("  ", 0) == 0;
        result += std::string(first ? firstPrefix : otherPrefix) +
                  (continuation ? std::string(program.size(), ' ') + line : program + line) + "\n";
        first = false;
    }
    return result;
}

std::string optionLine(const OptionSpec& option)
{
    std::string names = option.shortName ? std::string("-") + option.shortName + ", " : std::string();
    names += "--" + std::string(option.name);
    if (option.takesValue())
        names += " " + std::string(option.valueName);
    std::string head = "  " + names;
    const std::string description = wrapped(option.description, optionColumn);
    if (head.size() + 1 >= optionColumn)
        return head + "\n" + description;
    return head + std::string(optionColumn - head.size(), ' ') + description.substr(optionColumn);
}

std::string sentence(std::string_view text)
{
    std::string result(text);
    if (!result.empty() && result[0] >= 'a' && result[0] <= 'z')
        result[0] = char(result[0] - 'a' + 'A');
    return result + ".";
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

} // namespace

std::string programHelp()
{
    std::string help = "Usage:\n";
    for (const CommandSpec& command : commandSpecs()) {
        help += synopsisLines(command, "  ", "  ");
        help += wrapped(command.summary, 6);
    }
    help += "  qkvlab --help\n" + wrapped("show this help", 6);
    help += "  qkvlab COMMAND --help\n" + wrapped("every option of a command", 6);
    help += "  qkvlab --version\n" + wrapped("show the version", 6);
    return help + examplesList();
}

std::string commandHelp(const CommandSpec& command)
{
    std::string help = synopsisLines(command, "Usage: ", "       ");
    help += wrapped(sentence(command.summary), 0);
    if (!command.details.empty())
        help += wrapped(command.details, 0);
    help += "\nOptions:\n";
    for (const OptionSpec& option : command.options)
        if (!option.hidden)
            help += optionLine(option);
    help += optionLine(OptionSpec{"help", {}, "show this help", false, 'h'});
    return help + "\n" + wrapped("An option's value is the next argument, or follows = (--name=VALUE).", 0);
}

std::string optionListing()
{
    std::string listing;
    for (const CommandSpec& command : commandSpecs())
        for (const OptionSpec& option : command.options)
            if (!option.hidden)
                listing += (command.name.empty() ? std::string("window") : std::string(command.name)) +
                           " --" + std::string(option.name) +
                           (option.takesValue() ? " " + std::string(option.valueName) : std::string()) + "\n";
    return listing;
}

} // namespace qkv::app
