// SPDX-License-Identifier: GPL-3.0-or-later
#include "TerminalProgress.h"

#include <cstdio>
#include <iostream>
#include <unistd.h>
#include <utility>

namespace qkv::app {

TerminalProgress::TerminalProgress(std::ostream& err, std::string what, std::string unit)
    : err_(err), what_(std::move(what)), unit_(std::move(unit)),
      enabled_(&err == &std::cerr && isatty(STDERR_FILENO) == 1)
{
}

TerminalProgress::~TerminalProgress()
{
    if (shown_)
        err_ << "\r\033[K" << std::flush; // the line erased, so the next output starts clean
}

bool TerminalProgress::operator()(Index done, Index total)
{
    if (!enabled_)
        return true;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && done < total && now - last_ < std::chrono::milliseconds(200))
        return true;
    last_ = now;
    shown_ = true;
    err_ << "\r" << what_ << ": " << done << "/" << total << " " << unit_ << std::flush;
    return true;
}

} // namespace qkv::app
