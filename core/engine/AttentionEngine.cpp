// SPDX-License-Identifier: GPL-3.0-or-later
#include "AttentionEngine.h"

#include "Error.h"
#include "Masks.h"
#include "MatrixProduct.h"
#include "Normalizers.h"
#include "Parallel.h"
#include "Positions.h"
#include "ResourceLimits.h"
#include "RowKernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// How the work is laid out: per head, the projections Q, K, V are three large products (split by rows over
// the engine's threads); then the query rows are cut into blocks, and each block, on whichever thread claims
// it, computes its scores, scales and normalizes them row by row, takes their statistics and multiplies its
// weights by V, while the block is still in cache. Blocks depend only on the session's sizes, so the result
// is the same with any number of threads.
//
// In float32 the inputs are rounded to float32 once, every product is a float32 product (float32
// accumulation, as PyTorch), and every stored entry is a float32 value held in a double. Softmax works in
// float32 as PyTorch does (normalizers.h: softmaxRowFloat32); the other normalizers, and softmax rows beyond
// float32's exp, read the float32 scaled row, work in double as always, and their weights are rounded to
// float32.

namespace qkv {

namespace {

template <typename Scalar> constexpr bool isDouble = std::is_same_v<Scalar, double>;

template <typename Scalar> const char* precisionWords()
{
    return isDouble<Scalar> ? "double precision" : "float32";
}

constexpr const char* reduceInputs = "reduce the magnitudes in X, Z or the weights";

void stopIfCancelled(const ComputeOptions& options)
{
    if (options.cancel && options.cancel->load(std::memory_order_relaxed))
        throw Cancelled();
}

/// A session matrix in the engine's precision: the matrix itself in float64; in float32 a rounded copy,
/// refused when an entry is beyond float32's range (it would become infinite), or the float32 matrix given
/// for it (ComputeOptions::float32Weights), as it is.
template <typename Scalar> class InPrecision {
public:
    InPrecision(const Matrix& m, const std::string& path, const MatrixF* given = nullptr) : m_double(&m)
    {
        if constexpr (!isDouble<Scalar>) {
            if (given) {
                m_given = given;
                return;
            }
            m_rounded.resize(m.rows(), m.cols());
            // On the engine's threads: rounding large weight matrices on one thread is a noticeable part of
            // a float32 pipeline.
            const double* from = m.data();
            float* to = m_rounded.data();
            if (!allPiecesPass(m.size(), [from, to](Index first, Index size) {
                    return rows::roundToFloat(from + first, to + first, size);
                })) {
                std::ostringstream message;
                message << path << ": an entry is beyond float32's range (±" << FLT_MAX
                        << "); reduce it or choose precision float64";
                throw Error(message.str());
            }
        }
    }
    const MatrixOf<Scalar>& operator*() const
    {
        if constexpr (isDouble<Scalar>)
            return *m_double;
        else
            return m_given ? *m_given : m_rounded;
    }

private:
    const Matrix* m_double;
    MatrixOf<Scalar> m_rounded;       // float32 only
    const MatrixF* m_given = nullptr; // float32 only
};

/// X or Z as the projections see it, in the engine's precision: with the sinusoidal or learned encoding
/// added (the encoding rounded like every input, the sum in the engine's precision), else the matrix itself.
template <typename Scalar> class PositionedInput {
public:
    PositionedInput(const Matrix& embeddings, const std::string& path, const PositionSpec& positions)
        : m_input(embeddings, path)
    {
        if (!addsToEmbeddings(positions))
            return;
        const Matrix encoding = additiveEncoding(positions, embeddings.rows(), embeddings.cols());
        m_positioned = *m_input + *InPrecision<Scalar>(encoding, "positions.P");
        if (!isAllFinite(m_positioned))
            throw Error(path + " + positions: the sum overflows " + precisionWords<Scalar>() +
                        "; reduce the magnitudes in " + path + " or positions.P");
        m_isPositioned = true;
    }
    const MatrixOf<Scalar>& operator*() const { return m_isPositioned ? m_positioned : *m_input; }
    bool isPositioned() const { return m_isPositioned; }

private:
    InPrecision<Scalar> m_input;
    MatrixOf<Scalar> m_positioned; // only when positioned
    bool m_isPositioned = false;
};

/// Adds an optional bias (a session vector) to every row of `rows`, in the engine's precision (the bias
/// rounded to float32 like every input): one pass, nothing when the bias is absent.
template <typename Scalar> void addBias(MatrixOf<Scalar>& rows, const Vector& bias, const std::string& path)
{
    if (bias.size() == 0)
        return;
    const Matrix biasRow = bias.transpose();
    const InPrecision<Scalar> inPrecision(biasRow, path);
    rows.rowwise() += (*inPrecision).row(0);
}

/// The float32 working matrices of a head (Q, K, V) and of a block of its rows (scores, output). They outlive
/// a computation on their thread, so that the next one of the same size allocates nothing and takes no page
/// faults on fresh pages. Kept until the thread ends (for a head
/// of 4096 tokens and d = 512, 60 MB on the thread that computes it and 10 MB on each that computes blocks).
enum class Scratch { Q, K, V, Scores, Output, Count };
template <typename Scalar> MatrixOf<Scalar>& threadScratch(Scratch which)
{
    thread_local std::array<MatrixOf<Scalar>, static_cast<std::size_t>(Scratch::Count)> matrices;
    return matrices[static_cast<std::size_t>(which)];
}

/// Where a product in the engine's precision goes: the result's own double matrix in float64, a scratch
/// matrix in float32 (copied into the result afterwards).
template <typename Scalar> MatrixOf<Scalar>& workMatrix(Matrix& resultMatrix, MatrixOf<Scalar>& scratch)
{
    if constexpr (isDouble<Scalar>)
        return resultMatrix;
    else
        return scratch;
}

template <typename Scalar> void storeInResult(const MatrixOf<Scalar>& work, Matrix& resultMatrix)
{
    if constexpr (!isDouble<Scalar>)
        resultMatrix = work.template cast<double>();
}

/// Whether each work matrix (Q, K, V) is finite, and in float32 each widened into its result matrix: in
/// chunks of rows on the engine's threads (a pass over three large matrices is worth sharing out).
template <typename Scalar, std::size_t count>
std::array<bool, count> checkAndStore(const std::array<const MatrixOf<Scalar>*, count>& work,
                                      const std::array<Matrix*, count>& results)
{
    struct Chunk {
        std::size_t matrix;
        Index first, rows;
    };
    std::vector<Chunk> chunks;
    for (std::size_t i = 0; i < count; ++i) {
        const MatrixOf<Scalar>& w = *work[i];
        if constexpr (!isDouble<Scalar>)
            results[i]->resize(w.rows(), w.cols());
        const Index grain = std::max<Index>(1, (Index(1) << 16) / std::max<Index>(1, w.cols()));
        for (Index first = 0; first < w.rows(); first += grain)
            chunks.push_back({i, first, std::min(grain, w.rows() - first)});
    }
    std::array<std::atomic<bool>, count> finite;
    for (std::atomic<bool>& f : finite)
        f.store(true, std::memory_order_relaxed);
    parallelFor(Index(chunks.size()), 1, [&](Index begin, Index end) {
        for (Index c = begin; c < end; ++c) {
            const Chunk& chunk = chunks[std::size_t(c)];
            const MatrixOf<Scalar>& from = *work[chunk.matrix];
            const Index size = chunk.rows * from.cols(); // whole rows of a row-major matrix: contiguous
            bool chunkFinite = true;
            if constexpr (isDouble<Scalar>)
                chunkFinite = rows::allFinite(from.row(chunk.first).data(), size);
            else
                chunkFinite = rows::widen(from.row(chunk.first).data(),
                                          results[chunk.matrix]->row(chunk.first).data(), size);
            if (!chunkFinite)
                finite[chunk.matrix].store(false, std::memory_order_relaxed);
        }
    });
    std::array<bool, count> flags;
    for (std::size_t i = 0; i < count; ++i)
        flags[i] = finite[i].load(std::memory_order_relaxed);
    return flags;
}

// Rows scaled to unit Euclidean length; a zero row stays zero (its cosine with anything is 0).
template <typename Scalar> MatrixOf<Scalar> normalizedRows(const MatrixOf<Scalar>& in)
{
    MatrixOf<Scalar> out(in.rows(), in.cols());
    for (Index r = 0; r < in.rows(); ++r) {
        const Scalar norm = in.row(r).stableNorm();
        if (norm > 0)
            out.row(r) = in.row(r) / norm;
        else
            out.row(r).setZero();
    }
    return out;
}

/// (copy, original) for every row of `rows` equal to an earlier one (−0 equals +0), the original being the
/// first of its kind, in the order of the copies. Identical tokens must get bit-identical K, V and scores,
/// but a matrix product rounds its rows by different kernels (the last rows of a block differ in the last
/// bit), so the engine copies the original's results over its copies. The rows are hashed on the engine's
/// threads (the hashing would otherwise hold up the projections that follow), then sorted by hash, and only
/// rows of one hash are compared; nothing is copied when every row is unique.
std::vector<std::pair<Index, Index>> duplicateRows(const Matrix& rows)
{
    std::vector<std::pair<std::uint64_t, Index>> byHash(static_cast<std::size_t>(rows.rows()));
    const Index rowsPerChunk = std::max<Index>(1, (Index(1) << 15) / std::max<Index>(1, rows.cols()));
    parallelFor(rows.rows(), rowsPerChunk, [&](Index first, Index end) {
        for (Index r = first; r < end; ++r)
            byHash[static_cast<std::size_t>(r)] = {rows::rowHash(rows.row(r).data(), rows.cols()), r};
    });
    std::sort(byHash.begin(), byHash.end()); // rows of one hash together, in row order
    std::vector<std::pair<Index, Index>> copies;
    std::vector<Index> originals; // of the current hash, in row order
    for (std::size_t i = 0; i < byHash.size(); ++i) {
        if (i == 0 || byHash[i].first != byHash[i - 1].first)
            originals.clear();
        const Index r = byHash[i].second;
        const auto original = std::find_if(originals.begin(), originals.end(),
                                           [&](Index earlier) { return rows.row(earlier) == rows.row(r); });
        if (original != originals.end())
            copies.emplace_back(r, *original);
        else
            originals.push_back(r);
    }
    std::sort(copies.begin(), copies.end());
    return copies;
}

/// What the score function needs besides Q and K, computed once per head: s(q_i, k_j) is then
/// left_i · rightᵀ_j (dot, general, cosine) or v_aᵀ tanh(left_i + right_j) (additive).
template <typename Scalar> struct ScoreOperands {
    ScoreFunction score;
    MatrixOf<Scalar> leftOwn, rightOwn;
    const MatrixOf<Scalar>* left;
    const MatrixOf<Scalar>* right;
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> v_a;

    ScoreOperands(ScoreFunction function, const Head& head, const MatrixOf<Scalar>& Q,
                  const MatrixOf<Scalar>& K)
        : score(function), left(&Q), right(&K)
    {
        switch (score) {
        case ScoreFunction::Dot:
            break;
        case ScoreFunction::General:
            leftOwn.resize(Q.rows(), head.W_S.cols());
            multiply<Scalar>(Q, *InPrecision<Scalar>(head.W_S, "W_S"), leftOwn);
            left = &leftOwn;
            break;
        case ScoreFunction::Additive:
            leftOwn.resize(Q.rows(), head.W_a.cols());
            rightOwn.resize(K.rows(), head.U_a.cols());
            multiply<Scalar>(Q, *InPrecision<Scalar>(head.W_a, "W_a"), leftOwn);
            multiply<Scalar>(K, *InPrecision<Scalar>(head.U_a, "U_a"), rightOwn);
            left = &leftOwn;
            right = &rightOwn;
            v_a = head.v_a.cast<Scalar>();
            break;
        case ScoreFunction::Cosine:
            leftOwn = normalizedRows(Q);
            rightOwn = normalizedRows(K);
            left = &leftOwn;
            right = &rightOwn;
            break;
        }
    }

    /// The scores of query rows [first, first + out.rows()).
    void rows(Index first, Rows<Scalar> out) const
    {
        const Index count = out.rows();
        if (score == ScoreFunction::Additive) {
            for (Index i = 0; i < count; ++i)
                for (Index j = 0; j < right->rows(); ++j)
                    out(i, j) =
                        ((left->row(first + i) + right->row(j)).array().tanh().matrix() * v_a).value();
            return;
        }
        multiplyOnThisThread<Scalar>(left->middleRows(first, count), *right, out, Operand::Transposed);
        if (score == ScoreFunction::Cosine)
            out = out.cwiseMax(Scalar(-1)).cwiseMin(Scalar(1)); // rounding can step just outside [−1, 1]
    }
};

/// Query rows per block: all of them when the head is too small for threads to pay, else blocks of 16 to 512
/// rows (at least two blocks), by the sizes alone. Each block packs all of K and V again for its products, so
/// fewer, taller blocks are faster, and two blocks still leave a chunk to hand over when another process
/// takes a core (docs/design.md, "Threads that do not spin-wait").
Index blockRows(Index n, Index m, Index dK, Index dV)
{
    // Below this a second thread saves less than it costs. Above it, threads pay because the pool's workers
    // watch briefly for the next job (Parallel.cpp) instead of sleeping between the pipeline's steps.
    constexpr double smallestParallelFlops = 4e6;
    if (2.0 * double(n) * double(m) * double(dK + dV) < smallestParallelFlops)
        return n;
    return std::clamp<Index>((n + 1) / 2, 16, 512);
}

/// Row statistics from the weights' sums; the entropy is the one given (≥ 0) or summed here.
RowStats rowStatistics(const rows::WeightSums& sums, const double* weights, Index m, double knownEntropy)
{
    RowStats stats;
    stats.sum = sums.sum;
    stats.support = sums.support;
    if (stats.support > 0) {
        stats.max = sums.max;
        // One log per entry is the bulk of the cost for dense rows, so softmax hands its entropy over.
        const Eigen::Map<const Eigen::ArrayXd> a(weights, m);
        stats.entropy =
            knownEntropy >= 0.0 ? knownEntropy : -(a > 0.0).select(a * a.log(), 0.0).sum(); // 0 ln 0 = 0
    }
    return stats;
}

/// The first problem a block found, in the order the messages are chosen.
enum class Problem { None, Score, Scaled, PositionBias, Weight, Output };

/// Q, K and V of head `h` in the previous result when their inputs are bit for bit this session's (null
/// for each that is not).
std::array<const Matrix*, 3> reusableProjections(const Session& session, int h, const ComputeOptions& options)
{
    const Session* before = options.previousSession;
    const AttentionResult* computed = options.previousResult;
    if (!before || !computed || options.float32Weights || h >= before->headCount() ||
        static_cast<std::size_t>(h) >= computed->heads.size() || before->precision != session.precision ||
        computed->precision != session.precision || !(before->positions == session.positions) ||
        !sameBits(before->positions.P, session.positions.P)) // == takes −0 for 0
        return {};
    const bool sameQueries = sameBits(before->X, session.X);
    const bool sameKeySide =
        before->context.has_value() == session.context.has_value() &&
        (session.context ? sameBits(before->context->Z, session.context->Z) : sameQueries);
    const Head& was = before->heads[static_cast<std::size_t>(h)];
    const Head& is = session.heads[static_cast<std::size_t>(h)];
    const HeadResult& out = computed->heads[static_cast<std::size_t>(h)];
    const auto reusable = [](bool sameInput, const Matrix& wasW, const Matrix& isW, const Vector& wasB,
                             const Vector& isB, const Matrix& projected, Index rows) {
        return sameInput && sameBits(wasW, isW) && sameBits(wasB, isB) && projected.rows() == rows &&
                       projected.cols() == isW.cols()
                   ? &projected
                   : nullptr;
    };
    return {reusable(sameQueries, was.W_Q, is.W_Q, was.b_Q, is.b_Q, out.Q, session.n()),
            reusable(sameKeySide, was.W_K, is.W_K, was.b_K, is.b_K, out.K, session.m()),
            reusable(sameKeySide, was.W_V, is.W_V, was.b_V, is.b_V, out.V, session.m())};
}

/// "X · W_Q + b_Q": how a projection is named in a message.
std::string projectionWords(const char* input, const char* weights, const Vector& bias, const char* name)
{
    return std::string(input) + " · " + weights + (bias.size() > 0 ? std::string(" + ") + name : "");
}

/// Q, K and V of head `h` into the work matrices: what the previous computation has (bias and rotation
/// included) is copied, the rest is projected, biased and, under RoPE, rotated. Copies of identical keys get
/// their original's K and V rows.
template <typename Scalar>
void projectHead(const Session& session, int h, const MatrixOf<Scalar>& X, const MatrixOf<Scalar>& keySide,
                 const std::vector<std::pair<Index, Index>>& identicalKeys, const ComputeOptions& options,
                 MatrixOf<Scalar>& Q, MatrixOf<Scalar>& K, MatrixOf<Scalar>& V)
{
    const Head& head = session.heads[static_cast<std::size_t>(h)];
    const std::string path = "heads[" + std::to_string(h) + "].";
    const Float32Weights::Projections* given =
        options.float32Weights ? &options.float32Weights->heads[static_cast<std::size_t>(h)] : nullptr;
    const InPrecision<Scalar> W_Q(head.W_Q, path + "W_Q", given ? &given->W_Q : nullptr),
        W_K(head.W_K, path + "W_K", given ? &given->W_K : nullptr),
        W_V(head.W_V, path + "W_V", given ? &given->W_V : nullptr);
    const PositionSpec& positions = session.positions;
    Q.resize(session.n(), (*W_Q).cols());
    K.resize(session.m(), (*W_Q).cols());
    V.resize(session.m(), (*W_V).cols());
    const std::array<const Matrix*, 3> reused = reusableProjections(session, h, options);
    MatrixOf<Scalar>* const projected[3] = {&Q, &K, &V};
    for (std::size_t i = 0; i < 3; ++i)
        if (reused[i])
            *projected[i] = reused[i]->template cast<Scalar>(); // float32 values held in doubles: exact
    std::vector<Product<Scalar>> products;
    if (!reused[0])
        products.push_back({X, *W_Q, Q});
    if (!reused[1])
        products.push_back({keySide, *W_K, K});
    if (!reused[2])
        products.push_back({keySide, *W_V, V});
    multiplyAll<Scalar>(products);
    if (!reused[0])
        addBias(Q, head.b_Q, path + "b_Q");
    if (!reused[1])
        addBias(K, head.b_K, path + "b_K");
    if (!reused[2])
        addBias(V, head.b_V, path + "b_V");
    if (positions.type == PositionType::Rope) { // after projection and bias; V is not rotated
        if (!reused[0])
            applyRope(Q, positions.base, positions.pairing, 0, positions.scaling);
        if (!reused[1])
            applyRope(K, positions.base, positions.pairing, 0, positions.scaling);
    }
    for (const auto& [copy, original] : identicalKeys) { // a copy is finite exactly when its original is
        K.row(copy) = K.row(original);
        V.row(copy) = V.row(original);
    }
}

/// Refuses a head whose Q, K or V is not finite, naming the first; in float32 each is widened into the
/// result on the way.
template <typename Scalar>
void checkProjections(const Session& session, int h, const MatrixOf<Scalar>& Q, const MatrixOf<Scalar>& K,
                      const MatrixOf<Scalar>& V, HeadResult& out)
{
    const Head& head = session.heads[static_cast<std::size_t>(h)];
    const char* keyInput = session.context ? "Z" : "X";
    const std::array<bool, 3> finite = checkAndStore<Scalar, 3>({&Q, &K, &V}, {&out.Q, &out.K, &out.V});
    const std::string what[3] = {projectionWords("X", "W_Q", head.b_Q, "b_Q"),
                                 projectionWords(keyInput, "W_K", head.b_K, "b_K"),
                                 projectionWords(keyInput, "W_V", head.b_V, "b_V")};
    for (std::size_t i = 0; i < 3; ++i)
        if (!finite[i])
            throw Error("heads[" + std::to_string(h) + "]." + "QKV"[i] + ": " + what[i] + " overflows " +
                        precisionWords<Scalar>() + "; " + reduceInputs);
}

/// Keeps the first problem a block finds.
void report(Problem& problem, Problem found)
{
    problem = problem == Problem::None ? found : problem;
}

/// One head's blocks of query rows: each block's scores, scaled scores, weights, row statistics and output,
/// computed while the block is in cache, on whichever thread claims it.
template <typename Scalar> class HeadBlocks {
public:
    HeadBlocks(const Session& session, int h, Index dK, const ScoreOperands<Scalar>& scores,
               const MatrixOf<Scalar>& V, const std::vector<std::pair<Index, Index>>& identicalKeys,
               HeadResult& out, const std::vector<Matrix*>& concatenated, const ComputeOptions& options)
        : m_session(session), m_h(h), m_scores(scores), m_V(V), m_identicalKeys(identicalKeys), m_out(out),
          m_concatenated(concatenated), m_options(options),
          m_divisor(static_cast<Scalar>(scaleDivisor(session.scale, dK))),
          m_temperature32(static_cast<float>(session.temperature)),
          m_alibi(session.positions.type == PositionType::Alibi),
          m_slope(m_alibi ? effectiveAlibiSlopes(session.positions, session.headCount())[std::size_t(h)]
                          : 0.0)
    {
        // In float32 the double scores, scaled scores and weights are widened from the float32 rows that the
        // products use, and under softmax nothing here reads them again: when each is far larger than the
        // caches, they are written around them, so that each line is not first read in (sparsemax, which
        // reads the scaled row back, loses nothing by it).
        constexpr Index smallestStreamedHead = Index(1) << 21; // n · m entries: 16 MiB of doubles
        m_wideRows = session.n() * session.m() >= smallestStreamedHead ? rows::WideRows::Streamed
                                                                       : rows::WideRows::Cached;
    }

    /// Query rows [first, end): the first problem found, if any.
    Problem compute(Index first, Index end) const
    {
        const Index count = end - first;
        const Index m = m_session.m();
        Problem problem = Problem::None;
        MatrixOf<Scalar>& scratchScores = threadScratch<Scalar>(Scratch::Scores);
        Scalar* scoreData = nullptr;
        if constexpr (isDouble<Scalar>) {
            scoreData =
                m_out.scores.row(first).data(); // the result's own rows: a row-major block is contiguous
        } else {
            scratchScores.resize(count, m);
            scoreData = scratchScores.data();
        }
        Eigen::Map<MatrixOf<Scalar>> blockScores(scoreData, count, m);
        m_scores.rows(first, blockScores);
        for (const auto& [copy, original] : m_identicalKeys)
            blockScores.col(copy) = blockScores.col(original);

        NormalizerScratch normalizerScratch;
        constexpr Index rowsBetweenChecks = 64;
        for (Index r = 0; r < count; ++r) {
            if (r % rowsBetweenChecks == rowsBetweenChecks - 1)
                stopIfCancelled(m_options);
            normalizeQueryRow(first + r, &blockScores(r, 0), normalizerScratch, problem);
        }
        multiplyByValues(first, count, scratchScores, problem);
        return problem;
    }

private:
    /// Row i scaled, biased and normalized into the result, with its statistics. In float32 `row32` holds
    /// the row's float32 scores, which become its float32 scaled scores, then its float32 weights, for
    /// weights · V.
    void normalizeQueryRow(Index i, Scalar* row32, NormalizerScratch& normalizerScratch,
                           Problem& problem) const
    {
        const Index m = m_session.m();
        double* scoreRow = m_out.scores.row(i).data();
        double* scaledRow = m_out.scaled.row(i).data();
        double* weightRow = m_out.weights.row(i).data();
        const std::uint8_t* allowedRow = m_out.allowed.row(i).data();
        NormalizerTrace trace;
        rows::WeightSums sums{};
        if constexpr (isDouble<Scalar>) {
            if (!rows::divide(scoreRow, m_divisor, scaledRow, m))
                report(problem, rows::allFinite(scoreRow, m) ? Problem::Scaled : Problem::Score);
            if (m_alibi && !addAlibiBias(scaledRow, m, i, m_slope)) // before the temperature
                report(problem, Problem::PositionBias);
            trace = normalizeRow(m_session.normalizer, scaledRow, allowedRow, m, m_session.temperature,
                                 weightRow, normalizerScratch);
            sums = rows::weightSums(weightRow, m);
        } else {
            const bool finite = rows::divide(row32, m_divisor, scoreRow, scaledRow, m, m_wideRows);
            if (!finite)
                report(problem, rows::allFinite(scoreRow, m) ? Problem::Scaled : Problem::Score);
            const bool biased = !m_alibi || addAlibiBias(row32, m, i, static_cast<float>(m_slope), scaledRow);
            if (!biased)
                report(problem, Problem::PositionBias);
            if (finite && biased &&
                softmaxRowFloat32(m_session.normalizer, row32, allowedRow, m, m_temperature32, row32, trace,
                                  normalizerScratch)) {
                sums = rows::widenAndSum(row32, weightRow, m, m_wideRows);
            } else {
                trace = normalizeRow(m_session.normalizer, scaledRow, allowedRow, m, m_session.temperature,
                                     weightRow, normalizerScratch);
                sums = rows::roundToFloatAndSum(weightRow, row32, m);
            }
        }
        // The normalizers never produce a non-finite weight (a NaN or infinite weight would make the sum
        // so); checked anyway, so that no defect can ever put NaN on screen or in `compute` output.
        if (!std::isfinite(sums.sum))
            report(problem, Problem::Weight);
        m_out.rowStats[static_cast<std::size_t>(i)] = rowStatistics(sums, weightRow, m, trace.entropy);
    }

    /// The block's weights · V, and this head's columns of the concatenation while its rows are in cache.
    /// In float32 `weights32` holds the block's float32 weights.
    void multiplyByValues(Index first, Index count, const MatrixOf<Scalar>& weights32, Problem& problem) const
    {
        const Index dV = m_V.cols();
        // Sigmoid rows need not sum to 1, so weights · V can exceed V's largest entry many times over.
        double* outputRows = m_out.output.row(first).data(); // whole rows: contiguous
        bool outputFinite = true;
        if constexpr (isDouble<Scalar>) {
            multiplyOnThisThread<double>(m_out.weights.middleRows(first, count), m_V,
                                         m_out.output.middleRows(first, count));
            outputFinite = rows::allFinite(outputRows, count * dV);
        } else {
            MatrixOf<Scalar>& scratchOutput = threadScratch<Scalar>(Scratch::Output);
            scratchOutput.resize(count, dV);
            multiplyOnThisThread<float>(weights32, m_V, scratchOutput);
            outputFinite = rows::widen(scratchOutput.data(), outputRows, count * dV);
        }
        if (!outputFinite)
            report(problem, Problem::Output);
        for (Matrix* heads : m_concatenated)
            heads->block(first, m_h * dV, count, dV) = m_out.output.middleRows(first, count);
    }

    const Session& m_session;
    int m_h;
    const ScoreOperands<Scalar>& m_scores;
    const MatrixOf<Scalar>& m_V;
    const std::vector<std::pair<Index, Index>>& m_identicalKeys;
    HeadResult& m_out;
    const std::vector<Matrix*>& m_concatenated;
    const ComputeOptions& m_options;
    Scalar m_divisor;
    float m_temperature32;
    bool m_alibi;
    double m_slope;
    rows::WideRows m_wideRows;
};

/// Throws the message of the first problem the blocks found (nothing when there is none).
template <typename Scalar> void throwProblem(int h, Problem problem)
{
    const std::string path = "heads[" + std::to_string(h) + "].";
    switch (problem) {
    case Problem::None:
        break;
    case Problem::Score:
        throw Error(path + "scores: a score overflows " + precisionWords<Scalar>() + "; " + reduceInputs);
    case Problem::Scaled:
        throw Error(path + "scaled: a scaled score overflows " + precisionWords<Scalar>() +
                    "; choose a larger scale");
    case Problem::PositionBias:
        throw Error(path + "scaled: ALiBi's bias −slope · |i − j| overflows " + precisionWords<Scalar>() +
                    "; reduce positions.slopes");
    case Problem::Weight:
        throw Error(path + "weights: a weight overflows " + precisionWords<Scalar>() +
                    "; this is a defect in QKV Lab: please report the session");
    case Problem::Output:
        throw Error(path + "output: weights · V overflows " + precisionWords<Scalar>() +
                    "; reduce the magnitudes in W_V, X or Z");
    }
}

template <typename Scalar>
void computeHead(const Session& session, int h, const MatrixOf<Scalar>& X, const MatrixOf<Scalar>& keySide,
                 const std::vector<std::pair<Index, Index>>& identicalKeys, const MaskMatrix& allowed,
                 const std::vector<Index>& emptyRows, HeadResult& out,
                 const std::vector<Matrix*>& concatenated, const ComputeOptions& options)
{
    const Head& head = session.heads[static_cast<std::size_t>(h)];
    const Index n = session.n();
    const Index m = session.m();
    MatrixOf<Scalar>& Q = workMatrix(out.Q, threadScratch<Scalar>(Scratch::Q));
    MatrixOf<Scalar>& K = workMatrix(out.K, threadScratch<Scalar>(Scratch::K));
    MatrixOf<Scalar>& V = workMatrix(out.V, threadScratch<Scalar>(Scratch::V));
    projectHead<Scalar>(session, h, X, keySide, identicalKeys, options, Q, K, V);
    const Index dV = V.cols();
    // In float64 with dot-product scores an infinite or NaN entry of Q or K makes its row or column of the
    // scores non-finite, and one of V the output (0 · ∞ is NaN), which the blocks check anyway: there Q, K
    // and V are read only when a block found a problem, and named first as before, which saves a pass over
    // them. Other scores can hide one (cosine clamps, tanh saturates), and float32 widens them into the
    // result, reading them anyway.
    const bool blocksRevealProjections =
        isDouble<Scalar> && session.score == ScoreFunction::Dot && n > 0 && m > 0;
    if (!blocksRevealProjections)
        checkProjections<Scalar>(session, h, Q, K, V, out);
    stopIfCancelled(options);

    const ScoreOperands<Scalar> scores(session.score, head, Q, K);
    out.allowed = allowed;
    out.emptyRows = emptyRows;
    out.scores.resize(n, m);
    out.scaled.resize(n, m);
    out.weights.resize(n, m);
    out.output.resize(n, dV);
    out.rowStats.resize(static_cast<std::size_t>(n));

    const HeadBlocks<Scalar> blocks(session, h, Q.cols(), scores, V, identicalKeys, out, concatenated,
                                    options);
    const Index rowsPerBlock = blockRows(n, m, Q.cols(), dV);
    std::vector<Problem> problems(static_cast<std::size_t>((n + rowsPerBlock - 1) / rowsPerBlock),
                                  Problem::None);
    parallelFor(n, rowsPerBlock, [&](Index first, Index end) {
        problems[static_cast<std::size_t>(first / rowsPerBlock)] = blocks.compute(first, end);
    });
    const Problem first = *std::max_element(problems.begin(), problems.end(), [](Problem a, Problem b) {
        return (a == Problem::None ? 99 : int(a)) > (b == Problem::None ? 99 : int(b));
    });
    if (first != Problem::None && blocksRevealProjections)
        checkProjections<Scalar>(session, h, Q, K, V, out);
    throwProblem<Scalar>(h, first);
}

template <typename Scalar>
void computeInPrecision(const Session& session, AttentionResult& result, const ComputeOptions& options)
{
    const Index n = session.n();
    const Float32Weights* given = options.float32Weights;
    const Index dV = given ? given->heads.front().W_V.cols() : session.dV();
    const int headCount = session.headCount();
    const bool projectsOutput = session.W_O || (given && given->W_O);

    const PositionedInput<Scalar> X(session.X, "X", session.positions);
    const std::optional<PositionedInput<Scalar>> Z =
        session.context ? std::optional<PositionedInput<Scalar>>(std::in_place, session.context->Z,
                                                                 "context.Z", session.positions)
                        : std::nullopt;
    const MatrixOf<Scalar>& keySide = Z ? **Z : *X;
    // Assigned in place, so a repeated computation of the same size allocates nothing.
    if (X.isPositioned())
        result.positionedX = (*X).template cast<double>();
    else
        result.positionedX.resize(0, 0);
    if (Z && Z->isPositioned())
        result.positionedZ = (**Z).template cast<double>();
    else
        result.positionedZ.resize(0, 0);
    // Identical key rows as the projections see them; none under RoPE, which turns each position's key
    // differently.
    std::vector<std::pair<Index, Index>> identicalKeys;
    if (session.positions.type != PositionType::Rope)
        identicalKeys = duplicateRows(!addsToEmbeddings(session.positions) ? session.keySide()
                                      : Z                                  ? result.positionedZ
                                                                           : result.positionedX);
    MaskMatrix allowed;
    buildMask(session, allowed);
    std::vector<Index> emptyRows; // rows with no allowed key
    for (Index i = 0; i < n; ++i)
        if ((allowed.row(i).array() == 0).all())
            emptyRows.push_back(i);

    result.precision = session.precision;
    result.heads.resize(static_cast<std::size_t>(headCount));
    result.concat.resize(n, headCount * dV);
    // Each head's blocks write its columns of concat, and of the output when there is no W_O (output =
    // concat): on the engine's threads, while the rows are in cache, rather than after the heads on one
    // thread.
    std::vector<Matrix*> concatenated = {&result.concat};
    if (!projectsOutput) {
        result.output.resize(n, headCount * dV);
        concatenated.push_back(&result.output);
    }
    // Several heads: each head is a chunk, computed on one thread with its products whole (no operand packed
    // twice, no waiting between its steps). One head: its row blocks are the chunks. Errors are kept per head
    // and the first head's is thrown, whichever thread finished first.
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(headCount));
    parallelFor(headCount, headCount >= 2 ? 1 : headCount, [&](Index first, Index end) {
        for (Index h = first; h < end; ++h) {
            try {
                stopIfCancelled(options);
                computeHead<Scalar>(session, static_cast<int>(h), *X, keySide, identicalKeys, allowed,
                                    emptyRows, result.heads[static_cast<std::size_t>(h)], concatenated,
                                    options);
            } catch (...) {
                errors[static_cast<std::size_t>(h)] = std::current_exception();
            }
        }
    });
    for (const std::exception_ptr& error : errors)
        if (error)
            std::rethrow_exception(error);
    if (!projectsOutput)
        return;
    stopIfCancelled(options);
    MatrixOf<Scalar> scratchOutput;
    MatrixOf<Scalar>& output = workMatrix(result.output, scratchOutput);
    if constexpr (isDouble<Scalar>) {
        output.resize(n, session.W_O->cols());
        multiply<double>(result.concat, *session.W_O, output);
    } else {
        const Matrix none;
        const InPrecision<float> W_O(session.W_O ? *session.W_O : none, "W_O",
                                     given && given->W_O ? &*given->W_O : nullptr);
        output.resize(n, (*W_O).cols());
        multiply<float>(result.concat.cast<float>(), *W_O, output);
    }
    addBias(output, session.b_O, "b_O");
    if (!isAllFinite(output))
        throw Error(std::string("output: concat · W_O") + (session.b_O.size() > 0 ? " + b_O" : "") +
                    " overflows " + precisionWords<Scalar>() + "; reduce the magnitudes in W_O");
    storeInResult(output, result.output);
}

} // namespace

RowStats rowStatistics(const double* weights, Index m, double knownEntropy)
{
    return rowStatistics(rows::weightSums(weights, m), weights, m, knownEntropy);
}

void computeAttention(const Session& session, AttentionResult& result, const ComputeOptions& options)
{
    if (options.float32Weights && options.memoryLimit > 0)
        throw std::invalid_argument("computeAttention: a memory limit with float32 weights given apart");
    // The projections' operands are not read for infinities and NaN up front: one would make Q, K or V
    // non-finite, which stops the computation. Then, and on any other refusal, the full validation names
    // the first problem, so the message is the same as if everything had been read first. (Given float32
    // weights replace the session's projections, so there everything is read up front.)
    const FiniteScan scan =
        options.float32Weights ? FiniteScan::Everything : FiniteScan::AllButProjectionOperands;
    if (!validate(session, options.float32Weights, scan).empty())
        throw Error(validate(session, options.float32Weights));
    try {
        checkMemory(session, options.memoryLimit);
        if (session.precision == Precision::Float32)
            computeInPrecision<float>(session, result, options);
        else
            computeInPrecision<double>(session, result, options);
    } catch (const Cancelled&) {
        throw; // stopped, not refused: nothing to name
    } catch (const Error&) {
        if (std::string problem = validate(session, options.float32Weights); !problem.empty())
            throw Error(problem);
        throw;
    }
}

AttentionResult computeAttention(const Session& session, const ComputeOptions& options)
{
    AttentionResult result;
    computeAttention(session, result, options);
    return result;
}

} // namespace qkv
