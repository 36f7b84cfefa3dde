// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// How much memory a session may take, estimated before anything large is allocated, so that a session
/// that would not fit is refused with a message instead of aborting on std::bad_alloc or swapping for
/// minutes.

#include "Session.h"

#include <cstdint>
#include <string>

namespace qkv {

/// The machine's physical memory in bytes (0 when it cannot be read).
std::uint64_t physicalMemoryBytes();

/// The default limit: three quarters of the physical memory (8 GiB when it cannot be read), or of the
/// process's address-space or data limit (ulimit -v, -d) when that is lower.
std::uint64_t defaultMemoryLimit();

/// Bytes the engine's result for `session` occupies at its peak: every head's Q, K, V, scores, scaled,
/// mask, weights, output and row statistics, the concatenation and the final output, and the session itself.
std::uint64_t estimateComputeBytes(const Session& session);

/// Throws qkv::Error when estimateComputeBytes(session) × `overhead` exceeds `limit` (0: no limit), e.g.
/// "this session needs about 78.3 GB to compute, more than the memory limit of 18.0 GB". `overhead`
/// accounts for what a caller adds on top of the result (a copy for a view, say; compute's JSON output is
/// streamed and adds nothing).
void checkMemory(const Session& session, std::uint64_t limit, double overhead = 1.0);

/// The largest session file read under `memoryLimit`: its matrices take at most ~4 bytes of memory per byte
/// of text, but anything else (unknown keys, say) becomes a document tree of up to ~16 bytes per byte, so a
/// file is at most limit / 16 (at least 64 MiB).
std::uint64_t sessionFileSizeLimit(std::uint64_t memoryLimit);

/// Parses "512M", "8G", "1.5GB", "2048" (bytes), "80%" (of the physical memory). Returns 0 when the text
/// is not a positive size.
std::uint64_t parseByteSize(const std::string& text);

/// "1.5 GB", "310 MB", "12 KB", "800 bytes" (powers of 1000, as file managers show them).
std::string formatBytes(std::uint64_t bytes);

} // namespace qkv
