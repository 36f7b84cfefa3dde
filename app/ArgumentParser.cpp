// SPDX-License-Identifier: GPL-3.0-or-later
#include "ArgumentParser.h"

#include "Error.h"

#include <QCommandLineParser>

#include <charconv>
#include <cmath>
#include <sstream>

namespace qkv::app {

namespace {

const OptionSpec helpOption{"help", {}, "show this help", false, 'h'};

// Arguments go through Qt as Latin-1, one character per byte, so that any bytes (a file name that is not
// UTF-8) come back unchanged.
QString toQt(std::string_view text)
{
    return QString::fromLatin1(text.data(), qsizetype(text.size()));
}

std::string fromQt(const QString& text)
{
    return text.toLatin1().toStdString();
}

/// The option an argument names: `--name`, `--name=VALUE` or `-x`; nullptr when it is unknown.
const OptionSpec* namedOption(const CommandSpec& command, const std::string& argument)
{
    const bool isLong = argument.rfind("--", 0) == 0;
    const std::string name = isLong ? argument.substr(2, argument.find('=') - 2) : argument.substr(1);
    const auto matches = [&](const OptionSpec& option) {
        return isLong ? option.name == name : name.size() == 1 && option.shortName == name[0];
    };
    if (matches(helpOption))
        return &helpOption;
    for (const OptionSpec& option : command.options)
        if (matches(option))
            return &option;
    return nullptr;
}

/// Why QCommandLineParser refused `args`, in qkvlab's words and naming the argument as it was typed: the
/// first unknown option, an option without its value, or a flag given one.
std::string refusal(const CommandSpec& command, const std::vector<std::string>& args,
                    const QCommandLineParser& parser)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--")
            break;
        if (arg.size() < 2 || arg[0] != '-')
            continue;
        const std::size_t equals = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
        const OptionSpec* option = namedOption(command, arg);
        if (!option)
            return "unknown option " + arg.substr(0, equals);
        const std::string spelled = "--" + std::string(option->name);
        if (option->takesValue() && equals == std::string::npos && ++i == args.size())
            return spelled + " needs a value";
        if (!option->takesValue() && equals != std::string::npos)
            return spelled + " takes no value";
    }
    return fromQt(parser.errorText());
}

std::string expectation(std::string_view name, const std::string& value, const std::string& expected)
{
    return "bad --" + std::string(name) + " '" + value + "': expected " + expected;
}

std::string formatNumber(double value)
{
    std::ostringstream text;
    text << value;
    return text.str();
}

} // namespace

bool ParsedArguments::has(std::string_view name) const
{
    return given_.find(name) != given_.end();
}

std::string ParsedArguments::value(std::string_view name, const std::string& fallback) const
{
    const auto found = given_.find(name);
    return found == given_.end() ? fallback : found->second.back();
}

std::vector<std::string> ParsedArguments::values(std::string_view name) const
{
    const auto found = given_.find(name);
    return found == given_.end() ? std::vector<std::string>() : found->second;
}

std::optional<long long> ParsedArguments::wholeNumber(std::string_view name, long long low, long long high,
                                                      const std::string& expected) const
{
    if (!has(name))
        return std::nullopt;
    const std::string text = value(name);
    long long parsed = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || parsed < low ||
        parsed > high)
        throw Error(expectation(name, text,
                                !expected.empty() ? expected
                                                  : "a whole number from " + std::to_string(low) + " to " +
                                                        std::to_string(high)));
    return parsed;
}

std::optional<double> ParsedArguments::number(std::string_view name, double low, double high) const
{
    if (!has(name))
        return std::nullopt;
    const std::string text = value(name);
    double parsed = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(parsed) ||
        parsed < low || parsed > high) {
        const bool bounded = std::isfinite(low) || std::isfinite(high);
        throw Error(expectation(name, text,
                                bounded ? "a number from " + formatNumber(low) + " to " + formatNumber(high)
                                        : "a number"));
    }
    return parsed;
}

std::optional<double> ParsedArguments::number(std::string_view name) const
{
    return number(name, -HUGE_VAL, HUGE_VAL);
}

std::optional<std::string> ParsedArguments::choice(std::string_view name,
                                                   std::initializer_list<std::string_view> choices) const
{
    if (!has(name))
        return std::nullopt;
    const std::string text = value(name);
    std::string expected;
    std::size_t k = 0;
    for (std::string_view choice : choices) {
        if (text == choice)
            return text;
        expected += (k == 0 ? "" : k + 1 == choices.size() ? " or " : ", ") + std::string(choice);
        ++k;
    }
    throw Error(expectation(name, text, expected));
}

void ParsedArguments::add(const std::string& name, const std::string& value)
{
    given_[name].push_back(value);
}

ParsedArguments parseArguments(const CommandSpec& command, const std::vector<std::string>& args)
{
    QCommandLineParser parser;
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsCompactedShortOptions);
    const auto declare = [&parser](const OptionSpec& option) {
        QStringList names{toQt(option.name)};
        if (option.shortName != 0)
            names.prepend(QString(QLatin1Char(option.shortName)));
        parser.addOption(QCommandLineOption(names, QString(), toQt(option.valueName)));
    };
    declare(helpOption);
    for (const OptionSpec& option : command.options)
        declare(option);

    QStringList arguments{QStringLiteral("qkvlab")}; // parse() skips the program's name
    for (const std::string& arg : args)
        arguments.append(toQt(arg));
    const bool parsed = parser.parse(arguments);

    ParsedArguments result;
    result.helpRequested = parser.isSet(toQt(helpOption.name));
    if (!parsed) {
        if (result.helpRequested) // `--help` wins over what else is wrong, as with most programs
            return result;
        throw Error(refusal(command, args, parser));
    }
    for (const OptionSpec& option : command.options) {
        const QString name = toQt(option.name);
        if (!option.takesValue()) {
            if (parser.isSet(name))
                result.add(std::string(option.name), {});
            continue;
        }
        const QStringList values = parser.values(name);
        if (values.size() > 1 && !option.repeatable)
            throw Error("--" + std::string(option.name) + " is given twice");
        for (const QString& value : values)
            result.add(std::string(option.name), fromQt(value));
    }
    for (const QString& positional : parser.positionalArguments())
        result.positional.push_back(fromQt(positional));
    return result;
}

} // namespace qkv::app
