#pragma once
/// @file
/// The session file, version 1 (spec section 5): JSON in, validated completely, and JSON out.

#include "Session.h"

#include <string>

namespace qkv {

/// Parses a session from JSON text. Throws qkv::Error with one message naming the key path
/// (for example "heads[1].W_K: expected 4 rows, found 3"); nothing is returned half-loaded.
Session parseSession(const std::string& jsonText);

/// Reads and parses a file. Throws qkv::Error (the message starts with the path when it cannot be read).
Session loadSession(const std::string& path);

/// Serializes a session, including the unknown keys it was loaded with, as indented JSON.
std::string serializeSession(const Session& session);

/// Writes the file atomically: a temporary file beside it, flushed to disk, then renamed over the old one,
/// so a crash mid-save never destroys what was there. Throws qkv::Error on failure.
void saveSession(const Session& session, const std::string& path);

/// The session's free-form `view` object as compact JSON text ("" when absent), and a setter that
/// replaces it (an empty string removes it). Throws qkv::Error when the text is not a JSON object.
std::string viewJson(const Session& session);
void setViewJson(Session& session, const std::string& viewObject);

} // namespace qkv
