#pragma once
// Internal to core: the one place that writes a file, shared by the session file and matrix export.

#include <string>

namespace qkv {

/// Writes `bytes` to `path` atomically: a temporary file beside it (path + ".XXXXXX"), given the
/// permissions of the file it replaces (0644 for a new file), flushed to disk, then renamed over `path`,
/// so a crash mid-save never destroys what was there. On failure the temporary file is removed and
/// qkv::Error is thrown with a message that starts with the path, e.g. "out.csv: cannot write: No space
/// left".
void writeFileAtomically(const std::string& path, const std::string& bytes);

} // namespace qkv
