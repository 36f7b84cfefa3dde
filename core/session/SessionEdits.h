// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Structural edits of a session that keep every matrix consistent: adding, removing and moving tokens,
/// changing d_model, d_k, d_v and the number of heads, switching cross-attention on and off, naming the
/// d_model columns. Entries that did not exist before come from the initializer; existing entries keep their
/// values, and dimension names follow their columns (new columns are unnamed).

#include "Initializers.h"
#include "Session.h"

namespace qkv {

/// Which sequence an edit applies to: the queries (tokens, X, pad) or the cross-attention context.
enum class Side { Query, Context };

/// Inserts a token before position `at` (0 ≤ at ≤ count) with an embedding row from `init` (its seed varied
/// by position and length, so successive insertions differ). A custom mask gains an allowed row (query side)
/// or column (context side; also query side in self-attention).
void insertToken(Session& session, Side side, Index at, const std::string& text, const InitializerSpec& init);
void removeToken(Session& session, Side side, Index at);
/// Moves the token at `from` to position `to` (both indices into the sequence before the move).
void moveToken(Session& session, Side side, Index from, Index to);

void resizeDModel(Session& session, Index dModel, const InitializerSpec& init);
void resizeDK(Session& session, Index dK, const InitializerSpec& init);
void resizeDV(Session& session, Index dV, const InitializerSpec& init);
void setHeadCount(Session& session, int heads, const InitializerSpec& init);

/// Names d_model column `column` of X (Side::Query) or of Z (Side::Context; X in self-attention); "" takes
/// the name away (the column shows its default label again). Throws qkv::Error when there is no such column.
void renameDimension(Session& session, Side side, Index column, const std::string& name);

/// On: the context starts as a copy of the query sequence (with X's dimension names). Off: the context is
/// dropped.
void setCrossAttention(Session& session, bool on);

/// Draws every weight (W_Q, W_K, W_V, the score parameters, W_O) anew from `init`, a distinct seed per
/// matrix; the embeddings are kept. NumPy legacy: one stream seeded once with init.seed, as
/// `np.random.seed(seed)`, then for each head in turn W_Q, W_K, W_V (then W_S, W_a, U_a, v_a when present) as
/// `randn(rows, cols) * scale`, then W_O.
void reinitializeWeights(Session& session, const InitializerSpec& init);

/// Draws the embeddings X (and the context's Z) anew, the same shapes: NumPy legacy, one stream seeded once
/// (`np.random.seed(seed); X = randn(n, d_model) * scale`, then Z = randn(m, d_model) * scale); any other
/// initializer applied to X (and to Z) as to an n × d_model weight matrix, with seeds of its own.
void reinitializeEmbeddings(Session& session, const InitializerSpec& init);

/// Creates the score function's parameters where they are missing (W_S; W_a, U_a and v_a with d_a = d_k).
void ensureScoreParameters(Session& session, const InitializerSpec& init);

/// A new score function with its default scale (docs/semantics.md, "Inputs") and the parameters it needs.
void setScoreFunction(Session& session, ScoreFunction score, const InitializerSpec& init);

/// A new mask type. A custom mask starts from "everything allowed" unless one of the right shape exists
/// (kept from an earlier switch to custom). A sliding window of width 1 (the identity mask) becomes 3
/// wide, or n when n < 3.
void setMaskType(Session& session, MaskType type);

/// Allows or forbids one cell: a mask of another type first becomes the custom mask of its own pattern.
void setMaskCell(Session& session, Index query, Index key, bool allow);

/// Adds W_O ((H·d_v) × d_out from `init`, d_out = d_model unless `dOut` > 0) or removes it; an added W_O
/// gets a zero b_O when the heads have biases.
void setOutputProjection(Session& session, bool on, const InitializerSpec& init, Index dOut = 0);

/// Whether the session has biases (any of b_Q, b_K, b_V, b_O).
bool hasBiases(const Session& session);

/// Gives every head zero biases b_Q, b_K, b_V where it has none, and b_O beside W_O (on), or removes every
/// bias (off).
void setBiases(Session& session, bool on);

/// Gives W_O `dOut` columns, keeping its left block; new columns come from `init`. No W_O: nothing.
void resizeDOut(Session& session, Index dOut, const InitializerSpec& init);

/// Marks the token at `at` of one side as padding, or not.
void setPadding(Session& session, Side side, Index at, bool padding);

/// A name for a new token of one side: "tok<N>" with the first N from the side's length on that no token
/// of that side has yet.
std::string newTokenName(const Session& session, Side side);

/// Grows or shrinks a matrix: the top-left block is kept and new entries come from `init`.
Matrix resizedMatrix(const Matrix& m, Index rows, Index cols, const InitializerSpec& init);

} // namespace qkv

namespace qkv {

/// A blank self-attention session: `n` tokens "tok0", "tok1", …, X and the weights of one head from `init`.
Session blankSession(Index n, Index dModel, Index dK, Index dV, const InitializerSpec& init);

} // namespace qkv
