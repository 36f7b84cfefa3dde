// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab lens` (docs/command-line.md, docs/patching.md): the logit lens of a text as JSON.

#include "ArgumentParser.h"
#include "CommandLine.h"

namespace qkv::app {

CommandLineOutcome runLens(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
