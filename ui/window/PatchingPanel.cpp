// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingPanel.h"

#include "Document.h"
#include "Heatmap.h"
#include "Model.h"
#include "ModelLoading.h"
#include "PatchScatterView.h"
#include "PatchingPrompts.h"
#include "PatchingRunner.h"
#include "ProgressControls.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QResizeEvent>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

QString methodTitle(PatchMethod method)
{
    return method == PatchMethod::Exact ? PatchingPanel::tr("exact") : PatchingPanel::tr("attribution");
}

bool opensHeads(PatchSite site)
{
    return site != PatchSite::ResidPre && site != PatchSite::AttnOut && site != PatchSite::MlpOut;
}

} // namespace

PatchingPanel::PatchingPanel(ModelLoading* loading, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_runner(new PatchingRunner(this)),
      m_prompts(new PatchingPrompts(this)), m_site(new QComboBox(this)), m_methods(new QComboBox(this)),
      m_limitPositions(new QCheckBox(tr("&Positions"), this)), m_firstPosition(new QSpinBox(this)),
      m_lastPosition(new QSpinBox(this)), m_run(new QToolButton(this)), m_stop(new QToolButton(this)),
      m_progress(new QProgressBar(this)), m_status(new QLabel(this)), m_metrics(new QLabel(this)),
      m_depthRow(new QWidget(this)), m_depth(new QComboBox(this)),
      m_grids(new QSplitter(Qt::Horizontal, this)), m_exact(new Heatmap(this)),
      m_attribution(new Heatmap(this)), m_scatter(new PatchScatterView(this))
{
    setObjectName(QStringLiteral("patchingPanel"));
    m_runner->setObjectName(QStringLiteral("patchingRunner"));
    m_status->setObjectName(QStringLiteral("patchingStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_prompts);
    layout->addWidget(createOptions());
    layout->addWidget(m_status);
    layout->addWidget(createGrids(), 1);
    connectRunner();
    connect(m_loading, &ModelLoading::modelOpened, this, &PatchingPanel::onModelOpened);
    onModelOpened();
    showGrids();
    updateControls();
}

PatchingPanel::~PatchingPanel() = default;

// Site, method, positions, Run, Stop and the progress, in one row.
QWidget* PatchingPanel::createOptions()
{
    auto* options = new QWidget(this);
    m_site->setObjectName(QStringLiteral("patchingSite"));
    for (PatchSite site : allPatchSites()) {
        m_site->addItem(patchSiteTitle(site), int(site));
        m_site->setItemData(m_site->count() - 1, patchSiteDescription(site), Qt::ToolTipRole);
    }
    m_site->setToolTip(tr("The site: which activation of the clean run is copied into the corrupted run, one "
                          "cell of the grid at a time"));
    m_site->setWhatsThis(tr("<p>Where patching copies the clean run's activation into the corrupted run: the "
                            "residual stream entering a layer (resid_pre), the attention block's or the "
                            "MLP's output (attn_out, mlp_out) at one position; a head's output z at every "
                            "position (head_out) or at one (head_out_pos); a head's attention weights "
                            "(head_pattern), queries (head_q), keys or values (head_k, head_v). Hover an "
                            "entry for what it replaces.</p>"));
    m_methods->setObjectName(QStringLiteral("patchingMethod"));
    m_methods->addItem(tr("Exact"), int(Methods::Exact));
    m_methods->addItem(tr("Attribution"), int(Methods::Attribution));
    m_methods->addItem(tr("Both"), int(Methods::Both));
    m_methods->setCurrentIndex(2);
    m_methods->setToolTip(tr("Exact: one patched run per cell. Attribution: the linear estimate from one "
                             "backward pass. Both: side by side, with a scatter of one against the other"));
    m_methods->setWhatsThis(
        tr("<p><b>Exact</b> patching runs the corrupted prompt once per cell with that "
           "site's clean activation, everything downstream recomputed. <b>Attribution</b> "
           "patching estimates every cell at once: m_corrupt + (a_clean − a_corrupt) · "
           "∂m/∂a, from the two runs and one backward pass. <b>Both</b> shows them side by "
           "side with a scatter plot, so you see where the linear estimate fails.</p>"));
    m_limitPositions->setObjectName(QStringLiteral("patchingLimitPositions"));
    m_limitPositions->setToolTip(tr("Patch only the positions from … to (inclusive), for the sites with a "
                                    "position axis"));
    m_limitPositions->setWhatsThis(tr("<p>Limits resid_pre, attn_out, mlp_out and head_out_pos to a range "
                                      "of positions (both ends included): fewer cells, a faster grid.</p>"));
    for (auto [spin, name] : {std::pair{m_firstPosition, "patchingFirstPosition"},
                              std::pair{m_lastPosition, "patchingLastPosition"}}) {
        spin->setObjectName(QLatin1String(name));
        spin->setToolTip(spin == m_firstPosition ? tr("The first position patched")
                                                 : tr("The last position patched"));
        spin->setWhatsThis(m_limitPositions->whatsThis());
    }
    auto* run = new QAction(tr("&Run"), this);
    run->setObjectName(QStringLiteral("patchingRunAction"));
    run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    run->setShortcutContext(Qt::WidgetWithChildrenShortcut); // only while the panel has the focus
    run->setToolTip(tr("Compute the grid (Ctrl+Return); a new run stops the one running"));
    addAction(run);
    m_run->setObjectName(QStringLiteral("patchingRun"));
    m_run->setDefaultAction(run);
    m_run->setWhatsThis(tr("Computes the grid of the site by the method chosen, in the background; the "
                           "cells appear as they are computed."));
    auto* stop = new QAction(tr("Stop"), this);
    stop->setToolTip(tr("Stop the grid; the cells computed so far stay"));
    m_stop->setObjectName(QStringLiteral("patchingStop"));
    m_stop->setDefaultAction(stop);
    m_stop->setWhatsThis(stop->toolTip());
    m_progress->setObjectName(QStringLiteral("patchingProgress"));
    m_progress->setMaximumWidth(200);
    m_progress->setToolTip(tr("Cells of the grid computed"));
    m_progress->setWhatsThis(m_progress->toolTip());

    // Two rows: the experiment, then its range and the run; narrow enough for half a window at scale 2.
    auto* siteLabel = new QLabel(tr("&Site:"), options);
    siteLabel->setBuddy(m_site);
    auto* methodLabel = new QLabel(tr("&Method:"), options);
    methodLabel->setBuddy(m_methods);
    auto* experiment = new QHBoxLayout;
    for (QWidget* widget : std::initializer_list<QWidget*>{siteLabel, m_site, methodLabel, m_methods})
        experiment->addWidget(widget);
    experiment->addStretch(1);
    auto* running = new QHBoxLayout;
    running->addWidget(m_limitPositions);
    running->addWidget(m_firstPosition);
    running->addWidget(new QLabel(QStringLiteral("–"), options));
    for (QWidget* widget : std::initializer_list<QWidget*>{m_lastPosition, m_run, m_stop, m_progress})
        running->addWidget(widget);
    running->addStretch(1);
    auto* rows = new QVBoxLayout(options);
    rows->setContentsMargins(4, 0, 4, 0);
    rows->setSpacing(2);
    rows->addLayout(experiment);
    rows->addLayout(running);

    connect(run, &QAction::triggered, this, &PatchingPanel::run);
    connect(stop, &QAction::triggered, this, &PatchingPanel::stop);
    connect(m_prompts, &PatchingPrompts::runRequested, this, &PatchingPanel::run);
    connect(m_prompts, &PatchingPrompts::inputChanged, this, &PatchingPanel::updatePositionLimits);
    connect(m_site, &QComboBox::currentIndexChanged, this, &PatchingPanel::updateControls);
    connect(m_limitPositions, &QCheckBox::toggled, this, &PatchingPanel::updateControls);
    connect(m_firstPosition, &QSpinBox::valueChanged, m_lastPosition, &QSpinBox::setMinimum);
    return options;
}

// The position chooser of head_out_pos above the two heatmaps and the scatter.
QWidget* PatchingPanel::createGrids()
{
    auto* box = new QWidget(this);
    m_depth->setObjectName(QStringLiteral("patchingShownPosition"));
    m_depth->setToolTip(tr("head_out_pos has a grid of layers × heads for every position: the position "
                           "shown"));
    m_depth->setWhatsThis(m_depth->toolTip());
    auto* depthLayout = new QHBoxLayout(m_depthRow);
    depthLayout->setContentsMargins(4, 0, 8, 0);
    auto* depthLabel = new QLabel(tr("Heads at p&osition:"), m_depthRow);
    depthLabel->setBuddy(m_depth);
    depthLayout->addWidget(depthLabel);
    depthLayout->addWidget(m_depth);
    m_depthRow->hide();
    m_metrics->setObjectName(QStringLiteral("patchingMetrics"));
    m_metrics->setToolTip(tr("The metric on the clean and on the corrupted prompt, unpatched: a patched "
                             "cell's normalized value is (m − m_corrupt) / (m_clean − m_corrupt)"));
    m_metrics->setWhatsThis(m_metrics->toolTip());

    const QString gridHelp =
        tr("<h3>Patching grid</h3><p>Each cell: the corrupted prompt run with that site's activation taken "
           "from the clean run, measured by m = logit(answer) − logit(wrong) at the last position and "
           "normalized: (m − m_corrupt) / (m_clean − m_corrupt). 0 (white) is the corrupted run, 1 (red) "
           "restores the clean run fully, blue goes the other way. Grey cells are not computed yet. Hover "
           "a cell for m and its normalized value; click a head's cell to open that head on the clean "
           "prompt.</p>");
    for (auto [heatmap, name] :
         {std::pair{m_exact, "patchExactGrid"}, std::pair{m_attribution, "patchAttributionGrid"}}) {
        heatmap->setObjectName(QLatin1String(name));
        heatmap->setFigureName(heatmap == m_exact ? QStringLiteral("patch_exact")
                                                  : QStringLiteral("patch_attribution"));
        heatmap->setColorMode(Heatmap::ColorMode::Diverging);
        heatmap->setColorBarLabel(tr("restored"));
        heatmap->setWhatsThis(gridHelp);
        heatmap->setMinimumWidth(fontMetrics().averageCharWidth() *
                                 16); // three side by side in half a window
        m_grids->addWidget(heatmap);
    }
    m_scatter->setWhatsThis(tr("<h3>Exact against attribution</h3><p>One point per cell: exact patching "
                               "across, its linear estimate (attribution patching) up, both normalized. On "
                               "the dashed diagonal the estimate is right; far from it, the site acts "
                               "non-linearly (a softmax saturated, a norm) and only exact patching can be "
                               "trusted. Hover a point for its cell.</p>"));
    m_grids->addWidget(m_scatter);
    m_grids->setObjectName(QStringLiteral("patchingGrids"));
    m_grids->setChildrenCollapsible(false);
    m_grids->setStretchFactor(0, 3);
    m_grids->setStretchFactor(1, 3);
    m_grids->setStretchFactor(2, 2);
    arrangeGrids();
    connect(m_exact, &Heatmap::cellClicked, this,
            [this](int row, int column) { openCell(PatchMethod::Exact, row, column); });
    connect(m_attribution, &Heatmap::cellClicked, this,
            [this](int row, int column) { openCell(PatchMethod::Attribution, row, column); });
    connect(m_depth, &QComboBox::currentIndexChanged, this, &PatchingPanel::showGrids);

    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* above = new QHBoxLayout;
    above->setContentsMargins(0, 0, 4, 0);
    above->addWidget(m_depthRow);
    above->addWidget(m_metrics);
    above->addStretch(1);
    layout->addLayout(above);
    layout->addWidget(m_grids, 1);
    return box;
}

void PatchingPanel::connectRunner()
{
    connect(m_runner, &PatchingRunner::started, this, [this] {
        m_progress->setRange(0, 0);
        m_progress->setFormat(QString());
        updateControls();
    });
    connect(m_runner, &PatchingRunner::metricsReady, this, [this](double clean, double corrupt) {
        m_shownTokens = m_pendingTokens;
        setMetrics(clean, corrupt);
        showGrids();
    });
    connect(m_runner, &PatchingRunner::gridChanged, this, &PatchingPanel::showGrids);
    connect(m_runner, &PatchingRunner::progress, this, [this](PatchMethod method, int done, int total) {
        m_progress->setRange(0, total);
        m_progress->setValue(done);
        m_progress->setFormat(tr("%1: %v of %m").arg(methodTitle(method)));
        reserveProgressText(m_progress, total);
    });
    connect(m_runner, &PatchingRunner::finished, this, [this] {
        updateControls();
        showGrids();
        const Index missing = m_exactSlice.nonFiniteCells + m_attributionSlice.nonFiniteCells;
        if (missing > 0)
            showMessage(tr("%n cell(s) gave a value that is not a finite number; they are left grey.", "",
                           int(missing)),
                        true);
    });
    connect(m_runner, &PatchingRunner::failed, this, [this](const QString& error) {
        updateControls();
        showMessage(error.isEmpty() ? tr("Stopped: the cells computed so far are shown.")
                                    : tr("Cannot patch: %1").arg(error),
                    !error.isEmpty());
    });
}

namespace {

/// What the session keeps of a run: Both is kept as the exact grid, the reference the estimate is read
/// against.
PatchExperiment experimentOf(const PatchingRequest& request)
{
    PatchExperiment experiment;
    experiment.clean = request.pair.clean;
    experiment.corrupt = request.pair.corrupt;
    experiment.answer = request.pair.answer;
    experiment.wrong = request.pair.wrong;
    experiment.site = request.site;
    experiment.method = request.methods.back();
    if (request.firstPosition > 0 || request.lastPosition >= 0)
        experiment.positions = std::pair{request.firstPosition, request.lastPosition};
    return experiment;
}

} // namespace

void PatchingPanel::onModelOpened()
{
    const std::shared_ptr<const Model> model = m_loading->model();
    m_prompts->setModel(model, m_loading->request().precision);
    const std::optional<ModelLink>& link = m_loading->document()->session().model;
    if (model && link && link->patching) {
        // A session saved with an experiment: its fields come back as they were (run it with Run).
        const PatchExperiment& e = *link->patching;
        m_prompts->setPrompts(promptText(*model, e.clean), promptText(*model, e.corrupt));
        m_prompts->setTokens(QStringLiteral("#%1").arg(e.answer), QStringLiteral("#%1").arg(e.wrong));
        setSite(e.site);
        setMethods(e.method == PatchMethod::Exact ? Methods::Exact : Methods::Attribution);
        setPositionRange(e.positions
                             ? std::optional(std::pair{int(e.positions->first), int(e.positions->second)})
                             : std::nullopt);
    } else if (model && m_prompts->input().cleanText.isEmpty()) {
        // The model's own text is a first clean prompt; the corrupted one is the person's to write.
        const ModelHeadRequest& request = m_loading->request();
        const QString clean =
            request.text.empty() ? promptText(*model, request.ids) : QString::fromStdString(request.text);
        m_prompts->setPrompts(clean, m_prompts->input().corruptText);
    }
    updateControls();
}

Heatmap* PatchingPanel::grid(PatchMethod method) const
{
    return method == PatchMethod::Exact ? m_exact : m_attribution;
}

void PatchingPanel::setSite(PatchSite site)
{
    m_site->setCurrentIndex(m_site->findData(int(site)));
}

void PatchingPanel::setMethods(Methods methods)
{
    m_methods->setCurrentIndex(m_methods->findData(int(methods)));
}

void PatchingPanel::setPositionRange(std::optional<std::pair<int, int>> range)
{
    m_limitPositions->setChecked(range.has_value());
    if (range) {
        m_lastPosition->setMinimum(0);
        m_firstPosition->setValue(range->first);
        m_lastPosition->setValue(range->second);
    }
}

void PatchingPanel::setShownPosition(int position)
{
    const int index = m_depth->findData(position);
    if (index >= 0)
        m_depth->setCurrentIndex(index);
}

bool PatchingPanel::isRunning() const
{
    return m_runner->isRunning();
}

QString PatchingPanel::message() const
{
    return m_status->text();
}

const PatchGridSlice& PatchingPanel::shownSlice(PatchMethod method) const
{
    return method == PatchMethod::Exact ? m_exactSlice : m_attributionSlice;
}

void PatchingPanel::updatePositionLimits()
{
    const int last = std::max<int>(0, int(m_prompts->cleanTokens().ids.size()) - 1);
    for (QSpinBox* spin : {m_firstPosition, m_lastPosition})
        spin->setMaximum(last);
    if (!m_limitPositions->isChecked())
        m_lastPosition->setValue(last);
}

void PatchingPanel::updateControls()
{
    const bool running = m_runner->isRunning();
    const auto site = PatchSite(m_site->currentData().toInt());
    const bool positional = patchSiteHasPositions(site);
    m_limitPositions->setEnabled(positional);
    m_firstPosition->setEnabled(positional && m_limitPositions->isChecked());
    m_lastPosition->setEnabled(positional && m_limitPositions->isChecked());
    m_run->setEnabled(m_loading->model() != nullptr);
    m_stop->setVisible(running);
    m_progress->setVisible(running);
}

bool PatchingPanel::run()
{
    const std::shared_ptr<const Model> model = m_loading->model();
    if (!model) {
        showMessage(tr("Open a model first (File ▸ Open Model…)."), true);
        return false;
    }
    PatchingInput input = m_prompts->input();
    input.site = PatchSite(m_site->currentData().toInt());
    input.limitPositions = m_limitPositions->isChecked();
    input.firstPosition = m_firstPosition->value();
    input.lastPosition = m_lastPosition->value();
    const QString problem = patchingInputProblem(input);
    if (!problem.isEmpty()) {
        showMessage(problem, true); // the grids shown, and a grid being computed, stay
        return false;
    }
    PatchingRequest request;
    request.model = model;
    request.pair = {input.clean.ids, input.corrupt.ids, *input.answer, *input.wrong};
    request.site = input.site;
    switch (Methods(m_methods->currentData().toInt())) {
    case Methods::Exact:
        request.methods = {PatchMethod::Exact};
        break;
    case Methods::Attribution:
        request.methods = {PatchMethod::Attribution};
        break;
    case Methods::Both: // the estimate first: it is ready at once
        request.methods = {PatchMethod::Attribution, PatchMethod::Exact};
        break;
    }
    if (input.limitPositions && patchSiteHasPositions(input.site)) {
        request.firstPosition = input.firstPosition;
        request.lastPosition = input.lastPosition;
    }
    request.precision = m_loading->request().precision;
    m_loading->document()->recordPatchExperiment(experimentOf(request));
    m_pendingTokens = input.clean.labels;
    showMessage(QString(), false);
    m_runner->start(request);
    return true;
}

bool PatchingPanel::runExperiment(const std::vector<std::int64_t>& clean,
                                  const std::vector<std::int64_t>& corrupt, std::int64_t answer,
                                  std::int64_t wrong, PatchSite site, Methods methods)
{
    const std::shared_ptr<const Model> model = m_loading->model();
    const auto written = [&model](const std::vector<std::int64_t>& ids) -> QString {
        if (model)
            return promptText(*model, ids);
        QStringList numbers;
        for (std::int64_t id : ids)
            numbers << QString::number(id);
        return QLatin1Char('#') + numbers.join(QLatin1Char(' '));
    };
    m_prompts->setPrompts(written(clean), written(corrupt));
    m_prompts->setTokens(QStringLiteral("#%1").arg(answer), QStringLiteral("#%1").arg(wrong));
    setSite(site);
    setMethods(methods);
    setPositionRange(std::nullopt);
    return run();
}

void PatchingPanel::stop()
{
    m_runner->stop();
}

void PatchingPanel::setMetrics(std::optional<double> clean, std::optional<double> corrupt)
{
    const auto text = [](std::optional<double> value) {
        return value && std::isfinite(*value) ? Heatmap::formatValue(*value) : QStringLiteral("–");
    };
    QString cleanText = text(clean), corruptText = text(corrupt);
    if (clean && corrupt && cleanText == corruptText && *clean != *corrupt) { // close: show where they differ
        cleanText = QString::number(*clean, 'g', 12);
        corruptText = QString::number(*corrupt, 'g', 12);
    }
    m_metrics->setText(clean || corrupt ? tr("m_clean %1, m_corrupt %2").arg(cleanText, corruptText)
                                        : QString());
}

void PatchingPanel::showMessage(const QString& message, bool problem)
{
    m_status->setText(message);
    m_status->setStyleSheet(problem ? QStringLiteral("color: #a40000") : QString());
    m_status->setVisible(!message.isEmpty());
}

// The grids of the request shown, as far as they are computed: one heatmap per method asked for, the
// scatter when both are, one position of head_out_pos.
void PatchingPanel::showGrids()
{
    const PatchingRequest& request = m_runner->request();
    const auto asked = [&request](PatchMethod method) {
        return std::find(request.methods.begin(), request.methods.end(), method) != request.methods.end();
    };
    const std::optional<PatchGrid>& exact = m_runner->grid(PatchMethod::Exact);
    const std::optional<PatchGrid>& attribution = m_runner->grid(PatchMethod::Attribution);
    const PatchGrid* any = exact ? &*exact : attribution ? &*attribution : nullptr;
    const bool layered = request.site == PatchSite::HeadOutPos && any;
    m_depthRow->setVisible(layered);
    if (layered && m_depth->count() != int(any->depth)) {
        const QSignalBlocker blocker(m_depth);
        const int shown = m_depth->currentData().isValid() ? m_depth->currentData().toInt() : -1;
        m_depth->clear();
        for (Index k = 0; k < any->depth; ++k)
            m_depth->addItem(positionLabel(any->firstPosition + k, m_shownTokens),
                             int(any->firstPosition + k));
        // The last position first: the one whose prediction is measured.
        const int index = m_depth->findData(shown);
        m_depth->setCurrentIndex(index >= 0 ? index : m_depth->count() - 1);
    }
    const Index depth = layered ? std::max(0, m_depth->currentIndex()) : 0;
    m_exactSlice = exact ? patchGridSlice(*exact, depth, m_shownTokens) : PatchGridSlice();
    m_attributionSlice = attribution ? patchGridSlice(*attribution, depth, m_shownTokens) : PatchGridSlice();
    const double range = sharedColorRange(m_exactSlice, m_attributionSlice);
    const QString site = patchSiteTitle(request.site);
    for (PatchMethod method : {PatchMethod::Exact, PatchMethod::Attribution}) {
        Heatmap* heatmap = grid(method);
        const PatchGridSlice& slice = shownSlice(method);
        heatmap->setVisible(asked(method) || request.methods.empty());
        heatmap->setFixedRange(-range, range);
        heatmap->setAxisTitles(tr("layer"), slice.columnTitle);
        heatmap->setTitle(request.methods.empty()        ? QString()
                          : method == PatchMethod::Exact ? tr("Exact: %1").arg(site)
                                                         : tr("Attribution: %1").arg(site));
        heatmap->setMatrix(slice.normalized, slice.rowLabels, slice.columnLabels);
        heatmap->setMasked(&slice.computed);
        heatmap->setCellDescriber([this, method](Index row, Index column) {
            return patchCellDescription(shownSlice(method), row, column, methodTitle(method));
        });
    }
    const bool both = asked(PatchMethod::Exact) && asked(PatchMethod::Attribution);
    m_scatter->setVisible(both);
    shareGridWidths();
    if (both) {
        const PatchScatterPoints points = patchScatterPoints(m_exactSlice, m_attributionSlice);
        m_scatter->setPoints(points.exact, points.attribution, points.labels, QString()); // its axes say it
    }
}

void PatchingPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    arrangeGrids();
}

// Side by side while each pane has room for a readable heatmap, else one above the other (a narrow dock, a
// scale factor of 2); either way the panel scrolls rather than squeezing the grids below reading size.
void PatchingPanel::arrangeGrids()
{
    const int paneWidth = width() * 3 / 8;
    const Qt::Orientation orientation =
        paneWidth >= fontMetrics().averageCharWidth() * 30 ? Qt::Horizontal : Qt::Vertical;
    const int height = fontMetrics().height() * (orientation == Qt::Horizontal ? 16 : 42);
    if (orientation == m_grids->orientation() && m_grids->minimumHeight() == height)
        return;
    m_grids->setOrientation(orientation);
    m_grids->setMinimumHeight(height);
    m_gridShares.clear();
    shareGridWidths();
}

// The panes shown share the splitter's width 3 : 3 : 2 whenever the set shown changes (a pane shown again
// would otherwise take its room from one neighbour only).
void PatchingPanel::shareGridWidths()
{
    QList<int> shares;
    for (int pane = 0; pane < m_grids->count(); ++pane)
        shares << (m_grids->widget(pane)->isVisibleTo(m_grids) ? (pane == 2 ? 2 : 3) : 0);
    if (shares == m_gridShares)
        return;
    m_gridShares = shares;
    int total = 0, parts = 0;
    for (int pane = 0; pane < m_grids->count(); ++pane) {
        total += m_grids->sizes().at(pane);
        parts += shares.at(pane);
    }
    total = std::max(total, m_grids->orientation() == Qt::Horizontal ? m_grids->width() : m_grids->height());
    QList<int> sizes;
    for (int share : std::as_const(shares))
        sizes << (parts > 0 ? total * share / parts : 0);
    m_grids->setSizes(sizes);
}

// A head's cell opens that layer and head on the clean prompt (a key/value head: the first query head
// that reads it).
void PatchingPanel::openCell(PatchMethod method, int row, int column)
{
    const PatchingRequest& request = m_runner->request();
    const PatchGridSlice& slice = shownSlice(method);
    if (!opensHeads(request.site) || !request.model || request.model != m_loading->model() || row < 0 ||
        column < 0 || row >= slice.computed.rows() || column >= slice.computed.cols())
        return;
    Index head = column;
    if (request.site == PatchSite::HeadK || request.site == PatchSite::HeadV)
        head = column * request.model->config().groupSize();
    const QString clean = m_prompts->input().cleanText;
    const bool fromText =
        !clean.trimmed().startsWith(QLatin1Char('#')) && m_prompts->cleanTokens().ids == request.pair.clean;
    m_loading->openHead(row, head, request.pair.clean, fromText ? clean.toStdString() : std::string());
}

} // namespace qkv::ui
