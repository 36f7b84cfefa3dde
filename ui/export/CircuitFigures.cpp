// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitFigures.h"

#include "Circuits.h"
#include "Decompose.h"
#include "DelimitedText.h"
#include "Error.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "PatchingFigures.h"
#include "TrainingModel.h"

namespace qkv::ui {

namespace {

QString headName(const CircuitChoice& choice)
{
    return QStringLiteral("L%1H%2").arg(choice.layer).arg(choice.head);
}

QString kindName(CompositionKind kind)
{
    switch (kind) {
    case CompositionKind::Query:
        return QStringLiteral("Q");
    case CompositionKind::Key:
        return QStringLiteral("K");
    case CompositionKind::Value:
        break;
    }
    return QStringLiteral("V");
}

QStringList numbered(const QString& prefix, Index count)
{
    QStringList labels;
    for (Index k = 0; k < count; ++k)
        labels << prefix + QString::number(k);
    return labels;
}

/// "3 Ġcat": a position and its token, as the patching grid labels positions.
QStringList positionLabels(const Model& model, const std::vector<std::int64_t>& ids)
{
    QStringList labels;
    const std::vector<std::string> tokens = tokenLabels(model, ids);
    for (std::size_t p = 0; p < tokens.size(); ++p)
        labels << QStringLiteral("%1 %2").arg(p).arg(elidedLabel(QString::fromStdString(tokens[p])));
    return labels;
}

const Model& requireModel(const ModelFigureInput& input)
{
    if (!input.model)
        throw Error("no model to draw");
    return *input.model;
}

LabelledGridDisplay tokenQkDisplay(const ModelFigureInput& input)
{
    const Model& model = requireModel(input);
    const CircuitChoice choice = resolvedChoice(input);
    if (input.ids.empty())
        throw Error("the QK table needs tokens: give a text or token ids");
    LabelledGridDisplay display;
    display.values = ModelCircuits(model).tokenQk(choice.layer, choice.head, input.ids);
    display.rowLabels = positionLabels(model, input.ids);
    display.columnLabels = display.rowLabels;
    display.rowTitle = ModelFigures::tr("query token");
    display.columnTitle = ModelFigures::tr("key token");
    display.title =
        ModelFigures::tr("QK circuit of %1 on the tokens — %2").arg(headName(choice), input.title);
    display.label = QStringLiteral("W_E·W_QK·W_Eᵀ");
    display.whatsThis = ModelFigures::tr(
        "<h3>QK circuit</h3><p>Each cell is W_E[query]·W_QK·W_E[key]ᵀ with W_QK = W̃_Q·W̃_Kᵀ (the layer's "
        "norm folded in, no 1/√d_h, no position): how much the head's query at one token seeks the other "
        "token "
        "as key, from the weights alone.</p>");
    return display;
}

LabelledGridDisplay compositionDisplay(const ModelFigureInput& input)
{
    const Model& model = requireModel(input);
    const CircuitChoice choice = resolvedChoice(input);
    if (choice.layer == 0)
        throw Error("layer 0 reads only the embeddings: no earlier head composes into it");
    const CompositionScores scores = compositionScores<double>(*training::sharedWeights<double>(model),
                                                               choice.layer, choice.head, input.progress);
    LabelledGridDisplay display;
    display.values = scores.into(choice.kind, choice.layer, choice.head);
    display.rowLabels = numbered(QStringLiteral("L"), display.values.rows());
    display.columnLabels = numbered(QStringLiteral("H"), display.values.cols());
    display.rowTitle = ModelFigures::tr("earlier layer");
    display.columnTitle = ModelFigures::tr("head");
    display.title =
        ModelFigures::tr("%1-composition into %2 — %3")
            .arg(kindName(choice.kind), headName(choice), QString::fromStdString(modelName(model)));
    display.label = ModelFigures::tr("%1-composition").arg(kindName(choice.kind));
    display.diverging = false;
    display.whatsThis = ModelFigures::tr(
        "<h3>Composition</h3><p>How much each earlier head's output is read by this head's query (Q), key "
        "(K) or value (V): ‖W_OV¹·M‖_F / (‖W_OV¹‖_F·‖M‖_F) with M = W_QK, W_QKᵀ or this head's W_OV, as "
        "TransformerLens's all_composition_scores.</p>");
    return display;
}

LabelledGridDisplay decomposeDisplay(const ModelFigureInput& input)
{
    const Model& model = requireModel(input);
    const CircuitChoice choice = resolvedChoice(input);
    DecomposeRequest request;
    request.layer = choice.layer;
    request.head = choice.head;
    request.ids = input.ids;
    request.query = choice.query;
    request.key = choice.key;
    const ScoreDecomposition decomposition = decomposeScore(model, request);
    LabelledGridDisplay display;
    display.values = decomposition.terms;
    for (const std::string& name : decomposition.components)
        display.rowLabels << QString::fromStdString(name);
    display.columnLabels = display.rowLabels;
    display.rowTitle = ModelFigures::tr("query side");
    display.columnTitle = ModelFigures::tr("key side");
    const QStringList positions = positionLabels(model, input.ids);
    display.title =
        ModelFigures::tr("%1: score %2 → %3 = %4 — %5")
            .arg(headName(choice), positions.value(int(choice.query)), positions.value(int(choice.key)))
            .arg(decomposition.score, 0, 'g', 4)
            .arg(QString::fromStdString(modelName(model)));
    display.label = ModelFigures::tr("term");
    display.whatsThis = ModelFigures::tr(
        "<h3>A score taken apart</h3><p>The residual stream entering the layer is a sum of components (the "
        "embedding, the position, every earlier head, each layer's output bias and MLP); with the norm's "
        "divisor taken from the whole stream, the query and the key are sums of one part per component plus "
        "a bias part. Each cell is one query part times one key part, scaled by 1/√d_h; the cells sum to the "
        "score before the mask and the softmax.</p>");
    return display;
}

RegisteredModelFigure labelledFigure(const QString& name, const QString& description,
                                     LabelledGridDisplay (*compute)(const ModelFigureInput&))
{
    RegisteredModelFigure figure;
    figure.name = name;
    figure.description = description;
    figure.needsRun = false;
    figure.compute = [compute](const ModelFigureInput& input) { return ModelFigureContent(compute(input)); };
    figure.create = [name](QWidget* parent) -> QWidget* {
        auto* heatmap = new Heatmap(parent);
        heatmap->setFigureName(name);
        return heatmap;
    };
    figure.show = [](QWidget* view, const ModelFigureContent& content) {
        setLabelledGrid(*static_cast<Heatmap*>(view), std::get<LabelledGridDisplay>(content));
    };
    figure.figure = [](QWidget* view) -> const Figure* { return static_cast<Heatmap*>(view); };
    figure.csv = [](const ModelFigureContent& content) {
        return labelledGridCsv(std::get<LabelledGridDisplay>(content));
    };
    return figure;
}

} // namespace

RegisteredModelFigure circuitsFigure()
{
    return labelledFigure(QStringLiteral("circuits"),
                          ModelFigures::tr("a head's QK circuit between every pair of the tokens"),
                          tokenQkDisplay);
}

RegisteredModelFigure compositionFigure()
{
    return labelledFigure(
        QStringLiteral("composition"),
        ModelFigures::tr("how much each earlier head's output a head's query, key or value reads"),
        compositionDisplay);
}

RegisteredModelFigure decomposeFigure()
{
    return labelledFigure(QStringLiteral("decompose"),
                          ModelFigures::tr("one attention score as query-side × key-side components"),
                          decomposeDisplay);
}

CircuitChoice resolvedChoice(const ModelFigureInput& input)
{
    const ModelConfig& config = requireModel(input).config();
    CircuitChoice choice = input.circuit;
    const auto n = Index(input.ids.size());
    if (choice.layer < 0)
        choice.layer = config.layers - 1;
    if (choice.query < 0)
        choice.query = n - 1;
    const auto check = [](const char* what, Index value, Index count, const char* owner, const char* things) {
        if (value < 0 || value >= count)
            throw Error(std::string(what) + " " + std::to_string(value) + " is out of range: " + owner +
                        " has " + std::to_string(count) + " " + things +
                        (count == 1 ? " (0)" : " (0 to " + std::to_string(count - 1) + ")"));
    };
    check("layer", choice.layer, config.layers, "the model", "layers");
    check("head", choice.head, config.heads, "the model", "heads");
    if (n > 0) {
        check("query position", choice.query, n, "the text", "tokens");
        check("key position", choice.key, n, "the text", "tokens");
    }
    return choice;
}

void setLabelledGrid(Heatmap& heatmap, const LabelledGridDisplay& display)
{
    heatmap.clearFixedRange();
    heatmap.setColorMode(display.diverging ? Heatmap::ColorMode::Diverging : Heatmap::ColorMode::Sequential);
    heatmap.setColorBarLabel(display.label);
    heatmap.setAxisTitles(display.rowTitle, display.columnTitle);
    heatmap.setTitle(display.title);
    heatmap.setMatrix(display.values, display.rowLabels, display.columnLabels);
    heatmap.setWhatsThis(display.whatsThis);
}

std::string labelledGridCsv(const LabelledGridDisplay& display)
{
    std::string text = "\"\"";
    for (const QString& label : display.columnLabels)
        text += ',' + quotedCsvField(label);
    text += '\n';
    for (Index r = 0; r < display.values.rows(); ++r)
        text +=
            quotedCsvField(display.rowLabels.value(int(r))) + ',' + formatDelimited(display.values.row(r));
    return text;
}

} // namespace qkv::ui
