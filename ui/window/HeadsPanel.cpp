// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeadsPanel.h"

#include "Error.h"
#include "HeadGridCsv.h"
#include "Heatmap.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "OnScreenRefresh.h"
#include "PredictionPanel.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace qkv::ui {

HeadsPanel::HeadsPanel(ModelRunner* runner, ModelLoading* loading, PredictionPanel* prediction,
                       QWidget* parent)
    : QWidget(parent), m_runner(runner), m_loading(loading), m_prediction(prediction),
      m_mode(new QComboBox(this)), m_options(new QStackedWidget(this)), m_score(new QComboBox(this)),
      m_sweepKind(new QComboBox(this)), m_sweepMetric(new QComboBox(this)),
      m_run(new QPushButton(tr("&Run Sweep"), this)), m_stop(new QPushButton(tr("Stop"), this)),
      m_csv(new QPushButton(tr("CSV…"), this)), m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)), m_grid(new Heatmap(this)), m_attribution(this)
{
    setObjectName(QStringLiteral("headsPanel"));
    m_mode->setObjectName(QStringLiteral("headsMode"));
    m_mode->addItem(tr("Head scores"), int(Mode::Scores));
    m_mode->addItem(tr("Ablation sweep"), int(Mode::Sweep));
    m_mode->addItem(tr("Direct logit attribution"), int(Mode::Attribution));
    m_mode->setToolTip(tr("What the grid shows for every layer and head"));
    m_mode->setWhatsThis(tr("<p><b>Head scores</b>: what each head's attention does on the text (previous "
                            "token, duplicate token, induction, first token, self, entropy). <b>Ablation "
                            "sweep</b>: how much the loss (or the logit difference of the Prediction tab) "
                            "changes when each head in turn is ablated. <b>Direct logit attribution</b>: "
                            "each head's direct contribution to the logit of the token picked in the "
                            "Prediction tab (or to A − B), at its position.</p>"));

    m_options->addWidget(createScoreOptions());
    m_options->addWidget(createSweepOptions());
    auto* attribution = new QLabel(tr("for the tokens and position of the Prediction tab"), this);
    m_options->addWidget(attribution);

    m_status->setObjectName(QStringLiteral("headsStatus"));
    m_status->setWordWrap(true);
    m_grid->setObjectName(QStringLiteral("headGrid"));
    m_grid->setWhatsThis(
        tr("<h3>Head Scores</h3><p>Every layer (rows) and head (columns) of the model opened "
           "last as one grid: a head score, the ablation sweep or the direct logit "
           "attribution, chosen above. Hover a cell for its value; click it to open that "
           "head. With a score shown, What's This gives the score's formula.</p>"));
    m_csv->setObjectName(QStringLiteral("exportHeadsCsv"));
    m_csv->setToolTip(tr("Save the grid's numbers as CSV: one row per layer, one column per head"));
    auto* row = new QHBoxLayout;
    row->setContentsMargins(4, 2, 4, 0);
    row->addWidget(m_mode);
    row->addWidget(m_options, 1);
    row->addWidget(m_csv);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(row);
    layout->addWidget(m_status);
    layout->addWidget(m_grid, 1);

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        m_options->setCurrentIndex(m_mode->currentIndex());
        updateControls();
        m_refresh->request();
    });
    connectRunner();
    updateControls();
    refresh();
}

// Scores: which score, and the probe text for induction heads.
QWidget* HeadsPanel::createScoreOptions()
{
    auto* scores = new QWidget(this);
    m_score->setObjectName(QStringLiteral("headScore"));
    for (HeadScore score : allHeadScores)
        m_score->addItem(QString::fromUtf8(displayName(score)));
    m_score->setToolTip(tr("The head score shown; What's This (Shift+F1) on the grid gives its formula"));
    auto* probe = new QPushButton(tr("Repeated Random Tokens…"), scores);
    probe->setObjectName(QStringLiteral("repeatedTokens"));
    probe->setToolTip(tr("Replace the model's text by a random sequence repeated twice: induction heads "
                         "attend from the second copy to the token after the same token in the first"));
    auto* scoresRow = new QHBoxLayout(scores);
    scoresRow->setContentsMargins(0, 0, 0, 0);
    scoresRow->addWidget(m_score);
    scoresRow->addWidget(probe);
    scoresRow->addStretch(1);

    connect(probe, &QPushButton::clicked, this, &HeadsPanel::promptRepeatedTokens);
    return scores;
}

// Sweep: kind, metric, run and stop.
QWidget* HeadsPanel::createSweepOptions()
{
    auto* sweep = new QWidget(this);
    m_sweepKind->setObjectName(QStringLiteral("sweepKind"));
    m_sweepKind->addItem(tr("Zero ablation"), int(Intervention::Kind::Zero));
    m_sweepKind->addItem(tr("Mean ablation"), int(Intervention::Kind::Mean));
    m_sweepKind->setToolTip(tr("How each head is ablated: its output z set to 0, or to its mean row"));
    m_sweepMetric->setObjectName(QStringLiteral("sweepMetric"));
    m_sweepMetric->addItem(tr("Δ loss"), int(SweepMetric::Kind::Loss));
    m_sweepMetric->addItem(tr("Δ logit difference"), int(SweepMetric::Kind::LogitDifference));
    m_sweepMetric->setToolTip(tr("What is measured: the change of the mean loss, or of logit(A) − logit(B) "
                                 "at the Prediction tab's position and tokens"));
    m_run->setObjectName(QStringLiteral("runSweep"));
    m_run->setToolTip(tr("Ablate every head in turn and measure (Ctrl+R); runs in the background"));
    m_run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_stop->setObjectName(QStringLiteral("stopSweep"));
    m_stop->setToolTip(tr("Stop the sweep"));
    m_progress->setObjectName(QStringLiteral("sweepProgress"));
    m_progress->setFormat(tr("%v of %m heads"));
    m_progress->setMaximumWidth(180);
    auto* sweepRow = new QHBoxLayout(sweep);
    sweepRow->setContentsMargins(0, 0, 0, 0);
    for (QWidget* widget :
         {static_cast<QWidget*>(m_sweepKind), static_cast<QWidget*>(m_sweepMetric),
          static_cast<QWidget*>(m_run), static_cast<QWidget*>(m_stop), static_cast<QWidget*>(m_progress)})
        sweepRow->addWidget(widget);
    sweepRow->addStretch(1);
    return sweep;
}

void HeadsPanel::connectRunner()
{
    connect(m_score, &QComboBox::currentIndexChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_run, &QPushButton::clicked, this, &HeadsPanel::runSweep);
    connect(m_csv, &QPushButton::clicked, this, &HeadsPanel::exportCsvDialog);
    connect(m_stop, &QPushButton::clicked, this, &HeadsPanel::stopSweep);
    connect(m_runner, &ModelRunner::runChanged, this, [this] {
        m_sweep = Matrix();
        updateControls();
        m_refresh->request();
    });
    connect(m_runner, &ModelRunner::sweepProgress, this, [this](int done, int total) {
        m_progress->setRange(0, total);
        m_progress->setValue(done);
    });
    connect(m_runner, &ModelRunner::sweepFinished, this, [this](const Matrix& values) {
        m_sweep = values;
        m_sweepRun = m_runner->run().get();
        updateControls();
        m_refresh->request();
    });
    connect(m_runner, &ModelRunner::sweepFailed, this, [this](const QString& message) {
        updateControls();
        if (!message.isEmpty())
            m_status->setText(tr("The sweep failed: %1").arg(message));
    });
    connect(m_prediction, &PredictionPanel::pickChanged, this, [this] {
        if (mode() == Mode::Attribution)
            m_refresh->request();
    });
    connect(m_grid, &Heatmap::cellClicked, this, [this](int layer, int head) {
        if (m_values.size() > 0)
            m_loading->openHead(layer, head);
    });
}

HeadsPanel::~HeadsPanel() = default;

HeadsPanel::Mode HeadsPanel::mode() const
{
    return Mode(m_mode->currentData().toInt());
}

void HeadsPanel::setMode(Mode mode)
{
    m_mode->setCurrentIndex(m_mode->findData(int(mode)));
}

void HeadsPanel::setScore(int index)
{
    m_score->setCurrentIndex(index);
}

bool HeadsPanel::isBusy() const
{
    return (mode() == Mode::Sweep && m_runner->isSweeping()) ||
           (mode() == Mode::Attribution && m_attribution.isBusy());
}

void HeadsPanel::updateControls()
{
    const bool sweeping = m_runner->isSweeping();
    m_run->setEnabled(m_runner->run() && !sweeping);
    m_stop->setVisible(sweeping);
    m_progress->setVisible(sweeping);
    if (sweeping)
        m_progress->setRange(0, 0);
}

void HeadsPanel::runSweep()
{
    const std::shared_ptr<const ModelRun> run = m_runner->run();
    if (!run || m_runner->isSweeping())
        return;
    SweepMetric metric;
    metric.kind = SweepMetric::Kind(m_sweepMetric->currentData().toInt());
    if (metric.kind == SweepMetric::Kind::LogitDifference) {
        if (!m_prediction->tokenA() || !m_prediction->tokenB()) {
            m_status->setText(
                tr("Pick tokens A and B for the logit difference in the Prediction tab first."));
            return;
        }
        metric.tokenA = *m_prediction->tokenA();
        metric.tokenB = *m_prediction->tokenB();
        metric.position = m_prediction->position();
    }
    const auto kind = Intervention::Kind(m_sweepKind->currentData().toInt());
    m_sweepAblation = kind;
    m_sweepMetricUsed = metric;
    m_status->clear();
    m_runner->startSweep(kind, metric);
    updateControls();
    m_refresh->request();
}

void HeadsPanel::stopSweep()
{
    m_runner->stopSweep();
    m_status->setText(tr("Sweep stopped."));
}

void HeadsPanel::refresh()
{
    const std::shared_ptr<const ModelRun> run = m_runner->run();
    if (!run) {
        showMessage(m_runner->isBuilding() ? tr("Running the model…")
                                           : tr("Open a model (File ▸ Open Model…) to see every head."));
        return;
    }
    switch (mode()) {
    case Mode::Scores:
        showFigure(QStringLiteral("scores"), figureInput(run));
        return;
    case Mode::Sweep:
        m_grid->setFigureName(QStringLiteral("sweep"));
        if (m_runner->isSweeping()) {
            showMessage(tr("Ablating every head in turn…"));
            return;
        }
        if (m_sweep.size() == 0 || m_sweepRun != run.get()) {
            showMessage(tr("Choose how to ablate and what to measure, then Run Sweep (Ctrl+R)."));
            return;
        }
        showFigure(QStringLiteral("sweep"), figureInput(run));
        return;
    case Mode::Attribution: {
        m_grid->setFigureName(QStringLiteral("attribution"));
        // One row of W_U per head and layer: on a worker thread.
        const ModelFigureInput input = figureInput(run);
        m_attribution.run(
            true,
            [input]() -> std::pair<ModelFigureContent, QString> {
                try {
                    return {ModelFigures::find(QStringLiteral("attribution"))->compute(input), QString()};
                } catch (const Error& e) {
                    return {HeadGridDisplay(), QString::fromStdString(e.what())};
                }
            },
            [this](std::pair<ModelFigureContent, QString> outcome) {
                if (mode() != Mode::Attribution)
                    return;
                if (!outcome.second.isEmpty()) {
                    showMessage(tr("Cannot compute the attribution: %1").arg(outcome.second));
                    return;
                }
                showGrid(QStringLiteral("attribution"), outcome.first);
            });
        return;
    }
    }
}

ModelFigureInput HeadsPanel::figureInput(const std::shared_ptr<const ModelRun>& run) const
{
    ModelFigureInput input = ModelFigureInput::forRun(run, QString::fromStdString(modelName(run->model())));
    input.score = allHeadScores[std::size_t(std::max(0, m_score->currentIndex()))];
    input.position = std::clamp(m_prediction->position(), 0, int(run->tokens()) - 1);
    input.tokenA = m_prediction->tokenA();
    input.tokenB = m_prediction->tokenB();
    input.ablation = m_sweepAblation;
    input.metric = m_sweepMetricUsed;
    input.sweep = m_sweep;
    return input;
}

void HeadsPanel::showFigure(const QString& name, const ModelFigureInput& input)
{
    try {
        showGrid(name, ModelFigures::find(name)->compute(input));
    } catch (const Error& e) {
        showMessage(QString::fromStdString(e.what()));
    }
}

void HeadsPanel::showGrid(const QString& name, const ModelFigureContent& content)
{
    const HeadGridDisplay& grid = std::get<HeadGridDisplay>(content);
    if (!grid.values.allFinite()) {
        showMessage(tr("The grid has values that are not finite numbers; nothing is shown."));
        return;
    }
    m_values = grid.values;
    m_message.clear();
    m_status->setText(QString());
    ModelFigures::find(name)->show(m_grid, content);
}

void HeadsPanel::showMessage(const QString& message)
{
    m_values = Matrix();
    m_message = message;
    m_status->setText(message);
    m_grid->clear();
    m_grid->setTitle(QString());
}

QString HeadsPanel::csv() const
{
    return QString::fromStdString(headGridCsv(m_values));
}

bool HeadsPanel::writeCsv(const QString& path, QString* error) const
{
    if (m_values.size() == 0) {
        *error = tr("The grid is empty: %1").arg(m_message);
        return false;
    }
    return writeHeadGridCsv(path, m_values, error);
}

void HeadsPanel::exportCsvDialog()
{
    const QString name = m_grid->figureName().isEmpty() ? QStringLiteral("heads") : m_grid->figureName();
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Grid as CSV"),
                                                      name + QStringLiteral(".csv"), tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !writeCsv(path, &error))
        QMessageBox::warning(this, tr("Cannot export"), error);
}

void HeadsPanel::promptRepeatedTokens()
{
    const std::shared_ptr<const Model> model = m_loading->model();
    if (!model) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    const Index positions = model->config().maxPositions;
    bool ok = false;
    const int length = QInputDialog::getInt(
        this, tr("Repeated Random Tokens"),
        tr("A random sequence of this many tokens, then the same again (the model's text becomes twice as "
           "long):"),
        std::min<int>(20, int(positions / 2)), 1, int(std::max<Index>(1, positions / 2)), 1, &ok);
    if (!ok)
        return;
    const std::vector<std::int64_t> ids = repeatedRandomTokens(
        length, std::int64_t(model->config().vocabSize), QRandomGenerator::global()->generate64());
    if (m_loading->openIds(ids))
        setMode(Mode::Scores);
}

} // namespace qkv::ui
