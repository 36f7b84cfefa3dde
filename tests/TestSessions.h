// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Sessions the tests share: a builder of reproducible random sessions, and the large example.

#include "Examples.h"
#include "Initializers.h"
#include "Session.h"
#include "SessionEdits.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace qkv::test {

/// Random sessions, the same on every run: the shapes are chosen, the matrices drawn.
///
///     Session s = SessionBuilder(5, 8).context(7).heads(2, 6, 6).score(ScoreFunction::General).build(42);
///
/// Query tokens are named "t" and context tokens "z", none padded; everything else is Session's default, for
/// the caller to change.
class SessionBuilder {
public:
    /// Draws one matrix of the given shape.
    using Draw = std::function<Matrix(Index rows, Index cols)>;

    /// n query tokens of d_model embeddings, self-attention, one head of d_k = d_v = d_model, dot-product
    /// scores and no W_O.
    SessionBuilder(Index n, Index dModel) : m_n(n), m_dModel(dModel), m_dK(dModel), m_dV(dModel) {}

    /// Cross-attention over a context of m tokens (0: self-attention).
    SessionBuilder& context(Index m)
    {
        m_contextTokens = m;
        return *this;
    }
    SessionBuilder& heads(int count, Index dK, Index dV)
    {
        m_heads = count;
        m_dK = dK;
        m_dV = dV;
        return *this;
    }
    /// The score function with its default scale and its parameters (general: W_S, d_k × d_k; additive: W_a
    /// and U_a, d_k × d_a, and v_a, d_a; d_a = 0 means d_k).
    SessionBuilder& score(ScoreFunction score, Index dA = 0)
    {
        m_score = score;
        m_dA = dA;
        return *this;
    }
    /// W_O, (heads · d_v) × d_out (d_out = 0 means d_model).
    SessionBuilder& outputProjection(Index dOut = 0)
    {
        m_outputProjection = true;
        m_dOut = dOut;
        return *this;
    }

    /// The matrices drawn from `seed`: X from a normal distribution at `seed` and Z at seed + 1; by
    /// Xavier-normal initialisation W_O at seed + 2, and head h's W_Q, W_K and W_V at seed + 10 (h + 1), + 1
    /// and + 2, and its score parameters at + 3 (W_S, W_a), + 4 (U_a) and + 5 (v_a).
    Session build(std::uint64_t seed) const
    {
        return make([seed](Part part, int head, Index rows, Index cols) {
            const bool embeddings = part == Part::X || part == Part::Z;
            const std::uint64_t base =
                embeddings || part == Part::W_O ? seed : seed + 10 * std::uint64_t(head + 1);
            const std::uint64_t offset = offsetOf(part);
            return initializeMatrix(
                {embeddings ? Initializer::Normal : Initializer::XavierNormal, 1.0, base + offset}, rows,
                cols);
        });
    }
    /// The matrices from `draw`, called in this order: X, Z, each head's W_Q, W_K, W_V and score parameters
    /// (W_S, or W_a, U_a and v_a), W_O.
    Session build(const Draw& draw) const
    {
        return make([&draw](Part, int, Index rows, Index cols) { return draw(rows, cols); });
    }

private:
    enum class Part { X, Z, W_O, W_Q, W_K, W_V, W_S, W_a, U_a, v_a };

    static std::uint64_t offsetOf(Part part)
    {
        switch (part) {
        case Part::Z:
        case Part::W_K:
            return 1;
        case Part::W_O:
        case Part::W_V:
            return 2;
        case Part::W_S:
        case Part::W_a:
            return 3;
        case Part::U_a:
            return 4;
        case Part::v_a:
            return 5;
        default:
            return 0;
        }
    }

    template <typename DrawPart> Session make(const DrawPart& draw) const
    {
        Session s;
        s.title = "random";
        s.X = draw(Part::X, 0, m_n, m_dModel);
        s.tokens.assign(static_cast<std::size_t>(m_n), "t");
        s.pad.assign(static_cast<std::size_t>(m_n), false);
        if (m_contextTokens > 0) {
            Context c;
            c.Z = draw(Part::Z, 0, m_contextTokens, m_dModel);
            c.tokens.assign(static_cast<std::size_t>(m_contextTokens), "z");
            c.pad.assign(static_cast<std::size_t>(m_contextTokens), false);
            s.context = std::move(c);
        }
        s.score = m_score;
        s.scale = defaultScale(m_score);
        const Index dA = m_dA > 0 ? m_dA : m_dK;
        for (int h = 0; h < m_heads; ++h) {
            Head head;
            head.W_Q = draw(Part::W_Q, h, m_dModel, m_dK);
            head.W_K = draw(Part::W_K, h, m_dModel, m_dK);
            head.W_V = draw(Part::W_V, h, m_dModel, m_dV);
            if (m_score == ScoreFunction::General)
                head.W_S = draw(Part::W_S, h, m_dK, m_dK);
            if (m_score == ScoreFunction::Additive) {
                head.W_a = draw(Part::W_a, h, m_dK, dA);
                head.U_a = draw(Part::U_a, h, m_dK, dA);
                head.v_a = draw(Part::v_a, h, dA, 1).col(0);
            }
            s.heads.push_back(std::move(head));
        }
        if (m_outputProjection)
            s.W_O = draw(Part::W_O, 0, m_heads * m_dV, m_dOut > 0 ? m_dOut : m_dModel);
        return s;
    }

    Index m_n;
    Index m_dModel;
    Index m_dK;
    Index m_dV;
    Index m_contextTokens = 0;
    int m_heads = 1;
    ScoreFunction m_score = ScoreFunction::Dot;
    Index m_dA = 0;
    bool m_outputProjection = false;
    Index m_dOut = 0;
};

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
