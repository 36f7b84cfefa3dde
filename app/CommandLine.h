#pragma once
// The headless commands of qkvlab: everything that runs without a window.

#include <iosfwd>
#include <string>
#include <vector>

namespace qkv::app {

/// What main() should do after looking at the arguments.
struct CommandLineOutcome {
    bool handled = false;       ///< true: a command ran (or failed); exit with exitCode
    int exitCode = 0;
    std::string sessionToOpen;  ///< for the window: a file path or "example:NAME" ("" = the default example)
};

/// Runs `compute`, `--help` and `--version`; for anything else says which session the window should open.
/// Usage errors and refused files exit with status 2 and a message on `err`.
CommandLineOutcome runCommandLine(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                                  std::ostream& err);


} // namespace qkv::app
