// SPDX-License-Identifier: GPL-3.0-or-later
#include "Masks.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace qkv {

namespace {

/// The keys [first, last] that a causal, prefix or sliding-window mask allows query i to see, before
/// clipping to the keys there are: each of these patterns allows one interval of keys to a query.
std::pair<Index, Index> allowedKeys(const MaskSpec& mask, Index i)
{
    switch (mask.type) {
    case MaskType::Causal:
        return {0, i}; // j ≤ i
    case MaskType::Prefix:
        return {0, std::max(mask.prefixLength - 1, i)}; // j < prefixLength or j ≤ i
    case MaskType::Sliding:
        return {i - mask.window + 1, i}; // j ≤ i and i − j < window
    default:
        break;
    }
    throw std::logic_error("allowedKeys: not an interval mask");
}

} // namespace

bool patternAllows(const MaskSpec& mask, Index i, Index j)
{
    switch (mask.type) {
    case MaskType::None:
        return true;
    case MaskType::Custom:
        return i < mask.allowed.rows() && j < mask.allowed.cols() && mask.allowed(i, j) != 0;
    default: {
        const auto [first, last] = allowedKeys(mask, i);
        return first <= j && j <= last;
    }
    }
}

void buildMask(const Session& session, MaskMatrix& allowed)
{
    const Index n = session.n();
    const Index m = session.m();
    allowed.resize(n, m);
    const MaskSpec& mask = session.mask;
    switch (mask.type) {
    case MaskType::None:
        allowed.setOnes();
        break;
    case MaskType::Custom:
        allowed = mask.allowed;
        break;
    default:
        // A row at a time, an interval of keys each: entry by entry, a large mask would take n · m calls of
        // patternAllows on every computation.
        for (Index i = 0; i < n; ++i) {
            const auto [first, last] = allowedKeys(mask, i);
            const Index from = std::max<Index>(first, 0), to = std::min(last, m - 1);
            allowed.row(i).setZero();
            if (from <= to)
                allowed.row(i).segment(from, to - from + 1).setOnes();
        }
        break;
    }
    const std::vector<bool>& keyPad = session.keyPad();
    for (Index j = 0; j < m && j < static_cast<Index>(keyPad.size()); ++j)
        if (keyPad[static_cast<std::size_t>(j)])
            allowed.col(j).setZero();
    for (Index i = 0; i < n && i < static_cast<Index>(session.pad.size()); ++i)
        if (session.pad[static_cast<std::size_t>(i)])
            allowed.row(i).setZero();
}

} // namespace qkv
