// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelRun.h"

#include "AttentionEngine.h"
#include "Blocks.h"
#include "Error.h"
#include "HookPoints.h"
#include "LayerAttention.h"
#include "MatrixProduct.h"
#include "ModelTensors.h"
#include "Parallel.h"
#include "PassSteps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace qkv {

using models::allHeads;
using models::hasTensor;
using models::inPrecision;
using models::layerSession;
using models::normalizedForAttention;
using models::readVectorIn;

/// The final norm and the unembedding W_U (vocabulary × d_model, a row per token), in the run's precision.
class Unembedding {
public:
    Unembedding(std::shared_ptr<const Model> model, Precision precision)
        : m_model(std::move(model)), m_precision(precision)
    {
        const Model& m = *m_model;
        const ModelConfig& c = m.config();
        m_layerNorm = c.family == ModelFamily::Gpt2;
        const std::string gain = m_layerNorm ? "ln_f.weight" : "model.norm.weight";
        const auto require = [&](const std::string& name, const char* what) {
            if (!hasTensor(m, name))
                throw Error(modelName(m) + ": the checkpoint has no " + m.tensorName(name) + " (" + what +
                            "), which the prediction needs");
        };
        require(gain, "the final norm");
        m_gain = readVectorIn(m, gain, precision);
        if (m_layerNorm) {
            require("ln_f.bias", "the final norm's bias");
            m_bias = readVectorIn(m, "ln_f.bias", precision);
        }
        m_epsilon = c.normEpsilon;
        m_name = m_layerNorm                            ? m.tensorName("wte.weight")
                 : m.checkpoint().has("lm_head.weight") ? std::string("lm_head.weight")
                                                        : m.tensorName("model.embed_tokens.weight");
        if (!m.checkpoint().has(m_name))
            throw Error(modelName(m) + ": the checkpoint has no " + m_name + " (the unembedding)");
        const std::vector<std::uint64_t> shape = m.checkpoint().info(m_name).shape;
        if (shape.size() != 2 || Index(shape[0]) != c.vocabSize || Index(shape[1]) != c.hiddenSize)
            throw Error(modelName(m) + ": " + m_name + " is not vocabulary × d_model (" +
                        std::to_string(c.vocabSize) + " × " + std::to_string(c.hiddenSize) + ")");
        if (precision == Precision::Float32) {
            if (auto stored = m.checkpoint().storedFloat32(m_name))
                m_storedF.emplace(*stored);
            else
                m.checkpoint().readMatrixInto(m_name, m_readF);
        } else {
            m.checkpoint().readMatrixInto(m_name, m_read);
        }
    }

    Index vocabulary() const { return m_model->config().vocabSize; }
    const RowVector& gain() const { return m_gain; }
    bool centres() const { return m_layerNorm; }

    /// The norm's divisor for a row: √(var + ε) for LayerNorm, √(mean(x²) + ε) for RMSNorm.
    double scaleOf(const RowVector& row) const
    {
        if (m_layerNorm)
            return std::sqrt((row.array() - row.mean()).square().mean() + m_epsilon);
        return std::sqrt(row.squaredNorm() / double(row.size()) + m_epsilon);
    }

    Matrix normalize(const Matrix& residual) const
    {
        const Matrix normed = m_layerNorm ? models::layerNorm(residual, m_gain, m_bias, m_epsilon)
                                          : models::rmsNorm(residual, m_gain, m_epsilon);
        return inPrecision(normed, m_precision);
    }

    /// Logits of `rows` (count × d_model) into `out` (count × vocabulary), in the run's precision.
    void logits(const Matrix& rows, Matrix& out) const
    {
        if (m_precision == Precision::Float32) {
            const MatrixF input = rows.cast<float>();
            MatrixF product(rows.rows(), vocabulary());
            if (m_storedF)
                multiply<float>(input, *m_storedF, product, Operand::Transposed);
            else
                multiply<float>(input, m_readF, product, Operand::Transposed);
            out = product.cast<double>();
        } else {
            out.resize(rows.rows(), vocabulary());
            multiply<double>(rows, m_read, out, Operand::Transposed);
        }
    }

    /// W_U's row for `token` (d_model), as the run reads it.
    RowVector row(std::int64_t token) const
    {
        if (m_precision == Precision::Float32)
            return m_storedF ? RowVector(m_storedF->row(Index(token)).cast<double>())
                             : RowVector(m_readF.row(Index(token)).cast<double>());
        return m_read.row(Index(token));
    }

private:
    std::shared_ptr<const Model> m_model;
    Precision m_precision;
    bool m_layerNorm = true;
    RowVector m_gain, m_bias;
    double m_epsilon = 0.0;
    std::string m_name;
    std::optional<Eigen::Map<const MatrixF>> m_storedF;
    MatrixF m_readF;
    Matrix m_read;
};

/// What a run keeps of one layer of the unmodified pass.
struct ModelRun::LayerCache {
    Matrix residualIn; ///< the residual stream entering the layer
    Matrix normalized; ///< its attention input (what a session intervention computes over)
    Matrix concat;     ///< every head's z side by side (n × heads · d_head)
    Matrix W_O;        ///< in float64 runs
    MatrixF W_OF;      ///< in float32 runs
    Vector b_O;        ///< empty without a bias
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

namespace {

/// ln Σ exp(logits): the blocks' log-sum-exp, the one log-softmax of the core.
double logSumExp(const double* logits, Index vocabulary)
{
    return transformer::logSumExp<double>(logits, vocabulary);
}

/// The attention output of a layer from its (changed) head outputs: concat · W_O + b_O, computed as the
/// engine computes it, so an intervention that changes nothing gives the same bits.
Matrix attentionOutput(const Matrix& concat, const Matrix& W_O, const MatrixF& W_OF, const Vector& b_O,
                       Precision precision)
{
    if (precision == Precision::Float32) {
        MatrixF out(concat.rows(), W_OF.cols());
        multiply<float>(concat.cast<float>(), W_OF, out);
        if (b_O.size() > 0)
            out.rowwise() += b_O.transpose().cast<float>();
        return out.cast<double>();
    }
    Matrix out(concat.rows(), W_O.cols());
    multiply<double>(concat, W_O, out);
    if (b_O.size() > 0)
        out.rowwise() += b_O.transpose();
    return out;
}

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

/// The intervention as what it is: a replacement of its head's z (`hook_z`), computed from the z the run has
/// there (`concat`, every head side by side) or from the session's head over the layer's attention input `x`.
transformer::HookReplacement replacementFor(const Intervention& change, const Matrix& concat, Index headSize,
                                            const Matrix& x, Precision precision)
{
    const auto z = concat.middleCols(change.head * headSize, headSize);
    transformer::HookReplacement replacement{transformer::hookName({transformer::HookKind::Z, change.layer}),
                                             Matrix(), change.head};
    switch (change.kind) {
    case HeadIntervention::Kind::Zero:
        replacement.value = Matrix::Zero(z.rows(), z.cols());
        break;
    case HeadIntervention::Kind::Mean:
        replacement.value = inPrecision(RowVector(z.colwise().mean()), precision).replicate(z.rows(), 1);
        break;
    case HeadIntervention::Kind::Scale:
        replacement.value = inPrecision(Matrix(z * change.factor), precision);
        break;
    case HeadIntervention::Kind::Session:
        replacement.value = sessionHeadOutput(*change.session, x, precision, change.layer, change.head);
        break;
    }
    return replacement;
}

void changeHeadOutput(const Intervention& change, Matrix& concat, Index headSize, const Matrix& x,
                      Precision precision)
{
    transformer::applyReplacement(replacementFor(change, concat, headSize, x, precision),
                                  transformer::HookKind::Z, headSize, concat);
}

} // namespace

ModelRun::ModelRun(std::shared_ptr<const Model> model, std::vector<std::int64_t> ids, Precision precision,
                   const RunProgress& progress)
    : m_model(std::move(model)), m_ids(std::move(ids)), m_precision(precision)
{
    const Model& m = *m_model;
    const ModelConfig& c = m.config();
    Matrix residual = models::embed(m, m_ids, precision);
    m_unembedding = std::make_shared<const Unembedding>(m_model, precision);
    for (Matrix& grid : m_scores.values)
        grid = Matrix::Zero(c.layers, c.heads);
    AttentionResult result;
    models::PassBuffers buffers;
    Float32Weights float32Weights;
    Float32Weights* const float32 = precision == Precision::Float32 ? &float32Weights : nullptr;
    ComputeOptions options;
    options.float32Weights = float32;
    const TokenMatches matches(m_ids);
    for (Index l = 0; l < c.layers; ++l) {
        if (progress && !progress(l, c.layers + 1))
            throw Cancelled();
        auto layer = std::make_shared<LayerCache>();
        layer->residualIn = residual;
        layer->normalized = normalizedForAttention(m, residual, l, precision);
        const Session attention = layerSession(m, layer->normalized, l, allHeads(c), precision, float32);
        computeAttention(attention, result, options);
        layer->concat = result.concat;
        if (float32)
            layer->W_OF = *float32Weights.W_O;
        else
            layer->W_O = *attention.W_O;
        layer->b_O = attention.b_O;
        for (Index h = 0; h < c.heads; ++h) {
            const HeadResult& head = result.heads[std::size_t(h)];
            for (HeadScore score : allHeadScores)
                if (score != HeadScore::Entropy)
                    m_scores[score](l, h) = headScore(score, head.weights, matches);
            // The engine has each row's entropy already: −Σ a ln a with 0 ln 0 = 0, as the score defines it.
            double entropy = 0.0;
            for (const RowStats& row : head.rowStats)
                entropy += row.entropy;
            m_scores[HeadScore::Entropy](l, h) = entropy / double(head.rowStats.size());
        }
        models::finishLayer(m, residual, result.output, l, precision, buffers);
        m_layers.push_back(std::move(layer));
    }
    if (progress && !progress(c.layers, c.layers + 1))
        throw Cancelled();
    m_finalResidual = residual;
    m_clean = finish(residual, PredictOptions{});
}

Prediction ModelRun::finish(Matrix residual, const PredictOptions& options) const
{
    Prediction prediction;
    prediction.unembedding = m_unembedding;
    prediction.finalNormed = m_unembedding->normalize(residual);
    const Index n = tokens(), vocabulary = m_unembedding->vocabulary();
    prediction.positions.resize(std::size_t(n));
    // In blocks of rows: the logits of 1024 tokens over GPT-2's vocabulary would take 400 MB at once.
    const Index block = std::max<Index>(1, (Index(1) << 22) / std::max<Index>(1, vocabulary));
    Matrix logits;
    double lossSum = 0.0;
    for (Index first = 0; first < n; first += block) {
        const Index count = std::min(block, n - first);
        m_unembedding->logits(prediction.finalNormed.middleRows(first, count), logits);
        if (!isAllFinite(logits))
            throw Error(std::string("the logits overflow ") + toString(m_precision) +
                        (m_precision == Precision::Float32 ? "; choose precision float64" : ""));
        // The rows on the engine's threads; the losses are summed in order afterwards.
        parallelFor(count, 1, [&](Index begin, Index end) {
            for (Index r = begin; r < end; ++r) {
                const Index i = first + r;
                const double* row = logits.row(r).data();
                const double normalizer = logSumExp(row, vocabulary);
                PositionPrediction& position = prediction.positions[std::size_t(i)];
                position.top = topTokens(row, vocabulary, options.top, normalizer);
                if (i + 1 < n) {
                    position.nextId = m_ids[std::size_t(i + 1)];
                    position.loss = normalizer - row[position.nextId];
                }
            }
        });
    }
    for (const PositionPrediction& position : prediction.positions)
        lossSum += position.loss;
    prediction.meanLoss = n > 1 ? lossSum / double(n - 1) : 0.0;
    return prediction;
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
    return finish(active.empty() ? m_finalResidual : residualWith(active, progress), options);
}

Matrix ModelRun::residualWith(const std::vector<const Intervention*>& active,
                              const RunProgress& progress) const
{
    const Model& m = *m_model;
    const ModelConfig& c = m.config();
    Index from = c.layers;
    for (const Intervention* change : active)
        from = std::min(from, change->layer);
    const auto changeLayer = [&](Index l, Matrix& concat, const Matrix& x) {
        for (const Intervention* change : active)
            if (change->layer == l)
                changeHeadOutput(*change, concat, c.headDim, x, m_precision);
    };
    // The lowest layer changed starts from what the unmodified pass had: its input, and every head's z.
    const LayerCache& start = *m_layers[std::size_t(from)];
    Matrix residual = start.residualIn;
    Matrix concat = start.concat;
    changeLayer(from, concat, start.normalized);
    AttentionResult result;
    models::PassBuffers buffers;
    Float32Weights float32Weights;
    Float32Weights* const float32 = m_precision == Precision::Float32 ? &float32Weights : nullptr;
    ComputeOptions computeOptions;
    computeOptions.float32Weights = float32;
    for (Index l = from; l < c.layers; ++l) {
        if (progress && !progress(l - from, c.layers - from))
            throw Cancelled();
        const LayerCache& cached = *m_layers[std::size_t(l)];
        Matrix output;
        const bool changedHere = std::any_of(active.begin(), active.end(),
                                             [l](const Intervention* change) { return change->layer == l; });
        if (l == from) {
            output = attentionOutput(concat, cached.W_O, cached.W_OF, cached.b_O, m_precision);
        } else {
            const Matrix x = normalizedForAttention(m, residual, l, m_precision);
            const Session attention = layerSession(m, x, l, allHeads(c), m_precision, float32);
            computeAttention(attention, result, computeOptions);
            if (changedHere) {
                changeLayer(l, result.concat, x);
                output = attentionOutput(result.concat, cached.W_O, cached.W_OF, cached.b_O, m_precision);
            } else {
                output = std::move(result.output);
            }
        }
        if (!isAllFinite(output))
            throw Error("layer " + std::to_string(l) + ": the attention output overflows " +
                        toString(m_precision) + " with the interventions");
        models::finishLayer(m, residual, output, l, m_precision, buffers);
    }
    return residual;
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
    const Index position = metric.position < 0 ? tokens() - 1 : metric.position;
    // One position's logit difference: its row through the final norm and two rows of W_U.
    const auto logitDifference = [&](const Matrix& residual) {
        const RowVector normed = m_unembedding->normalize(residual.middleRows(position, 1)).row(0);
        return normed.dot(m_unembedding->row(metric.tokenA)) - normed.dot(m_unembedding->row(metric.tokenB));
    };
    const bool loss = metric.kind == SweepMetric::Kind::Loss;
    const double baseline = loss ? m_clean.meanLoss : logitDifference(m_finalResidual);
    Matrix change(c.layers, c.heads);
    PredictOptions options;
    options.top = 0; // only the loss is read
    const Index total = c.layers * c.heads;
    for (Index l = 0; l < c.layers; ++l)
        for (Index h = 0; h < c.heads; ++h) {
            if (progress && !progress(l * c.heads + h, total))
                throw Cancelled();
            Intervention ablation;
            ablation.layer = l;
            ablation.head = h;
            ablation.kind = kind;
            const Matrix residual = residualWith({&ablation}, {});
            change(l, h) = (loss ? finish(residual, options).meanLoss : logitDifference(residual)) - baseline;
        }
    if (progress)
        progress(total, total);
    return change;
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
    // The direction a head's output is read along: W_U's row through the norm's gain, centred under
    // LayerNorm (which removes each vector's mean), divided by the position's frozen scale.
    RowVector direction = m_unembedding->row(token);
    if (minus >= 0)
        direction -= m_unembedding->row(minus);
    direction = direction.cwiseProduct(m_unembedding->gain());
    if (m_unembedding->centres())
        direction.array() -= direction.mean();
    direction /= m_unembedding->scaleOf(m_finalResidual.row(position));
    Matrix attribution(c.layers, c.heads);
    for (Index l = 0; l < c.layers; ++l) {
        const LayerCache& layer = *m_layers[std::size_t(l)];
        const Matrix W_O = m_precision == Precision::Float32 ? Matrix(layer.W_OF.cast<double>()) : layer.W_O;
        for (Index h = 0; h < c.heads; ++h) {
            const auto rows = W_O.middleRows(h * c.headDim, c.headDim);
            const RowVector z = layer.concat.row(position).segment(h * c.headDim, c.headDim);
            attribution(l, h) = (z * rows).dot(direction);
        }
    }
    return attribution;
}

} // namespace qkv
