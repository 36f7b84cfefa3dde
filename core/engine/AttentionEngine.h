// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The attention pipeline (docs/semantics.md, "The pipeline, for each head"), as pure functions of the
/// session.

#include "AttentionResult.h"
#include "Session.h"

#include <atomic>
#include <cstdint>

namespace qkv {

/// How a computation may be limited from outside.
struct ComputeOptions {
    /// Set (from any thread) to stop: the computation throws qkv::Cancelled at its next check (every head,
    /// and every few rows), leaving `result` unspecified.
    const std::atomic<bool>* cancel = nullptr;
    /// Bytes; a session whose estimated result needs more is refused before anything large is allocated
    /// (see ResourceLimits.h). 0: no limit.
    std::uint64_t memoryLimit = 0;
    /// A float32 session's projections, given in float32 instead of in the session (which then holds none):
    /// the result is the same to the bit as with them widened into the session. Not with a memoryLimit (the
    /// estimate reads the session's shapes); the caller limits its own memory.
    const Float32Weights* float32Weights = nullptr;
    /// A result computed before and the session it was computed from (both or neither; neither written
    /// during the computation): a head's Q, K or V whose inputs (X or Z, the positions, the precision, its
    /// weights and bias) are bit for bit the same is copied from it instead of computed again, which gives
    /// the same bits. An edit of W_Q then computes one projection of three. Not with float32Weights.
    const Session* previousSession = nullptr;
    const AttentionResult* previousResult = nullptr;
};

/// Computes every matrix for `session`, in the session's precision. Throws qkv::Error naming the problem when
/// the session is invalid, does not fit `options.memoryLimit`, or a result matrix would overflow the
/// precision (the message names the stage and the head, e.g. "heads[0].output: ..."); throws qkv::Cancelled
/// when stopped.
AttentionResult computeAttention(const Session& session, const ComputeOptions& options = {});

/// The same, writing into `result`: matrices that already have the right shape are reused, so repeated
/// calls on a session of the same size allocate nothing large.
void computeAttention(const Session& session, AttentionResult& result, const ComputeOptions& options = {});

/// Row statistics of a weights matrix: entropy, support, maximum and sum (docs/semantics.md). A known entropy
/// (≥ 0) is taken as it is instead of being summed again.
RowStats rowStatistics(const double* weights, Index m, double knownEntropy = -1.0);

} // namespace qkv
