// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Progress of a long computation on standard error, written over itself on one line, and only when standard
// error is a terminal: a command whose output is captured or piped prints nothing but its result.

#include "EigenTypes.h"

#include <chrono>
#include <iosfwd>
#include <string>

namespace qkv::app {

class TerminalProgress {
public:
    /// Shows "WHAT: DONE/TOTAL UNIT" on `err` when `err` is the process's standard error and a terminal.
    TerminalProgress(std::ostream& err, std::string what, std::string unit);
    /// Clears the line when something was shown.
    ~TerminalProgress();
    TerminalProgress(const TerminalProgress&) = delete;
    TerminalProgress& operator=(const TerminalProgress&) = delete;

    /// Told (done, total); at most a few updates a second reach the terminal. Always returns true (never
    /// stops the computation), as the patching and lens progress callbacks expect.
    bool operator()(Index done, Index total);

private:
    std::ostream& err_;
    std::string what_, unit_;
    bool shown_ = false;
    bool enabled_ = false;
    std::chrono::steady_clock::time_point last_{};
};

} // namespace qkv::app
