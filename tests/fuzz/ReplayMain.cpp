// SPDX-License-Identifier: GPL-3.0-or-later
// Replays a fuzz target's corpus without libFuzzer, so every build (g++ included) runs it under ctest:
//   qkv_replay_TARGET FILE|FOLDER...
// Each file runs in a child process (a crash or abort in one input does not hide the others) with a time
// limit; the failing files are listed by path and the exit status is 1. An empty corpus is a failure too.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

constexpr unsigned secondsPerInput = 60;

std::vector<std::string> inputFiles(int argc, char** argv)
{
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (int a = 1; a < argc; ++a) {
        const fs::path path(argv[a]);
        if (fs::is_directory(path)) {
            for (const auto& entry : fs::recursive_directory_iterator(path))
                if (entry.is_regular_file())
                    files.push_back(entry.path().string());
        } else {
            files.push_back(path.string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

int runOne(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    alarm(secondsPerInput);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string> files = inputFiles(argc, argv);
    if (files.empty()) {
        std::fprintf(stderr, "usage: %s FILE|FOLDER... (no input files found)\n", argv[0]);
        return 2;
    }
    std::vector<std::string> failed;
    for (const std::string& path : files) {
        std::fflush(nullptr);
        const pid_t child = fork();
        if (child < 0) {
            std::perror("fork");
            return 2;
        }
        if (child == 0)
            _exit(runOne(path));
        int status = 0;
        while (waitpid(child, &status, 0) < 0) {
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        const std::string how = WIFSIGNALED(status) ? std::string("signal ") + strsignal(WTERMSIG(status))
                                                    : "exit status " + std::to_string(WEXITSTATUS(status));
        std::fprintf(stderr, "FAILED (%s): %s\n", how.c_str(), path.c_str());
        failed.push_back(path);
    }
    std::printf("%zu inputs replayed, %zu failed\n", files.size(), failed.size());
    for (const std::string& path : failed)
        std::printf("  reproducer: %s\n", path.c_str());
    return failed.empty() ? 0 : 1;
}
