// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The commands that open a model folder: `qkvlab tokenize`, `from-model`, `predict` and `heads`
// (docs/command-line.md). Each throws qkv::Error with one line naming what it refuses.

#include "ArgumentParser.h"
#include "CommandLine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::app {

/// "3,1,4" as whole numbers; false for anything else.
bool parseIndexList(const std::string& text, std::vector<std::int64_t>& values);

CommandLineOutcome runTokenize(const ParsedArguments& arguments, const CommandStreams& streams);
CommandLineOutcome runFromModel(const ParsedArguments& arguments, const CommandStreams& streams);
CommandLineOutcome runPredict(const ParsedArguments& arguments, const CommandStreams& streams);
CommandLineOutcome runHeads(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
