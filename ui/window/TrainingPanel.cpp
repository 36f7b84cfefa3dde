// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingPanel.h"

#include "ElidedLabel.h"
#include "HeadScores.h"
#include "Model.h"
#include "ModelLoading.h"
#include "ModelView.h"
#include "TrainingForm.h"
#include "TrainingPlots.h"
#include "TrainingRun.h"

#include <QAction>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

TrainingPanel::TrainingPanel(ModelLoading* loading, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_form(new TrainingForm), m_plots(new TrainingPlots(this)),
      m_thumbnails(new ModelView), m_run(new TrainingRun(this)), m_timer(new QTimer(this))
{
    setObjectName(QStringLiteral("trainingPanel"));
    m_thumbnails->setObjectName(QStringLiteral("trainingThumbnails"));
    m_thumbnails->setToolTip(tr("The probe sequence's attention in every layer (rows) and head (columns); "
                                "click one to open it once the run has ended"));
    m_thumbnails->setWhatsThis(
        tr("<h3>Attention of the probe</h3><p>The attention weights of every layer (rows) and head "
           "(columns) on the probe sequence, at the newest evaluated step: queries down, keys across, "
           "masked cells grey. On the induction task a layer-0 head forms a diagonal just below the main "
           "one (it attends to the previous token), then a layer-1 head a diagonal half a sequence back "
           "(it attends to the token after the earlier copy). Once the run has ended, clicking a head "
           "opens it as the session, on the probe sequence.</p>"));
    clearThumbnails();

    m_status = new ElidedLabel;
    m_status->setObjectName(QStringLiteral("trainingStatus"));
    setStatus(tr("Not started"));
    m_folderLabel = new ElidedLabel;
    m_folderLabel->setObjectName(QStringLiteral("trainingFolder"));
    m_folderLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_folderLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed); // the form sets the width

    // The curves side by side, and the probe's loss beside its attention: in one row when the tab is wide,
    // as two tabs when it is not (the window's bottom dock at 1280 × 720).
    const auto splitter = [](const char* name, std::initializer_list<QWidget*> widgets) {
        auto* split = new QSplitter(Qt::Horizontal);
        split->setObjectName(QLatin1String(name));
        split->setChildrenCollapsible(false);
        for (QWidget* widget : widgets)
            split->addWidget(widget);
        for (int i = 0; i < split->count(); ++i)
            split->setStretchFactor(i, 1);
        return split;
    };
    m_curves = splitter("trainingCurves", {m_plots->loss(), m_plots->previous(), m_plots->induction()});
    m_probeRow = splitter("trainingProbe", {m_plots->probe(), m_thumbnails});
    m_wide = splitter("trainingWide", {});
    m_tabs = new QTabWidget;
    m_tabs->setObjectName(QStringLiteral("trainingTabs"));
    m_tabs->setDocumentMode(true);
    m_plotStack = new QStackedWidget;
    m_plotStack->addWidget(m_tabs);
    m_plotStack->addWidget(m_wide);
    arrangePlots(false);

    auto* scroll = new QScrollArea;
    scroll->setObjectName(QStringLiteral("trainingFormScroll"));
    scroll->setWidget(m_form);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(m_form->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    scroll->setMinimumHeight(60);
    auto* left = new QVBoxLayout;
    left->setContentsMargins(0, 0, 0, 0);
    left->addWidget(scroll, 1);
    left->addWidget(m_folderLabel);

    auto* top = new QHBoxLayout;
    top->setContentsMargins(0, 0, 0, 0);
    top->addWidget(buildButtons());
    top->addWidget(m_status, 1);
    auto* body = new QHBoxLayout;
    body->setContentsMargins(0, 0, 0, 0);
    body->addLayout(left);
    body->addWidget(m_plotStack, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addLayout(top);
    layout->addLayout(body, 1);
    setWhatsThis(tr("<h3>Training</h3><p>Trains a small transformer on a task made in the program, on a "
                    "background thread, and shows it learning: the loss, every head's previous-token and "
                    "induction scores, the loss at each position of a probe sequence and the probe's "
                    "attention in every head. Start, Pause, Step, Stop and Reset control the run; the model "
                    "is saved to its folder when the run ends, and can then be opened in the model "
                    "view.</p>"));

    m_timer->setInterval(250); // drawing cadence: a few repaints a second however fast the steps come
    connect(m_timer, &QTimer::timeout, this, &TrainingPanel::drawPending);
    connect(m_run, &TrainingRun::paused, this, &TrainingPanel::onPaused);
    connect(m_run, &TrainingRun::finished, this, &TrainingPanel::onFinished);
    connect(m_thumbnails, &ModelView::thumbnailClicked, this,
            [this](int layer, int head) { openHead(layer, head); });
    m_thumbnails->setThumbnailHint(
        tr("the probe's attention; once the run has ended, click to open this head"));
    updateButtons();
}

TrainingPanel::~TrainingPanel()
{
    m_run->stop();
}

QAction* TrainingPanel::addShortcut(QPushButton* button, const QString& text, const QKeySequence& key)
{
    auto* action = new QAction(text, this);
    action->setShortcut(key);
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut); // only while the tab has the focus
    connect(action, &QAction::triggered, button, &QPushButton::click);
    addAction(action);
    button->setToolTip(
        QStringLiteral("%1 (%2)").arg(button->toolTip(), key.toString(QKeySequence::NativeText)));
    m_actions.append({button, action});
    return action;
}

QWidget* TrainingPanel::buildButtons()
{
    auto* box = new QWidget;
    auto button = [box](const QString& text, const char* name, const QString& tip, const QString& whatsThis) {
        auto* b = new QPushButton(text, box);
        b->setObjectName(QLatin1String(name));
        b->setToolTip(tip);
        b->setWhatsThis(whatsThis);
        return b;
    };
    m_start =
        button(tr("Start"), "trainingStart",
               tr("Train a new model with these settings; during a run: stop it and start these"),
               tr("<p>Trains a new model with the form's settings on a background thread. During a run, "
                  "the newest settings win: the run is stopped (its model saved) and a new one "
                  "starts.</p>"));
    m_pause = button(tr("Pause"), "trainingPause", tr("Pause the run after the current step, or resume it"),
                     tr("<p>Pause: the run waits after the step it is on, the plots stay as they are. "
                        "Resume: it goes on.</p>"));
    m_step = button(tr("Step"), "trainingStep", tr("Run exactly one more step, then pause"),
                    tr("<p>While paused: one more optimizer step, then paused again. With no run: starts "
                       "one that pauses after its first step.</p>"));
    m_stop = button(tr("Stop"), "trainingStop",
                    tr("Stop after the current step; the model trained so far is saved"),
                    tr("<p>Ends the run after the step it is on; the model trained so far is saved to the "
                       "run's folder.</p>"));
    m_reset = button(tr("Reset"), "trainingReset",
                     tr("Stop the run, clear the plots and fill the form from the task's recipe"),
                     tr("<p>Stops a run (its model is saved), clears the plots and thumbnails and puts the "
                        "task's recipe back into the form.</p>"));
    m_open = button(tr("Open in Model view"), "trainingOpen",
                    tr("Open the trained model's layer 0 on repeated random tokens in the model view"),
                    tr("<p>Opens the saved model's layer 0 as the session and every layer and head in the "
                       "Model tab, like a downloaded checkpoint.</p>"));
    m_saveAs = button(tr("Save Model As…"), "trainingSaveAs",
                      tr("Copy the trained model's folder to a folder of your choice"),
                      tr("<p>Each run saves its model to a new folder under the application's data folder "
                         "(its path is at the bottom of the tab). This copies that folder (config.json, "
                         "model.safetensors, training.json, the optimizer's state) where you choose; "
                         "<code>qkvlab train --resume</code> continues it from there.</p>"));
    addShortcut(m_start, tr("Start Training"), QKeySequence(Qt::CTRL | Qt::Key_Return));
    m_pauseAction = addShortcut(m_pause, tr("Pause or Resume Training"), QKeySequence(Qt::CTRL | Qt::Key_P));
    addShortcut(m_step, tr("Step Training"), QKeySequence(Qt::CTRL | Qt::Key_Period));
    addShortcut(m_stop, tr("Stop Training"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return));
    addShortcut(m_reset, tr("Reset Training"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    connect(m_start, &QPushButton::clicked, this, &TrainingPanel::start);
    connect(m_pause, &QPushButton::clicked, this, [this] {
        if (isRunning() && m_run->isPauseRequested())
            resume();
        else
            pause();
    });
    connect(m_step, &QPushButton::clicked, this, &TrainingPanel::step);
    connect(m_stop, &QPushButton::clicked, this, &TrainingPanel::stop);
    connect(m_reset, &QPushButton::clicked, this, &TrainingPanel::reset);
    connect(m_open, &QPushButton::clicked, this, [this] { openInModelView(); });
    connect(m_saveAs, &QPushButton::clicked, this, [this] {
        const QString directory = QFileDialog::getExistingDirectory(this, tr("Save the Trained Model In"));
        if (!directory.isEmpty())
            saveModelAs(directory);
    });
    m_buttonGrid = new QGridLayout(box);
    m_buttonGrid->setContentsMargins(0, 0, 0, 0);
    arrangeButtons(false);
    return box;
}

void TrainingPanel::setStatus(const QString& text)
{
    m_statusText = text;
    m_status->setFullText(text);
}

void TrainingPanel::arrangePlots(bool wide)
{
    if (m_plotStack->currentWidget() == (wide ? static_cast<QWidget*>(m_wide) : m_tabs) && m_curves->parent())
        return;
    if (wide) {
        m_tabs->clear();
        m_wide->addWidget(m_curves);
        m_wide->addWidget(m_probeRow);
        m_wide->setStretchFactor(0, 3);
        m_wide->setStretchFactor(1, 2);
        m_plotStack->setCurrentWidget(m_wide);
        m_wide->setSizes({3000, 2000});
    } else {
        m_tabs->addTab(m_curves, tr("Loss and scores"));
        m_tabs->addTab(m_probeRow, tr("Probe"));
        m_plotStack->setCurrentWidget(m_tabs);
    }
    m_curves->setSizes({1000, 1000, 1000}); // equal widths, whatever the plots' size hints
    m_probeRow->setSizes({1000, 1000});
}

void TrainingPanel::arrangeButtons(bool twoRows)
{
    if (m_buttonGrid->count() > 0 && m_twoRows == twoRows)
        return;
    m_twoRows = twoRows;
    int index = 0;
    for (QPushButton* b : {m_start, m_pause, m_step, m_stop, m_reset, m_open, m_saveAs}) {
        m_buttonGrid->removeWidget(b);
        m_buttonGrid->addWidget(b, twoRows ? index / 4 : 0, twoRows ? index % 4 : index);
        ++index;
    }
}

void TrainingPanel::arrange()
{
    // The width the tab is shown in: a dock scrolls the panel rather than shrink it below its minimum.
    const int available = parentWidget() ? std::min(width(), parentWidget()->width()) : width();
    arrangeButtons(available < 760);
    // Five plots need about 190 pixels each beside the form to stay readable.
    arrangePlots(m_plotStack->width() >= 5 * 190);
}

void TrainingPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    arrange();
}

void TrainingPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (parentWidget() && parentWidget() != m_watchedParent) {
        m_watchedParent = parentWidget();
        m_watchedParent->installEventFilter(this);
    }
    if (!m_grewDock) // once the tabs have settled: a tab behind another is shown for a moment at start
        QTimer::singleShot(0, this, &TrainingPanel::growDock);
    arrange();
}

void TrainingPanel::growDock()
{
    // The plots, the probe and the thumbnails want more height than a bottom dock shares by default (about a
    // quarter of a 720-pixel window): the first time the tab is shown, a docked Training tab grows to about
    // 45 % of the window. Later the user's own size stands.
    QDockWidget* dock = nullptr;
    for (QWidget* w = parentWidget(); w && !dock; w = w->parentWidget())
        dock = qobject_cast<QDockWidget*>(w);
    auto* window = dock ? qobject_cast<QMainWindow*>(dock->parentWidget()) : nullptr;
    if (m_grewDock || !isVisible() || visibleRegion().isEmpty() || !window || dock->isFloating())
        return;
    m_grewDock = true;
    const int wanted = std::min(480, window->height() * 45 / 100);
    if (dock->height() < wanted)
        window->resizeDocks({dock}, {wanted}, Qt::Vertical);
}

bool TrainingPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_watchedParent && event->type() == QEvent::Resize)
        QTimer::singleShot(0, this, &TrainingPanel::arrange); // after the layouts have settled
    return QWidget::eventFilter(watched, event);
}

bool TrainingPanel::isRunning() const
{
    return m_run->isRunning();
}

bool TrainingPanel::isPaused() const
{
    return m_run->isRunning() && m_run->isWaiting();
}

std::int64_t TrainingPanel::reportedStep() const
{
    return m_run->lastReportedStep();
}

void TrainingPanel::updateButtons()
{
    const bool running = isRunning();
    const bool stopping = running && m_run->isStopRequested();
    const bool paused = running && m_run->isPauseRequested();
    m_pause->setText(paused ? tr("Resume") : tr("Pause"));
    m_pause->setEnabled(running && !stopping);
    m_step->setEnabled(!running || (paused && !stopping));
    m_stop->setEnabled(running && !stopping);
    m_open->setEnabled(!running && m_saved);
    m_saveAs->setEnabled(!running && m_saved);
    for (const auto& [button, action] : m_actions)
        action->setEnabled(button->isEnabled());
}

void TrainingPanel::clearThumbnails()
{
    m_probeIds.clear();
    m_thumbnails->clear(tr("The probe sequence's attention in every layer and head appears here while a "
                           "model trains."));
}

void TrainingPanel::start()
{
    if (isRunning()) { // newest settings win: this run ends first, then onFinished() starts the form's
        m_restart = true;
        m_discard = false;
        m_run->stop();
        setStatus(tr("Stopping the run to start the new settings…"));
        updateButtons();
        return;
    }
    launch(false);
}

void TrainingPanel::launch(bool paused)
{
    const QString base = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    m_folder = QDir(base).filePath(QStringLiteral("training/") + QDateTime::currentDateTimeUtc().toString(
                                                                     QStringLiteral("yyyyMMdd-HHmmss-zzz")));
    QDir().mkpath(m_folder);
    m_running = m_form->settings();
    m_running.out = m_folder.toStdString();
    m_folderLabel->setFullText(tr("Folder: %1").arg(QDir::toNativeSeparators(m_folder)));
    m_finished = m_restart = m_discard = m_saved = false;
    m_last = {};
    m_plots->clear();
    clearThumbnails();
    setStatus(tr("Starting…"));
    m_run->start(m_running, paused);
    m_timer->start();
    updateButtons();
}

void TrainingPanel::stop()
{
    if (!isRunning())
        return;
    m_restart = false;
    m_run->stop();
    updateButtons();
}

void TrainingPanel::pause()
{
    if (!isRunning() || m_run->isStopRequested())
        return;
    m_run->pause();
    updateButtons();
}

void TrainingPanel::resume()
{
    if (!isRunning())
        return;
    m_run->resume();
    updateButtons();
}

void TrainingPanel::step()
{
    if (!isRunning()) {
        launch(true);
        return;
    }
    m_run->step();
    setStatus(tr("One more step…"));
}

void TrainingPanel::reset()
{
    if (isRunning()) {
        m_restart = false;
        m_discard = true;
        m_run->stop();
    }
    m_run->takeReports();
    m_plots->clear();
    clearThumbnails();
    m_form->fillFromRecipe();
    m_last = {};
    m_saved = false;
    m_folderLabel->setFullText(QString());
    setStatus(tr("Ready"));
    updateButtons();
}

void TrainingPanel::drawPending()
{
    std::vector<training::StepReport> reports = m_run->takeReports();
    if (reports.empty() || m_discard || m_restart)
        return;
    m_plots->add(reports);
    m_last = reports.back();
    // Only the newest probe is drawn: older ones would be replaced before anyone saw them.
    const auto probed = std::find_if(reports.rbegin(), reports.rend(), [](const training::StepReport& r) {
        return r.evaluated && !r.probe.losses.empty();
    });
    if (probed != reports.rend())
        drawProbe(probed->probe, probed->step);
    m_plots->replot();
    const qint64 left = qRound64(m_last.secondsLeft);
    setStatus(tr("Step %1 of %2 · loss %3 · %4 steps/s · %5:%6 left")
                  .arg(m_last.step)
                  .arg(m_last.lastStep)
                  .arg(m_last.loss, 0, 'f', 4)
                  .arg(m_last.stepsPerSecond, 0, 'f', 1)
                  .arg(left / 60)
                  .arg(left % 60, 2, 10, QLatin1Char('0')));
}

void TrainingPanel::drawProbe(const training::ProbeReport& probe, std::int64_t step)
{
    m_plots->setProbe(probe.losses, probe.scored, step);
    const std::size_t heads = std::size_t(std::max<Index>(1, m_running.architecture.heads));
    std::vector<std::vector<Matrix>> weights(probe.attention.size() / heads);
    for (std::size_t i = 0; i < weights.size() * heads; ++i)
        weights[i / heads].push_back(probe.attention[i]);
    m_probeIds = probe.ids;
    const int selectedLayer = m_thumbnails->selectedLayer(), selectedHead = m_thumbnails->selectedHead();
    m_thumbnails->setAttention(weights, tr("Probe attention, step %1").arg(step));
    m_thumbnails->setSelected(selectedLayer, selectedHead);
}

void TrainingPanel::onPaused()
{
    if (!isRunning() || !m_run->isWaiting())
        return;
    drawPending();
    setStatus(tr("Paused after step %1 of %2 · loss %3")
                  .arg(m_last.step)
                  .arg(m_last.lastStep)
                  .arg(m_last.loss, 0, 'f', 4));
    updateButtons();
}

void TrainingPanel::onFinished()
{
    if (m_restart) { // the stopped run's model is saved in its folder; the new settings start now
        m_run->takeReports();
        launch(false);
        return;
    }
    m_timer->stop();
    drawPending();
    const QString error = m_run->error();
    const training::TrainOutcome outcome = m_run->outcome();
    m_saved = error.isEmpty() && outcome.lastStep > 0;
    if (m_discard) {
        m_discard = false;
        m_saved = false; // reset: the stopped run's folder is kept on disk, not offered
        m_run->takeReports();
        setStatus(tr("Ready"));
    } else if (!error.isEmpty()) {
        setStatus(tr("Refused: %1").arg(error));
    } else if (outcome.diverged) {
        setStatus(tr("The loss stopped being finite at step %1; try a lower learning rate. The last "
                     "finite model was saved.")
                      .arg(outcome.divergedStep));
    } else {
        setStatus(tr("%1 after step %2 · loss %3")
                      .arg(outcome.stopped ? tr("Stopped") : tr("Finished"))
                      .arg(outcome.lastStep)
                      .arg(outcome.lastLoss, 0, 'f', 4));
    }
    m_finished = true;
    updateButtons();
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
        setStatus(tr("Cannot open the trained model: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
}

bool TrainingPanel::openHead(int layer, int head)
{
    if (isRunning()) {
        setStatus(tr("The model is saved when the run ends: stop it (or let it finish), then click "
                     "the head to open it."));
        return false;
    }
    if (!m_loading || !m_saved || m_probeIds.empty())
        return false;
    try {
        auto model = std::make_shared<const Model>(Model::open(m_folder.toStdString()));
        ModelHeadRequest request;
        request.layer = layer;
        request.heads = {Index(head)};
        request.ids = m_probeIds;
        if (!m_loading->open(model, request))
            return false;
        m_thumbnails->setSelected(layer, head);
        return true;
    } catch (const std::exception& e) {
        setStatus(tr("Cannot open the trained model: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
}

bool TrainingPanel::confirmClose()
{
    if (!isRunning())
        return true;
    const QString question =
        tr("A model is being trained. Stop the run and close? The model trained so far is saved in %1.")
            .arg(QDir::toNativeSeparators(m_folder));
    bool stopAndClose = false;
    if (m_closeQuestion) {
        stopAndClose = m_closeQuestion(question);
    } else {
        QMessageBox box(QMessageBox::Question, tr("Training in progress"), question, QMessageBox::NoButton,
                        this);
        QPushButton* close = box.addButton(tr("Stop and Close"), QMessageBox::AcceptRole);
        box.addButton(QMessageBox::Cancel);
        box.setDefaultButton(close);
        box.exec();
        stopAndClose = box.clickedButton() == close;
    }
    if (!stopAndClose)
        return false;
    stop();
    m_run->waitForEnd(); // the trainer writes the folder before the window goes
    return true;
}

bool TrainingPanel::saveModelAs(const QString& directory)
{
    if (isRunning() || !m_saved || m_folder.isEmpty()) {
        setStatus(isRunning() ? tr("The model is saved when the run pauses, stops or finishes; save it then.")
                              : tr("No trained model yet: start a run first."));
        return false;
    }
    const QDir source(m_folder), target(directory);
    if (QFileInfo::exists(target.filePath(QStringLiteral("config.json")))) {
        setStatus(
            tr("%1 already holds a model; choose an empty folder.").arg(QDir::toNativeSeparators(directory)));
        return false;
    }
    if (!QDir().mkpath(directory)) {
        setStatus(tr("Cannot create %1.").arg(QDir::toNativeSeparators(directory)));
        return false;
    }
    QStringList copied;
    for (const QString& name : source.entryList(QDir::Files)) {
        if (!QFile::copy(source.filePath(name), target.filePath(name))) {
            for (const QString& done : copied) // no half-copied model is left behind
                QFile::remove(target.filePath(done));
            setStatus(tr("Cannot write %1.").arg(QDir::toNativeSeparators(target.filePath(name))));
            return false;
        }
        copied << name;
    }
    setStatus(tr("Saved the model in %1").arg(QDir::toNativeSeparators(directory)));
    return true;
}

} // namespace qkv::ui
