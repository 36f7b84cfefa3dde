// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab compute`, and how every command reads the session it is given (docs/command-line.md).

#include "ArgumentParser.h"
#include "CommandLine.h"

#include <cstdint>
#include <iosfwd>
#include <string>

namespace qkv::app {

/// The session `source` names: a file, "-" for `in`, or "example:NAME". Throws qkv::Error naming the source.
Session readSessionArgument(const std::string& source, std::istream& in, std::uint64_t memoryLimit);

/// Computes the session and writes the result as JSON on `streams.out`; throws qkv::Error when refused.
CommandLineOutcome runCompute(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
