// SPDX-License-Identifier: GPL-3.0-or-later
#include "LessonPlayer.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "Examples.h"
#include "Model.h"
#include "ModelLoading.h"
#include "PatchingPanel.h"
#include "TrainingPanel.h"

#include <QDockWidget>
#include <QUndoStack>

namespace qkv::ui {

LessonPlayer::LessonPlayer(Document* document, FigureNavigator navigator, QObject* parent)
    : QObject(parent), m_document(document), m_navigator(std::move(navigator))
{
    // A session opened meanwhile clears the history: the steps' commands are gone, and Back must not undo
    // whatever is pushed next at the same index.
    // The stack, not the document: the document's destructor clears its stack, and the document is then
    // already half destroyed.
    QUndoStack* stack = m_document->undoStack();
    connect(stack, &QUndoStack::indexChanged, this, [this, stack] {
        if (stack->count() == 0)
            m_applied.assign(m_applied.size(), Applied{});
    });
}

void LessonPlayer::setTraining(TrainingPanel* panel, QDockWidget* dock, std::function<bool()> mayReplace)
{
    m_training = panel;
    m_trainingDock = dock;
    m_mayReplace = std::move(mayReplace);
    if (panel)
        connect(panel, &TrainingPanel::runFinished, this, [this] {
            if (m_waitingToOpen && m_active && currentStep().training == LessonTraining::Open)
                openTrained();
        });
}

void LessonPlayer::start(Lesson lesson)
{
    m_lesson = std::move(lesson);
    m_applied.assign(m_lesson.steps.size(), Applied{});
    m_step = 0;
    m_startedRun = false;
    m_active = !m_lesson.steps.empty();
    if (m_active)
        apply();
}

void LessonPlayer::stop()
{
    if (!m_active)
        return;
    m_active = false;
    m_waitingToOpen = false;
    m_notice.clear();
    emit stopped();
}

void LessonPlayer::next()
{
    if (!canGoNext())
        return;
    ++m_step;
    apply();
}

void LessonPlayer::back()
{
    if (!canGoBack())
        return;
    const Applied& left = m_applied[static_cast<std::size_t>(m_step)];
    QUndoStack* stack = m_document->undoStack();
    if (left.pushed && stack->index() == left.undoIndexAfter)
        stack->undo();
    m_applied[static_cast<std::size_t>(m_step)] = Applied{};
    --m_step;
    m_waitingToOpen = false;
    m_notice.clear();
    showViewAndCell();
    emit stepChanged();
}

void LessonPlayer::apply()
{
    const LessonStep& step = currentStep();
    Applied applied;
    if (step.example || step.edit) {
        // The whole step is one undo step: Edit ▸ Undo (or Back) returns to the session before it, the
        // person's own included, so a lesson never discards work.
        Session session = m_document->session();
        try {
            if (step.example)
                session = loadExample(*step.example);
            if (step.edit)
                applyLessonEdit(session, *step.edit, m_document->initializer());
        } catch (const Error& e) {
            emit failed(QString::fromStdString(e.what()));
            return;
        }
        if (!(session == m_document->session())) {
            const QString text =
                step.example
                    ? tr("Lesson: open %1").arg(QString::fromStdString(session.title))
                    : tr("Lesson: %1, step %2").arg(QString::fromStdString(m_lesson.title)).arg(m_step + 1);
            pushEdit(m_document, text, Document::Everything,
                     [session = std::move(session)](Session& s) { s = session; });
            applied = {true, m_document->undoStack()->index()};
        }
    }
    m_applied[static_cast<std::size_t>(m_step)] = applied;
    m_waitingToOpen = false;
    m_notice.clear();
    if (step.training == LessonTraining::Start)
        startTraining();
    else if (step.training == LessonTraining::Open)
        openTrained();
    if (step.patching)
        runPatching(*step.patching);
    if (step.head)
        openHead(*step.head);
    showViewAndCell();
    emit stepChanged();
}

void LessonPlayer::showViewAndCell()
{
    const LessonStep& step = currentStep();
    if (!step.view.empty())
        m_navigator.show(QString::fromStdString(step.view));
    if (step.cell)
        m_document->setSelection(step.cell->first, step.cell->second);
    // After the view: the Training workspace shares its dock area with most views.
    if (m_trainingDock && (step.showTrainingTab || step.training == LessonTraining::Start)) {
        m_trainingDock->show();
        m_trainingDock->raise();
    }
    for (const auto& [dock, shown] : {std::pair{m_patchingDock.data(), step.showPatching},
                                      std::pair{m_scoreTermsDock.data(), step.showScoreTerms}})
        if (dock && shown) {
            dock->show();
            dock->raise();
        }
}

void LessonPlayer::setPatching(PatchingPanel* panel, QDockWidget* dock)
{
    m_patching = panel;
    m_patchingDock = dock;
}

void LessonPlayer::setScoreTermsDock(QDockWidget* dock)
{
    m_scoreTermsDock = dock;
}

void LessonPlayer::runPatching(const LessonPatching& patching)
{
    if (!m_patching) {
        setNotice(tr("This step sets up a patching experiment, but this window has no Patching panel."));
        return;
    }
    const auto method = patching.method == PatchMethod::Exact ? PatchingPanel::Methods::Exact
                                                              : PatchingPanel::Methods::Attribution;
    if (!m_patching->runExperiment(patching.clean, patching.corrupt, patching.answer, patching.wrong,
                                   patching.site, method))
        setNotice(m_patching->message()); // no model open yet, ids outside its vocabulary, …
}

void LessonPlayer::openHead(const LessonHead& head)
{
    if (!m_loading || !m_loading->model()) {
        setNotice(tr("This step opens a head of the trained model; open the model first (the step before)."));
        return;
    }
    const ModelConfig& config = m_loading->model()->config();
    if (head.layer >= config.layers || head.head >= config.heads) {
        setNotice(tr("This step opens layer %1, head %2, but the open model has %3 layers of %4 heads.")
                      .arg(head.layer)
                      .arg(head.head)
                      .arg(config.layers)
                      .arg(config.heads));
        return;
    }
    if (!m_loading->openHead(head.layer, head.head, head.ids, std::string()))
        setNotice(tr("The head did not open; the model refused the step's tokens."));
}

void LessonPlayer::startTraining()
{
    if (!m_training) {
        m_notice = tr("This window has no Training workspace to train in.");
        return;
    }
    if (m_training->isRunning()) {
        m_notice = m_startedRun
                       ? QString()
                       : tr("A run was already going in the Training workspace; the lesson follows that "
                            "one. Its settings are the form's, which may not be the induction recipe.");
        return;
    }
    if (m_startedRun) { // Back and Next again: the run the lesson started is the one to look at
        m_notice =
            tr("The lesson's run has finished. To train again, press Start in the Training workspace.");
        return;
    }
    m_training->start();
    m_startedRun = m_training->isRunning();
    if (!m_startedRun)
        m_notice = tr("The run did not start; the Training workspace's status says why.");
}

void LessonPlayer::openTrained()
{
    m_waitingToOpen = false;
    if (!m_training) {
        setNotice(tr("This window has no Training workspace, so there is no trained model to open."));
        return;
    }
    if (m_training->isRunning() || !m_training->isFinished()) {
        // The step stays as it is, and the model opens here once a run finishes.
        m_waitingToOpen = true;
        int startStep = 0;
        while (startStep < stepCount() &&
               m_lesson.steps[std::size_t(startStep)].training != LessonTraining::Start)
            ++startStep;
        const QString how =
            startStep < m_step
                ? tr("go back to step %1, or press Start in the Training workspace").arg(startStep + 1)
                : tr("press Start in the Training workspace");
        setNotice(
            m_training->isRunning()
                ? tr("The model is still training (the Training workspace shows how far it has got). It "
                     "opens here as soon as the run finishes.")
                : tr("There is no trained model to open yet: no training run has finished. To train one, "
                     "%1; it opens here when the run finishes.")
                      .arg(how));
        return;
    }
    if (m_mayReplace && !m_mayReplace()) {
        setNotice(tr("Your session was kept, so the trained model was not opened. The Training workspace's "
                     "“Open in Model view” opens it when you are ready."));
        return;
    }
    setNotice(m_training->openInModelView()
                  ? QString()
                  : tr("The trained model could not be opened; the Training workspace's status says why."));
    if (m_notice.isEmpty())
        showViewAndCell(); // the model's own tab was brought forward as it opened: the step's view again
}

void LessonPlayer::setNotice(const QString& notice)
{
    if (notice == m_notice)
        return;
    m_notice = notice;
    emit noticeChanged();
}

} // namespace qkv::ui
