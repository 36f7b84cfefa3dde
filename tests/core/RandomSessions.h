#pragma once
// Reproducible random sessions for the core tests.

#include "Initializers.h"
#include "Session.h"

#include <cstdint>

namespace qkv::test {

/// n tokens of d_model normal embeddings and `heads` heads of Xavier-normal W_Q, W_K (d_k) and W_V (d_v), all
/// drawn from `seed`: self-attention when `contextTokens` is 0, else cross-attention over a context Z of that
/// many tokens.
inline Session randomSession(Index n, Index contextTokens, Index dModel, Index dK, Index dV, int heads,
                             std::uint64_t seed)
{
    Session s;
    s.title = "random";
    s.X = initializeMatrix({Initializer::Normal, 1.0, seed}, n, dModel);
    s.tokens.assign(static_cast<std::size_t>(n), "t");
    s.pad.assign(static_cast<std::size_t>(n), false);
    if (contextTokens > 0) {
        Context c;
        c.Z = initializeMatrix({Initializer::Normal, 1.0, seed + 1}, contextTokens, dModel);
        c.tokens.assign(static_cast<std::size_t>(contextTokens), "z");
        c.pad.assign(static_cast<std::size_t>(contextTokens), false);
        s.context = c;
    }
    for (int h = 0; h < heads; ++h) {
        const std::uint64_t base = seed + 10 * static_cast<std::uint64_t>(h + 1);
        Head head;
        head.W_Q = initializeMatrix({Initializer::XavierNormal, 1.0, base}, dModel, dK);
        head.W_K = initializeMatrix({Initializer::XavierNormal, 1.0, base + 1}, dModel, dK);
        head.W_V = initializeMatrix({Initializer::XavierNormal, 1.0, base + 2}, dModel, dV);
        s.heads.push_back(head);
    }
    return s;
}

} // namespace qkv::test
