// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab train`'s options read into the trainer's settings.

#include "ArgumentParser.h"
#include "Trainer.h"

namespace qkv::app {

/// The settings the options ask for, on top of the task's recipe. Throws qkv::Error with one line naming
/// the option for a value out of range, options that do not go together, or a missing --out.
training::TrainSettings trainSettings(const ParsedArguments& arguments);

} // namespace qkv::app
