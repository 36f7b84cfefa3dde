// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Scores that say what a head does, from its attention weights A (n × n, query rows i = 0 … n − 1) on a
/// sequence of token ids (docs/models.md), as TransformerLens's head detector and the induction-head
/// literature define them.

#include "EigenTypes.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

enum class HeadScore {
    PreviousToken,  ///< mean over i ≥ 1 of A[i][i − 1]
    DuplicateToken, ///< mean over rows with an earlier equal token of the weight on those tokens
    Induction,      ///< mean over rows with some j ≤ i, ids[j − 1] = ids[i] of the weight on those j
    FirstToken,     ///< mean of A[i][0]
    Self,           ///< mean of A[i][i]
    Entropy,        ///< mean of −Σ_j A[i][j] ln A[i][j], in nats
};
inline constexpr std::array<HeadScore, 6> allHeadScores = {
    HeadScore::PreviousToken, HeadScore::DuplicateToken, HeadScore::Induction,
    HeadScore::FirstToken,    HeadScore::Self,           HeadScore::Entropy};

/// "previous_token", "duplicate_token", "induction", "first_token", "self", "entropy".
const char* toString(HeadScore score);
/// "Previous-token", …: as a window titles it.
const char* displayName(HeadScore score);
/// The definition in words and symbols, for What's This and the documentation.
const char* formula(HeadScore score);

/// For each query of a sequence, the keys the duplicate-token and induction scores sum over, found once per
/// sequence so that scoring every head costs what those keys do.
class TokenMatches {
public:
    explicit TokenMatches(const std::vector<std::int64_t>& ids);
    /// duplicates()[i]: the j < i with ids[j] = ids[i].
    const std::vector<std::vector<Index>>& duplicates() const { return m_duplicates; }
    /// induction()[i]: the j with 1 ≤ j ≤ i and ids[j − 1] = ids[i].
    const std::vector<std::vector<Index>>& induction() const { return m_induction; }

private:
    std::vector<std::vector<Index>> m_duplicates, m_induction;
};

/// The score of one head's weights (n × n) on a sequence of n ids.
double headScore(HeadScore score, const Matrix& weights, const TokenMatches& matches);
double headScore(HeadScore score, const Matrix& weights, const std::vector<std::int64_t>& ids);

/// Every score of every query head: values[score] is layers × heads.
struct HeadScoreGrid {
    std::array<Matrix, allHeadScores.size()> values;
    const Matrix& operator[](HeadScore score) const { return values[std::size_t(score)]; }
    Matrix& operator[](HeadScore score) { return values[std::size_t(score)]; }
};

/// A probe for induction heads: `length` tokens drawn uniformly from 0 … vocabulary − 1 with `seed`, then the
/// same tokens again (2 · length ids).
std::vector<std::int64_t> repeatedRandomTokens(Index length, std::int64_t vocabulary, std::uint64_t seed);

} // namespace qkv
