#pragma once
// Internal to core: the one place that reads a whole file, shared by the session file and matrix import.

#include <cstdint>
#include <iosfwd>
#include <string>

namespace qkv {

/// Reads the regular file at `path` into memory. Refuses, with qkv::Error whose message starts with the
/// path: a file that cannot be opened, anything that is not a regular file (a folder, a FIFO, a device
/// such as /dev/zero: opened without blocking and refused before a byte is read), and a file larger than
/// `maxBytes` (`what` names the kind of file in that message, e.g. "a session file").
std::string readRegularFile(const std::string& path, std::uint64_t maxBytes, const std::string& what);

/// Reads a stream to its end, refusing with qkv::Error ("NAME: larger than ...") once it passes `maxBytes`,
/// so an endless stream (standard input from /dev/zero) stops with a message instead of exhausting memory.
std::string readStream(std::istream& in, std::uint64_t maxBytes, const std::string& name,
                       const std::string& what);

} // namespace qkv
