// SPDX-License-Identifier: GPL-3.0-or-later
#include "Session.h"

#include "Parallel.h"
#include "RowKernels.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

namespace qkv {

std::string dimensionLabel(const std::vector<std::string>& dims, Index column)
{
    const auto i = static_cast<std::size_t>(column);
    return column >= 0 && i < dims.size() && !dims[i].empty() ? dims[i] : "d" + std::to_string(column);
}

Scale defaultScale(ScoreFunction score)
{
    Scale scale;
    scale.kind = (score == ScoreFunction::Dot || score == ScoreFunction::General) ? Scale::Kind::SqrtDk
                                                                                  : Scale::Kind::None;
    return scale;
}

double scaleDivisor(const Scale& scale, Index dK)
{
    switch (scale.kind) {
    case Scale::Kind::SqrtDk:
        return std::sqrt(static_cast<double>(dK));
    case Scale::Kind::None:
        return 1.0;
    case Scale::Kind::Constant:
        return scale.value;
    }
    return 1.0;
}

namespace {

/// True when no entry is infinite or NaN. A large matrix (a 512 × 512 weight matrix) is scanned on the
/// engine's threads: on one thread the scan of a session's inputs was a seventh of the pipeline's time at
/// n = 64, d = 512 (the engine now leaves the largest to the computation: FiniteScan).
bool allFinite(const double* data, Index size)
{
    return allPiecesPass(size,
                         [data](Index first, Index count) { return rows::allFinite(data + first, count); });
}
bool allFinite(const float* data, Index size)
{
    return allPiecesPass(size, [data](Index first, Index count) {
        return isAllFinite(Eigen::Map<const Eigen::ArrayXf>(data + first, count));
    });
}

template <typename Enum, std::size_t N> const char* nameOf(Enum value, const char* const (&names)[N])
{
    const auto index = static_cast<std::size_t>(value);
    return index < N ? names[index] : "?";
}

template <typename Enum, std::size_t N>
std::optional<Enum> valueOf(const std::string& name, const char* const (&names)[N])
{
    for (std::size_t i = 0; i < N; ++i)
        if (name == names[i])
            return static_cast<Enum>(i);
    return std::nullopt;
}

// Order matches the enums.
const char* const scoreNames[] = {"dot", "general", "additive", "cosine"};
const char* const maskNames[] = {"none", "causal", "prefix", "sliding", "custom"};
const char* const normalizerNames[] = {"softmax", "sparsemax", "entmax", "sigmoid", "hardmax"};
const char* const precisionNames[] = {"float64", "float32"};
const char* const positionNames[] = {"none", "sinusoidal", "learned", "rope", "alibi"};
const char* const pairingNames[] = {"half", "interleaved"};
const char* const ropeScalingNames[] = {"none", "linear", "llama3"};
const char* const interventionNames[] = {"zero", "mean", "scale", "session"};

std::string describe(const std::string& path, const std::string& problem)
{
    return path + ": " + problem;
}

// Dimension names: none at all, or one per column of the matrix they name.
std::string checkDimensionNames(const std::string& path, const std::vector<std::string>& dims,
                                const std::string& matrix, Index dModel)
{
    if (dims.empty() || static_cast<Index>(dims.size()) == dModel)
        return {};
    return describe(path, "expected " + std::to_string(dModel) + " names (one per column of " + matrix +
                              ", d_model = " + std::to_string(dModel) + "), found " +
                              std::to_string(dims.size()));
}

// An optional bias: absent (empty), or `size` finite entries (`what` says where the size comes from).
std::string checkBias(const std::string& path, const Vector& bias, Index size, const std::string& what)
{
    if (bias.size() == 0)
        return {};
    if (bias.size() != size)
        return describe(path, "expected " + std::to_string(size) + " entries (" + what + " = " +
                                  std::to_string(size) + "), found " + std::to_string(bias.size()));
    if (!isAllFinite(bias))
        return describe(path, "contains a number that is not finite");
    return {};
}

// The positional encoding's parameters (checked whatever the type, as they are saved), then what its type
// needs: P's rows for every position, an even d_k for RoPE.
std::string checkPositions(const Session& s, Index dK)
{
    const PositionSpec& positions = s.positions;
    if (!(std::isfinite(positions.base) && positions.base > 0))
        return describe("positions.base", "expected a positive finite number");
    // Frequencies are base^(−2i/d) ≤ 1/base: a smaller base would make position · frequency overflow.
    if (positions.base < minimumPositionBase)
        return describe("positions.base",
                        "expected at least 1e-300 (a smaller base makes the angles overflow)");
    if (positions.P.size() > 0) {
        if (positions.P.rows() > Limits::maxTokens)
            return describe("positions.P", "expected at most " + std::to_string(Limits::maxTokens) +
                                               " rows, found " + std::to_string(positions.P.rows()));
        if (positions.P.cols() != s.dModel())
            return describe("positions.P", "expected " + std::to_string(s.dModel()) +
                                               " columns (d_model = " + std::to_string(s.dModel()) +
                                               "), found " + std::to_string(positions.P.cols()));
        if (!allFinite(positions.P.data(), positions.P.size()))
            return describe("positions.P", "contains a number that is not finite");
    }
    const RopeScaling& scaling = positions.scaling;
    if (scaling.type != RopeScalingType::None) {
        const auto positiveFinite = [](double x) { return std::isfinite(x) && x > 0; };
        if (!positiveFinite(scaling.factor))
            return describe("positions.scaling.factor", "expected a positive finite number");
        if (scaling.type == RopeScalingType::Llama3) {
            if (!positiveFinite(scaling.lowFrequencyFactor))
                return describe("positions.scaling.low_freq_factor", "expected a positive finite number");
            if (!(positiveFinite(scaling.highFrequencyFactor) &&
                  scaling.highFrequencyFactor > scaling.lowFrequencyFactor))
                return describe("positions.scaling.high_freq_factor",
                                "expected a finite number larger than low_freq_factor");
            if (!positiveFinite(scaling.originalMaxPositions))
                return describe("positions.scaling.original_max_position_embeddings",
                                "expected a positive finite number");
        }
    }
    if (!positions.slopes.empty()) {
        if (positions.slopes.size() != s.heads.size())
            return describe("positions.slopes", slopeCountProblem(s.heads.size(), positions.slopes.size()));
        for (double slope : positions.slopes)
            if (!std::isfinite(slope))
                return describe("positions.slopes", "contains a number that is not finite");
    }
    if (positions.type == PositionType::Learned) {
        if (positions.P.size() == 0)
            return describe("positions.P",
                            "missing (a learned encoding needs a max positions × d_model matrix)");
        // Each side counts its positions from 0, so P needs a row for every query and every key.
        const bool keysLonger = s.m() > s.n();
        const Index needed = keysLonger ? s.m() : s.n();
        if (positions.P.rows() < needed)
            return describe("positions.P",
                            "has " + std::to_string(positions.P.rows()) + " rows (positions 0 to " +
                                std::to_string(positions.P.rows() - 1) + "), but " +
                                (keysLonger ? "the context has m = " : "the sequence has n = ") +
                                std::to_string(needed) + " tokens");
    }
    if (positions.type == PositionType::Rope && dK % 2 != 0)
        return describe("positions.type",
                        "rope rotates pairs of coordinates and needs an even d_k, found d_k = " +
                            std::to_string(dK));
    return {};
}

// "expected R × C, found r × c" style checks for one matrix (double, or float32 weights), and its values
// unless `readValues` is false.
template <typename Values>
std::string checkShape(const std::string& path, const Values& m, Index rows, Index cols,
                       bool readValues = true)
{
    std::ostringstream out;
    if (m.rows() != rows)
        out << path << ": expected " << rows << " rows, found " << m.rows();
    else if (m.cols() != cols)
        out << path << ": expected " << cols << " columns, found " << m.cols();
    else if (readValues && !allFinite(m.data(), m.size()))
        out << path << ": contains a number that is not finite";
    return out.str();
}

std::string checkDimension(const std::string& path, Index value, Index max)
{
    if (value < 1 || value > max) {
        std::ostringstream out;
        out << path << ": " << value << " is outside the allowed range 1 to " << max;
        return out.str();
    }
    return {};
}

} // namespace

const char* toString(ScoreFunction score)
{
    return nameOf(score, scoreNames);
}
const char* toString(MaskType type)
{
    return nameOf(type, maskNames);
}
const char* toString(NormalizerType type)
{
    return nameOf(type, normalizerNames);
}
std::optional<ScoreFunction> scoreFromString(const std::string& name)
{
    return valueOf<ScoreFunction>(name, scoreNames);
}
std::optional<MaskType> maskTypeFromString(const std::string& name)
{
    return valueOf<MaskType>(name, maskNames);
}
std::optional<NormalizerType> normalizerFromString(const std::string& name)
{
    return valueOf<NormalizerType>(name, normalizerNames);
}
const char* toString(Precision precision)
{
    return nameOf(precision, precisionNames);
}
std::optional<Precision> precisionFromString(const std::string& name)
{
    return valueOf<Precision>(name, precisionNames);
}
const char* toString(PositionType type)
{
    return nameOf(type, positionNames);
}
const char* toString(RopePairing pairing)
{
    return nameOf(pairing, pairingNames);
}
std::optional<PositionType> positionTypeFromString(const std::string& name)
{
    return valueOf<PositionType>(name, positionNames);
}
std::optional<RopePairing> ropePairingFromString(const std::string& name)
{
    return valueOf<RopePairing>(name, pairingNames);
}
const char* toString(RopeScalingType type)
{
    return nameOf(type, ropeScalingNames);
}
std::optional<RopeScalingType> ropeScalingFromString(const std::string& name)
{
    return valueOf<RopeScalingType>(name, ropeScalingNames);
}
const char* toString(HeadIntervention::Kind kind)
{
    return nameOf(kind, interventionNames);
}
std::optional<HeadIntervention::Kind> interventionKindFromString(const std::string& name)
{
    return valueOf<HeadIntervention::Kind>(name, interventionNames);
}
std::string slopeCountProblem(std::size_t heads, std::size_t found)
{
    return "expected " + std::to_string(heads) + (heads == 1 ? " number" : " numbers") +
           " (one per head), found " + std::to_string(found);
}

namespace {

// X, its tokens, padding flags and dimension names.
std::string checkQueries(const Session& s, bool readOperands)
{
    const Index n = s.X.rows();
    const Index dModel = s.X.cols();
    std::string problem;
    if (!(problem = checkDimension("X (rows)", n, Limits::maxTokens)).empty())
        return problem;
    if (!(problem = checkDimension("X (columns, d_model)", dModel, Limits::maxDimension)).empty())
        return problem;
    if (readOperands && !allFinite(s.X.data(), s.X.size()))
        return describe("X", "contains a number that is not finite");
    if (static_cast<Index>(s.tokens.size()) != n)
        return describe("tokens", "expected " + std::to_string(n) + " tokens (one per row of X), found " +
                                      std::to_string(s.tokens.size()));
    if (static_cast<Index>(s.pad.size()) != n)
        return describe("pad",
                        "expected " + std::to_string(n) + " flags, found " + std::to_string(s.pad.size()));
    return checkDimensionNames("dims", s.dims, "X", dModel);
}

// The cross-attention context: Z with d_model columns, its tokens, padding flags and dimension names.
std::string checkContext(const Context& c, Index dModel, bool readOperands)
{
    const Index m = c.Z.rows();
    std::string problem;
    if (!(problem = checkDimension("context.Z (rows)", m, Limits::maxTokens)).empty())
        return problem;
    if (!(problem = checkShape("context.Z", c.Z, m, dModel, readOperands)).empty())
        return problem;
    if (static_cast<Index>(c.tokens.size()) != m)
        return describe("context.tokens", "expected " + std::to_string(m) +
                                              " tokens (one per row of context.Z), found " +
                                              std::to_string(c.tokens.size()));
    if (static_cast<Index>(c.pad.size()) != m)
        return describe("context.pad",
                        "expected " + std::to_string(m) + " flags, found " + std::to_string(c.pad.size()));
    return checkDimensionNames("context.dims", c.dims, "context.Z", dModel);
}

// Float32 weights given apart replace the session's projections and W_O, which must then be empty.
std::string checkFloat32Weights(const Session& s, const Float32Weights& float32Weights)
{
    if (s.precision != Precision::Float32)
        return describe("precision", "float32 weights were given for a float64 computation");
    if (float32Weights.heads.size() != s.heads.size())
        return describe("heads", "the session has " + std::to_string(s.heads.size()) +
                                     " heads, its float32 weights " +
                                     std::to_string(float32Weights.heads.size()));
    if (s.W_O)
        return describe("W_O", "given twice: in the session and in float32");
    for (std::size_t h = 0; h < s.heads.size(); ++h)
        if (s.heads[h].W_Q.size() + s.heads[h].W_K.size() + s.heads[h].W_V.size() > 0)
            return describe("heads[" + std::to_string(h) + "]",
                            "projections given twice: in the session and in float32");
    return {};
}

// A head's projections as the computation will read them: the session's own, or the float32 ones given.
template <typename Projections>
std::string checkProjections(const std::string& at, const Projections& p, Index dModel, Index dK, Index dV,
                             bool readOperands)
{
    for (const auto& [name, matrix, columns] :
         {std::tuple{"W_Q", &p.W_Q, dK}, std::tuple{"W_K", &p.W_K, dK}, std::tuple{"W_V", &p.W_V, dV}})
        if (std::string found = checkShape(at + name, *matrix, dModel, columns, readOperands); !found.empty())
            return found;
    return {};
}

// What the additive score needs of a head: W_a and U_a (d_k × d_a) and v_a (d_a), with d_a set by the first
// head (`dA`, 0 until then).
std::string checkAdditiveScore(const std::string& at, const Head& head, Index dK, Index& dA)
{
    if (head.W_a.size() == 0)
        return describe(at + "W_a", "missing (the additive score needs W_a, U_a and v_a)");
    if (head.U_a.size() == 0)
        return describe(at + "U_a", "missing (the additive score needs W_a, U_a and v_a)");
    if (head.v_a.size() == 0)
        return describe(at + "v_a", "missing (the additive score needs W_a, U_a and v_a)");
    if (dA == 0)
        dA = head.W_a.cols();
    std::string problem;
    if (!(problem = checkDimension(at + "W_a (columns, d_a)", head.W_a.cols(), Limits::maxDimension)).empty())
        return problem;
    if (!(problem = checkShape(at + "W_a", head.W_a, dK, dA)).empty() ||
        !(problem = checkShape(at + "U_a", head.U_a, dK, dA)).empty())
        return problem;
    if (head.v_a.size() != dA)
        return describe(at + "v_a", "expected " + std::to_string(dA) + " numbers, found " +
                                        std::to_string(head.v_a.size()));
    if (!isAllFinite(head.v_a))
        return describe(at + "v_a", "contains a number that is not finite");
    return {};
}

// Every head: its projections, biases and the score function's own matrices.
std::string checkHeads(const Session& s, const Float32Weights* float32Weights, Index dK, Index dV,
                       bool readOperands)
{
    const Index dModel = s.X.cols();
    std::string problem;
    Index dA = 0;
    for (std::size_t h = 0; h < s.heads.size(); ++h) {
        const Head& head = s.heads[h];
        const std::string at = "heads[" + std::to_string(h) + "].";
        if (!(problem = float32Weights
                            ? checkProjections(at, float32Weights->heads[h], dModel, dK, dV, readOperands)
                            : checkProjections(at, head, dModel, dK, dV, readOperands))
                 .empty())
            return problem;
        if (!(problem = checkBias(at + "b_Q", head.b_Q, dK, "d_k")).empty() ||
            !(problem = checkBias(at + "b_K", head.b_K, dK, "d_k")).empty() ||
            !(problem = checkBias(at + "b_V", head.b_V, dV, "d_v")).empty())
            return problem;
        if (s.score == ScoreFunction::General) {
            if (head.W_S.size() == 0)
                return describe(at + "W_S", "missing (the general score needs a d_k × d_k matrix)");
            if (!(problem = checkShape(at + "W_S", head.W_S, dK, dK)).empty())
                return problem;
        }
        if (s.score == ScoreFunction::Additive && !(problem = checkAdditiveScore(at, head, dK, dA)).empty())
            return problem;
    }
    return {};
}

// W_O (the session's or the float32 one given) with its bias, or no b_O without it.
std::string checkOutputProjection(const Session& s, const Float32Weights* float32Weights, Index dV)
{
    const auto outputProblem = [&](const auto& W_O) {
        const Index concatWidth = static_cast<Index>(s.heads.size()) * dV;
        std::string found = checkDimension("W_O (columns, d_out)", W_O.cols(), Limits::maxDimension);
        if (found.empty())
            found = checkShape("W_O", W_O, concatWidth, W_O.cols());
        return found.empty() ? checkBias("b_O", s.b_O, W_O.cols(), "d_out") : found;
    };
    if (s.W_O || (float32Weights && float32Weights->W_O))
        return s.W_O ? outputProblem(*s.W_O) : outputProblem(*float32Weights->W_O);
    if (s.b_O.size() > 0)
        return describe("b_O", "needs W_O beside it (it is the bias of the output projection)");
    return {};
}

// The mask's parameters, checked even when their mask type is not selected: they are saved and must load
// back. A custom mask is n × m of 0 and 1.
std::string checkMask(const MaskSpec& mask, Index n, Index m)
{
    if (mask.prefixLength < 0)
        return describe("mask.prefix_length", "expected a whole number ≥ 0");
    if (mask.window < 1)
        return describe("mask.window", "expected a whole number ≥ 1");
    if (mask.type == MaskType::Custom && mask.allowed.size() == 0)
        return describe("mask.allowed", "missing (a custom mask needs an n × m matrix of 0 and 1)");
    if (mask.allowed.size() > 0) {
        if (mask.allowed.rows() != n)
            return describe("mask.allowed", "expected " + std::to_string(n) + " rows, found " +
                                                std::to_string(mask.allowed.rows()));
        if (mask.allowed.cols() != m)
            return describe("mask.allowed", "expected " + std::to_string(m) + " columns, found " +
                                                std::to_string(mask.allowed.cols()));
        if ((mask.allowed.array() > 1).any())
            return describe("mask.allowed", "expected only 0 and 1");
    }
    return {};
}

// Snapshots: named, each a whole valid session without snapshots of its own.
std::string checkSnapshots(const std::vector<Snapshot>& snapshots)
{
    if (static_cast<int>(snapshots.size()) > Limits::maxSnapshots)
        return describe("snapshots", "expected at most " + std::to_string(Limits::maxSnapshots) +
                                         " snapshots, found " + std::to_string(snapshots.size()));
    for (std::size_t k = 0; k < snapshots.size(); ++k) {
        const Snapshot& snapshot = snapshots[k];
        const std::string at = "snapshots[" + std::to_string(k) + "]";
        if (snapshot.name.empty() || snapshot.name.size() > Limits::maxSnapshotName)
            return describe(at + ".name",
                            "expected 1 to " + std::to_string(Limits::maxSnapshotName) + " characters");
        if (!snapshot.session)
            return describe(at + ".session", "missing");
        if (!snapshot.session->snapshots.empty())
            return describe(at + ".session.snapshots", "a snapshot cannot hold snapshots of its own");
        if (const std::string inner = validate(*snapshot.session); !inner.empty())
            return at + ".session." + inner;
    }
    return {};
}

} // namespace

std::string validate(const Session& s, const Float32Weights* float32Weights, FiniteScan scan)
{
    const bool readOperands = scan == FiniteScan::Everything;
    const Index n = s.X.rows();
    const Index dModel = s.X.cols();
    std::string problem;
    if (!(problem = checkQueries(s, readOperands)).empty())
        return problem;
    if (s.context && !(problem = checkContext(*s.context, dModel, readOperands)).empty())
        return problem;
    const Index m = s.context ? s.context->Z.rows() : n;

    if (s.heads.empty() || static_cast<int>(s.heads.size()) > Limits::maxHeads)
        return describe("heads", "expected 1 to " + std::to_string(Limits::maxHeads) + " heads, found " +
                                     std::to_string(s.heads.size()));
    if (float32Weights && !(problem = checkFloat32Weights(s, *float32Weights)).empty())
        return problem;
    const Index dK = float32Weights ? float32Weights->heads.front().W_Q.cols() : s.heads.front().W_Q.cols();
    const Index dV = float32Weights ? float32Weights->heads.front().W_V.cols() : s.heads.front().W_V.cols();
    if (!(problem = checkDimension("heads[0].W_Q (columns, d_k)", dK, Limits::maxDimension)).empty())
        return problem;
    if (!(problem = checkDimension("heads[0].W_V (columns, d_v)", dV, Limits::maxDimension)).empty())
        return problem;
    if (!(problem = checkHeads(s, float32Weights, dK, dV, readOperands)).empty())
        return problem;
    if (!(problem = checkOutputProjection(s, float32Weights, dV)).empty())
        return problem;

    if (s.scale.kind == Scale::Kind::Constant && !(std::isfinite(s.scale.value) && s.scale.value > 0))
        return describe("scale", "expected \"sqrt_dk\", \"none\" or a finite number > 0");
    if (!(std::isfinite(s.temperature) && s.temperature > 0))
        return describe("temperature", "expected a finite number > 0");
    if (!(problem = checkMask(s.mask, n, m)).empty())
        return problem;
    if (!(std::isfinite(s.normalizer.alpha) && s.normalizer.alpha >= 1.0))
        return describe("normalizer.alpha", "expected a finite number ≥ 1");
    if (!(problem = checkPositions(s, dK)).empty())
        return problem;
    return checkSnapshots(s.snapshots);
}

std::vector<int> headsSharingKeysAndValues(const Session& session, int head)
{
    std::vector<int> sharing;
    if (head < 0 || head >= session.headCount())
        return sharing;
    const Head& own = session.heads[static_cast<std::size_t>(head)];
    for (int other = 0; other < session.headCount(); ++other) {
        const Head& h = session.heads[static_cast<std::size_t>(other)];
        if (other != head && sameMatrix(h.W_K, own.W_K) && sameMatrix(h.W_V, own.W_V) &&
            sameMatrix(h.b_K, own.b_K) && sameMatrix(h.b_V, own.b_V))
            sharing.push_back(other);
    }
    return sharing;
}

} // namespace qkv
