#include "FileWriting.h"

#include "Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qkv {

void writeFileAtomically(const std::string& path, const std::string& bytes)
{
    std::string temporary = path + ".XXXXXX";
    const int fd = mkstemp(temporary.data());
    if (fd < 0)
        throw Error(path + ": cannot create a file beside it: " + std::strerror(errno));
    const auto fail = [&](const char* what) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        std::remove(temporary.c_str());
        throw Error(path + ": " + what + ": " + reason);
    };
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t count = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (count < 0) {
            if (errno == EINTR)
                continue;
            fail("cannot write");
        }
        written += static_cast<std::size_t>(count);
    }
    // Keep the permissions of the file being replaced (mkstemp creates 0600).
    struct stat existing {};
    const mode_t mode = ::stat(path.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : 0644;
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0)
        fail("cannot flush to disk");
    if (::close(fd) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(temporary.c_str());
        throw Error(path + ": cannot write: " + reason);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(temporary.c_str());
        throw Error(path + ": cannot replace: " + reason);
    }
}

} // namespace qkv
