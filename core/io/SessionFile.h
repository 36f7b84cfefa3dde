// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The session file, version 1 (docs/session-file.md): JSON in, validated completely, and JSON out.

#include "Session.h"

#include <cstdint>
#include <string>

namespace qkv {

/// Containers (objects and arrays) may nest this deep in a session file; deeper files are refused while
/// parsing, before anything recursive (copying, writing) could overflow the stack.
inline constexpr int maxSessionNesting = 512;

/// Parses a session from JSON text. Throws qkv::Error with one message naming the key path
/// (for example "heads[1].W_K: expected 4 rows, found 3"); nothing is returned half-loaded. A file without
/// `title` gets `defaultTitle`; one without `score` gets dot.
Session parseSession(const std::string& jsonText, const std::string& defaultTitle = "Untitled");

/// Reads and parses a regular file of at most `maxBytes` (0: sessionFileSizeLimit(defaultMemoryLimit())).
/// Throws qkv::Error (the message starts with the path when it cannot be read). A file without `title` is
/// titled by its name without the .qkv.json suffix.
Session loadSession(const std::string& path, std::uint64_t maxBytes = 0);

/// The title of a session file without `title`: "foo" for ".../foo.qkv.json", "bar" for "bar.json".
std::string titleFromPath(const std::string& path);

/// Serializes a session, including the unknown keys it was loaded with, as indented JSON.
std::string serializeSession(const Session& session);

/// Writes the file atomically: a temporary file beside it, flushed to disk, then renamed over the old one,
/// so a crash mid-save never destroys what was there. Throws qkv::Error on failure.
void saveSession(const Session& session, const std::string& path);

/// The session's `view` object as it is written (its typed head and selection, Session::view, with the
/// free-form rest) as compact JSON text ("" when absent), and a setter that replaces it (an empty string
/// removes it). Throws qkv::Error when the text is not a JSON object.
std::string viewJson(const Session& session);
void setViewJson(Session& session, const std::string& viewObject);

} // namespace qkv
