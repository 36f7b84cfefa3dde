// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The one place that reads a file: the session file, matrix import, checkpoints and tokenizers, and the
/// command line's standard input (readStream).

#include <cstdint>
#include <iosfwd>
#include <streambuf>
#include <string>
#include <vector>

namespace qkv {

/// Opens the regular file at `path` for reading and returns its descriptor (the caller closes it); `size`
/// gets its size. Refuses with qkv::Error whose message starts with the path: a file that cannot be opened,
/// and anything that is not a regular file (a folder, a FIFO, a device such as /dev/zero), which is checked
/// before it is opened and opened without blocking, so no device is opened and no FIFO waits for a writer.
int openRegularFile(const std::string& path, std::uint64_t& size);

/// A regular file open for reading as a stream buffer, so a parser can read it as it goes instead of
/// holding its whole text. The constructor refuses, with qkv::Error whose message starts with the path: a
/// file that cannot be opened, anything that is not a regular file (a folder, a FIFO, a device such as
/// /dev/zero: opened without blocking and refused before a byte is read), and a file larger than `maxBytes`
/// (`what` names the kind of file in that message, e.g. "a session file"). Reading throws qkv::Error on a
/// read error, or once the file has grown past `maxBytes` while being read.
class RegularFileBuffer : public std::streambuf {
public:
    RegularFileBuffer(const std::string& path, std::uint64_t maxBytes, const std::string& what);
    ~RegularFileBuffer() override;
    RegularFileBuffer(const RegularFileBuffer&) = delete;
    RegularFileBuffer& operator=(const RegularFileBuffer&) = delete;

    /// The file's size when it was opened.
    std::uint64_t size() const { return size_; }

protected:
    int_type underflow() override;

private:
    std::string path_;
    std::string what_;
    std::uint64_t maxBytes_;
    std::uint64_t size_ = 0;
    std::uint64_t read_ = 0;
    int fd_ = -1;
    std::vector<char> buffer_;
};

/// Reads the regular file at `path` into memory, refusing what RegularFileBuffer refuses.
std::string readRegularFile(const std::string& path, std::uint64_t maxBytes, const std::string& what);

/// Reads a stream to its end, refusing with qkv::Error ("NAME: larger than ...") once it passes `maxBytes`,
/// so an endless stream (standard input from /dev/zero) stops with a message instead of exhausting memory.
std::string readStream(std::istream& in, std::uint64_t maxBytes, const std::string& name,
                       const std::string& what);

} // namespace qkv
