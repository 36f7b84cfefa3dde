// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelFigures.h"

#include "CircuitFigures.h"
#include "Error.h"
#include "FileWriting.h"
#include "ForwardPass.h"
#include "HeadGridCsv.h"
#include "Heatmap.h"
#include "ModelView.h"
#include "PatchingFigures.h"
#include "PredictionComparison.h"

#include <QFile>

#include <algorithm>
#include <type_traits>

namespace qkv::ui {

namespace {

QString tokenLabel(const Model& model, std::int64_t id)
{
    return QString::fromStdString(tokenLabels(model, {id}).front());
}

QStringList prefixed(const QString& prefix, Index count)
{
    QStringList labels;
    for (Index k = 0; k < count; ++k)
        labels << prefix + QString::number(k);
    return labels;
}

const ModelRun& requireRun(const ModelFigureInput& input)
{
    if (!input.run)
        throw Error("the model has not been run on its text");
    return *input.run;
}

PredictionRunDisplay runDisplay(const Model& model, const RunComparison& run)
{
    PredictionRunDisplay display;
    for (const ComparedToken& token : run.top)
        display.top << PredictionBar{tokenLabel(model, token.id), token.probability, token.logProbability,
                                     token.delta};
    display.loss = run.loss;
    display.meanLoss = run.meanLoss;
    display.logitDifference = run.logitDifference;
    return display;
}

int positionIn(const ModelRun& run, int position)
{
    return std::clamp(position < 0 ? int(run.tokens()) - 1 : position, 0, int(run.tokens()) - 1);
}

HeadGridDisplay attributionGrid(const ModelFigureInput& input)
{
    const ModelRun& run = requireRun(input);
    const Model& model = run.model();
    const int position = positionIn(run, input.position);
    const PositionPrediction& at = run.clean().positions[std::size_t(position)];
    // Without a token picked: the unmodified model's most probable next token.
    const std::int64_t token = input.tokenA.value_or(at.top.empty() ? 0 : at.top.front().id);
    const std::int64_t minus = input.tokenA ? input.tokenB.value_or(-1) : -1;
    QString target = tokenLabel(model, token);
    if (minus >= 0)
        target += QStringLiteral(" − ") + tokenLabel(model, minus);
    HeadGridDisplay grid;
    grid.values = run.directLogitAttribution(position, token, minus);
    grid.title = ModelFigures::tr("Direct logit attribution to %1 at position %2 — %3")
                     .arg(target)
                     .arg(position)
                     .arg(QString::fromStdString(modelName(model)));
    grid.label = ModelFigures::tr("logit");
    grid.diverging = true;
    grid.whatsThis = ModelFigures::tr(
        "<h3>Direct logit attribution</h3><p>Each head's direct contribution to the logit of the token (or "
        "to logit(A) − logit(B)) at the position: its output z at that position through its rows of W_O, "
        "through the final norm with the norm's scale at that position frozen (centred first under "
        "LayerNorm), dotted with the unembedding's column of the token, as TransformerLens computes it. "
        "Without a token picked in the Prediction tab, the unmodified model's most probable next token. "
        "Click a cell to open that head.</p>");
    return grid;
}

// A figure whose view is a `View` made with a parent only, showing content of type `Content`.
template <typename View, typename Content>
RegisteredModelFigure registered(const QString& name, const QString& description, bool grid,
                                 std::function<Content(const ModelFigureInput&)> compute,
                                 std::function<void(View&, const Content&)> show)
{
    RegisteredModelFigure figure;
    figure.name = name;
    figure.description = description;
    figure.grid = grid;
    figure.compute = [compute](const ModelFigureInput& input) { return ModelFigureContent(compute(input)); };
    figure.create = [name](QWidget* parent) -> QWidget* {
        auto* view = new View(parent);
        if constexpr (std::is_same_v<View, Heatmap>)
            view->setFigureName(name);
        return view;
    };
    figure.show = [show](QWidget* view, const ModelFigureContent& content) {
        show(*static_cast<View*>(view), std::get<Content>(content));
    };
    figure.figure = [](QWidget* view) -> const Figure* { return static_cast<View*>(view); };
    return figure;
}

RegisteredModelFigure gridFigure(const QString& name, const QString& description,
                                 std::function<HeadGridDisplay(const ModelFigureInput&)> compute)
{
    RegisteredModelFigure figure = registered<Heatmap, HeadGridDisplay>(
        name, description, true, std::move(compute), [name](Heatmap& heatmap, const HeadGridDisplay& grid) {
            heatmap.setFigureName(name);
            setHeadGrid(heatmap, grid);
        });
    figure.csv = [](const ModelFigureContent& content) {
        return headGridCsv(std::get<HeadGridDisplay>(content).values);
    };
    return figure;
}

} // namespace

ModelFigureInput ModelFigureInput::forRun(std::shared_ptr<const ModelRun> run, const QString& title)
{
    ModelFigureInput input;
    input.model = std::shared_ptr<const Model>(run, &run->model());
    input.ids = run->ids();
    input.precision = run->precision();
    input.run = std::move(run);
    input.title = title;
    return input;
}

// To add a figure of a model: register it here with how its content is computed from a run and how its
// view draws it; the window shows it in its tab, and `qkvlab export --model … --view NAME` draws it.
QList<RegisteredModelFigure> ModelFigures::all()
{
    RegisteredModelFigure model = registered<ModelView, ModelAttentionDisplay>(
        QStringLiteral("model"), tr("every layer's and head's attention"), false,
        [](const ModelFigureInput& input) {
            if (!input.model)
                throw Error("no model to draw");
            ModelAttentionDisplay attention;
            attention.weights =
                attentionOfEveryLayer(*input.model, input.ids, input.precision, input.progress);
            attention.title = input.title;
            return attention;
        },
        [](ModelView& view, const ModelAttentionDisplay& attention) {
            view.setAttention(attention.weights, attention.title);
        });
    model.needsRun = false;
    return {
        model,
        registered<PredictionView, PredictionDisplay>(
            QStringLiteral("prediction"), tr("the next-token prediction with and without the interventions"),
            false, [](const ModelFigureInput& input) { return predictionDisplay(input); },
            [](PredictionView& view, const PredictionDisplay& display) { view.setDisplay(display); }),
        gridFigure(QStringLiteral("scores"), tr("a head score of every head"),
                   [](const ModelFigureInput& input) {
                       const ModelRun& run = requireRun(input);
                       return headScoreGrid(run, input.score, QString::fromStdString(modelName(run.model())));
                   }),
        gridFigure(QStringLiteral("sweep"), tr("the change of the loss with each head ablated"),
                   [](const ModelFigureInput& input) {
                       const ModelRun& run = requireRun(input);
                       const Matrix values =
                           input.sweep.size() > 0
                               ? input.sweep
                               : run.ablationSweep(input.ablation, input.metric, input.progress);
                       return sweepGrid(values, input.ablation, input.metric,
                                        QString::fromStdString(modelName(run.model())));
                   }),
        gridFigure(QStringLiteral("attribution"), tr("each head's direct contribution to a token's logit"),
                   attributionGrid),
        lensFigure(),
        patchFigure(),
        circuitsFigure(),
        compositionFigure(),
        decomposeFigure(),
    };
}

std::optional<RegisteredModelFigure> ModelFigures::find(const QString& name)
{
    for (const RegisteredModelFigure& figure : all())
        if (figure.name == name)
            return figure;
    return std::nullopt;
}

QStringList ModelFigures::names()
{
    QStringList list;
    for (const RegisteredModelFigure& figure : all())
        list << figure.name;
    return list;
}

PredictionDisplay predictionDisplay(const ModelFigureInput& input)
{
    const ModelRun& run = requireRun(input);
    const Model& model = run.model();
    PredictionDisplay display;
    display.title = input.title;
    for (const std::string& label : tokenLabels(model, run.ids()))
        display.tokens << QString::fromStdString(label);
    display.position = positionIn(run, input.position);
    display.interventions = input.interventions;
    std::optional<TokenPair> pair;
    if (input.tokenA && input.tokenB) {
        pair = TokenPair{*input.tokenA, *input.tokenB};
        display.logitLabel = ModelFigures::tr("logit(%1) − logit(%2)")
                                 .arg(tokenLabel(model, *input.tokenA), tokenLabel(model, *input.tokenB));
    }
    if (!input.modified) {
        display.message =
            ModelFigures::tr("Cannot run the model with these interventions: %1").arg(input.modifiedError);
        return display;
    }
    const PredictionComparison comparison =
        comparePredictions(run.clean(), *input.modified, display.position, pair, input.cleanLogits.get());
    display.clean = runDisplay(model, comparison.clean);
    display.modified = runDisplay(model, comparison.modified);
    return display;
}

HeadGridDisplay headScoreGrid(const ModelRun& run, HeadScore score, const QString& model)
{
    HeadGridDisplay grid;
    grid.values = run.scores()[score];
    grid.title =
        ModelFigures::tr("%1 score of every head — %2").arg(QString::fromUtf8(displayName(score)), model);
    grid.label = QString::fromUtf8(displayName(score));
    grid.fixedUnit = score != HeadScore::Entropy;
    grid.whatsThis = QStringLiteral("<h3>%1</h3><p>%2</p><p>%3</p>")
                         .arg(QString::fromUtf8(displayName(score)), QString::fromUtf8(formula(score)),
                              ModelFigures::tr("Computed from each head's attention weights A on the model's "
                                               "text in the unmodified forward pass (rows i are queries). "
                                               "Click a cell to open that head."));
    return grid;
}

QString sweepMetricName(SweepMetric::Kind kind)
{
    return kind == SweepMetric::Kind::Loss ? ModelFigures::tr("Δ loss")
                                           : ModelFigures::tr("Δ logit difference");
}

HeadGridDisplay sweepGrid(const Matrix& values, Intervention::Kind ablation, const SweepMetric& metric,
                          const QString& model)
{
    HeadGridDisplay grid;
    grid.values = values;
    grid.label = sweepMetricName(metric.kind);
    QString title =
        ModelFigures::tr("%1 with each head %2")
            .arg(grid.label, ablation == Intervention::Kind::Mean ? ModelFigures::tr("mean-ablated")
                                                                  : ModelFigures::tr("zero-ablated"));
    if (metric.kind == SweepMetric::Kind::LogitDifference)
        title += ModelFigures::tr(" (position %1)").arg(metric.position);
    grid.title = ModelFigures::tr("%1 — %2").arg(title, model);
    grid.diverging = true;
    grid.whatsThis = ModelFigures::tr(
        "<h3>Ablation sweep</h3><p>Each cell: the metric (the mean loss, or logit(A) − logit(B) at the "
        "chosen "
        "position) with that head's output z ablated (zeroed, or replaced by its mean row), minus the metric "
        "of the unmodified model. Red: ablating the head raises it; blue: lowers it. Every run reuses the "
        "unmodified model's layers below the head. Click a cell to open that head.</p>");
    return grid;
}

void setHeadGrid(Heatmap& heatmap, const HeadGridDisplay& grid)
{
    heatmap.clearFixedRange();
    heatmap.setColorMode(grid.diverging ? Heatmap::ColorMode::Diverging : Heatmap::ColorMode::Sequential);
    heatmap.setColorBarLabel(grid.label);
    heatmap.setAxisTitles(ModelFigures::tr("layer"), ModelFigures::tr("head"));
    heatmap.setTitle(grid.title);
    heatmap.setMatrix(grid.values, prefixed(QStringLiteral("L"), grid.values.rows()),
                      prefixed(QStringLiteral("H"), grid.values.cols()));
    if (grid.fixedUnit)
        heatmap.setFixedRange(0.0, 1.0);
    heatmap.setWhatsThis(grid.whatsThis);
}

bool writeHeadGridCsv(const QString& path, const Matrix& values, QString* error)
{
    return writeCsvText(path, headGridCsv(values), error);
}

bool writeCsvText(const QString& path, const std::string& text, QString* error)
{
    try {
        writeFileAtomically(QFile::encodeName(path).toStdString(), text);
        return true;
    } catch (const Error& e) {
        // Already "PATH: cannot write: REASON".
        if (error)
            *error = QFile::decodeName(e.what());
        return false;
    }
}

} // namespace qkv::ui
