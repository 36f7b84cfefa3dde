// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers shared by the fuzz targets: a finding is reported on standard error and ends the run with
// abort(), which libFuzzer and the replay runner both record as a crash with the input that caused it.

#include "EigenTypes.h"
#include "Error.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace qkv::fuzz {

[[noreturn]] inline void fail(const std::string& what)
{
    std::fprintf(stderr, "qkv fuzz finding: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

inline std::string text(const std::uint8_t* data, std::size_t size)
{
    return std::string(reinterpret_cast<const char*>(data), size);
}

/// A double as it reads back ("%.17g"), for messages.
inline std::string number(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

template <typename Derived> bool allFinite(const Eigen::DenseBase<Derived>& m)
{
    for (Index r = 0; r < m.rows(); ++r)
        for (Index c = 0; c < m.cols(); ++c)
            if (!std::isfinite(static_cast<double>(m(r, c))))
                return false;
    return true;
}

/// Runs `step`; any exception out of it is a finding named `what`.
template <typename Step> auto mustNotThrow(const char* what, Step&& step) -> decltype(step())
{
    try {
        return step();
    } catch (const std::exception& e) {
        fail(std::string(what) + " threw: " + e.what());
    }
}

} // namespace qkv::fuzz
