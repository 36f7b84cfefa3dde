#pragma once
/// @file
/// The pipeline of spec section 2, as pure functions of the session.

#include "AttentionResult.h"
#include "Session.h"

namespace qkv {

/// Computes every matrix for `session`. Throws qkv::Error naming the problem when the session is invalid
/// or its scores overflow double precision.
AttentionResult computeAttention(const Session& session);

/// The same, writing into `result`: matrices that already have the right shape are reused, so repeated
/// calls on a session of the same size allocate nothing large.
void computeAttention(const Session& session, AttentionResult& result);

/// The raw scores S[i][j] = s(q_i, k_j) of one head (spec section 1, scoring functions).
void computeScores(ScoreFunction score, const Head& head, const Matrix& Q, const Matrix& K, Matrix& scores);

/// Row statistics of a weights matrix (spec section 2). A known entropy (≥ 0) is taken as it is instead of
/// being summed again.
RowStats rowStatistics(const double* weights, Index m, double knownEntropy = -1.0);

} // namespace qkv
