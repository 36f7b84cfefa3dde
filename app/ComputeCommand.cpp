// SPDX-License-Identifier: GPL-3.0-or-later
#include "ComputeCommand.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "FileReading.h"
#include "ResourceLimits.h"
#include "ResultJson.h"
#include "SessionFile.h"

#include <iostream>

namespace qkv::app {

Session readSessionArgument(const std::string& source, std::istream& in, std::uint64_t memoryLimit)
{
    const std::uint64_t maxBytes = sessionFileSizeLimit(memoryLimit);
    if (source == "-") {
        try {
            return parseSession(readStream(in, maxBytes, "(standard input)", "a session file"));
        } catch (const Error& e) {
            const std::string message = e.what();
            throw Error(message.rfind("(standard input)", 0) == 0 ? message : "(standard input): " + message);
        }
    }
    const std::string prefix = examplePrefix;
    if (source.rfind(prefix, 0) == 0)
        return loadExample(source.substr(prefix.size()));
    try {
        return loadSession(source, maxBytes);
    } catch (const Error& e) {
        const std::string message = e.what();
        // loadSession names the path itself when the file cannot be read; otherwise add it.
        throw Error(message.rfind(source + ":", 0) == 0 ? message : source + ": " + message);
    }
}

CommandLineOutcome runCompute(const ParsedArguments& arguments, const CommandStreams& streams)
{
    std::uint64_t memoryLimit = defaultMemoryLimit();
    if (arguments.has("max-memory")) {
        const std::string value = arguments.value("max-memory");
        memoryLimit = parseByteSize(value);
        if (memoryLimit == 0)
            throw Error("bad --max-memory '" + value +
                        "': expected a size such as 4G, 512M, 2048 (bytes) or 50% (of the memory)");
    }
    const std::vector<std::string>& sources = arguments.positional;
    if (sources.size() > 1)
        throw Error("expected one session, found " + sources[0] + " and " + sources[1]);
    if (sources.empty())
        throw Error("expected one argument: a session file, - for standard input, or example:NAME");
    try {
        const Session session = readSessionArgument(sources.front(), streams.in, memoryLimit);
        // The result is all compute holds: its JSON is written as it goes, through a 64 KiB buffer.
        checkMemory(session, memoryLimit);
        const AttentionResult result = computeAttention(session);
        try {
            writeResultJson(result, streams.out);
        } catch (const Error& e) {
            throw Error(std::string("(standard output): ") + e.what());
        }
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this session (try a smaller session or --max-memory)");
    }
    return finished();
}

} // namespace qkv::app
