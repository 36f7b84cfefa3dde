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

std::string readRegularFile(const std::string& path, std::uint64_t maxBytes, const std::string& what)
{
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        throw Error(path + ": cannot open: " + std::strerror(errno));
    const auto fail = [&](const std::string& problem) {
        ::close(fd);
        throw Error(path + ": " + problem);
    };
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        fail(std::string("cannot read: ") + std::strerror(errno));
    if (!S_ISREG(info.st_mode))
        fail("cannot read: it is " + kindOf(info.st_mode) + ", not a file");
    if (static_cast<std::uint64_t>(info.st_size) > maxBytes)
        fail(tooLarge(maxBytes, what) + " (it has " + formatBytes(static_cast<std::uint64_t>(info.st_size)) +
             ")");
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(info.st_size));
    char buffer[65536];
    while (true) {
        const ssize_t count = ::read(fd, buffer, sizeof buffer);
        if (count < 0) {
            if (errno == EINTR)
                continue;
            fail(std::string("cannot read: ") + std::strerror(errno));
        }
        if (count == 0)
            break;
        bytes.append(buffer, static_cast<std::size_t>(count));
        if (bytes.size() > maxBytes) // the file grew while being read
            fail(tooLarge(maxBytes, what));
    }
    ::close(fd);
    return bytes;
}

std::string readStream(std::istream& in, std::uint64_t maxBytes, const std::string& name,
                       const std::string& what)
{
    std::string bytes;
    char buffer[65536];
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
