// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The commands that run a model to its prediction: `qkvlab predict` and `qkvlab heads`
// (docs/command-line.md).

#include "CommandLine.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace qkv::app {

/// "3,1,4" as whole numbers; false for anything else.
bool parseIndexList(const std::string& text, std::vector<std::int64_t>& values);

CommandLineOutcome runPredict(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
CommandLineOutcome runHeads(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace qkv::app
