// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab patch` (docs/command-line.md, docs/patching.md): a patching grid between a clean and a corrupted
// prompt as JSON, and optionally as a Python script that recomputes it.

#include "ArgumentParser.h"
#include "CommandLine.h"

namespace qkv::app {

CommandLineOutcome runPatch(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
