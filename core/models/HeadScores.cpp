// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeadScores.h"

#include <cmath>
#include <random>
#include <unordered_map>

namespace qkv {

const char* toString(HeadScore score)
{
    switch (score) {
    case HeadScore::PreviousToken:
        return "previous_token";
    case HeadScore::DuplicateToken:
        return "duplicate_token";
    case HeadScore::Induction:
        return "induction";
    case HeadScore::FirstToken:
        return "first_token";
    case HeadScore::Self:
        return "self";
    case HeadScore::Entropy:
        return "entropy";
    }
    return "";
}

const char* displayName(HeadScore score)
{
    switch (score) {
    case HeadScore::PreviousToken:
        return "Previous-token";
    case HeadScore::DuplicateToken:
        return "Duplicate-token";
    case HeadScore::Induction:
        return "Induction";
    case HeadScore::FirstToken:
        return "First-token";
    case HeadScore::Self:
        return "Self";
    case HeadScore::Entropy:
        return "Entropy";
    }
    return "";
}

const char* formula(HeadScore score)
{
    switch (score) {
    case HeadScore::PreviousToken:
        return "The mean over queries i = 1 … n − 1 of A[i][i − 1]: how much each token attends to the one "
               "just before it (0 for a single token).";
    case HeadScore::DuplicateToken:
        return "The mean, over the queries i whose token occurred earlier (some j < i with ids[j] = ids[i]), "
               "of Σ over those j of A[i][j]: attention to earlier copies of the same token (0 when no token "
               "repeats).";
    case HeadScore::Induction:
        return "The mean, over the queries i that have some j with 1 ≤ j ≤ i and ids[j − 1] = ids[i], of Σ "
               "over those j of A[i][j]: attention to the token that followed an earlier occurrence of the "
               "current token, the step an induction head takes (0 when there is none).";
    case HeadScore::FirstToken:
        return "The mean over all queries of A[i][0]: attention parked on the first token.";
    case HeadScore::Self:
        return "The mean over all queries of A[i][i]: attention of each token to itself.";
    case HeadScore::Entropy:
        return "The mean over all queries of −Σ_j A[i][j] ln A[i][j], in nats (0 ln 0 = 0): 0 for a head "
               "that attends to one key, ln(i + 1) for uniform causal attention.";
    }
    return "";
}

TokenMatches::TokenMatches(const std::vector<std::int64_t>& ids)
    : m_duplicates(ids.size()), m_induction(ids.size())
{
    std::unordered_map<std::int64_t, std::vector<Index>> earlier; // id → its positions so far
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::vector<Index>& seen = earlier[ids[i]];
        m_duplicates[i] = seen;
        for (Index j :
             seen) // ids[j] = ids[i] with j < i: the key after it, j + 1 ≤ i, is an induction target
            m_induction[i].push_back(j + 1);
        seen.push_back(Index(i));
    }
}

namespace {

/// The mean, over the rows that have some key in `keys[i]`, of the weight on those keys.
double meanOverMatchingRows(const Matrix& weights, const std::vector<std::vector<Index>>& keys)
{
    double total = 0.0;
    Index rows = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (keys[i].empty())
            continue;
        for (Index j : keys[i])
            total += weights(Index(i), j);
        ++rows;
    }
    return rows > 0 ? total / double(rows) : 0.0;
}

} // namespace

double headScore(HeadScore score, const Matrix& weights, const std::vector<std::int64_t>& ids)
{
    return headScore(score, weights, TokenMatches(ids));
}

double headScore(HeadScore score, const Matrix& weights, const TokenMatches& matches)
{
    const Index n = weights.rows();
    if (n == 0)
        return 0.0;
    switch (score) {
    case HeadScore::PreviousToken: {
        double sum = 0.0;
        for (Index i = 1; i < n; ++i)
            sum += weights(i, i - 1);
        return n > 1 ? sum / double(n - 1) : 0.0;
    }
    case HeadScore::DuplicateToken:
        return meanOverMatchingRows(weights, matches.duplicates());
    case HeadScore::Induction:
        return meanOverMatchingRows(weights, matches.induction());
    case HeadScore::FirstToken:
        return weights.col(0).mean();
    case HeadScore::Self:
        return weights.diagonal().mean();
    case HeadScore::Entropy: {
        double sum = 0.0;
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < weights.cols(); ++j)
                if (const double a = weights(i, j); a > 0.0)
                    sum -= a * std::log(a);
        return sum / double(n);
    }
    }
    return 0.0;
}

std::vector<std::int64_t> repeatedRandomTokens(Index length, std::int64_t vocabulary, std::uint64_t seed)
{
    // The generator's raw output reduced by hand: std::uniform_int_distribution differs between libraries.
    std::mt19937_64 random(seed);
    std::vector<std::int64_t> ids;
    for (Index i = 0; i < length; ++i)
        ids.push_back(std::int64_t(random() % std::uint64_t(vocabulary)));
    ids.insert(ids.end(), ids.begin(), ids.end());
    return ids;
}

} // namespace qkv
