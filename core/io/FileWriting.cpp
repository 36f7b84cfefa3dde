// SPDX-License-Identifier: GPL-3.0-or-later
#include "FileWriting.h"

#include "Error.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qkv {

namespace {

constexpr const char* temporaryTag = ".qkvlab-save-";
constexpr int maximumLinkHops = 40; // as the kernel's own limit for a path
constexpr double orphanGraceSeconds = 60;
constexpr double abandonedAfterSeconds = 3600;
constexpr std::size_t maximumNameBytes = 255;

std::string reasonOf(int error)
{
    return std::strerror(error);
}

std::string folderOf(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string fileNameOf(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string readLink(const std::string& path)
{
    std::vector<char> buffer(PATH_MAX + 1);
    const ssize_t length = ::readlink(path.c_str(), buffer.data(), buffer.size());
    if (length < 0 || static_cast<std::size_t>(length) >= buffer.size())
        return std::string();
    return std::string(buffer.data(), static_cast<std::size_t>(length));
}

// The file a save to `path` replaces: symbolic links followed to the end. realpath() resolves a live link;
// a dangling one is followed by hand to the name it points to, which is then created.
std::string resolveTarget(const std::string& path)
{
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
        return path;
    if (char* real = ::realpath(path.c_str(), nullptr)) {
        std::string resolved(real);
        std::free(real);
        return resolved;
    }
    std::string current = path;
    for (int hop = 0; hop < maximumLinkHops; ++hop) {
        if (::lstat(current.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
            return current;
        const std::string target = readLink(current);
        if (target.empty())
            throw Error(path + ": cannot follow the symbolic link: " + reasonOf(errno));
        current = target.front() == '/' ? target : folderOf(current) + "/" + target;
    }
    throw Error(path + ": cannot follow the symbolic link: " + reasonOf(ELOOP));
}

std::mt19937_64& randomNames()
{
    thread_local std::mt19937_64 engine{std::random_device{}()};
    return engine;
}

std::string randomSuffix()
{
    static constexpr char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::uniform_int_distribution<std::size_t> pick(0, sizeof(letters) - 2);
    std::string suffix(6, 'x');
    for (char& c : suffix)
        c = letters[pick(randomNames())];
    return suffix;
}

double secondsSince(const struct stat& info)
{
    return std::difftime(std::time(nullptr), info.st_mtime);
}

// Removes what crashed saves of the same target left beside it. Best effort: a failure here never stops
// the save.
void removeStaleTemporaries(const std::string& folder, const std::string& fileName)
{
    const std::string prefix = temporaryFilePrefix(fileName);
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(folder.c_str()), &::closedir);
    if (!dir)
        return;
    while (const dirent* entry = ::readdir(dir.get())) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const std::string path = folder + "/" + name;
        struct stat info {};
        if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
            continue;
        char* end = nullptr;
        const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
        const long owner = end && *end == '-' ? pid : 0;
        if (isStaleTemporaryFile(owner, secondsSince(info)))
            ::unlink(path.c_str());
    }
}

// Opens a new temporary file beside the target. A new target is created 0666 less the umask (the kernel
// applies it); one that replaces a file starts private (0600) and gets that file's mode before the rename.
int createTemporary(const std::string& folder, const std::string& fileName, bool replacing,
                    std::string* temporary)
{
    const std::string stem =
        folder + "/" + temporaryFilePrefix(fileName) + std::to_string(static_cast<long>(::getpid())) + "-";
    for (int attempt = 0; attempt < 100; ++attempt) {
        *temporary = stem + randomSuffix();
        const int fd =
            ::open(temporary->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, replacing ? 0600 : 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

void flushFolder(const std::string& path, const std::string& folder)
{
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return; // a folder we may write in but not read: the rename is done, nothing more can be done
    const int result = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    // Some file systems cannot sync a folder (EINVAL); the file itself is on disk already.
    if (result != 0 && error != EINVAL && error != EROFS)
        throw Error(path + ": saved, but the folder could not be flushed to disk: " + reasonOf(error));
}

} // namespace

std::string temporaryFilePrefix(const std::string& fileName)
{
    // Room for the tag, a PID, '-' and six letters within one file name.
    const std::size_t room = maximumNameBytes - 1 - std::strlen(temporaryTag) - 20 - 1 - 6;
    return "." + fileName.substr(0, room) + temporaryTag;
}

bool isProcessRunning(long pid)
{
    if (pid <= 0 || pid > INT_MAX)
        return false;
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

bool isStaleTemporaryFile(long ownerPid, double ageSeconds)
{
    if (ageSeconds >= abandonedAfterSeconds)
        return true;
    return ageSeconds >= orphanGraceSeconds && !isProcessRunning(ownerPid);
}

void writeFileAtomically(const std::string& path, const std::string& bytes)
{
    const std::string target = resolveTarget(path);
    const std::string folder = folderOf(target);
    const std::string fileName = fileNameOf(target);
    if (fileName.empty() || fileName == "." || fileName == "..")
        throw Error(path + ": not a file name");

    struct stat existing {};
    const bool replacing = ::stat(target.c_str(), &existing) == 0;
    if (replacing && S_ISDIR(existing.st_mode))
        throw Error(path + ": is a folder, not a file");
    if (replacing && !S_ISREG(existing.st_mode))
        throw Error(path + ": is not a regular file (a device, FIFO or socket), so it is not replaced");

    removeStaleTemporaries(folder, fileName);

    std::string temporary;
    const int fd = createTemporary(folder, fileName, replacing, &temporary);
    if (fd < 0)
        throw Error(path + ": cannot create a file beside it: " + reasonOf(errno));
    bool open = true;
    const auto fail = [&](const char* what, int error) {
        if (open)
            ::close(fd);
        ::unlink(temporary.c_str());
        throw Error(path + ": " + what + ": " + reasonOf(error));
    };

    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t count = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (count < 0) {
            if (errno == EINTR)
                continue;
            fail("cannot write", errno);
        }
        written += static_cast<std::size_t>(count);
    }
    if (replacing) {
        // The replaced file's owner and group when we may set them (root, or our own group), then its mode
        // (after chown, which may clear set-id bits).
        if (existing.st_uid != ::geteuid() || existing.st_gid != ::getegid())
            if (::fchown(fd, existing.st_uid, existing.st_gid) != 0)
                (void)::fchown(fd, static_cast<uid_t>(-1), existing.st_gid);
        if (::fchmod(fd, existing.st_mode & 07777) != 0)
            fail("cannot set the permissions", errno);
    }
    if (::fsync(fd) != 0)
        fail("cannot write", errno); // delayed write errors (a full disk) surface here
    open = false;
    if (::close(fd) != 0)
        fail("cannot write", errno);
    if (::rename(temporary.c_str(), target.c_str()) != 0)
        fail("cannot replace", errno);
    flushFolder(path, folder);
}

} // namespace qkv
