// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The options of every command of qkvlab, declared once: the parser (ArgumentParser.h), `--help`
// (HelpText.h) and the checks of the manual page and docs/command-line.md all read these lists.

#include <string_view>
#include <vector>

namespace qkv::app {

/// One option of a command.
struct OptionSpec {
    std::string_view name;        ///< the long name without its dashes: "view" for --view
    std::string_view valueName;   ///< how the help names its value ("NAME"); empty for a flag
    std::string_view description; ///< one paragraph; the help wraps it
    bool repeatable = false;      ///< may be given more than once (every value is kept)
    char shortName = 0;           ///< a one-letter alias (-v), or 0
    bool hidden = false;          ///< left out of the help and of the documentation checks

    bool takesValue() const { return !valueName.empty(); }
};

/// A command and its options. Every command also takes --help (-h), which the parser adds.
struct CommandSpec {
    std::string_view name; ///< "export"; empty for the window (no command)
    /// What follows `qkvlab NAME`, one form a line; a line that starts with two spaces continues the form
    /// above.
    std::string_view synopsis;
    std::string_view summary; ///< what it does, for `qkvlab --help`
    std::string_view details; ///< the paragraph `qkvlab NAME --help` adds (may be empty)
    std::vector<OptionSpec> options;

    /// The option called `name`, or nullptr.
    const OptionSpec* option(std::string_view optionName) const;
};

/// The window's own arguments (`qkvlab [FILE | example:NAME]`, --version) and then every command, in the
/// order `qkvlab --help` lists them.
const std::vector<CommandSpec>& commandSpecs();

/// The command called `name`, or nullptr; "" is the window.
const CommandSpec* findCommand(std::string_view name);

/// The command called `name`; a name that is not in commandSpecs() is a programming error.
const CommandSpec& commandSpec(std::string_view name);

} // namespace qkv::app
