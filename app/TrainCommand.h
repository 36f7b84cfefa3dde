// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab train`: a small transformer trained on a generated task or on given token ids, saved as a model
// folder (docs/training.md, docs/command-line.md).

#include "CommandLine.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace qkv::app {

/// The usage of `qkvlab train` (every option), for --help.
const char* trainUsage();

/// Parses the options, trains with progress on `err` and writes the folder. Exit 0; 2 with one line naming
/// the option or file for anything refused; 1 when the loss stops being finite (the step is named and the
/// last finite model is saved).
CommandLineOutcome runTrain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace qkv::app
