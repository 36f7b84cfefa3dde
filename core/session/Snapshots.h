// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Snapshots of a session (Session::snapshots) and the matrices a snapshot is compared by.

#include "AttentionResult.h"
#include "Session.h"

#include <string>
#include <vector>

namespace qkv {

/// A snapshot of `session`'s inputs named `name`: the session without its snapshots and view state, so
/// computing it gives the result the session has now.
Snapshot makeSnapshot(const Session& session, const std::string& name);

/// "Snapshot N" for the smallest N ≥ (number of snapshots + 1) that no snapshot is named yet.
std::string nextSnapshotName(const Session& session);

/// The matrices a snapshot comparison can show: inputs, every stage of one head, and the whole layer's.
enum class ComparedMatrix { X, Q, K, V, Scores, Scaled, Weights, HeadOutput, Concat, FinalOutput };

/// Every ComparedMatrix, in menu order.
std::vector<ComparedMatrix> comparedMatrices();
/// "X", "Q", "K", "V", "scores", "scaled scores", "weights", "head output", "concat", "final output".
std::string comparedMatrixName(ComparedMatrix which);
/// Whether the matrix belongs to one head (Q … head output).
bool isPerHead(ComparedMatrix which);

/// The matrix `which` of a session and its result (head `head` for a per-head one); null when the result
/// has no such head.
const Matrix* comparedMatrix(const Session& session, const AttentionResult& result, ComparedMatrix which,
                             int head);

} // namespace qkv
