#include "TrainingPanel.h"

#include "HeadScores.h"
#include "Model.h"
#include "ModelLoading.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <qcustomplot.h>

#include <algorithm>

namespace qkv::ui {

using training::TaskKind;

namespace {

const TaskKind kTasks[] = {TaskKind::Induction, TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort,
                           TaskKind::AssociativeRecall};

QSpinBox* spinBox(int low, int high, const QString& tip, const char* name)
{
    auto* box = new QSpinBox;
    box->setRange(low, high);
    box->setToolTip(tip);
    box->setObjectName(QLatin1String(name));
    return box;
}

QCustomPlot* newPlot(const QString& title, const QString& yLabel, const char* name)
{
    auto* plot = new QCustomPlot;
    plot->setObjectName(QLatin1String(name));
    plot->setMinimumSize(220, 160);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(plot->font().family(), 9)));
    plot->xAxis->setLabel(QObject::tr("step"));
    plot->yAxis->setLabel(yLabel);
    plot->legend->setVisible(true);
    QFont legendFont = plot->font();
    legendFont.setPointSizeF(7.5);
    plot->legend->setFont(legendFont);
    return plot;
}

QColor lineColor(int index)
{
    static const QColor colors[] = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                                    QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                    QColor(227, 119, 194), QColor(127, 127, 127)};
    return colors[index % 8];
}

} // namespace

TrainingPanel::TrainingPanel(ModelLoading* loading, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_timer(new QTimer(this)),
      m_watcher(new QFutureWatcher<void>(this))
{
    setObjectName(QStringLiteral("trainingPanel"));
    m_lossPlot = newPlot(tr("Loss"), tr("cross-entropy"), "lossPlot");
    m_lossPlot->yAxis->setScaleType(QCPAxis::stLogarithmic);
    m_lossPlot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    m_lossPlot->setToolTip(
        tr("Training loss of every step and validation loss on held-out sequences (log scale)"));
    m_inductionPlot = newPlot(tr("Induction score"), tr("score"), "inductionPlot");
    m_inductionPlot->setToolTip(
        tr("Induction score of every head in layer 1 and above, on repeated random tokens"));
    m_previousPlot = newPlot(tr("Previous-token score"), tr("score"), "previousPlot");
    m_previousPlot->setToolTip(tr("Previous-token score of every head, on repeated random tokens"));
    for (QCustomPlot* plot : {m_inductionPlot, m_previousPlot})
        plot->yAxis->setRange(0.0, 1.0);

    auto* plots = new QHBoxLayout;
    for (QCustomPlot* plot : {m_lossPlot, m_inductionPlot, m_previousPlot})
        plots->addWidget(plot, 1);
    auto* right = new QVBoxLayout;
    m_status = new QLabel(tr("Not started"));
    m_status->setObjectName(QStringLiteral("trainingStatus"));
    m_status->setToolTip(tr("The step, the last loss, the speed and the time left"));
    m_folderLabel = new QLabel;
    m_folderLabel->setObjectName(QStringLiteral("trainingFolder"));
    m_folderLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_folderLabel->setToolTip(tr("The folder the trained model is written to"));
    right->addWidget(m_status);
    right->addWidget(m_folderLabel);
    right->addLayout(plots, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(buildForm());
    layout->addLayout(right, 1);

    fillFromRecipe();
    resetPlots();
    m_timer->setInterval(250); // drawing cadence: a few repaints a second however fast the steps come
    connect(m_timer, &QTimer::timeout, this, &TrainingPanel::drawPending);
    connect(m_watcher, &QFutureWatcher<void>::finished, this, &TrainingPanel::onFinished);
}

TrainingPanel::~TrainingPanel()
{
    m_stopRequested = true;
    m_watcher->waitForFinished();
}

QWidget* TrainingPanel::buildForm()
{
    auto* form = new QWidget;
    auto* layout = new QFormLayout(form);
    m_task = new QComboBox;
    m_task->setObjectName(QStringLiteral("trainingTask"));
    for (TaskKind kind : kTasks)
        m_task->addItem(QString::fromLatin1(training::toString(kind)), int(kind));
    m_task->setToolTip(tr("The task the model learns; induction: continue a repeated random sequence"));
    m_layers = spinBox(1, 4, tr("Transformer layers (an induction head needs two)"), "trainingLayers");
    m_heads = spinBox(1, 8, tr("Attention heads per layer"), "trainingHeads");
    m_dModel = spinBox(8, 512, tr("Width of the residual stream; must be a multiple of the heads"),
                       "trainingDModel");
    m_dModel->setSingleStep(8);
    m_mlp = new QCheckBox(tr("MLP"));
    m_mlp->setObjectName(QStringLiteral("trainingMlp"));
    m_mlp->setToolTip(tr("An MLP of width 4 × d_model after each attention layer; off: attention only"));
    m_positions = new QComboBox;
    m_positions->setObjectName(QStringLiteral("trainingPositions"));
    m_positions->addItem(tr("RoPE"), true);
    m_positions->addItem(tr("Learned"), false);
    m_positions->setToolTip(
        tr("How positions enter: rotary (LLaMA style) or learned embeddings (GPT-2 style)"));
    m_rate = new QDoubleSpinBox;
    m_rate->setObjectName(QStringLiteral("trainingRate"));
    m_rate->setDecimals(5);
    m_rate->setRange(0.00001, 1.0);
    m_rate->setSingleStep(0.0005);
    m_rate->setToolTip(tr("AdamW's peak learning rate (reached after a linear warm-up)"));
    m_batch = spinBox(1, 1024, tr("Sequences per step"), "trainingBatch");
    m_steps = spinBox(1, 1000000, tr("Optimizer steps in the run"), "trainingSteps");
    m_seed = spinBox(0, 1000000, tr("Seeds the initial weights and the sequences drawn"), "trainingSeed");
    connect(m_task, &QComboBox::currentIndexChanged, this, [this] { fillFromRecipe(); });
    layout->addRow(tr("Task"), m_task);
    layout->addRow(tr("Layers"), m_layers);
    layout->addRow(tr("Heads"), m_heads);
    layout->addRow(tr("d_model"), m_dModel);
    layout->addRow(QString(), m_mlp);
    layout->addRow(tr("Positions"), m_positions);
    layout->addRow(tr("Learning rate"), m_rate);
    layout->addRow(tr("Batch"), m_batch);
    layout->addRow(tr("Steps"), m_steps);
    layout->addRow(tr("Seed"), m_seed);

    m_start = new QPushButton(tr("Start"));
    m_start->setObjectName(QStringLiteral("trainingStart"));
    m_start->setToolTip(tr("Train a new model with these settings on a background thread"));
    m_stop = new QPushButton(tr("Stop"));
    m_stop->setObjectName(QStringLiteral("trainingStop"));
    m_stop->setToolTip(tr("Stop after the current step; the model trained so far is saved"));
    m_stop->setEnabled(false);
    m_open = new QPushButton(tr("Open in Model view"));
    m_open->setObjectName(QStringLiteral("trainingOpen"));
    m_open->setToolTip(tr("Open the trained model's layer 0 on repeated random tokens in the model view"));
    m_open->setEnabled(false);
    connect(m_start, &QPushButton::clicked, this, &TrainingPanel::start);
    connect(m_stop, &QPushButton::clicked, this, &TrainingPanel::stop);
    connect(m_open, &QPushButton::clicked, this, [this] { openInModelView(); });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_start);
    buttons->addWidget(m_stop);
    layout->addRow(buttons);
    layout->addRow(m_open);
    return form;
}

void TrainingPanel::fillFromRecipe()
{
    const auto kind = TaskKind(m_task->currentData().toInt());
    const training::Recipe recipe = training::defaultRecipe(kind);
    const training::Architecture& a = recipe.architecture;
    m_layers->setValue(int(a.layers));
    m_heads->setValue(int(a.heads));
    m_dModel->setValue(int(a.dModel));
    m_mlp->setChecked(a.hasMlp());
    m_positions->setCurrentIndex(a.family == ModelFamily::Llama ? 0 : 1);
    m_rate->setValue(recipe.learningRate);
    m_batch->setValue(int(recipe.batch));
    m_steps->setValue(int(recipe.steps));
    if (m_seed->value() == 0)
        m_seed->setValue(1);
}

training::TrainSettings TrainingPanel::settingsFromForm() const
{
    const auto kind = TaskKind(m_task->currentData().toInt());
    const training::Recipe recipe = training::defaultRecipe(kind);
    training::TrainSettings s;
    training::Architecture& a = s.architecture;
    a = recipe.architecture;
    a.layers = m_layers->value();
    a.heads = a.kvHeads = m_heads->value();
    a.dModel = m_dModel->value();
    a.headDim = std::max<Index>(1, a.dModel / a.heads);
    a.inner = m_mlp->isChecked() ? 4 * a.dModel : 0;
    const bool rope = m_positions->currentData().toBool();
    a.family = rope ? ModelFamily::Llama : ModelFamily::Gpt2;
    a.modelType = rope ? "llama" : "gpt2";
    a.qkvBias = a.outputBias = a.mlpBias = !rope;
    a.vocab = a.positions = 0; // the task's
    training::TaskSettings task;
    task.kind = kind;
    s.task = task;
    s.steps = m_steps->value();
    s.batch = m_batch->value();
    s.optimizer.learningRate = m_rate->value();
    s.optimizer.warmupSteps = std::min<std::int64_t>(recipe.warmupSteps, s.steps / 10);
    s.seed = std::uint64_t(m_seed->value());
    return s;
}

void TrainingPanel::resetPlots()
{
    for (QCustomPlot* plot : {m_lossPlot, m_inductionPlot, m_previousPlot})
        plot->clearGraphs();
    m_lossPlot->addGraph()->setName(tr("train"));
    m_lossPlot->graph(0)->setPen(QPen(lineColor(0), 1.0));
    m_lossPlot->addGraph()->setName(tr("validation"));
    m_lossPlot->graph(1)->setPen(QPen(lineColor(1), 2.0));
    for (QCustomPlot* plot : {m_lossPlot, m_inductionPlot, m_previousPlot})
        plot->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingPanel::start()
{
    if (m_watcher->isRunning())
        return;
    const QString base = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    m_folder = QDir(base).filePath(QStringLiteral("training/") + QDateTime::currentDateTimeUtc().toString(
                                                                     QStringLiteral("yyyyMMdd-HHmmss-zzz")));
    QDir().mkpath(m_folder);
    m_running = settingsFromForm();
    m_running.out = m_folder.toStdString();
    m_folderLabel->setText(tr("Folder: %1").arg(QDir::toNativeSeparators(m_folder)));
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_pending.clear();
        m_error.clear();
        m_outcome = {};
    }
    m_stopRequested = false;
    m_finished = false;
    m_last = {};
    resetPlots();
    m_status->setText(tr("Starting…"));
    m_start->setEnabled(false);
    m_stop->setEnabled(true);
    m_open->setEnabled(false);
    const training::TrainSettings settings = m_running;
    m_watcher->setFuture(QtConcurrent::run([this, settings] {
        try {
            training::TrainOutcome outcome = training::train(settings, [this](const training::StepReport& r) {
                std::lock_guard<std::mutex> lock(m_mutex);
                m_pending.push_back(r);
                return !m_stopRequested.load();
            });
            std::lock_guard<std::mutex> lock(m_mutex);
            m_outcome = outcome;
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_error = QString::fromStdString(e.what());
        }
    }));
    m_timer->start();
}

void TrainingPanel::stop()
{
    m_stopRequested = true;
    m_stop->setEnabled(false);
}

void TrainingPanel::drawPending()
{
    std::vector<training::StepReport> reports;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        reports.swap(m_pending);
    }
    if (reports.empty())
        return;
    for (const training::StepReport& r : reports) {
        m_lossPlot->graph(0)->addData(double(r.step), r.loss);
        if (!r.evaluated)
            continue;
        m_lossPlot->graph(1)->addData(double(r.step), r.validationLoss);
        const Matrix& previous = r.scores.previousToken;
        const Matrix& induction = r.scores.induction;
        for (int layer = 0; layer < previous.rows(); ++layer)
            for (int head = 0; head < previous.cols(); ++head) {
                const int line = layer * int(previous.cols()) + head;
                if (m_previousPlot->graphCount() <= line) {
                    m_previousPlot->addGraph()->setName(tr("L%1 H%2").arg(layer).arg(head));
                    m_previousPlot->graph(line)->setPen(QPen(lineColor(line), 1.5));
                }
                m_previousPlot->graph(line)->addData(double(r.step), previous(layer, head));
            }
        for (int layer = 1; layer < induction.rows(); ++layer)
            for (int head = 0; head < induction.cols(); ++head) {
                const int line = (layer - 1) * int(induction.cols()) + head;
                if (m_inductionPlot->graphCount() <= line) {
                    m_inductionPlot->addGraph()->setName(tr("L%1 H%2").arg(layer).arg(head));
                    m_inductionPlot->graph(line)->setPen(QPen(lineColor(line), 1.5));
                }
                m_inductionPlot->graph(line)->addData(double(r.step), induction(layer, head));
            }
    }
    m_last = reports.back();
    for (QCustomPlot* plot : {m_lossPlot, m_inductionPlot, m_previousPlot}) {
        plot->xAxis->setRange(0.0, double(std::max<std::int64_t>(1, m_last.lastStep)));
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    m_lossPlot->yAxis->rescale();
    const qint64 left = qRound64(m_last.secondsLeft);
    m_status->setText(tr("Step %1 of %2 · loss %3 · %4 steps/s · %5:%6 left")
                          .arg(m_last.step)
                          .arg(m_last.lastStep)
                          .arg(m_last.loss, 0, 'f', 4)
                          .arg(m_last.stepsPerSecond, 0, 'f', 1)
                          .arg(left / 60)
                          .arg(left % 60, 2, 10, QLatin1Char('0')));
}

void TrainingPanel::onFinished()
{
    m_timer->stop();
    drawPending();
    QString error;
    training::TrainOutcome outcome;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        error = m_error;
        outcome = m_outcome;
    }
    m_start->setEnabled(true);
    m_stop->setEnabled(false);
    if (!error.isEmpty())
        m_status->setText(tr("Refused: %1").arg(error));
    else if (outcome.diverged)
        m_status->setText(tr("The loss stopped being finite at step %1; try a lower learning rate. The last "
                             "finite model was saved.")
                              .arg(outcome.divergedStep));
    else
        m_status->setText(tr("%1 after step %2 · loss %3")
                              .arg(outcome.stopped ? tr("Stopped") : tr("Finished"))
                              .arg(outcome.lastStep)
                              .arg(outcome.lastLoss, 0, 'f', 4));
    m_open->setEnabled(error.isEmpty() && outcome.lastStep > 0);
    m_finished = true;
    emit runFinished();
}

bool TrainingPanel::openInModelView()
{
    if (!m_loading || m_folder.isEmpty())
        return false;
    try {
        auto model = std::make_shared<const Model>(Model::open(m_folder.toStdString()));
        const training::Task task(*m_running.task);
        ModelHeadRequest request;
        request.layer = 0;
        const std::int64_t vocab = std::int64_t(task.modelVocab());
        request.ids =
            repeatedRandomTokens(std::max<Index>(1, task.sequenceLength() / 2), vocab, m_running.seed);
        return m_loading->open(model, request);
    } catch (const std::exception& e) {
        m_status->setText(tr("Cannot open the trained model: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
}

} // namespace qkv::ui
