// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the session file's reader: the checks every key goes through, each refusing with one message
// that starts with the key's path ("model.patching.answer: expected a whole number ≥ 0, found -1").

#include "EigenTypes.h"
#include "JsonText.h"

#include <cstddef>
#include <optional>
#include <string>

namespace qkv::json {

[[noreturn]] void refuse(const std::string& path, const std::string& problem);
/// "a number", "an array", … for messages.
std::string typeName(const Json& value);
[[noreturn]] void wrongType(const std::string& path, const char* expected, const Json& found);
/// The member `key` of `object`, refused as "OBJECTPATH.KEY: missing" when absent.
const Json& require(const Json& object, const std::string& objectPath, const char* key);
/// A finite number.
double readNumber(const Json& value, const std::string& path);
/// A whole number from `min` to 10⁹.
Index readWholeNumber(const Json& value, const std::string& path, Index min);
std::string readString(const Json& value, const std::string& path);
const Json& requireObject(const Json& value, const std::string& path);
/// 1 to `max` entries of `what`.
void checkCount(const std::string& path, std::size_t count, const char* what, Index max);

/// A name of one of an enum's values (`parse` turns it into the value), refused as "unknown WHAT".
template <typename Enum>
Enum readNamed(const Json& value, const std::string& path, std::optional<Enum> (*parse)(const std::string&),
               const char* what, const char* expected)
{
    const std::string text = readString(value, path);
    const std::optional<Enum> parsed = parse(text);
    if (!parsed)
        refuse(path, std::string("unknown ") + what + " \"" + text + "\" (expected " + expected + ")");
    return *parsed;
}

} // namespace qkv::json
