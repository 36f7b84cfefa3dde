// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab circuits` and `qkvlab decompose` (docs/command-line.md, docs/circuits.md): a head's QK and OV
// circuits, its composition with earlier heads, and one attention score taken apart, as JSON.

#include "ArgumentParser.h"
#include "CommandLine.h"

namespace qkv::app {

/// MODEL --layer L --head H [--text TEXT | --ids I,J,...] [--top K], or a session's head: FILE [--head H].
CommandLineOutcome runCircuits(const ParsedArguments& arguments, const CommandStreams& streams);

/// MODEL --layer L --head H (--text TEXT | --ids I,J,...) --query I --key J.
CommandLineOutcome runDecompose(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
