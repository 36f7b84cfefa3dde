// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab export`'s arguments checked, the session read or the model run, before anything is drawn
// (ExportCommand.h draws, once a QApplication exists).

#include "ArgumentParser.h"
#include "CommandLine.h"

namespace qkv::app {

/// Everything that can be checked without the views themselves, handed back as an ExportRequest or a
/// ModelExportRequest (outcome.handled false). The view name is checked by the export command, which knows
/// the views. Throws qkv::Error with one line naming the problem.
CommandLineOutcome parseExport(const ParsedArguments& arguments, const CommandStreams& streams);

} // namespace qkv::app
