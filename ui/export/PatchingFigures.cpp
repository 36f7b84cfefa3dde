// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingFigures.h"

#include "DelimitedText.h"
#include "Error.h"
#include "Heatmap.h"
#include "LabelText.h"

#include <set>

namespace qkv::ui {

namespace {

constexpr Index lensTop = 5; // the tokens the lens view's hover text lists

// A number as formatDelimited writes it: shortest-round-trip.
std::string csvNumber(double value)
{
    std::string text = formatDelimited(Matrix::Constant(1, 1, value));
    text.pop_back(); // its line's '\n'
    return text;
}

QString tokenText(const Model& model, std::int64_t id)
{
    return QString::fromStdString(tokenLabels(model, {id}).front());
}

LensDisplay computeLens(const ModelFigureInput& input)
{
    if (!input.model)
        throw Error("no model to draw");
    LensOptions options;
    options.top = lensTop;
    options.answer = input.answer.value_or(-1);
    options.precision = input.precision;
    auto lens =
        std::make_shared<const LogitLens>(logitLens(*input.model, input.ids, options, input.progress));
    return lensDisplay(*input.model, input.ids, std::move(lens), input.answer, input.title);
}

PatchGridDisplay computePatch(const ModelFigureInput& input)
{
    if (!input.model)
        throw Error("no model to draw");
    if (!input.patching)
        throw Error("no patching experiment: give the clean and corrupted prompts, the answer and the wrong "
                    "token, and what to patch");
    const PatchExperiment& experiment = *input.patching;
    if (input.patchGrid)
        return patchGridDisplay(*input.model, experiment, *input.patchGrid);
    PatchingRun run(*input.model,
                    PatchPair{experiment.clean, experiment.corrupt, experiment.answer, experiment.wrong},
                    input.precision);
    PatchedGrid patched;
    patched.cleanMetric = run.cleanMetric();
    patched.corruptMetric = run.corruptMetric();
    patched.grid =
        run.patch(experiment.site, experiment.method, experiment.positions ? experiment.positions->first : 0,
                  experiment.positions ? experiment.positions->second : -1, input.progress);
    return patchGridDisplay(*input.model, experiment, std::move(patched));
}

QString siteDescription(PatchSite site)
{
    switch (site) {
    case PatchSite::ResidPre:
        return ModelFigures::tr("<b>resid_pre</b>: the residual stream entering layer l at position p");
    case PatchSite::AttnOut:
        return ModelFigures::tr("<b>attn_out</b>: the attention block's output at layer l, position p");
    case PatchSite::MlpOut:
        return ModelFigures::tr("<b>mlp_out</b>: the MLP's output at layer l, position p");
    case PatchSite::HeadOut:
        return ModelFigures::tr("<b>head_out</b>: head h's output z at every position");
    case PatchSite::HeadOutPos:
        return ModelFigures::tr("<b>head_out_pos</b>: head h's output z at position p only");
    case PatchSite::HeadPattern:
        return ModelFigures::tr("<b>head_pattern</b>: head h's attention weights");
    case PatchSite::HeadQ:
        return ModelFigures::tr("<b>head_q</b>: head h's queries");
    case PatchSite::HeadK:
        return ModelFigures::tr("<b>head_k</b>: key/value head g's keys, for every query head of its group");
    case PatchSite::HeadV:
        break;
    }
    return ModelFigures::tr("<b>head_v</b>: key/value head g's values, for every query head of its group");
}

} // namespace

RegisteredModelFigure lensFigure()
{
    RegisteredModelFigure figure;
    figure.name = QStringLiteral("lens");
    figure.description =
        ModelFigures::tr("the logit lens: each layer's most probable next token at each position");
    figure.needsRun = false;
    figure.compute = [](const ModelFigureInput& input) { return ModelFigureContent(computeLens(input)); };
    figure.create = [](QWidget* parent) -> QWidget* { return new LensView(parent); };
    figure.show = [](QWidget* view, const ModelFigureContent& content) {
        static_cast<LensView*>(view)->setDisplay(std::get<LensDisplay>(content));
    };
    figure.figure = [](QWidget* view) -> const Figure* { return static_cast<LensView*>(view); };
    figure.csv = [](const ModelFigureContent& content) { return lensCsv(std::get<LensDisplay>(content)); };
    return figure;
}

RegisteredModelFigure patchFigure()
{
    RegisteredModelFigure figure;
    figure.name = QStringLiteral("patch");
    figure.description =
        ModelFigures::tr("activation patching: the share of the clean logit difference each site restores");
    figure.needsRun = false;
    figure.compute = [](const ModelFigureInput& input) { return ModelFigureContent(computePatch(input)); };
    figure.create = [](QWidget* parent) -> QWidget* {
        auto* heatmap = new Heatmap(parent);
        heatmap->setFigureName(QStringLiteral("patch"));
        return heatmap;
    };
    figure.show = [](QWidget* view, const ModelFigureContent& content) {
        setPatchGrid(*static_cast<Heatmap*>(view), std::get<PatchGridDisplay>(content));
    };
    figure.figure = [](QWidget* view) -> const Figure* { return static_cast<Heatmap*>(view); };
    figure.csv = [](const ModelFigureContent& content) {
        return patchGridCsv(std::get<PatchGridDisplay>(content).patched.grid);
    };
    return figure;
}

std::string quotedCsvField(const QString& text)
{
    std::string field = text.toStdString();
    std::string quoted = "\"";
    for (char c : field) {
        quoted += c;
        if (c == '"')
            quoted += '"';
    }
    return quoted + '"';
}

LensDisplay lensDisplay(const Model& model, const std::vector<std::int64_t>& ids,
                        std::shared_ptr<const LogitLens> lens, std::optional<std::int64_t> answer,
                        const QString& title)
{
    LensDisplay display;
    for (const std::string& label : tokenLabels(model, ids))
        display.tokens << QString::fromStdString(label);
    std::set<std::int64_t> named;
    for (const std::vector<LensCell>& layer : lens->layers)
        for (const LensCell& cell : layer)
            for (const TokenProbability& token : cell.top)
                named.insert(token.id);
    if (answer)
        named.insert(*answer);
    const std::vector<std::int64_t> unique(named.begin(), named.end());
    const std::vector<std::string> labels = tokenLabels(model, unique);
    for (std::size_t k = 0; k < unique.size(); ++k)
        display.labels.insert(unique[k], QString::fromStdString(labels[k]));
    if (answer && lens->hasAnswer)
        display.answerLabel = display.labels.value(*answer);
    display.title = ModelFigures::tr("Logit lens — %1").arg(title);
    display.lens = std::move(lens);
    return display;
}

std::string lensCsv(const LensDisplay& display)
{
    if (!display.lens)
        return {};
    const bool answer = display.lens->hasAnswer;
    std::string text = "layer,position,token_id,token,probability";
    text += answer ? ",answer_probability,answer_rank\n" : "\n";
    for (std::size_t layer = 0; layer < display.lens->layers.size(); ++layer) {
        const std::vector<LensCell>& cells = display.lens->layers[layer];
        for (std::size_t position = 0; position < cells.size(); ++position) {
            const LensCell& cell = cells[position];
            const TokenProbability top = cell.top.empty() ? TokenProbability{} : cell.top.front();
            text += std::to_string(layer) + ',' + std::to_string(position) + ',' + std::to_string(top.id) +
                    ',' + quotedCsvField(display.labels.value(top.id)) + ',' + csvNumber(top.probability);
            if (answer)
                text += ',' + csvNumber(cell.answerProbability) + ',' + std::to_string(cell.answerRank);
            text += '\n';
        }
    }
    return text;
}

PatchGridDisplay patchGridDisplay(const Model& model, const PatchExperiment& experiment, PatchedGrid patched)
{
    PatchGridDisplay display;
    const PatchGrid& grid = patched.grid;
    const bool positional = patchSiteHasPositions(grid.site);
    const std::vector<std::string> clean = tokenLabels(model, experiment.clean);
    const auto positionLabel = [&](Index k) {
        const Index position = grid.firstPosition + k;
        const QString token =
            position < Index(clean.size()) ? QString::fromStdString(clean[std::size_t(position)]) : QString();
        return QStringLiteral("%1 %2").arg(position).arg(elidedLabel(token));
    };
    const bool kv = grid.site == PatchSite::HeadK || grid.site == PatchSite::HeadV;
    if (grid.depth > 1) { // head_out_pos: a row per layer and head, a column per position
        display.shown.resize(grid.rows * grid.cols, grid.depth);
        for (Index l = 0; l < grid.rows; ++l)
            for (Index h = 0; h < grid.cols; ++h) {
                display.rowLabels << QStringLiteral("L%1 H%2").arg(l).arg(h);
                for (Index k = 0; k < grid.depth; ++k)
                    display.shown(l * grid.cols + h, k) = grid.normalizedValue(l, h, k);
            }
        for (Index k = 0; k < grid.depth; ++k)
            display.columnLabels << positionLabel(k);
        display.rowTitle = ModelFigures::tr("layer, head");
        display.columnTitle = ModelFigures::tr("position");
    } else {
        display.shown.resize(grid.rows, grid.cols);
        for (Index l = 0; l < grid.rows; ++l) {
            display.rowLabels << QStringLiteral("L%1").arg(l);
            for (Index c = 0; c < grid.cols; ++c)
                display.shown(l, c) = grid.normalizedValue(l, c);
        }
        for (Index c = 0; c < grid.cols; ++c)
            display.columnLabels
                << (positional
                        ? positionLabel(c)
                        : QStringLiteral("%1%2").arg(kv ? QStringLiteral("KV") : QStringLiteral("H")).arg(c));
        display.rowTitle = ModelFigures::tr("layer");
        display.columnTitle = positional ? ModelFigures::tr("position")
                              : kv       ? ModelFigures::tr("key/value head")
                                         : ModelFigures::tr("head");
    }
    const QString metric = QStringLiteral("logit(%1) − logit(%2)")
                               .arg(tokenText(model, experiment.answer), tokenText(model, experiment.wrong));
    display.title = ModelFigures::tr("Patching %1 (%2): share of %3 restored — %4 (clean %5, corrupted %6)")
                        .arg(QString::fromStdString(patchSiteName(grid.site)),
                             QString::fromStdString(patchMethodName(grid.method)), metric,
                             QString::fromStdString(modelName(model)))
                        .arg(patched.cleanMetric, 0, 'g', 4)
                        .arg(patched.corruptMetric, 0, 'g', 4);
    display.label = ModelFigures::tr("normalized");
    display.patched = std::move(patched);
    return display;
}

void setPatchGrid(Heatmap& heatmap, const PatchGridDisplay& display)
{
    heatmap.clearFixedRange();
    heatmap.setColorMode(Heatmap::ColorMode::Diverging);
    heatmap.setColorBarLabel(display.label);
    heatmap.setAxisTitles(display.rowTitle, display.columnTitle);
    heatmap.setTitle(display.title);
    heatmap.setMatrix(display.shown, display.rowLabels, display.columnLabels);
    heatmap.setWhatsThis(
        ModelFigures::tr(
            "<h3>Activation patching</h3><p>The corrupted prompt run with one activation replaced "
            "by the clean prompt's (%1); each cell is (m_patched − m_corrupted) / (m_clean − "
            "m_corrupted), m being the logit difference at the last position: 1 restores the "
            "clean run's difference, 0 changes nothing. Attribution patching estimates every "
            "cell at once to first order, from one backward pass.</p>")
            .arg(siteDescription(display.patched.grid.site)));
}

std::string patchColumnName(PatchSite site)
{
    if (site == PatchSite::HeadK || site == PatchSite::HeadV)
        return "kv_head";
    return patchSiteHasPositions(site) && site != PatchSite::HeadOutPos ? "position" : "head";
}

std::string patchGridCsv(const PatchGrid& grid)
{
    const bool deep = grid.depth > 1;
    const bool positional = patchSiteHasPositions(grid.site) && !deep;
    std::string text =
        "layer," + patchColumnName(grid.site) + (deep ? ",position" : "") + ",value,normalized\n";
    Matrix rows(grid.cells(), deep ? 5 : 4);
    Index row = 0;
    for (Index l = 0; l < grid.rows; ++l)
        for (Index c = 0; c < grid.cols; ++c)
            for (Index k = 0; k < grid.depth; ++k, ++row) {
                rows(row, 0) = double(l);
                rows(row, 1) = double(positional ? grid.firstPosition + c : c);
                if (deep)
                    rows(row, 2) = double(grid.firstPosition + k);
                rows(row, rows.cols() - 2) = grid.value(l, c, k);
                rows(row, rows.cols() - 1) = grid.normalizedValue(l, c, k);
            }
    return text + (row > 0 ? formatDelimited(rows) : std::string());
}

} // namespace qkv::ui
