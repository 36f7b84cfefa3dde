// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The help qkvlab prints, written from the declared options (CommandOptions.h) so that it cannot
// forget one.

#include "CommandOptions.h"

#include <string>

namespace qkv::app {

/// `qkvlab --help`: every command's synopsis and summary, then the built-in examples.
std::string programHelp();

/// `qkvlab COMMAND --help`: the command's synopsis, what it does and every option.
std::string commandHelp(const CommandSpec& command);

/// `qkvlab --list-options` (hidden, for the documentation checks and the tests): "COMMAND --OPTION [VALUE]"
/// a line for every option but the hidden ones, with "window" for the window's own options.
std::string optionListing();

} // namespace qkv::app
