// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelRun.h"

#include "AttentionEngine.h"
#include "Blocks.h"
#include "Error.h"
#include "HookPoints.h"
#include "LayerAttention.h"
#include "Network.h"
#include "Parallel.h"
#include "PassSteps.h"
#include "TrainingModel.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace qkv {

using transformer::HookKind;
using transformer::hookName;
using transformer::HookRequest;

/// The final norm's output times the unembedding W_U, in the run's precision.
class Unembedding {
public:
    virtual ~Unembedding() = default;
    /// Logits of `rows` (count × d_model, the final norm's output) into `out` (count × vocabulary).
    virtual void logits(const Matrix& rows, Matrix& out) const = 0;
};

RowVector Prediction::logitsAt(Index position) const
{
    Matrix out;
    unembedding->logits(finalNormed.middleRows(position, 1), out);
    return out.row(0);
}

double Prediction::logProbability(Index position, std::int64_t id) const
{
    const RowVector logits = logitsAt(position);
    return logits[Index(id)] - transformer::logSumExp<double>(logits.data(), logits.size());
}

namespace {

/// z of the session's first head over the layer's attention input `x`, in the run's precision.
Matrix sessionHeadOutput(const Session& given, const Matrix& x, Precision precision, Index layer, Index head)
{
    Session session = given;
    session.heads.resize(1);
    session.W_O.reset();
    session.b_O.resize(0);
    session.snapshots.clear();
    session.model.reset();
    session.precision = precision;
    const Index n = x.rows();
    if (session.n() != n) {
        session.tokens.assign(std::size_t(n), std::string());
        session.pad.assign(std::size_t(n), false);
    }
    session.X = x;
    const std::string where = "the session at layer " + std::to_string(layer) + ", head " +
                              std::to_string(head) + " does not fit: ";
    if (const std::string problem = validate(session); !problem.empty())
        throw Error(where + problem);
    return computeAttention(session).heads.front().output;
}

/// An intervention as what it is: an edit of its head's columns of `hook_z`, computed from the z the run
/// has there (TransformerLens's hook functions), or from the session's head over the layer's attention
/// input, the stream the run kept entering the layer through the layer's norm.
transformer::HookEdit editFor(const Model& model, const Intervention& change, Precision precision)
{
    const Index dh = model.config().headDim, layer = change.layer, head = change.head;
    transformer::HookEdit edit;
    edit.name = hookName({HookKind::Z, layer});
    const std::string residual = hookName({HookKind::ResidPre, layer});
    edit.edit = [&model, change, precision, dh, layer, head,
                 residual](Matrix& z, const transformer::ActivationCache& kept) {
        auto columns = z.middleCols(head * dh, dh);
        switch (change.kind) {
        case HeadIntervention::Kind::Zero:
            columns.setZero();
            break;
        case HeadIntervention::Kind::Mean:
            columns = RowVector(columns.colwise().mean()).replicate(z.rows(), 1);
            break;
        case HeadIntervention::Kind::Scale:
            columns *= change.factor;
            break;
        case HeadIntervention::Kind::Session: {
            const Matrix x = models::normalizedForAttention(model, kept.at(residual), layer, precision);
            columns = sessionHeadOutput(*change.session, x, precision, layer, head);
            break;
        }
        }
    };
    return edit;
}

/// What a run with `active` asks of the network: their edits, the streams their sessions read, and the
/// final norm's output (for the prediction's logits on demand).
HookRequest requestFor(const Model& model, const std::vector<const Intervention*>& active,
                       Precision precision)
{
    HookRequest request;
    request.keep = {hookName({HookKind::FinalNormalized, -1})};
    for (const Intervention* change : active) {
        request.edits.push_back(editFor(model, *change, precision));
        if (change->kind == HeadIntervention::Kind::Session)
            request.keep.push_back(hookName({HookKind::ResidPre, change->layer}));
    }
    return request;
}

} // namespace

/// The unmodified run in its precision, and everything the runs after it reuse.
struct ModelRun::Pass {
    virtual ~Pass() = default;
    virtual Prediction predict(const std::vector<const Intervention*>& active, const PredictOptions& options,
                               const RunProgress& progress) const = 0;
    virtual Matrix ablationSweep(Intervention::Kind kind, const SweepMetric& metric,
                                 const RunProgress& progress) const = 0;
    virtual Matrix directLogitAttribution(Index position, std::int64_t token, std::int64_t minus) const = 0;

    Prediction clean;
    HeadScoreGrid scores;
};

namespace {

template <typename Scalar> class UnembeddingOf final : public Unembedding {
public:
    explicit UnembeddingOf(std::shared_ptr<const training::Weights<Scalar>> weights)
        : m_weights(std::move(weights))
    {
    }

    void logits(const Matrix& rows, Matrix& out) const override
    {
        const training::Layout& layout = m_weights->layout;
        const training::Tensors<Scalar>& p = m_weights->parameters;
        const MatrixOf<Scalar> input = rows.cast<Scalar>();
        MatrixOf<Scalar> product;
        if (layout.unembedding >= 0)
            transformer::product<Scalar>(input, p[std::size_t(layout.unembedding)], product);
        else
            transformer::productTransposed<Scalar>(input, p[std::size_t(layout.embedding)], product);
        out = product.template cast<double>();
    }

    /// W_U's column for `token` (d_model), as the run reads it.
    RowVector row(std::int64_t token) const
    {
        const training::Layout& layout = m_weights->layout;
        const training::Tensors<Scalar>& p = m_weights->parameters;
        if (layout.unembedding >= 0)
            return p[std::size_t(layout.unembedding)].col(Index(token)).transpose().template cast<double>();
        return p[std::size_t(layout.embedding)].row(Index(token)).template cast<double>();
    }

private:
    std::shared_ptr<const training::Weights<Scalar>> m_weights;
};

template <typename Scalar> class PassOf final : public ModelRun::Pass {
public:
    PassOf(std::shared_ptr<const Model> model, std::vector<std::int64_t> ids, Precision precision,
           const RunProgress& progress);

    Prediction predict(const std::vector<const Intervention*>& active, const PredictOptions& options,
                       const RunProgress& progress) const override;
    Matrix ablationSweep(Intervention::Kind kind, const SweepMetric& metric,
                         const RunProgress& progress) const override;
    Matrix directLogitAttribution(Index position, std::int64_t token, std::int64_t minus) const override;

private:
    using Network = training::Network<Scalar>;

    Network network() const { return Network(m_weights->architecture, m_weights->layout); }
    /// A run from `from` with `request` on `network`; returns its loss.
    double runFrom(Network& network, Index from, const HookRequest& request) const
    {
        return network.runFrom(m_weights->parameters, m_ids, from, m_stream[std::size_t(from)], request);
    }
    Prediction finish(const Network& network, double loss, const PredictOptions& options) const;
    void score(const Network& network);

    std::shared_ptr<const Model> m_model;
    std::vector<std::int64_t> m_ids;
    Precision m_precision;
    std::shared_ptr<const training::Weights<Scalar>> m_weights;
    std::shared_ptr<const UnembeddingOf<Scalar>> m_unembedding;
    std::vector<MatrixOf<Scalar>> m_stream; // entering every layer, and after the last
    std::vector<Matrix> m_z;                // every layer's heads' z side by side (n × heads · d_head)
    double m_loss = 0.0;
};

template <typename Scalar>
PassOf<Scalar>::PassOf(std::shared_ptr<const Model> model, std::vector<std::int64_t> ids, Precision precision,
                       const RunProgress& progress)
    : m_model(std::move(model)), m_ids(std::move(ids)), m_precision(precision),
      m_weights(training::sharedWeights<Scalar>(*m_model))
{
    m_unembedding = std::make_shared<const UnembeddingOf<Scalar>>(m_weights);
    const Index layers = m_weights->architecture.layers;
    HookRequest request = requestFor(*m_model, {}, precision);
    for (Index l = 0; l < layers; ++l)
        request.keep.push_back(hookName({HookKind::Z, l}));
    if (progress && !progress(0, layers + 1))
        throw Cancelled();
    request.proceed = models::proceedAfterEachLayer(progress, layers + 1);
    Network run = network();
    m_loss = run.forward(m_weights->parameters, {m_ids}, &request);
    m_stream = run.forwardStream();
    for (Index l = 0; l < layers; ++l)
        m_z.push_back(run.cache().at(hookName({HookKind::Z, l})));
    score(run);
    clean = finish(run, m_loss, PredictOptions{});
}

template <typename Scalar> void PassOf<Scalar>::score(const Network& run)
{
    const Index layers = m_weights->architecture.layers, heads = m_weights->architecture.heads;
    for (Matrix& grid : scores.values)
        grid = Matrix::Zero(layers, heads);
    const TokenMatches matches(m_ids);
    parallelFor(layers * heads, 1, [&](Index begin, Index end) {
        for (Index pair = begin; pair < end; ++pair) {
            const Index l = pair / heads, h = pair % heads;
            const Matrix weights = run.attention(0, l, h).template cast<double>();
            for (HeadScore score : allHeadScores)
                scores[score](l, h) = headScore(score, weights, matches);
        }
    });
}

template <typename Scalar>
Prediction PassOf<Scalar>::finish(const Network& run, double loss, const PredictOptions& options) const
{
    Prediction prediction;
    prediction.unembedding = m_unembedding;
    prediction.finalNormed = run.cache().at(hookName({HookKind::FinalNormalized, -1}));
    const MatrixOf<Scalar>& logits = run.logits();
    const Matrix& losses = run.positionLosses();
    const Index n = Index(m_ids.size()), vocabulary = logits.cols();
    prediction.positions.resize(std::size_t(n));
    parallelFor(n, 1, [&](Index begin, Index end) {
        std::vector<double> row(static_cast<std::size_t>(vocabulary));
        for (Index i = begin; i < end; ++i) {
            for (Index v = 0; v < vocabulary; ++v)
                row[std::size_t(v)] = double(logits(i, v));
            const double normalizer = run.logNormalizers()[std::size_t(i)];
            PositionPrediction& position = prediction.positions[std::size_t(i)];
            position.top = topTokens(row.data(), vocabulary, options.top, normalizer);
            if (i + 1 < n) {
                position.nextId = m_ids[std::size_t(i + 1)];
                position.loss = losses(0, i);
            }
        }
    });
    prediction.meanLoss = loss;
    return prediction;
}

template <typename Scalar>
Prediction PassOf<Scalar>::predict(const std::vector<const Intervention*>& active,
                                   const PredictOptions& options, const RunProgress& progress) const
{
    Index from = m_weights->architecture.layers;
    for (const Intervention* change : active)
        from = std::min(from, change->layer);
    HookRequest request = requestFor(*m_model, active, m_precision);
    request.proceed = models::proceedAfterEachLayer(progress, m_weights->architecture.layers - from);
    Network run = network();
    const double loss = runFrom(run, from, request);
    return finish(run, loss, options);
}

template <typename Scalar>
Matrix PassOf<Scalar>::ablationSweep(Intervention::Kind kind, const SweepMetric& metric,
                                     const RunProgress& progress) const
{
    const ModelConfig& c = m_weights->architecture;
    const bool loss = metric.kind == SweepMetric::Kind::Loss;
    // A logit difference reads one position's two logits: the run skips the rest of the unembedding.
    HookRequest request;
    if (!loss) {
        request.oneLogitsRow = true;
        request.logitsRow = metric.position;
        request.logitIds = {metric.tokenA, metric.tokenB};
    }
    Network run = network(); // one network for every head: its buffers are reused
    const auto measured = [&](double runLoss) {
        return loss ? runLoss : double(run.logits()(0, 0)) - double(run.logits()(0, 1));
    };
    const double baseline = loss ? m_loss : measured(runFrom(run, c.layers, request));
    Matrix change(c.layers, c.heads);
    const Index total = c.layers * c.heads;
    for (Index l = 0; l < c.layers; ++l)
        for (Index h = 0; h < c.heads; ++h) {
            if (progress && !progress(l * c.heads + h, total))
                throw Cancelled();
            Intervention ablation;
            ablation.layer = l;
            ablation.head = h;
            ablation.kind = kind;
            HookRequest ablated = request;
            ablated.edits = {editFor(*m_model, ablation, m_precision)};
            change(l, h) = measured(runFrom(run, l, ablated)) - baseline;
        }
    if (progress)
        progress(total, total);
    return change;
}

template <typename Scalar>
Matrix PassOf<Scalar>::directLogitAttribution(Index position, std::int64_t token, std::int64_t minus) const
{
    const training::Architecture& a = m_weights->architecture;
    const training::Layout& layout = m_weights->layout;
    const training::Tensors<Scalar>& p = m_weights->parameters;
    // The direction a head's output is read along: W_U's column through the norm's gain, centred under
    // LayerNorm (which removes each vector's mean), divided by the position's frozen scale.
    RowVector direction = m_unembedding->row(token);
    if (minus >= 0)
        direction -= m_unembedding->row(minus);
    direction = direction.cwiseProduct(RowVector(p[std::size_t(layout.finalNorm)].template cast<double>()));
    const RowVector stream = m_stream.back().row(position).template cast<double>();
    double scale = 0.0;
    if (a.layerNorm()) {
        direction.array() -= direction.mean();
        scale = std::sqrt((stream.array() - stream.mean()).square().mean() + a.normEpsilon);
    } else {
        scale = std::sqrt(stream.squaredNorm() / double(stream.size()) + a.normEpsilon);
    }
    direction /= scale;
    Matrix attribution(a.layers, a.heads);
    for (Index l = 0; l < a.layers; ++l) {
        const Matrix W_O = p[std::size_t(layout.layers[std::size_t(l)].o)].template cast<double>();
        for (Index h = 0; h < a.heads; ++h) {
            const auto rows = W_O.middleRows(h * a.headDim, a.headDim);
            const RowVector z = m_z[std::size_t(l)].row(position).segment(h * a.headDim, a.headDim);
            attribution(l, h) = (z * rows).dot(direction);
        }
    }
    return attribution;
}

} // namespace

ModelRun::ModelRun(std::shared_ptr<const Model> model, std::vector<std::int64_t> ids, Precision precision,
                   const RunProgress& progress)
    : m_model(std::move(model)), m_ids(std::move(ids)), m_precision(precision)
{
    models::checkIds(*m_model, m_ids);
    if (precision == Precision::Float32)
        m_pass = std::make_shared<const PassOf<float>>(m_model, m_ids, precision, progress);
    else
        m_pass = std::make_shared<const PassOf<double>>(m_model, m_ids, precision, progress);
    m_clean = m_pass->clean;
    m_scores = m_pass->scores;
}

std::vector<TokenProbability> topTokens(const double* logits, Index vocabulary, Index count,
                                        double logNormalizer)
{
    count = std::min(count, vocabulary);
    std::vector<Index> best;
    best.reserve(std::size_t(count) + 1);
    const auto better = [logits](Index a, Index b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    for (Index v = 0; v < vocabulary && count > 0; ++v) {
        if (Index(best.size()) == count && !better(v, best.back()))
            continue;
        best.insert(std::upper_bound(best.begin(), best.end(), v, better), v);
        if (Index(best.size()) > count)
            best.pop_back();
    }
    std::vector<TokenProbability> top;
    for (Index v : best) {
        const double logP = logits[v] - logNormalizer;
        top.push_back({std::int64_t(v), std::exp(logP), logP});
    }
    return top;
}

std::vector<const Intervention*>
ModelRun::activeInterventions(const std::vector<Intervention>& interventions) const
{
    std::vector<const Intervention*> active;
    for (const Intervention& change : interventions) {
        if (!change.enabled)
            continue;
        if (const std::string problem = interventionProblem(change, m_model->config()); !problem.empty())
            throw Error(describe(change) + ": " + problem);
        active.push_back(&change);
    }
    return active;
}

Prediction ModelRun::predict(const std::vector<Intervention>& interventions, const PredictOptions& options,
                             const RunProgress& progress) const
{
    const std::vector<const Intervention*> active = activeInterventions(interventions);
    if (active.empty() && options.top == PredictOptions{}.top)
        return m_clean;
    return m_pass->predict(active, options, progress);
}

double ModelRun::measure(const Prediction& prediction, const SweepMetric& metric)
{
    if (metric.kind == SweepMetric::Kind::Loss)
        return prediction.meanLoss;
    const Index last = Index(prediction.positions.size()) - 1;
    const RowVector logits = prediction.logitsAt(metric.position < 0 ? last : metric.position);
    return logits[Index(metric.tokenA)] - logits[Index(metric.tokenB)];
}

Matrix ModelRun::ablationSweep(Intervention::Kind kind, const SweepMetric& metric,
                               const RunProgress& progress) const
{
    const ModelConfig& c = m_model->config();
    if (metric.kind == SweepMetric::Kind::LogitDifference) {
        const auto checkToken = [&](std::int64_t id) {
            if (id < 0 || id >= c.vocabSize)
                throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                            std::to_string(c.vocabSize - 1) + ")");
        };
        checkToken(metric.tokenA);
        checkToken(metric.tokenB);
        if (metric.position >= tokens())
            throw Error("position " + std::to_string(metric.position) + " is beyond the text's " +
                        std::to_string(tokens()) + " tokens");
    }
    return m_pass->ablationSweep(kind, metric, progress);
}

Matrix ModelRun::directLogitAttribution(Index position, std::int64_t token, std::int64_t minus) const
{
    const ModelConfig& c = m_model->config();
    if (position < 0 || position >= tokens())
        throw Error("position " + std::to_string(position) + " is outside the text's " +
                    std::to_string(tokens()) + " tokens");
    for (std::int64_t id : {token, minus})
        if (id >= c.vocabSize || (id < 0 && id != minus))
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                        std::to_string(c.vocabSize - 1) + ")");
    return m_pass->directLogitAttribution(position, token, minus);
}

} // namespace qkv
