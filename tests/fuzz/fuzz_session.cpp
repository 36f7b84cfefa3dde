// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the session loader qkv::parseSession, with a save-and-reload round trip. Refusal
// with qkv::Error is fine; an accepted session must serialize without throwing, load back to an equal
// Session, and serialize again to the same text.

#include "FuzzChecks.h"
#include "SessionFile.h"

using namespace qkv;
using namespace qkv::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Session session;
    try {
        session = parseSession(text(data, size));
    } catch (const Error&) {
        return 0;
    }
    const std::string problem = validate(session);
    if (!problem.empty())
        fail("parseSession accepted a session that validate() refuses: " + problem);
    const std::string saved = mustNotThrow("serializeSession", [&] { return serializeSession(session); });
    const Session reloaded =
        mustNotThrow("parseSession(serializeSession(s))", [&] { return parseSession(saved); });
    if (!(reloaded == session))
        fail("save and reload gave a different session");
    if (mustNotThrow("serializeSession (second)", [&] { return serializeSession(reloaded); }) != saved)
        fail("saving the reloaded session gave different text");
    return 0;
}
