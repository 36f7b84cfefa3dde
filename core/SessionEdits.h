#pragma once
/// @file
/// Structural edits of a session that keep every matrix consistent: adding, removing and moving tokens,
/// changing d_model, d_k, d_v and the number of heads, switching cross-attention on and off. Entries that
/// did not exist before come from the initializer; existing entries keep their values.

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

/// On: the context starts as a copy of the query sequence. Off: the context is dropped.
void setCrossAttention(Session& session, bool on);

/// Draws every weight (W_Q, W_K, W_V, the score parameters, W_O) anew from `init`, a distinct seed per
/// matrix; the embeddings are kept.
void reinitializeWeights(Session& session, const InitializerSpec& init);

/// Creates the score function's parameters where they are missing (W_S; W_a, U_a and v_a with d_a = d_k).
void ensureScoreParameters(Session& session, const InitializerSpec& init);

/// Grows or shrinks a matrix: the top-left block is kept and new entries come from `init`.
Matrix resizedMatrix(const Matrix& m, Index rows, Index cols, const InitializerSpec& init);

} // namespace qkv

namespace qkv {

/// A blank self-attention session: `n` tokens "tok0", "tok1", …, X and the weights of one head from `init`.
Session blankSession(Index n, Index dModel, Index dK, Index dV, const InitializerSpec& init);

} // namespace qkv
