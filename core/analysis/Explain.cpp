// SPDX-License-Identifier: GPL-3.0-or-later
#include "Explain.h"

#include "Positions.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace qkv {

namespace {

constexpr double moderateScore = 10.0; ///< |S'| up to which e^S' is also shown (e^10 ≈ 22026)

MaskReason maskReasonOf(const Session& session, Index i, Index j)
{
    const auto flagged = [](const std::vector<bool>& pad, Index index) {
        return index < static_cast<Index>(pad.size()) && pad[static_cast<std::size_t>(index)];
    };
    if (flagged(session.pad, i))
        return MaskReason::QueryPadding;
    if (flagged(session.keyPad(), j))
        return MaskReason::KeyPadding;
    switch (session.mask.type) {
    case MaskType::Causal:
        return MaskReason::Causal;
    case MaskType::Prefix:
        return MaskReason::Prefix;
    case MaskType::Sliding:
        return MaskReason::Sliding;
    case MaskType::None:
    case MaskType::Custom:
        break;
    }
    return MaskReason::Custom;
}

std::string tokenAt(const std::vector<std::string>& tokens, Index index)
{
    return index < static_cast<Index>(tokens.size()) ? tokens[static_cast<std::size_t>(index)]
                                                     : std::string();
}

/// For every key-side row equal to an earlier one (−0 equals +0), the first row of its kind, else itself.
/// The engine gives identical key tokens identical scores (they tie exactly under hardmax); the float64
/// row must do the same, whatever the rounding of a product does to its last bits.
std::vector<Index> firstOfIdenticalRows(const Matrix& rows)
{
    std::vector<Index> order(static_cast<std::size_t>(rows.rows()));
    std::iota(order.begin(), order.end(), Index(0));
    const auto less = [&rows](Index a, Index b) {
        for (Index c = 0; c < rows.cols(); ++c)
            if (rows(a, c) != rows(b, c))
                return rows(a, c) < rows(b, c);
        return a < b;
    };
    std::sort(order.begin(), order.end(), less);
    std::vector<Index> first(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const bool sameAsPrevious = k > 0 && rows.row(order[k]) == rows.row(order[k - 1]);
        first[static_cast<std::size_t>(order[k])] =
            sameAsPrevious ? first[static_cast<std::size_t>(order[k - 1])] : order[k];
    }
    return first;
}

/// s(q, k_j) for every row k_j of K (the score functions of docs/semantics.md), in double.
RowVector rowScores(ScoreFunction score, const Head& parameters, const RowVector& q, const Matrix& K)
{
    RowVector scores(K.rows());
    switch (score) {
    case ScoreFunction::Dot:
        scores.noalias() = q * K.transpose();
        break;
    case ScoreFunction::General: {
        const RowVector qW = q * parameters.W_S;
        scores.noalias() = qW * K.transpose();
        break;
    }
    case ScoreFunction::Additive: {
        const RowVector qW = q * parameters.W_a;
        const Matrix KU = K * parameters.U_a;
        for (Index j = 0; j < K.rows(); ++j)
            scores(j) = (qW + KU.row(j)).array().tanh().matrix().dot(parameters.v_a.transpose());
        break;
    }
    case ScoreFunction::Cosine: {
        const double queryNorm = q.stableNorm();
        for (Index j = 0; j < K.rows(); ++j) {
            const double keyNorm = K.row(j).stableNorm();
            // A zero vector has no direction: its cosine with anything is 0, as in the engine.
            scores(j) = queryNorm > 0 && keyNorm > 0
                            ? std::clamp((q / queryNorm).dot(K.row(j) / keyNorm), -1.0, 1.0)
                            : 0.0;
        }
        break;
    }
    }
    return scores;
}

/// Σ values − 1 with Neumaier's compensated summation: exact enough to show a float64 row's 1e-16.
double sumMinusOne(const std::vector<double>& values)
{
    double sum = -1.0, compensation = 0.0;
    for (const double value : values) {
        const double next = sum + value;
        compensation += std::abs(sum) >= std::abs(value) ? (sum - next) + value : (value - next) + sum;
        sum = next;
    }
    return sum + compensation;
}

/// Refuses a head or cell that does not exist, or a result that is not the session's.
void checkCell(const Session& session, const AttentionResult& result, int head, Index i, Index j)
{
    if (head < 0 || head >= session.headCount() || static_cast<std::size_t>(head) >= result.heads.size())
        throw std::out_of_range("explainCell: head " + std::to_string(head) + " does not exist");
    const Index n = session.n();
    const Index m = session.m();
    if (i < 0 || i >= n || j < 0 || j >= m)
        throw std::out_of_range("explainCell: cell (" + std::to_string(i) + ", " + std::to_string(j) +
                                ") is outside the " + std::to_string(n) + " x " + std::to_string(m) +
                                " weights");
    const HeadResult& r = result.heads[static_cast<std::size_t>(head)];
    if (r.Q.rows() != n || r.K.rows() != m || r.V.rows() != m || r.scores.rows() != n ||
        r.scores.cols() != m || r.scaled.rows() != n || r.scaled.cols() != m || r.allowed.rows() != n ||
        r.allowed.cols() != m || r.weights.rows() != n || r.weights.cols() != m || r.output.rows() != n)
        throw std::invalid_argument("explainCell: the result does not have the session's shapes");
}

/// q_i and k_j, and where they come from when positions or biases take part.
void explainProjections(const Session& session, const AttentionResult& result, CellExplanation& e)
{
    const HeadResult& r = result.heads[static_cast<std::size_t>(e.head)];
    const Head& parameters = session.heads[static_cast<std::size_t>(e.head)];
    e.q = r.Q.row(e.query);
    e.k = r.K.row(e.key);
    e.positions = session.positions.type;
    e.queryBias = parameters.b_Q.size() > 0;
    e.keyBias = parameters.b_K.size() > 0;
    e.crossAttention = session.context.has_value();
    const Matrix& positionedKeys = session.context ? result.positionedZ : result.positionedX;
    if (result.positionedX.rows() == session.n() && positionedKeys.rows() == session.m()) {
        e.queryInput = result.positionedX.row(e.query);
        e.keyInput = positionedKeys.row(e.key);
    }
    if (e.positions == PositionType::Rope) { // the products again, in float64, before the turn
        e.qBeforeRope = session.X.row(e.query) * parameters.W_Q;
        e.kBeforeRope = session.keySide().row(e.key) * parameters.W_K;
        if (e.queryBias)
            e.qBeforeRope += parameters.b_Q.transpose();
        if (e.keyBias)
            e.kBeforeRope += parameters.b_K.transpose();
    }
}

/// The score as the term-by-term sum Σ_t left_t · right_t of its score function.
void explainScore(const Session& session, const HeadResult& r, CellExplanation& e)
{
    const Head& parameters = session.heads[static_cast<std::size_t>(e.head)];
    e.scoreFunction = session.score;
    switch (session.score) {
    case ScoreFunction::Dot:
    case ScoreFunction::Cosine:
        e.left = e.q;
        e.right = e.k;
        break;
    case ScoreFunction::General:
        e.queryTransformed = e.q * parameters.W_S; // the engine's (Q W_S) Kᵀ
        e.left = e.queryTransformed;
        e.right = e.k;
        break;
    case ScoreFunction::Additive:
        e.queryTransformed = e.q * parameters.W_a;
        e.keyTransformed = e.k * parameters.U_a;
        e.hidden = (e.queryTransformed + e.keyTransformed).array().tanh().matrix();
        e.left = parameters.v_a.transpose();
        e.right = e.hidden;
        break;
    }
    for (Index t = 0; t < e.left.size(); ++t)
        e.sum += e.left(t) * e.right(t);
    if (session.score == ScoreFunction::Cosine) {
        e.queryNorm = e.q.stableNorm(); // as the engine normalizes the rows
        e.keyNorm = e.k.stableNorm();
    }
    e.score = r.scores(e.query, e.key);
}

/// The scale (with ALiBi's bias), the mask and the temperature of the cell.
void explainScaleMaskTemperature(const Session& session, const HeadResult& r, CellExplanation& e)
{
    e.scale = session.scale;
    e.dK = session.dK();
    e.divisor = scaleDivisor(session.scale, e.dK);
    e.scaled = r.scaled(e.query, e.key);
    e.unbiasedScaled = e.scaled;
    if (session.positions.type == PositionType::Alibi) {
        e.alibi = true;
        e.alibiSlope = effectiveAlibiSlopes(session.positions, session.headCount())[std::size_t(e.head)];
        e.unbiasedScaled = e.score / e.divisor;
    }

    e.allowed = r.allowed(e.query, e.key) != 0;
    e.maskType = session.mask.type;
    e.prefixLength = session.mask.prefixLength;
    e.window = session.mask.window;
    e.maskReason = e.allowed ? MaskReason::Allowed : maskReasonOf(session, e.query, e.key);

    e.temperature = session.temperature;
    e.logit = e.scaled / e.temperature;
}

/// The normalizer over row i: every key's entry, the row's maximum, its support and, for a moderate softmax
/// row at τ = 1, the exponentials without the shift.
void explainRow(const Session& session, const HeadResult& r, CellExplanation& e)
{
    const Index i = e.query;
    const Index m = session.m();
    e.normalizer = session.normalizer;
    e.trace = traceRow(session.normalizer, r.scaled.row(i).data(), r.allowed.row(i).data(), m, e.temperature);
    bool anyAllowed = false;
    for (Index key = 0; key < m; ++key) {
        if (r.allowed(i, key) && (!anyAllowed || r.scaled(i, key) > e.rowMax)) {
            e.rowMax = r.scaled(i, key);
            anyAllowed = true;
        }
    }
    const bool softmax = normalizesAsSoftmax(session.normalizer);
    e.showPlainExponentials = softmax && anyAllowed && e.temperature == 1.0;
    e.row.resize(static_cast<std::size_t>(m));
    const std::vector<std::string>& keyTokens = session.keyTokens();
    for (Index key = 0; key < m; ++key) {
        RowEntry& entry = e.row[static_cast<std::size_t>(key)];
        entry.key = key;
        entry.token = tokenAt(keyTokens, key);
        entry.allowed = r.allowed(i, key) != 0;
        entry.scaled = r.scaled(i, key);
        entry.logit = entry.scaled / e.temperature;
        entry.weight = r.weights(i, key);
        entry.value = r.V.row(key);
        if (!entry.allowed)
            continue;
        ++e.allowedCount;
        // The engine's logit: (S' − max S') / τ, exactly 0 at the maximum.
        entry.shifted = entry.scaled == e.rowMax ? 0.0 : (entry.scaled - e.rowMax) / e.temperature;
        if (softmax)
            entry.exponential = std::exp(entry.shifted);
        if (std::abs(entry.scaled) > moderateScore)
            e.showPlainExponentials = false;
        if (entry.weight > 0.0)
            e.support.push_back(key);
    }
    if (e.showPlainExponentials) {
        for (RowEntry& entry : e.row) {
            if (!entry.allowed)
                continue;
            entry.plainExponential = std::exp(entry.scaled);
            e.plainExponentialSum += entry.plainExponential;
        }
    }
}

} // namespace

CellExplanation explainCell(const Session& session, const AttentionResult& result, int head, Index i, Index j)
{
    checkCell(session, result, head, i, j);
    const HeadResult& r = result.heads[static_cast<std::size_t>(head)];
    CellExplanation e;
    e.head = head;
    e.query = i;
    e.key = j;
    e.queryToken = tokenAt(session.tokens, i);
    e.keyToken = tokenAt(session.keyTokens(), j);
    explainProjections(session, result, e);
    explainScore(session, r, e);
    explainScaleMaskTemperature(session, r, e);
    explainRow(session, r, e);
    e.weight = r.weights(i, j);
    e.output = r.output.row(i);
    return e;
}

bool normalizesAsSoftmax(const NormalizerSpec& spec)
{
    return spec.type == NormalizerType::Softmax ||
           (spec.type == NormalizerType::Entmax && !(spec.alpha > 1.0));
}

double float32Ulp(double x)
{
    const double magnitude = std::abs(x);
    if (!(magnitude >= 0x1p-126)) // subnormal float32 (or 0): a fixed spacing
        return 0x1p-149;
    int exponent = 0;
    std::frexp(magnitude, &exponent); // magnitude = f · 2^exponent, f in [0.5, 1)
    return std::ldexp(1.0, exponent - 24);
}

PrecisionComparison comparePrecision(const Session& session, const AttentionResult& result, int head, Index i,
                                     Index selectedKey, Index maxListed)
{
    if (head < 0 || head >= session.headCount() || static_cast<std::size_t>(head) >= result.heads.size())
        throw std::out_of_range("comparePrecision: head " + std::to_string(head) + " does not exist");
    const Index n = session.n();
    const Index m = session.m();
    if (i < 0 || i >= n)
        throw std::out_of_range("comparePrecision: query " + std::to_string(i) + " is outside the " +
                                std::to_string(n) + " queries");
    const HeadResult& r = result.heads[static_cast<std::size_t>(head)];
    if (r.weights.rows() != n || r.weights.cols() != m || r.allowed.rows() != n || r.allowed.cols() != m)
        throw std::invalid_argument("comparePrecision: the result does not have the session's shapes");
    const Head& parameters = session.heads[static_cast<std::size_t>(head)];

    // Row i again, in double all the way, as the engine computes a float64 session: positions and biases
    // included.
    const PositionSpec& positions = session.positions;
    Matrix queryInput = session.X.row(i);
    Matrix keySide = session.keySide();
    if (addsToEmbeddings(positions)) {
        queryInput += additiveEncoding(positions, i + 1, session.dModel()).row(i);
        keySide += additiveEncoding(positions, m, session.dModel());
    }
    Matrix queryRow(1, parameters.W_Q.cols());
    queryRow.noalias() = queryInput * parameters.W_Q;
    Matrix K(m, parameters.W_K.cols());
    K.noalias() = keySide * parameters.W_K;
    if (parameters.b_Q.size() > 0)
        queryRow.row(0) += parameters.b_Q.transpose();
    if (parameters.b_K.size() > 0)
        K.rowwise() += parameters.b_K.transpose();
    const bool rope = positions.type == PositionType::Rope;
    if (rope) {
        applyRope(queryRow, positions.base, positions.pairing, i, positions.scaling);
        applyRope(K, positions.base, positions.pairing, 0, positions.scaling);
    }
    const RowVector q = queryRow.row(0);
    const RowVector scores = rowScores(session.score, parameters, q, K);
    std::vector<Index> first(static_cast<std::size_t>(m));
    if (rope)
        std::iota(first.begin(), first.end(), Index(0)); // each position's key turned its own way
    else
        first = firstOfIdenticalRows(keySide);
    RowVector scaled(m);
    const double divisor = scaleDivisor(session.scale, session.dK());
    for (Index j = 0; j < m; ++j)
        scaled(j) = scores(first[static_cast<std::size_t>(j)]) / divisor;
    if (positions.type == PositionType::Alibi)
        addAlibiBias(scaled.data(), m, i,
                     effectiveAlibiSlopes(positions, session.headCount())[std::size_t(head)]);
    RowVector reference(m);
    NormalizerScratch scratch;
    normalizeRow(session.normalizer, scaled.data(), r.allowed.row(i).data(), m, session.temperature,
                 reference.data(), scratch);

    PrecisionComparison c;
    c.head = head;
    c.query = i;
    c.queryToken = i < static_cast<Index>(session.tokens.size()) ? session.tokens[static_cast<std::size_t>(i)]
                                                                 : std::string();
    c.precision = result.precision;
    c.keyCount = m;
    std::vector<PrecisionEntry> entries;
    std::vector<double> referenceRow, computedRow;
    const std::vector<std::string>& keyTokens = session.keyTokens();
    for (Index j = 0; j < m; ++j) {
        if (!r.allowed(i, j))
            continue;
        PrecisionEntry entry;
        entry.key = j;
        entry.token =
            j < static_cast<Index>(keyTokens.size()) ? keyTokens[static_cast<std::size_t>(j)] : std::string();
        entry.reference = reference(j);
        entry.computed = r.weights(i, j);
        entry.difference = entry.computed - entry.reference;
        entry.ulps = std::abs(entry.difference) / float32Ulp(entry.reference);
        if (entry.difference != 0.0)
            ++c.differing;
        if (std::abs(entry.difference) > c.maxDifference) {
            c.maxDifference = std::abs(entry.difference);
            c.maxDifferenceKey = j;
        }
        c.maxUlps = std::max(c.maxUlps, entry.ulps);
        referenceRow.push_back(entry.reference);
        computedRow.push_back(entry.computed);
        entries.push_back(std::move(entry));
    }
    c.allowedCount = static_cast<Index>(entries.size());
    c.sumsToOne = c.allowedCount > 0 && session.normalizer.type != NormalizerType::Sigmoid;
    c.referenceSumError = sumMinusOne(referenceRow);
    c.computedSumError = sumMinusOne(computedRow);

    // The largest differences (the selected key kept in view), then back in key order.
    const auto listed = static_cast<std::size_t>(std::max<Index>(1, maxListed));
    if (entries.size() > listed) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const PrecisionEntry& a, const PrecisionEntry& b) {
                             return std::abs(a.difference) > std::abs(b.difference);
                         });
        const auto selected =
            std::find_if(entries.begin(), entries.end(),
                         [selectedKey](const PrecisionEntry& e) { return e.key == selectedKey; });
        if (selected != entries.end() && selected - entries.begin() >= static_cast<std::ptrdiff_t>(listed))
            std::swap(entries[listed - 1], *selected);
        entries.resize(listed);
        std::sort(entries.begin(), entries.end(),
                  [](const PrecisionEntry& a, const PrecisionEntry& b) { return a.key < b.key; });
    }
    c.listed = std::move(entries);
    return c;
}

double precisionComparisonWork(const Session& session)
{
    const auto m = static_cast<double>(session.m());
    const auto dModel = static_cast<double>(session.dModel());
    const auto dK = static_cast<double>(session.dK());
    double work = m * dModel * dK + dModel * dK + m * dK;
    if (session.score == ScoreFunction::Additive && !session.heads.empty())
        work += (m + 1) * dK * static_cast<double>(session.heads.front().W_a.cols());
    return work;
}

} // namespace qkv
