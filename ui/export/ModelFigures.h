// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one list of a model's figures: the window's Model, Prediction, Head Scores, Logit Lens and Patching
// panels draw them and
// `qkvlab export --model` draws them, both from this list, so a new model view is added here once. Each
// figure's content is computed from one run of the model (off the GUI thread in the window), then handed to
// the view that draws it.

#include "Composition.h"
#include "HeadScores.h"
#include "LensView.h"
#include "ModelRun.h"
#include "Patching.h"
#include "PredictionView.h"

#include <QCoreApplication>
#include <QList>
#include <QString>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

class QWidget;

namespace qkv::ui {

class Figure;
class Heatmap;

/// A layers × heads grid as the Head Scores tab draws it.
struct HeadGridDisplay {
    Matrix values;
    QString title;
    QString label;          ///< the colour bar's
    QString whatsThis;      ///< what the grid shows, for What's This
    bool diverging = false; ///< colours about 0 (changes, contributions); else sequential
    bool fixedUnit = false; ///< sequential from 0 to 1 (most scores)
};

/// Every layer's and head's attention weights, as the Model workspace draws them.
struct ModelAttentionDisplay {
    std::vector<std::vector<Matrix>> weights; ///< [layer][head], each n × n
    QString title;
};

/// A patching grid with the metric of the two unpatched runs it is normalized by.
struct PatchedGrid {
    PatchGrid grid;
    double cleanMetric = 0, corruptMetric = 0;
};

/// A patching grid as a heatmap: the normalized values, rows the layers (head_out_pos: each layer's heads),
/// columns the positions, the heads or the key/value heads.
struct PatchGridDisplay {
    PatchedGrid patched;                 ///< raw and normalized, as computed
    Matrix shown;                        ///< the normalized values as drawn
    QStringList rowLabels, columnLabels; ///< "L0"… ("L0 H1"… for head_out_pos); "3 ␣cat", "H0", "KV0"
    QString rowTitle, columnTitle;       ///< "layer", "position", "head", "key/value head"
    QString title;
    QString label; ///< the colour bar's
};

/// A matrix with a label on every row and column, as a heatmap: a head's token × token QK table, the
/// composition scores into one head, or a score's decomposition.
struct LabelledGridDisplay {
    Matrix values;
    QStringList rowLabels, columnLabels;
    QString rowTitle, columnTitle;
    QString title;
    QString label; ///< the colour bar's
    QString whatsThis;
    bool diverging = true; ///< colours about 0; else sequential
};

/// Which head the circuit figures draw, and what of it.
struct CircuitChoice {
    Index layer = -1; ///< −1: the last layer
    Index head = 0;
    CompositionKind kind = CompositionKind::Key; ///< composition: which input of the head is read
    Index query = -1;                            ///< decompose: the query's position (−1: the last)
    Index key = 0;                               ///< decompose: the key's position
};

using ModelFigureContent = std::variant<PredictionDisplay, HeadGridDisplay, ModelAttentionDisplay,
                                        LensDisplay, PatchGridDisplay, LabelledGridDisplay>;

/// What a model figure is drawn from: the model on its text, the unmodified run, and the choices of its tab.
struct ModelFigureInput {
    std::shared_ptr<const Model> model;
    std::vector<std::int64_t> ids;
    Precision precision = Precision::Float64;
    std::shared_ptr<const ModelRun> run; ///< the unmodified run; the figures with needsRun need it
    QString title;                       ///< the model and its text
    /// prediction: the run with the interventions (null: modifiedError; the unmodified run's own prediction
    /// when none is switched on), and the interventions as the list names them.
    std::shared_ptr<const Prediction> modified;
    QString modifiedError;
    QString interventions;
    int position = -1; ///< prediction, attribution: the position shown (−1: the last)
    /// prediction: the unmodified run's logits at the position, when known already (it does not change from
    /// one edit to the next); null: computed.
    std::shared_ptr<const RowVector> cleanLogits;
    std::optional<std::int64_t> tokenA, tokenB;             ///< the logit difference's tokens, when picked
    HeadScore score = HeadScore::Induction;                 ///< scores
    Intervention::Kind ablation = Intervention::Kind::Zero; ///< sweep
    SweepMetric metric;                                     ///< sweep
    Matrix sweep; ///< sweep: values computed already (the window's, with progress); empty: computed
    RunProgress
        progress; ///< told how far a long computation ("model", "sweep", "lens", "patch") is; false stops it
    std::optional<std::int64_t> answer;      ///< lens: the token whose probability colours the cells
    std::optional<PatchExperiment> patching; ///< patch: the experiment (its prompts, tokens, site, method)
    std::shared_ptr<const PatchedGrid>
        patchGrid;         ///< patch: the grid computed already (the window's); null: computed
    CircuitChoice circuit; ///< circuits, composition, decompose: the head

    /// The input for `run`'s figures (model, ids and precision from the run), titled `title`.
    static ModelFigureInput forRun(std::shared_ptr<const ModelRun> run, const QString& title);
};

/// A figure of a model: its name, how its content is computed and how it is drawn.
struct RegisteredModelFigure {
    QString name;         ///< `qkvlab export --model … --view NAME`, file names and Figure::figureName()
    QString description;  ///< what it shows, for listings
    bool grid = false;    ///< a layers × heads grid: also written as CSV
    bool needsRun = true; ///< computed from ModelFigureInput::run (else from the model and ids alone)
    /// Computes the content; heavy, so the window runs it on a worker thread. Throws qkv::Error (and
    /// qkv::Cancelled when `progress` stops it).
    std::function<ModelFigureContent(const ModelFigureInput&)> compute;
    /// Makes the view that draws it, a child of `parent` (none: a top-level widget).
    std::function<QWidget*(QWidget* parent)> create;
    /// Shows content computed by `compute` on a view made by `create` (or one of the same class).
    std::function<void(QWidget* view, const ModelFigureContent& content)> show;
    /// The view as the figure exported.
    std::function<const Figure*(QWidget* view)> figure;
    /// The content as CSV text (`export --format csv`); null for a figure that has none.
    std::function<std::string(const ModelFigureContent& content)> csv;
};

class ModelFigures {
    Q_DECLARE_TR_FUNCTIONS(ModelFigures)
public:
    /// Every figure of a model, in the order of the window's tabs.
    static QList<RegisteredModelFigure> all();
    /// The figure named `name`; nullopt when there is none.
    static std::optional<RegisteredModelFigure> find(const QString& name);
    static QStringList names();
};

/// The prediction figure's content: the two runs compared at the position (core's comparePredictions),
/// with token labels; the message instead when the run with interventions failed.
PredictionDisplay predictionDisplay(const ModelFigureInput& input);

/// The head score's grid of `run`, its title naming `model`.
HeadGridDisplay headScoreGrid(const ModelRun& run, HeadScore score, const QString& model);
/// An ablation sweep's values (ModelRun::ablationSweep) as a grid titled after what was ablated and
/// measured.
HeadGridDisplay sweepGrid(const Matrix& values, Intervention::Kind ablation, const SweepMetric& metric,
                          const QString& model);
/// What the sweep's metric is called ("Δ loss", "Δ logit difference").
QString sweepMetricName(SweepMetric::Kind kind);

/// Shows `grid` on `heatmap`: rows "L0"…, columns "H0"…, with its colours and What's This.
void setHeadGrid(Heatmap& heatmap, const HeadGridDisplay& grid);

/// Writes `values` as CSV (qkv::headGridCsv) to `path` through writeFileAtomically: a failed write leaves
/// what was there. False with one line naming the file and the reason in `error`.
bool writeHeadGridCsv(const QString& path, const Matrix& values, QString* error);
/// Writes `text` to `path` the same way.
bool writeCsvText(const QString& path, const std::string& text, QString* error);

} // namespace qkv::ui
