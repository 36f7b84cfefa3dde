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
#include "TrainingRunFolders.h"
#include "TrainingRunList.h"

#include <QAction>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

namespace {

constexpr int readableStatusWidth = 220; // the summary and the status beside the buttons: one row needs this
constexpr int plotsBesideForm = 720;     // the form opens by itself only when the plots keep this width

bool samePath(const QString& a, const QString& b)
{
    return !a.isEmpty() && QDir::cleanPath(QFileInfo(a).absoluteFilePath()) ==
                               QDir::cleanPath(QFileInfo(b).absoluteFilePath());
}

void removeFromLayout(QLayout* layout, QWidget* widget)
{
    if (layout->indexOf(widget) >= 0)
        layout->removeWidget(widget);
}

} // namespace

TrainingPanel::TrainingPanel(ModelLoading* loading, QWidget* parent, const QString& runsRoot)
    : QWidget(parent), m_loading(loading),
      m_runs(std::make_unique<TrainingRunFolders>(runsRoot.isEmpty() ? TrainingRunFolders::defaultRoot()
                                                                     : runsRoot)),
      m_form(new TrainingForm), m_runList(new TrainingRunList(m_runs.get())),
      m_plots(new TrainingPlots(m_runList, tr("Runs"))), m_run(new TrainingRun(this)),
      m_timer(new QTimer(this))
{
    setObjectName(QStringLiteral("trainingPanel"));
    m_formScroll = new QScrollArea;
    m_formScroll->setObjectName(QStringLiteral("trainingFormScroll"));
    m_formScroll->setWidget(m_form);
    m_formScroll->setWidgetResizable(true);
    m_formScroll->setFrameShape(QFrame::NoFrame);
    m_formScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_formScroll->setMinimumWidth(m_form->sizeHint().width() +
                                  m_formScroll->verticalScrollBar()->sizeHint().width());
    m_formScroll->setMinimumHeight(0);
    m_formScroll->hide();

    auto* body = new QHBoxLayout;
    body->setContentsMargins(0, 0, 0, 0);
    body->addWidget(m_formScroll);
    body->addWidget(m_plots, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addWidget(buildHeader());
    layout->addLayout(body, 1);
    setWhatsThis(tr("<h3>Training</h3><p>Trains a small transformer on a task made in the program, on a "
                    "background thread, and shows it learning: the loss, every head's previous-token and "
                    "induction scores, the loss at each position of a probe sequence and the probe's "
                    "attention in every head. Start, Pause, Step, Stop and Reset control the run; Settings "
                    "shows the whole form (or its one-line summary). The model is saved to its folder when "
                    "the run ends and can then be opened in the model view; the Runs tab lists every run's "
                    "folder.</p>"));

    m_timer->setInterval(250); // drawing cadence: a few repaints a second however fast the steps come
    connect(m_timer, &QTimer::timeout, this, &TrainingPanel::drawPending);
    connect(m_run, &TrainingRun::paused, this, &TrainingPanel::onPaused);
    connect(m_run, &TrainingRun::finished, this, &TrainingPanel::onFinished);
    connect(m_plots->thumbnails(), &ModelView::thumbnailClicked, this,
            [this](int layer, int head) { openHead(layer, head); });
    connect(m_runList, &TrainingRunList::openRequested, this,
            [this](const QString& folder) { openRun(folder); });
    connect(m_runList, &TrainingRunList::message, this, &TrainingPanel::setStatus);
    connect(m_runList, &TrainingRunList::deleted, this, [this](const QString& folder) {
        if (samePath(folder, m_folder)) { // the last run's model is gone
            m_saved = false;
            m_probeIds.clear();
            updateButtons();
        }
    });
    connect(m_form, &TrainingForm::changed, this, [this] { m_summary->setFullText(m_form->summary()); });
    m_summary->setFullText(m_form->summary());
    updateButtons();
}

TrainingPanel::~TrainingPanel()
{
    m_run->stop();
    m_run->waitForEnd(); // the folder stays locked until its model is written
    m_runs->unlockRun();
}

QString TrainingPanel::runsRoot() const
{
    return m_runs->root();
}

QWidget* TrainingPanel::buildHeader()
{
    auto* header = new QWidget;
    m_header = header;
    header->setObjectName(QStringLiteral("trainingHeader"));
    m_buttonBox = buildButtons();
    m_formToggle = new QToolButton;
    m_formToggle->setObjectName(QStringLiteral("trainingFormToggle"));
    m_formToggle->setText(tr("Settings"));
    m_formToggle->setCheckable(true);
    m_formToggle->setAutoRaise(true);
    m_formToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_formToggle->setArrowType(Qt::RightArrow);
    m_formToggle->setToolTip(tr("Show or hide the training settings (the task, the model's shape, the "
                                "optimizer); their summary is beside this button"));
    m_formToggle->setWhatsThis(
        tr("<p>Shows the whole form of training settings beside the plots, or hides it "
           "and leaves the plots the room; the line beside the button sums the settings "
           "up either way. A run starts with the settings the form has when Start is "
           "pressed.</p>"));
    connect(m_formToggle, &QToolButton::toggled, this, &TrainingPanel::setFormExpanded);
    m_summary = new ElidedLabel;
    m_summary->setObjectName(QStringLiteral("trainingSummary"));
    m_summary->setToolTip(tr("The settings the next run starts with"));
    m_status = new ElidedLabel;
    m_status->setObjectName(QStringLiteral("trainingStatus"));
    m_status->setWhatsThis(tr("<p>What the run is doing: its step, loss, speed and the time left; how it "
                              "ended; or why something was refused.</p>"));
    setStatus(tr("Not started"));
    m_headerTop = new QHBoxLayout;
    m_headerBottom = new QHBoxLayout;
    for (QHBoxLayout* row : {m_headerTop, m_headerBottom}) {
        row->setContentsMargins(0, 0, 0, 0);
        row->setSpacing(6);
    }
    auto* rows = new QVBoxLayout(header);
    rows->setContentsMargins(0, 0, 0, 0);
    rows->setSpacing(2);
    rows->addLayout(m_headerTop);
    rows->addLayout(m_headerBottom);
    header->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed); // see arrangeHeader()
    arrangeHeader();
    return header;
}

QAction* TrainingPanel::addShortcut(QToolButton* button, const QString& text, const QKeySequence& key)
{
    auto* action = new QAction(text, this);
    action->setShortcut(key);
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut); // only while the tab has the focus
    connect(action, &QAction::triggered, button, &QToolButton::click);
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
        auto* b = new QToolButton(box);
        b->setText(text);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
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
                       "Model workspace, like a downloaded checkpoint.</p>"));
    m_saveAs = button(tr("Save Model As…"), "trainingSaveAs",
                      tr("Copy the trained model's folder to a folder of your choice"),
                      tr("<p>Each run saves its model to a new folder under the application's data folder "
                         "(the Runs tab lists them). This copies that folder (config.json, "
                         "model.safetensors, training.json, the optimizer's state) where you choose, and "
                         "marks the run as saved: it is never deleted to make room for new runs. "
                         "<code>qkvlab train --resume</code> continues it from there.</p>"));
    // With little room these two show their icons only (their tooltips name them).
    m_open->setIcon(QIcon::fromTheme(QStringLiteral("document-open"),
                                     style()->standardIcon(QStyle::SP_DialogOpenButton)));
    m_saveAs->setIcon(QIcon::fromTheme(QStringLiteral("document-save-as"),
                                       style()->standardIcon(QStyle::SP_DialogSaveButton)));
    addShortcut(m_start, tr("Start Training"), QKeySequence(Qt::CTRL | Qt::Key_Return));
    m_pauseAction = addShortcut(m_pause, tr("Pause or Resume Training"), QKeySequence(Qt::CTRL | Qt::Key_P));
    addShortcut(m_step, tr("Step Training"), QKeySequence(Qt::CTRL | Qt::Key_Period));
    addShortcut(m_stop, tr("Stop Training"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return));
    addShortcut(m_reset, tr("Reset Training"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    connect(m_start, &QToolButton::clicked, this, &TrainingPanel::start);
    connect(m_pause, &QToolButton::clicked, this, [this] {
        if (isRunning() && m_run->isPauseRequested())
            resume();
        else
            pause();
    });
    connect(m_step, &QToolButton::clicked, this, &TrainingPanel::step);
    connect(m_stop, &QToolButton::clicked, this, &TrainingPanel::stop);
    connect(m_reset, &QToolButton::clicked, this, &TrainingPanel::reset);
    connect(m_open, &QToolButton::clicked, this, [this] { openInModelView(); });
    connect(m_saveAs, &QToolButton::clicked, this, [this] {
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

void TrainingPanel::arrangeButtons(bool twoRows)
{
    if (m_buttonGrid->count() > 0 && m_twoRows == twoRows)
        return;
    m_twoRows = twoRows;
    int index = 0;
    for (QToolButton* b : {m_start, m_pause, m_step, m_stop, m_reset, m_open, m_saveAs}) {
        m_buttonGrid->removeWidget(b);
        m_buttonGrid->addWidget(b, twoRows ? index / 4 : 0, twoRows ? index % 4 : index);
        ++index;
    }
}

int TrainingPanel::buttonsWidth() const
{
    int width = 0;
    for (QToolButton* b : {m_start, m_pause, m_step, m_stop, m_reset, m_open, m_saveAs})
        width += b->sizeHint().width() + m_buttonGrid->horizontalSpacing();
    return width;
}

void TrainingPanel::showButtonTexts(bool texts)
{
    for (QToolButton* b : {m_open, m_saveAs})
        b->setToolButtonStyle(texts ? Qt::ToolButtonTextBesideIcon : Qt::ToolButtonIconOnly);
}

void TrainingPanel::arrangeHeader()
{
    // One row when it fits: the buttons with their texts, else Open and Save As as icons; else two rows.
    const int available = shownWidth() - 8; // the panel's margins
    const int rest = m_formToggle->sizeHint().width() + readableStatusWidth;
    int rows = 1;
    showButtonTexts(true);
    if (buttonsWidth() + rest > available) {
        showButtonTexts(false);
        if (buttonsWidth() + rest > available) {
            rows = 2;
            showButtonTexts(true);
            if (buttonsWidth() > available)
                showButtonTexts(false);
        }
    }
    arrangeButtons(buttonsWidth() > available);
    // The header's rows follow the width the panel is given, so the header asks only for the narrowest
    // arrangement: two rows of four buttons, Open and Save As as icons (no wider than the others).
    int widest = 0;
    for (QToolButton* b : {m_start, m_pause, m_step, m_stop, m_reset})
        widest = std::max(widest, b->sizeHint().width());
    m_header->setMinimumWidth(4 * widest + 3 * m_buttonGrid->horizontalSpacing());
    if (rows == m_headerRows)
        return;
    m_headerRows = rows;
    for (QWidget* widget : {m_buttonBox, static_cast<QWidget*>(m_formToggle),
                            static_cast<QWidget*>(m_summary), static_cast<QWidget*>(m_status)}) {
        removeFromLayout(m_headerTop, widget);
        removeFromLayout(m_headerBottom, widget);
    }
    while (QLayoutItem* item = m_headerTop->takeAt(0)) // a stretch left from two rows
        delete item;
    m_headerTop->addWidget(m_buttonBox);
    QHBoxLayout* second = rows == 1 ? m_headerTop : m_headerBottom;
    second->addWidget(m_formToggle);
    second->addWidget(m_summary, 2);
    second->addWidget(m_status, 3);
    if (rows == 2)
        m_headerTop->addStretch(1);
}

void TrainingPanel::arrange()
{
    arrangeHeader();
    if (m_formChosen)
        return;
    // Until the user chooses: the whole form when it fits beside the plots without scrolling.
    const int formHeight = m_form->sizeHint().height();
    const int bodyHeight = height() - 12 - m_header->sizeHint().height();
    const bool fits =
        bodyHeight >= formHeight && shownWidth() - m_formScroll->minimumWidth() >= plotsBesideForm;
    showForm(fits);
}

int TrainingPanel::shownWidth() const
{
    return parentWidget() ? std::min(width(), parentWidget()->width()) : width();
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
    arrange();
}

bool TrainingPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_watchedParent && event->type() == QEvent::Resize)
        QTimer::singleShot(0, this, &TrainingPanel::arrange); // after the layouts have settled
    return QWidget::eventFilter(watched, event);
}

bool TrainingPanel::isFormExpanded() const
{
    return m_formToggle->isChecked();
}

void TrainingPanel::setFormExpanded(bool expanded)
{
    m_formChosen = true;
    showForm(expanded);
}

void TrainingPanel::showForm(bool expanded)
{
    if (m_formToggle->isChecked() != expanded) {
        const QSignalBlocker blocker(m_formToggle); // a choice made here is not the user's
        m_formToggle->setChecked(expanded);
    }
    m_formToggle->setArrowType(expanded ? Qt::DownArrow : Qt::RightArrow);
    m_formScroll->setVisible(expanded);
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
    QString error;
    m_folder = m_runs->createRun(&error);
    if (m_folder.isEmpty()) {
        setStatus(tr("Refused: %1").arg(error));
        return;
    }
    // Room for this run: unsaved runs beyond the newest few go (never a saved or running one).
    m_runs->prune();
    m_running = m_form->settings();
    m_running.out = m_folder.toStdString();
    m_finished = m_restart = m_discard = m_saved = false;
    m_last = {};
    m_plots->clear();
    m_probeIds.clear();
    setStatus(tr("Starting… (saving in %1)").arg(QDir::toNativeSeparators(m_folder)));
    m_run->start(m_running, paused);
    m_timer->start();
    m_runList->refresh();
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
    m_probeIds.clear();
    m_form->fillFromRecipe();
    m_last = {};
    m_saved = false;
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
    if (probed != reports.rend()) {
        m_plots->setProbe(probed->probe, probed->step, int(std::max<Index>(1, m_running.architecture.heads)));
        m_probeIds = probed->probe.ids;
    }
    const qint64 left = qRound64(m_last.secondsLeft);
    setStatus(tr("Step %1 of %2 · loss %3 · %4 steps/s · %5:%6 left")
                  .arg(m_last.step)
                  .arg(m_last.lastStep)
                  .arg(m_last.loss, 0, 'f', 4)
                  .arg(m_last.stepsPerSecond, 0, 'f', 1)
                  .arg(left / 60)
                  .arg(left % 60, 2, 10, QLatin1Char('0')));
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
        m_runs->unlockRun();
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
    m_runs->unlockRun();
    m_finished = true;
    m_runList->refresh();
    updateButtons();
    emit runFinished();
}

bool TrainingPanel::openInModelView()
{
    if (m_folder.isEmpty() || isRunning())
        return false;
    return openRun(m_folder);
}

bool TrainingPanel::openRun(const QString& folder)
{
    if (!m_loading || folder.isEmpty())
        return false;
    try {
        auto model = std::make_shared<const Model>(Model::open(folder.toStdString()));
        ModelHeadRequest request;
        request.layer = 0;
        // Repeated random tokens of the run's task (half a sequence, twice), as its head scores were taken.
        const std::optional<TrainingRunTask> run = TrainingRunFolders::readTask(folder);
        const training::Task task(run ? run->task : training::TaskSettings{});
        const std::int64_t vocab =
            run ? std::int64_t(task.modelVocab()) : std::int64_t(model->config().vocabSize);
        request.ids =
            repeatedRandomTokens(std::max<Index>(1, task.sequenceLength() / 2), vocab, run ? run->seed : 1);
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
        m_plots->thumbnails()->setSelected(layer, head);
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
    QString error;
    if (!m_runs->markSaved(m_folder, directory, &error)) // the copy is made; only the mark is missing
        setStatus(tr("Saved the model in %1, but the run could not be marked as saved (%2): it may be "
                     "deleted to make room for new runs.")
                      .arg(QDir::toNativeSeparators(directory), error));
    else
        setStatus(tr("Saved the model in %1").arg(QDir::toNativeSeparators(directory)));
    m_runList->refresh();
    return true;
}

} // namespace qkv::ui
