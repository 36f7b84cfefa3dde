#include "AttentionEngine.h"

#include "Error.h"
#include "Masks.h"
#include "Normalizers.h"
#include "ResourceLimits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qkv {

namespace {

/// Refuses a result matrix with an infinite or NaN entry: "heads[h].STAGE: WHAT overflows double precision;
/// REMEDY".
void requireFinite(const Matrix& m, int head, const char* stage, const char* what, const char* remedy)
{
    if (!isAllFinite(m))
        throw Error("heads[" + std::to_string(head) + "]." + stage + ": " + what +
                    " overflows double precision; " + remedy);
}

constexpr const char* reduceInputs = "reduce the magnitudes in X, Z or the weights";

void stopIfCancelled(const ComputeOptions& options)
{
    if (options.cancel && options.cancel->load(std::memory_order_relaxed))
        throw Cancelled();
}

// Rows scaled to unit Euclidean length; a zero row stays zero (its cosine with anything is 0).
void normalizeRows(const Matrix& in, Matrix& out)
{
    out.resize(in.rows(), in.cols());
    for (Index r = 0; r < in.rows(); ++r) {
        const double norm = in.row(r).stableNorm();
        if (norm > 0)
            out.row(r) = in.row(r) / norm;
        else
            out.row(r).setZero();
    }
}

/// (copy, original) for every row of `rows` equal to an earlier one (−0 equals +0), the original being the
/// first of its kind. Identical tokens must get bit-identical K, V and scores, but a matrix product rounds
/// its rows by different kernels (the last rows of a block differ in the last bit), so the engine copies
/// the original's results over its copies. One hash per row; nothing when every row is unique.
std::vector<std::pair<Index, Index>> duplicateRows(const Matrix& rows)
{
    std::unordered_map<std::uint64_t, std::vector<Index>> byHash;
    byHash.reserve(static_cast<std::size_t>(rows.rows()));
    std::vector<std::pair<Index, Index>> copies;
    for (Index r = 0; r < rows.rows(); ++r) {
        std::uint64_t hash = 1469598103934665603ull; // FNV-1a over the entries' bits
        for (Index c = 0; c < rows.cols(); ++c) {
            const double value = rows(r, c) == 0.0 ? 0.0 : rows(r, c);
            std::uint64_t bits;
            std::memcpy(&bits, &value, sizeof bits);
            hash = (hash ^ bits) * 1099511628211ull;
        }
        std::vector<Index>& sameHash = byHash[hash];
        const auto original = std::find_if(sameHash.begin(), sameHash.end(),
                                           [&](Index earlier) { return rows.row(earlier) == rows.row(r); });
        if (original != sameHash.end())
            copies.emplace_back(r, *original);
        else
            sameHash.push_back(r);
    }
    return copies;
}

} // namespace

void computeScores(ScoreFunction score, const Head& head, const Matrix& Q, const Matrix& K, Matrix& scores)
{
    scores.resize(Q.rows(), K.rows());
    switch (score) {
    case ScoreFunction::Dot:
        scores.noalias() = Q * K.transpose();
        break;
    case ScoreFunction::General: {
        const Matrix QW = Q * head.W_S;
        scores.noalias() = QW * K.transpose();
        break;
    }
    case ScoreFunction::Additive: {
        const Matrix QW = Q * head.W_a;
        const Matrix KU = K * head.U_a;
        for (Index i = 0; i < Q.rows(); ++i)
            for (Index j = 0; j < K.rows(); ++j)
                scores(i, j) = ((QW.row(i) + KU.row(j)).array().tanh().matrix() * head.v_a).value();
        break;
    }
    case ScoreFunction::Cosine: {
        Matrix Qn, Kn;
        normalizeRows(Q, Qn);
        normalizeRows(K, Kn);
        scores.noalias() = Qn * Kn.transpose();
        scores = scores.cwiseMax(-1.0).cwiseMin(1.0); // rounding can step just outside [−1, 1]
        break;
    }
    }
}

RowStats rowStatistics(const double* weights, Index m, double knownEntropy)
{
    // Vectorised: one log per entry is the bulk of the cost for dense rows.
    const Eigen::Map<const Eigen::ArrayXd> a(weights, m);
    RowStats stats;
    stats.sum = a.sum();
    stats.support = (a > 0.0).count();
    if (stats.support > 0) {
        stats.max = a.maxCoeff();
        stats.entropy =
            knownEntropy >= 0.0 ? knownEntropy : -(a > 0.0).select(a * a.log(), 0.0).sum(); // 0 ln 0 = 0
    }
    return stats;
}

void computeAttention(const Session& session, AttentionResult& result, const ComputeOptions& options)
{
    if (const std::string problem = validate(session); !problem.empty())
        throw Error(problem);
    checkMemory(session, options.memoryLimit);

    const Matrix& keySide = session.keySide();
    const Index n = session.n();
    const Index m = session.m();
    const Index dV = session.dV();
    const double divisor = scaleDivisor(session.scale, session.dK());
    const int headCount = session.headCount();

    const std::vector<std::pair<Index, Index>> identicalKeys = duplicateRows(keySide);

    MaskMatrix allowed;
    buildMask(session, allowed);
    std::vector<bool> emptyRow(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i)
        emptyRow[static_cast<std::size_t>(i)] = (allowed.row(i).array() == 0).all();

    result.precision = session.precision;
    result.heads.resize(static_cast<std::size_t>(headCount));
    result.concat.resize(n, headCount * dV);
    NormalizerScratch scratch;
    for (int h = 0; h < headCount; ++h) {
        stopIfCancelled(options);
        const Head& head = session.heads[static_cast<std::size_t>(h)];
        HeadResult& out = result.heads[static_cast<std::size_t>(h)];
        out.Q.resize(n, head.W_Q.cols());
        out.K.resize(m, head.W_K.cols());
        out.V.resize(m, head.W_V.cols());
        out.Q.noalias() = session.X * head.W_Q;
        out.K.noalias() = keySide * head.W_K;
        out.V.noalias() = keySide * head.W_V;
        requireFinite(out.Q, h, "Q", "X · W_Q", reduceInputs);
        requireFinite(out.K, h, "K", session.context ? "Z · W_K" : "X · W_K", reduceInputs);
        requireFinite(out.V, h, "V", session.context ? "Z · W_V" : "X · W_V", reduceInputs);
        for (const auto& [copy, original] : identicalKeys) {
            out.K.row(copy) = out.K.row(original);
            out.V.row(copy) = out.V.row(original);
        }

        computeScores(session.score, head, out.Q, out.K, out.scores);
        for (const auto& [copy, original] : identicalKeys)
            out.scores.col(copy) = out.scores.col(original);
        out.allowed = allowed;
        out.scaled.resize(n, m);
        out.weights.resize(n, m);
        out.rowStats.resize(static_cast<std::size_t>(n));
        out.emptyRows.clear();
        // One pass per row keeps the row in cache: scale, normalize, statistics.
        constexpr Index rowsBetweenChecks = 64;
        for (Index i = 0; i < n; ++i) {
            if (i % rowsBetweenChecks == rowsBetweenChecks - 1)
                stopIfCancelled(options);
            out.scaled.row(i) = out.scores.row(i) / divisor;
            const NormalizerTrace trace =
                normalizeRow(session.normalizer, out.scaled.row(i).data(), out.allowed.row(i).data(), m,
                             session.temperature, out.weights.row(i).data(), scratch);
            out.rowStats[static_cast<std::size_t>(i)] =
                rowStatistics(out.weights.row(i).data(), m, trace.entropy);
            if (emptyRow[static_cast<std::size_t>(i)])
                out.emptyRows.push_back(i);
        }
        // Checked once afterwards (the normalizers stay finite on any input): an overflow in the scores
        // carries into the scaled scores, and the scores are looked at only to name the culprit.
        if (!isAllFinite(out.scaled)) {
            requireFinite(out.scores, h, "scores", "a score", reduceInputs);
            requireFinite(out.scaled, h, "scaled", "a scaled score", "choose a larger scale");
        }
        // The normalizers never produce a non-finite weight; checked anyway, so that no defect can ever put
        // NaN on screen or in `compute` output.
        requireFinite(out.weights, h, "weights", "a weight",
                      "this is a defect in QKV Lab: please report the session");

        out.output.resize(n, out.V.cols());
        out.output.noalias() = out.weights * out.V;
        // Sigmoid rows need not sum to 1, so weights · V can exceed V's largest entry many times over.
        requireFinite(out.output, h, "output", "weights · V", "reduce the magnitudes in W_V, X or Z");
        result.concat.middleCols(h * dV, dV) = out.output;
    }

    if (session.W_O) {
        stopIfCancelled(options);
        result.output.resize(n, session.W_O->cols());
        result.output.noalias() = result.concat * *session.W_O;
        if (!isAllFinite(result.output))
            throw Error("output: concat · W_O overflows double precision; reduce the magnitudes in W_O");
    } else {
        result.output = result.concat;
    }
}

AttentionResult computeAttention(const Session& session, const ComputeOptions& options)
{
    AttentionResult result;
    computeAttention(session, result, options);
    return result;
}

} // namespace qkv
