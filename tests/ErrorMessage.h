// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The message of a refusal, for tests that check what a refused input is told.

#include "Error.h"

#include <QString>

namespace qkv::test {

/// The message of the qkv::Error that `action` throws, or "(no error)" when it throws none (so that a test
/// comparing or searching the message fails visibly).
template <typename Action> QString errorOf(Action action)
{
    try {
        action();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("(no error)");
}

} // namespace qkv::test
