// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab train`: a small transformer trained on a generated task or on given token ids, saved as a model
// folder (docs/training.md, docs/command-line.md).

#include "ArgumentParser.h"
#include "CommandLine.h"

namespace qkv::app {

/// Reads the options, trains with progress on `streams.err` and writes the folder. Exit 0; throws qkv::Error
/// with one line naming the option or file for anything refused; exit 1 when the loss stops being finite
/// (the step is named and the last finite model is saved).
CommandLineOutcome runTrain(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
