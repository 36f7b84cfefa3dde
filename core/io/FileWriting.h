// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The one place that writes a file: the session file, matrix export and (from ui/) figure export all save
/// through writeFileAtomically().

#include <string>

namespace qkv {

/// Writes `bytes` to `path` atomically, so a crash or a full disk mid-save never destroys what was there:
///
/// - a symbolic link is followed and its target written (a dangling link: the file it names is created);
///   the link itself stays a link. A folder, device or FIFO is refused before anything is written;
/// - the bytes go to a temporary file beside the target, `.NAME.qkvlab-save-PID-XXXXXX`, which is
///   flushed to disk (fsync), given the replaced file's permissions and, when allowed, its owner and group
///   (a new file gets 0666 less the umask, like any editor's), then renamed over the target; the folder is
///   flushed to disk after the rename;
/// - on any failure the temporary file is removed and qkv::Error is thrown with one line that starts with
///   `path`, e.g. "out.csv: cannot write: No space left on device";
/// - before writing, temporary files of earlier saves of the same target that a crash left behind are
///   removed (see isStaleTemporaryFile()).
void writeFileAtomically(const std::string& path, const std::string& bytes);

/// The temporary file name prefix used for saves of a file named `fileName` (no folder):
/// ".NAME.qkvlab-save-" (a very long NAME is shortened so the whole name stays within 255 bytes).
std::string temporaryFilePrefix(const std::string& fileName);

/// Whether a temporary file left beside a target is stale: its owning process (the PID in its name) is no
/// longer running and it has not been written for a minute, or it has not been written for an hour whatever
/// its PID (a PID can be reused). `ageSeconds` is the time since it was last modified; `ownerPid` ≤ 0 when
/// the name holds none.
bool isStaleTemporaryFile(long ownerPid, double ageSeconds);

/// True when a process with this id is running on this machine (it may belong to another user).
bool isProcessRunning(long pid);

} // namespace qkv
