// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Plays a lesson on the window's document: each step's session or edit as one undo step, its view brought
// forward and its cell selected, its action in the Training workspace taken, its patching experiment run;
// Back undoes what the step it leaves did (a training run and an opened model stay).

#include "FigureNavigator.h"
#include "Lessons.h"

#include <QObject>
#include <QPointer>

#include <functional>
#include <vector>

class QDockWidget;

namespace qkv::ui {

class Document;
class ModelLoading;
class PatchingPanel;
class TrainingPanel;

class LessonPlayer : public QObject {
    Q_OBJECT
public:
    LessonPlayer(Document* document, FigureNavigator navigator, QObject* parent = nullptr);

    /// The figure names steps may show (the window's views).
    QStringList viewNames() const { return m_navigator.names(); }
    const FigureNavigator& navigator() const { return m_navigator; }

    /// The Training workspace the steps' "training" and "dock" act on, the dock holding it, and what asks
    /// whether the session may be replaced by the trained model (unsaved changes). Without it such steps say
    /// so.
    void setTraining(TrainingPanel* panel, QDockWidget* dock, std::function<bool()> mayReplace);
    /// The Patching panel a step's "patching" sets up and runs, and the dock "dock": "patching" brings
    /// forward.
    void setPatching(PatchingPanel* panel, QDockWidget* dock);
    /// What a step's "head" opens a head of the open model with.
    void setModelLoading(ModelLoading* loading) { m_loading = loading; }
    /// The dock "dock": "score_terms" brings forward.
    void setScoreTermsDock(QDockWidget* dock);
    /// What the step's Training workspace action has to tell ("" when it did what the text says): no finished
    /// run to open yet, a run already going, …
    QString notice() const { return m_notice; }

    /// Starts `lesson` at its first step (replacing a lesson in progress).
    void start(Lesson lesson);
    /// Ends the lesson; the session stays as it is.
    void stop();
    bool isActive() const { return m_active; }
    const Lesson& lesson() const { return m_lesson; }
    /// The step on show, from 0.
    int step() const { return m_step; }
    int stepCount() const { return static_cast<int>(m_lesson.steps.size()); }
    const LessonStep& currentStep() const { return m_lesson.steps[static_cast<std::size_t>(m_step)]; }

    bool canGoBack() const { return m_active && m_step > 0; }
    bool canGoNext() const { return m_active && m_step + 1 < stepCount(); }
    /// The next step: its session or edit applied, its view and cell shown.
    void next();
    /// The step before: the step left is undone when its edit is still the newest on the undo stack (an
    /// edit of the person's own since then is kept), then the earlier step's view and cell are shown.
    void back();

signals:
    void stepChanged();
    void stopped();
    /// A step could not be applied (the session it loads was refused); the lesson stays at that step.
    void failed(const QString& message);
    /// notice() changed while the step stayed (a run finished and its model opened).
    void noticeChanged();

private:
    void apply();
    void showViewAndCell();
    void startTraining();
    /// The step's patching experiment in the Patching panel, run (a problem becomes the notice).
    void runPatching(const LessonPatching& patching);
    /// The step's head of the open model opened as the session (a problem becomes the notice).
    void openHead(const LessonHead& head);
    /// Opens the trained model when a run has finished; otherwise waits for one (runFinished).
    void openTrained();
    void setNotice(const QString& notice);

    struct Applied {
        bool pushed = false;
        int undoIndexAfter = 0; ///< the undo stack's index just after the step's command
    };

    Document* m_document;
    FigureNavigator m_navigator;
    Lesson m_lesson;
    std::vector<Applied> m_applied;
    int m_step = 0;
    bool m_active = false;
    QPointer<TrainingPanel> m_training;
    QPointer<QDockWidget> m_trainingDock;
    QPointer<PatchingPanel> m_patching;
    QPointer<QDockWidget> m_patchingDock;
    ModelLoading* m_loading = nullptr; // the window's, which outlives the player
    QPointer<QDockWidget> m_scoreTermsDock;
    std::function<bool()> m_mayReplace;
    QString m_notice;
    bool m_startedRun = false;    ///< this lesson started a run: Back and Next again do not train anew
    bool m_waitingToOpen = false; ///< an "open" step on show waits for a run to finish
};

} // namespace qkv::ui
