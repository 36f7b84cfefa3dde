#include "Explain.h"

#include <cmath>
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

} // namespace

CellExplanation explainCell(const Session& session, const AttentionResult& result, int head, Index i, Index j)
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
    const Head& parameters = session.heads[static_cast<std::size_t>(head)];
    if (r.Q.rows() != n || r.K.rows() != m || r.V.rows() != m || r.scores.rows() != n ||
        r.scores.cols() != m || r.scaled.rows() != n || r.scaled.cols() != m || r.allowed.rows() != n ||
        r.allowed.cols() != m || r.weights.rows() != n || r.weights.cols() != m || r.output.rows() != n)
        throw std::invalid_argument("explainCell: the result does not have the session's shapes");

    CellExplanation e;
    e.head = head;
    e.query = i;
    e.key = j;
    e.queryToken = tokenAt(session.tokens, i);
    e.keyToken = tokenAt(session.keyTokens(), j);
    e.q = r.Q.row(i);
    e.k = r.K.row(j);

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
    e.score = r.scores(i, j);

    e.scale = session.scale;
    e.dK = session.dK();
    e.divisor = scaleDivisor(session.scale, e.dK);
    e.scaled = r.scaled(i, j);

    e.allowed = r.allowed(i, j) != 0;
    e.maskType = session.mask.type;
    e.prefixLength = session.mask.prefixLength;
    e.window = session.mask.window;
    e.maskReason = e.allowed ? MaskReason::Allowed : maskReasonOf(session, i, j);

    e.temperature = session.temperature;
    e.logit = e.scaled / e.temperature;

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
    e.weight = r.weights(i, j);
    e.output = r.output.row(i);
    return e;
}

bool normalizesAsSoftmax(const NormalizerSpec& spec)
{
    return spec.type == NormalizerType::Softmax ||
           (spec.type == NormalizerType::Entmax && !(spec.alpha > 1.0));
}

} // namespace qkv
