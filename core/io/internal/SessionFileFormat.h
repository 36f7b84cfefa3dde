// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the session file: what reading it (SessionFileReader.cpp) and writing it
// (SessionFileWriter.cpp) share.

#include "JsonText.h"

namespace qkv::json {

/// The value of the file's `format` key, and the version this code reads and writes (docs/session-file.md).
inline constexpr const char* formatName = "qkvlab-session";
inline constexpr int currentVersion = 1;

/// The member `key` of an object, or nullptr when it has none.
inline const Json* find(const Json& object, const char* key)
{
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

} // namespace qkv::json
