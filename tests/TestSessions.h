#pragma once
// Sessions the tests share.

#include "Examples.h"
#include "Initializers.h"
#include "SessionEdits.h"

#include <cstdint>

namespace qkv::test {

/// The "I love AI" example with `extraTokens` more query tokens (named "t") and d_model = d_k = d_v = 64,
/// drawn by Xavier initialisation from `seed`: at 300 extra tokens a document computes it off the GUI
/// thread in about a millisecond, at 2500 in a tenth of a second or more.
inline Session largeLoveSession(Index extraTokens, std::uint64_t seed)
{
    Session session = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, seed};
    for (Index i = 0; i < extraTokens; ++i)
        insertToken(session, Side::Query, 0, "t", init);
    resizeDModel(session, 64, init);
    resizeDK(session, 64, init);
    resizeDV(session, 64, init);
    return session;
}

} // namespace qkv::test
