// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one parser of qkvlab's arguments: a command's declared options (CommandOptions.h) read by
// QCommandLineParser, and the values read back as numbers or choices with one message per problem.

#include "CommandOptions.h"

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::app {

/// A command's arguments, parsed. The typed readers throw qkv::Error with one line naming the option and
/// the value ("bad --width 'wide': expected a whole number from 16 to 20000").
class ParsedArguments {
public:
    std::vector<std::string> positional; ///< the arguments that are not options, in order
    bool helpRequested = false;          ///< --help or -h

    bool has(std::string_view name) const;
    /// The value of option `name` (its only one; the last of a repeatable option), or `fallback`.
    std::string value(std::string_view name, const std::string& fallback = {}) const;
    /// Every value of a repeatable option, in order.
    std::vector<std::string> values(std::string_view name) const;

    /// A whole number from `low` to `high`; nothing when the option is absent. `expected` replaces the
    /// message's "a whole number from LOW to HIGH".
    std::optional<long long> wholeNumber(std::string_view name, long long low, long long high,
                                         const std::string& expected = {}) const;
    /// A finite number from `low` to `high`; nothing when the option is absent.
    std::optional<double> number(std::string_view name, double low, double high) const;
    /// A finite number; nothing when the option is absent.
    std::optional<double> number(std::string_view name) const;
    /// One of `choices`; nothing when the option is absent.
    std::optional<std::string> choice(std::string_view name,
                                      std::initializer_list<std::string_view> choices) const;

    /// Records a value (the parser's job).
    void add(const std::string& name, const std::string& value);

private:
    std::map<std::string, std::vector<std::string>, std::less<>> given_;
};

/// Parses `args` (what follows the command's name) against `command`'s options: `--name VALUE`,
/// `--name=VALUE`, flags, `-` and everything after `--` as positional arguments. Throws qkv::Error with one
/// line for an unknown option, a missing value, a value given to a flag or an option given twice.
ParsedArguments parseArguments(const CommandSpec& command, const std::vector<std::string>& args);

} // namespace qkv::app
