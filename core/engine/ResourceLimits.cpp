// SPDX-License-Identifier: GPL-3.0-or-later
#include "ResourceLimits.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <sys/resource.h>
#include <unistd.h>

namespace qkv {

namespace {

constexpr std::uint64_t gib = std::uint64_t(1) << 30;

/// a · b · … as a double, so that no product of the session's size limits can overflow.
double bytesOf(std::initializer_list<double> factors)
{
    double product = 1.0;
    for (double f : factors)
        product *= f;
    return product;
}

std::uint64_t saturate(double bytes)
{
    return bytes >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(bytes);
}

} // namespace

std::uint64_t physicalMemoryBytes()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || pageSize <= 0)
        return 0;
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(pageSize);
}

std::uint64_t defaultMemoryLimit()
{
    const std::uint64_t physical = physicalMemoryBytes();
    std::uint64_t limit = physical > 0 ? physical / 4 * 3 : 8 * gib;
    // A process limit (ulimit -v, -d) is a harder ceiling than the machine's memory.
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        struct rlimit cap {};
        if (::getrlimit(resource, &cap) == 0 && cap.rlim_cur != RLIM_INFINITY)
            limit = std::min<std::uint64_t>(limit, static_cast<std::uint64_t>(cap.rlim_cur) / 4 * 3);
    }
    return limit;
}

std::uint64_t estimateComputeBytes(const Session& s)
{
    const auto n = static_cast<double>(s.n());
    const auto m = static_cast<double>(s.m());
    const auto dK = static_cast<double>(s.dK());
    const auto dV = static_cast<double>(s.dV());
    const auto heads = static_cast<double>(s.headCount());
    const double dOut = s.W_O ? static_cast<double>(s.W_O->cols()) : heads * dV;
    constexpr double d = sizeof(double);
    // Per head: Q, K, V, scores, scaled, weights (doubles), the mask (bytes), the output, the row statistics.
    const double perHead = bytesOf({d, n + m, dK}) + bytesOf({d, m, dV}) + bytesOf({3 * d + 1, n, m}) +
                           bytesOf({d, n, dV}) + bytesOf({32, n});
    // The session's own matrices (already in memory, and copied once for a background computation).
    double session =
        static_cast<double>(s.X.size() + (s.context ? s.context->Z.size() : 0) + (s.W_O ? s.W_O->size() : 0));
    for (const Head& head : s.heads)
        session += static_cast<double>(head.W_Q.size() + head.W_K.size() + head.W_V.size() + head.W_S.size() +
                                       head.W_a.size() + head.U_a.size() + head.v_a.size());
    session += static_cast<double>(s.positions.P.size());
    // X + PE and Z + PE, kept in the result when the encoding is added to the embeddings.
    if (s.positions.type == PositionType::Sinusoidal || s.positions.type == PositionType::Learned)
        session += static_cast<double>(s.X.size() + (s.context ? s.context->Z.size() : 0));
    session *= d;
    // The shared mask, the concatenation and the final output.
    const double shared = bytesOf({1, n, m}) + bytesOf({d, n, heads * dV + dOut});
    // float32 works on float copies: of the session's matrices, and of Q, K, V and the concatenation.
    const double float32Copies =
        s.precision == Precision::Float32
            ? session / 2 + bytesOf({4, n + m, dK}) + bytesOf({4, m, dV}) + bytesOf({4, n, heads * dV + dOut})
            : 0.0;
    return saturate(heads * perHead + session + shared + float32Copies);
}

void checkMemory(const Session& session, std::uint64_t limit, double overhead)
{
    if (limit == 0)
        return;
    const double needed = static_cast<double>(estimateComputeBytes(session)) * overhead;
    if (needed > static_cast<double>(limit))
        throw Error(
            "this session needs about " + formatBytes(saturate(needed)) +
            " of memory to compute, more than the limit of " + formatBytes(limit) +
            " (fewer tokens, heads or dimensions fit; the limit is --max-memory on the command line and "
            "Edit ▸ Settings in the window)");
}

std::uint64_t sessionFileSizeLimit(std::uint64_t memoryLimit)
{
    constexpr std::uint64_t smallest = std::uint64_t(64) << 20;
    const std::uint64_t limit = memoryLimit == 0 ? 64 * gib : memoryLimit / 16;
    return limit < smallest ? smallest : limit;
}

std::uint64_t parseByteSize(const std::string& text)
{
    if (text.empty())
        return 0;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(value) || value <= 0)
        return 0;
    std::string unit(end);
    for (char& c : unit)
        c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    if (unit.size() == 2 && unit[1] == 'B' && unit[0] != 'B')
        unit.pop_back(); // "GB" as "G"
    double factor = 1.0;
    if (unit.empty() || unit == "B")
        factor = 1.0;
    else if (unit == "K")
        factor = 1024.0;
    else if (unit == "M")
        factor = 1024.0 * 1024.0;
    else if (unit == "G")
        factor = static_cast<double>(gib);
    else if (unit == "T")
        factor = static_cast<double>(gib) * 1024.0;
    else if (unit == "%")
        factor = static_cast<double>(physicalMemoryBytes()) / 100.0;
    else
        return 0;
    const double bytes = value * factor;
    return bytes >= 1.0 ? saturate(bytes) : 0;
}

std::string formatBytes(std::uint64_t bytes)
{
    const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
    auto value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1000.0 && unit < 6) {
        value /= 1000.0;
        ++unit;
    }
    char text[32];
    if (unit == 0)
        std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(text, sizeof text, value < 100.0 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    return text;
}

} // namespace qkv
