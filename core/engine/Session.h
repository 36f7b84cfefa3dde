// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The session: everything a person can edit, as one value type. The engine reads it; the session file
/// stores it; the window's document owns one.

#include "EigenTypes.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

/// The size limits of a session (docs/session-file.md, "Limits").
struct Limits {
    static constexpr Index maxTokens = 4096;    ///< n and m
    static constexpr Index maxDimension = 4096; ///< d_model, d_k, d_v, d_a, d_out
    static constexpr int maxHeads = 64;
    static constexpr int maxSnapshots = 64;             ///< snapshots kept in one session
    static constexpr int maxInterventions = 1024;       ///< interventions in a session's model link
    static constexpr std::size_t maxSnapshotName = 200; ///< bytes of a snapshot's name
};

enum class ScoreFunction { Dot, General, Additive, Cosine };
enum class MaskType { None, Causal, Prefix, Sliding, Custom };
enum class NormalizerType { Softmax, Sparsemax, Entmax, Sigmoid, Hardmax };
/// What the engine computes in (docs/semantics.md, "Precision"): float64 is exact for teaching, float32 is
/// what models run in.
enum class Precision { Float64, Float32 };

/// The positional encoding (docs/semantics.md, "Positional encodings"): none, added to X and Z (sinusoidal,
/// learned), a rotation of Q and K (rope) or a bias on the scaled scores (alibi).
enum class PositionType { None, Sinusoidal, Learned, Rope, Alibi };
/// Which coordinates RoPE rotates together: r with r + d_k/2 (GPT-NeoX, LLaMA) or 2r with 2r + 1 (GPT-J).
enum class RopePairing { Half, Interleaved };

/// How the raw scores are divided: by √d_k, by 1, or by a positive number.
struct Scale {
    enum class Kind { SqrtDk, None, Constant };
    Kind kind = Kind::SqrtDk;
    double value = 1.0; ///< only for Kind::Constant

    friend bool operator==(const Scale& a, const Scale& b)
    {
        return a.kind == b.kind && (a.kind != Kind::Constant || a.value == b.value);
    }
};

struct MaskSpec {
    MaskType type = MaskType::None;
    Index prefixLength = 0; ///< prefix: keys j < prefixLength are always visible
    Index window = 1;       ///< sliding: i − j < window
    MaskMatrix allowed;     ///< custom: n × m of 0/1

    friend bool operator==(const MaskSpec& a, const MaskSpec& b)
    {
        return a.type == b.type && a.prefixLength == b.prefixLength && a.window == b.window &&
               sameMatrix(a.allowed, b.allowed);
    }
};

struct NormalizerSpec {
    NormalizerType type = NormalizerType::Softmax;
    double alpha = 1.5; ///< entmax only; α ≥ 1

    friend bool operator==(const NormalizerSpec& a, const NormalizerSpec& b)
    {
        return a.type == b.type && a.alpha == b.alpha;
    }
};

/// The smallest `positions.base`: the largest angle, position · base^(−2i/d) ≤ 4096 / base, stays finite.
constexpr double minimumPositionBase = 1e-300;

/// RoPE's frequencies for contexts longer than training (Hugging Face's `rope_scaling`, session key
/// `positions.scaling`): none; linear (every frequency ÷ factor: positions interpolated); llama3 (Llama 3.1
/// and later: wavelengths above original / low_freq_factor ÷ factor, below original / high_freq_factor kept,
/// a smooth blend between).
enum class RopeScalingType { None, Linear, Llama3 };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::None;
    double factor = 1.0;
    double lowFrequencyFactor = 1.0;      ///< llama3: low_freq_factor
    double highFrequencyFactor = 4.0;     ///< llama3: high_freq_factor
    double originalMaxPositions = 8192.0; ///< llama3: original_max_position_embeddings

    friend bool operator==(const RopeScaling& a, const RopeScaling& b)
    {
        return a.type == b.type && a.factor == b.factor && a.lowFrequencyFactor == b.lowFrequencyFactor &&
               a.highFrequencyFactor == b.highFrequencyFactor &&
               a.originalMaxPositions == b.originalMaxPositions;
    }
};

/// The positional encoding and its parameters (session key `positions`). Parameters are kept whatever the
/// type, so switching back to an encoding restores them.
struct PositionSpec {
    PositionType type = PositionType::None;
    double base = 10000.0;                   ///< sinusoidal: base; rope: θ
    RopePairing pairing = RopePairing::Half; ///< rope
    Matrix P;                                ///< learned: max positions × d_model
    std::vector<double> slopes;              ///< alibi: one per head; empty: Press et al.'s for H heads
    RopeScaling scaling{};                   ///< rope

    friend bool operator==(const PositionSpec& a, const PositionSpec& b)
    {
        return a.type == b.type && a.base == b.base && a.pairing == b.pairing && sameMatrix(a.P, b.P) &&
               a.slopes == b.slopes && a.scaling == b.scaling;
    }
};

/// One attention head's parameters. The score parameters are empty unless the score function needs them;
/// the biases are empty when the head has none (Q = X W_Q + b_Q, ...; docs/semantics.md, "Biases").
struct Head {
    Matrix W_Q; ///< d_model × d_k
    Matrix W_K; ///< d_model × d_k
    Matrix W_V; ///< d_model × d_v
    Matrix W_S; ///< general: d_k × d_k
    Matrix W_a; ///< additive: d_k × d_a
    Matrix U_a; ///< additive: d_k × d_a
    Vector v_a; ///< additive: d_a
    Vector b_Q; ///< d_k, or empty
    Vector b_K; ///< d_k, or empty
    Vector b_V; ///< d_v, or empty

    friend bool operator==(const Head& a, const Head& b)
    {
        return sameMatrix(a.W_Q, b.W_Q) && sameMatrix(a.W_K, b.W_K) && sameMatrix(a.W_V, b.W_V) &&
               sameMatrix(a.W_S, b.W_S) && sameMatrix(a.W_a, b.W_a) && sameMatrix(a.U_a, b.U_a) &&
               sameMatrix(a.v_a, b.v_a) && sameMatrix(a.b_Q, b.b_Q) && sameMatrix(a.b_K, b.b_K) &&
               sameMatrix(a.b_V, b.b_V);
    }
};

/// The key/value-side sequence of cross-attention.
struct Context {
    std::vector<std::string> tokens; ///< m labels
    Matrix Z;                        ///< m × d_model
    std::vector<bool> pad;           ///< m flags
    std::vector<std::string> dims;   ///< names of Z's d_model columns (see Session::dims)

    friend bool operator==(const Context& a, const Context& b)
    {
        return a.tokens == b.tokens && sameMatrix(a.Z, b.Z) && a.pad == b.pad && a.dims == b.dims;
    }
};

/// What the window shows, saved with the session in its free-form `view` object (docs/session-file.md) and
/// ignored by the engine: the head on show and the selected cell. Absent values leave the window's defaults.
struct ViewState {
    std::optional<int> head;                          ///< 0-based
    std::optional<std::pair<Index, Index>> selection; ///< query i, key j

    friend bool operator==(const ViewState& a, const ViewState& b)
    {
        return a.head == b.head && a.selection == b.selection;
    }
};

/// A change to one query head's output z (its rows of A·V, before W_O) inside a model's forward pass, as
/// the session file keeps it (docs/models.md).
struct HeadIntervention {
    enum class Kind {
        Zero,    ///< z = 0
        Mean,    ///< every row of z replaced by the mean of z's rows
        Scale,   ///< z · factor
        Session, ///< z computed from a session's first head (in a session file: this session's own)
    };
    Index layer = 0;
    Index head = 0; ///< a query head: under grouped-query attention, one head of its group
    Kind kind = Kind::Zero;
    double factor = 1.0; ///< Scale only; finite
    bool enabled = true; ///< a disabled intervention changes nothing

    friend bool operator==(const HeadIntervention& a, const HeadIntervention& b)
    {
        return a.layer == b.layer && a.head == b.head && a.kind == b.kind && a.factor == b.factor &&
               a.enabled == b.enabled;
    }
};

enum class PatchSite;   // PatchSites.h: where a patching cell replaces an activation (resid_pre, …)
enum class PatchMethod; // PatchSites.h: exact or attribution

/// An activation-patching experiment on the linked model (the session file's `model.patching`), kept so that
/// its grid can be drawn again when the session is reopened: the two prompts, the metric's tokens, what is
/// patched, how, and over which positions. Checked for shape when read; against the model when it runs.
struct PatchExperiment {
    std::vector<std::int64_t> clean, corrupt; ///< token ids, as many in each (at least 1)
    std::int64_t answer = 0, wrong = 0; ///< the metric: logit[answer] − logit[wrong] at the last position
    PatchSite site{};                   ///< value 0: resid_pre
    PatchMethod method{};               ///< value 0: exact
    /// The first and last position (inclusive) of the sites with a position axis; none: every position.
    std::optional<std::pair<Index, Index>> positions;

    friend bool operator==(const PatchExperiment& a, const PatchExperiment& b)
    {
        return a.clean == b.clean && a.corrupt == b.corrupt && a.answer == b.answer && a.wrong == b.wrong &&
               a.site == b.site && a.method == b.method && a.positions == b.positions;
    }
};

/// The model a session's head was cut from (the session file's `model`): the folder, the token ids, the
/// layer and query head of the session's first head, the interventions the window applies, and the patching
/// experiment last run on it.
struct ModelLink {
    std::string folder;
    std::vector<std::int64_t> ids;
    Index layer = 0;
    Index head = 0;
    std::vector<HeadIntervention> interventions;
    std::optional<PatchExperiment> patching;

    friend bool operator==(const ModelLink& a, const ModelLink& b)
    {
        return a.folder == b.folder && a.ids == b.ids && a.layer == b.layer && a.head == b.head &&
               a.interventions == b.interventions && a.patching == b.patching;
    }
};

struct Session;

/// A named copy of a session's inputs (the session file's `snapshots`): its result recomputes exactly.
/// Shared and never changed, so copying a session (an undo step) copies no matrix.
struct Snapshot {
    std::string name;
    std::shared_ptr<const Session> session; ///< never null; has no snapshots of its own
};
bool operator==(const Snapshot& a, const Snapshot& b);

struct Session {
    std::string title;
    std::vector<std::string> tokens; ///< n labels
    std::vector<bool> pad;           ///< n flags (all false when the file has none)
    Matrix X;                        ///< n × d_model
    /// Names of the d_model columns of X (and so of the rows of W_Q, and of W_K and W_V in self-attention):
    /// empty when unnamed, else d_model names, "" for a column without one.
    std::vector<std::string> dims;
    std::optional<Context> context; ///< present ⇒ cross-attention
    std::vector<Head> heads;
    std::optional<Matrix> W_O; ///< (H·d_v) × d_out
    Vector b_O;                ///< d_out, or empty; only beside W_O (output = concat · W_O + b_O)
    ScoreFunction score = ScoreFunction::Dot;
    Scale scale;
    double temperature = 1.0;
    MaskSpec mask;
    NormalizerSpec normalizer;
    PositionSpec positions;
    Precision precision = Precision::Float64;
    ViewState view;
    /// Kept with the session and ignored by the engine (views compare them with the current result).
    std::vector<Snapshot> snapshots;
    /// Where the session's head came from, when it is a model's (ignored by the engine and by `compute`).
    std::optional<ModelLink> model;
    /// Keys the engine does not know (including the rest of `view`), kept as compact JSON text so a round
    /// trip preserves them. Empty when there are none. Managed by SessionFile.
    std::string preservedJson;

    Index n() const { return X.rows(); }
    Index m() const { return context ? context->Z.rows() : X.rows(); }
    Index dModel() const { return X.cols(); }
    Index dK() const { return heads.empty() ? 0 : heads.front().W_Q.cols(); }
    Index dV() const { return heads.empty() ? 0 : heads.front().W_V.cols(); }
    int headCount() const { return static_cast<int>(heads.size()); }
    /// The key/value side: Z for cross-attention, X otherwise.
    const Matrix& keySide() const { return context ? context->Z : X; }
    const std::vector<std::string>& keyTokens() const { return context ? context->tokens : tokens; }
    const std::vector<bool>& keyPad() const { return context ? context->pad : pad; }
    /// The names of the key side's d_model columns (Z's, else X's): those of the rows of W_K and W_V.
    const std::vector<std::string>& keyDims() const { return context ? context->dims : dims; }

    friend bool operator==(const Session& a, const Session& b)
    {
        return a.title == b.title && a.tokens == b.tokens && a.pad == b.pad && sameMatrix(a.X, b.X) &&
               a.dims == b.dims && a.context == b.context && a.heads == b.heads &&
               a.W_O.has_value() == b.W_O.has_value() && (!a.W_O || sameMatrix(*a.W_O, *b.W_O)) &&
               sameMatrix(a.b_O, b.b_O) && a.score == b.score && a.scale == b.scale &&
               a.temperature == b.temperature && a.mask == b.mask && a.normalizer == b.normalizer &&
               a.positions == b.positions && a.precision == b.precision && a.view == b.view &&
               a.snapshots == b.snapshots && a.model == b.model && a.preservedJson == b.preservedJson;
    }
};

inline bool operator==(const Snapshot& a, const Snapshot& b)
{
    return a.name == b.name &&
           (a.session == b.session || (a.session && b.session && *a.session == *b.session));
}

/// The label of d_model column `column`: its name in `dims`, or "d<column>" when it has none.
std::string dimensionLabel(const std::vector<std::string>& dims, Index column);

/// The default scale for a score function: √d_k for dot and general, none for additive and cosine.
Scale defaultScale(ScoreFunction score);

/// The number the scores are divided by.
double scaleDivisor(const Scale& scale, Index dK);

/// Names as written in the session file ("dot", "causal", "entmax", ...).
const char* toString(ScoreFunction score);
const char* toString(MaskType type);
const char* toString(NormalizerType type);
const char* toString(Precision precision);  ///< "float64", "float32"
const char* toString(PositionType type);    ///< "none", "sinusoidal", "learned", "rope", "alibi"
const char* toString(RopePairing pairing);  ///< "half", "interleaved"
const char* toString(RopeScalingType type); ///< "none", "linear", "llama3"
/// "expected 2 numbers (one per head), found 3": the message for ALiBi slopes that are not one per head.
std::string slopeCountProblem(std::size_t heads, std::size_t found);
std::optional<ScoreFunction> scoreFromString(const std::string& name);
std::optional<MaskType> maskTypeFromString(const std::string& name);
std::optional<NormalizerType> normalizerFromString(const std::string& name);
std::optional<Precision> precisionFromString(const std::string& name);
std::optional<PositionType> positionTypeFromString(const std::string& name);
std::optional<RopePairing> ropePairingFromString(const std::string& name);
std::optional<RopeScalingType> ropeScalingFromString(const std::string& name);
const char* toString(HeadIntervention::Kind kind); ///< "zero", "mean", "scale", "session"
std::optional<HeadIntervention::Kind> interventionKindFromString(const std::string& name);

/// The other heads (counted from 0) whose keys and values are the same as `head`'s: equal W_K, W_V, b_K and
/// b_V, as grouped-query attention gives every query head of a group (a model head's session copies its
/// group's K and V weights into each of them).
std::vector<int> headsSharingKeysAndValues(const Session& session, int head);

/// A float32 session's projection weights held in float32 outside it, for a caller that has them so
/// already: the forward pass through a checkpoint cuts its tensors into heads this way, and its sessions then
/// hold no W_Q, W_K, W_V and no W_O (widening every weight to double for the session and rounding it back in
/// the engine would be a large part of a float32 pass). Everything else, biases included, stays in the
/// session.
struct Float32Weights {
    struct Projections {
        MatrixF W_Q, W_K, W_V;
    };
    std::vector<Projections> heads; ///< one per session head
    std::optional<MatrixF> W_O;
};

/// Which numbers validate() reads to find one that is not finite.
enum class FiniteScan {
    Everything,
    /// All but X, context.Z and the heads' W_Q, W_K, W_V: the computation finds those anyway, since any
    /// infinite or NaN entry of them makes a row or column of Q, K or V non-finite, which the engine refuses.
    /// Reading them costs the engine a pass over every input, a noticeable part of a small pipeline.
    AllButProjectionOperands,
};

/// Checks every shape, option and limit. Returns the first problem as "key.path: what is wrong",
/// or an empty string when the session is valid. With `float32Weights` the projections are checked there,
/// and the session must be float32 and hold none of its own.
std::string validate(const Session& session, const Float32Weights* float32Weights = nullptr,
                     FiniteScan scan = FiniteScan::Everything);

} // namespace qkv
