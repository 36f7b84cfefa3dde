// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The headless commands of qkvlab: everything that runs without a window.

#include "ExportCommand.h"
#include "Session.h"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace qkv::app {

/// `qkvlab export`, checked and with its session loaded: what is left needs a QApplication (see
/// ExportCommand.h).
struct ExportRequest {
    Session session;
    std::string view;   ///< a figure name, or "all"; checked against the views when they exist
    int head = 0;       ///< 0-based, within the session's heads
    std::string format; ///< "png", "svg" or "pdf"
    std::string out;    ///< a file, or the folder for "all"
    int width = 0;      ///< figure pixels; 0: the view's default
    int height = 0;
    double scale = 1.0;     ///< PNG pixels per figure pixel
    bool listViews = false; ///< `qkvlab export --help`: print the usage and the view names, nothing else
    /// `--view model --model DIR`: every layer's and head's attention weights ([layer][head]) of the model
    /// for the text or ids, and the figure's title; the session is then unused.
    bool model = false;
    std::vector<std::vector<Matrix>> modelWeights;
    std::string modelTitle;
};

/// What main() should do after looking at the arguments.
struct CommandLineOutcome {
    bool handled = false; ///< true: a command ran (or failed); exit with exitCode
    int exitCode = 0;
    std::string sessionToOpen; ///< for the window: a file path or "example:NAME" ("" = the default example)
    std::optional<ExportRequest> exportRequest; ///< set: run the export (after creating the QApplication)
    /// set: draw a model's prediction, head scores or ablation sweep (after creating the QApplication)
    std::optional<ModelExportRequest> modelExportRequest;
};

/// Where a command reads and writes.
struct CommandStreams {
    std::istream& in;
    std::ostream& out;
    std::ostream& err;
};

/// What a command that ran to its end returns.
inline CommandLineOutcome finished(int exitCode = 0)
{
    CommandLineOutcome outcome;
    outcome.handled = true;
    outcome.exitCode = exitCode;
    return outcome;
}

/// The usage of `qkvlab export`, without the list of views.
std::string exportUsage();

/// Runs the headless commands, `--help` and `--version`; checks `export` and hands it back as an
/// ExportRequest; for anything else says which session the window should open. Every command's arguments
/// are parsed by one parser against its declared options (CommandOptions.h). Usage errors and refused
/// files exit with status 2 and one line on `err` naming the problem.
CommandLineOutcome runCommandLine(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                                  std::ostream& err);

} // namespace qkv::app
