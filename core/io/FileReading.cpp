// SPDX-License-Identifier: GPL-3.0-or-later
#include "FileReading.h"

#include "Error.h"
#include "ResourceLimits.h"

#include <cerrno>
#include <cstring>
#include <istream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qkv {

namespace {

constexpr std::size_t readSize = 65536;

std::string tooLarge(std::uint64_t maxBytes, const std::string& what)
{
    return "too large: " + what + " may have at most " + formatBytes(maxBytes);
}

std::string kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a pipe (FIFO)";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

} // namespace

int openRegularFile(const std::string& path, std::uint64_t& size)
{
    const auto notAFile = [&path](mode_t mode) {
        return Error(path + ": cannot read: it is " + kindOf(mode) + ", not a file");
    };
    // Checked before opening: opening some devices has effects of its own.
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
        throw notAFile(info.st_mode);
    // O_NONBLOCK: should the path have become a FIFO since, opening it would otherwise wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        throw Error(path + ": cannot open: " + std::strerror(errno));
    if (::fstat(fd, &info) != 0) {
        const int error = errno;
        ::close(fd);
        throw Error(path + ": cannot read: " + std::strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        throw notAFile(info.st_mode);
    }
    size = static_cast<std::uint64_t>(info.st_size);
    return fd;
}

RegularFileBuffer::RegularFileBuffer(const std::string& path, std::uint64_t maxBytes, const std::string& what)
    : path_(path), what_(what), maxBytes_(maxBytes)
{
    fd_ = openRegularFile(path, size_);
    if (size_ > maxBytes) {
        ::close(fd_);
        throw Error(path + ": " + tooLarge(maxBytes, what) + " (it has " + formatBytes(size_) + ")");
    }
    buffer_.resize(readSize);
}

RegularFileBuffer::~RegularFileBuffer()
{
    ::close(fd_);
}

RegularFileBuffer::int_type RegularFileBuffer::underflow()
{
    if (gptr() < egptr())
        return traits_type::to_int_type(*gptr());
    ssize_t count = 0;
    do
        count = ::read(fd_, buffer_.data(), buffer_.size());
    while (count < 0 && errno == EINTR);
    if (count < 0)
        throw Error(path_ + ": cannot read: " + std::strerror(errno));
    if (count == 0)
        return traits_type::eof();
    read_ += static_cast<std::uint64_t>(count);
    if (read_ > maxBytes_) // the file grew while being read
        throw Error(path_ + ": " + tooLarge(maxBytes_, what_));
    setg(buffer_.data(), buffer_.data(), buffer_.data() + count);
    return traits_type::to_int_type(*gptr());
}

std::string readRegularFile(const std::string& path, std::uint64_t maxBytes, const std::string& what)
{
    RegularFileBuffer file(path, maxBytes, what);
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(file.size()));
    while (file.sgetc() != RegularFileBuffer::traits_type::eof()) {
        const std::streamsize available = file.in_avail();
        const std::size_t before = bytes.size();
        bytes.resize(before + static_cast<std::size_t>(available));
        file.sgetn(bytes.data() + before, available);
    }
    return bytes;
}

std::string readStream(std::istream& in, std::uint64_t maxBytes, const std::string& name,
                       const std::string& what)
{
    std::string bytes;
    char buffer[readSize];
    while (in) {
        in.read(buffer, sizeof buffer);
        bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (bytes.size() > maxBytes)
            throw Error(name + ": " + tooLarge(maxBytes, what));
    }
    if (in.bad())
        throw Error(name + ": cannot read");
    return bytes;
}

} // namespace qkv
