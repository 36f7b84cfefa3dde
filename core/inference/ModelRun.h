// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The model's forward pass to the end (docs/models.md), on the one transformer (training/Network.h) over the
/// model's weights: after the last layer, the final norm (GPT-2's ln_f, the LLaMA family's model.norm) and
/// the unembedding W_U (GPT-2: wte, tied; the LLaMA family: lm_head, or embed_tokens when the checkpoint has
/// no lm_head), giving the next-token distribution at every position and the loss on the text's own next
/// tokens. The stream entering each layer is kept, so a run with interventions (edits of hook_z) restarts
/// from the lowest layer it changes, and an ablation sweep over every head reuses everything below.

#include "HeadScores.h"
#include "Intervention.h"
#include "Model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace qkv {

struct TokenProbability {
    std::int64_t id = 0;
    double probability = 0.0;
    double logProbability = 0.0;
};

/// The `count` most probable entries of a row of logits, by probability descending, ties by id, with their
/// log-probabilities logit − `logNormalizer` (ln Σ exp(logits)).
std::vector<TokenProbability> topTokens(const double* logits, Index vocabulary, Index count,
                                        double logNormalizer);

class Unembedding;

/// The model's distribution for the token after position i.
struct PositionPrediction {
    std::vector<TokenProbability> top; ///< the `top` most probable, by probability descending, ties by id
    std::int64_t nextId = -1;          ///< the text's own next token; −1 at the last position
    double loss = 0.0;                 ///< −ln p(nextId); 0 at the last position
};

/// One forward pass to the logits, with or without interventions.
struct Prediction {
    std::vector<PositionPrediction> positions; ///< one per token
    double meanLoss = 0.0;                     ///< over every position but the last; 0 for one token
    /// The final norm's output (n × d_model) and the unembedding: any position's full logits, on demand.
    Matrix finalNormed;
    std::shared_ptr<const Unembedding> unembedding;

    /// The logits at `position` (1 × vocabulary), in the run's precision.
    RowVector logitsAt(Index position) const;
    /// ln p(id) at `position`.
    double logProbability(Index position, std::int64_t id) const;
};

struct PredictOptions {
    Index top = 10;
};

/// Told (done, total) while a long computation runs; returning false stops it (the computation then throws
/// qkv::Cancelled, Error.h). Called on the thread that runs the computation.
using RunProgress = std::function<bool(Index done, Index total)>;

/// What an ablation sweep measures for each head.
struct SweepMetric {
    enum class Kind {
        Loss,            ///< the mean loss
        LogitDifference, ///< logit(tokenA) − logit(tokenB) at `position`
    };
    Kind kind = Kind::Loss;
    Index position = -1; ///< −1: the last
    std::int64_t tokenA = 0, tokenB = 0;
};

/// A model's forward pass on fixed token ids, with what it keeps for the runs that follow. Runs on the
/// thread that calls it; a const ModelRun may be used from several threads at once.
class ModelRun {
public:
    struct Pass; ///< the unmodified run in its precision (ModelRun.cpp)

    /// Runs the unmodified pass. Throws qkv::Error naming the problem: no ids, an id outside the vocabulary,
    /// more tokens than the model's positions, a checkpoint without the final norm or the unembedding, a
    /// residual stream or logits that overflow (naming the layer).
    ModelRun(std::shared_ptr<const Model> model, std::vector<std::int64_t> ids, Precision precision,
             const RunProgress& progress = {});

    const Model& model() const { return *m_model; }
    const std::vector<std::int64_t>& ids() const { return m_ids; }
    Precision precision() const { return m_precision; }
    Index tokens() const { return Index(m_ids.size()); }

    /// The unmodified model's prediction.
    const Prediction& clean() const { return m_clean; }

    /// The prediction with `interventions` (all together, disabled ones ignored), recomputed from the lowest
    /// layer they change. Throws qkv::Error naming an intervention that does not fit the model, or a layer
    /// that overflows.
    Prediction predict(const std::vector<Intervention>& interventions, const PredictOptions& options = {},
                       const RunProgress& progress = {}) const;

    /// The metric of a prediction.
    static double measure(const Prediction& prediction, const SweepMetric& metric);

    /// For every layer and query head (layers × heads), the metric with that head ablated (`kind` Zero or
    /// Mean) minus the metric of the unmodified model; every run reuses the layers below its head.
    /// `progress` is told (heads done, heads).
    Matrix ablationSweep(Intervention::Kind kind, const SweepMetric& metric,
                         const RunProgress& progress = {}) const;

    /// Direct logit attribution (layers × heads): each head's output at `position` (its z through its rows
    /// of W_O) through the final norm with the norm's scale at that position frozen (centred first under
    /// LayerNorm), dotted with W_U's column for `token` (minus `minus`'s when ≥ 0), as TransformerLens's
    /// apply_ln_to_stack and logit attribution compute it.
    Matrix directLogitAttribution(Index position, std::int64_t token, std::int64_t minus = -1) const;

    /// Every head score of every query head in the unmodified pass.
    const HeadScoreGrid& scores() const { return m_scores; }

private:
    /// The enabled interventions, each checked against the model.
    std::vector<const Intervention*>
    activeInterventions(const std::vector<Intervention>& interventions) const;

    std::shared_ptr<const Model> m_model;
    std::vector<std::int64_t> m_ids;
    Precision m_precision;
    std::shared_ptr<const Pass> m_pass; // the unmodified run, in the run's precision
    Prediction m_clean;
    HeadScoreGrid m_scores;
};

} // namespace qkv
