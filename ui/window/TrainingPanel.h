// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Training workspace: the controls and status in a header, the form (collapsible to a one-line summary),
// a run on a worker thread that can be paused, stepped, stopped and reset, the live plots (TrainingPlots),
// the list of earlier runs, and the trained folder opened in the model view. The tab is laid out for the room
// it has: a low bottom dock (one plot at a time) as well as a whole window.

#include "Trainer.h"

#include <QPointer>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <memory>

class QAction;
class QGridLayout;
class QHBoxLayout;
class QScrollArea;
class QTimer;
class QToolButton;

namespace qkv::ui {

class ElidedLabel;
class ModelLoading;
class TrainingForm;
class TrainingPlots;
class TrainingRun;
class TrainingRunFolders;
class TrainingRunList;

class TrainingPanel : public QWidget {
    Q_OBJECT
public:
    /// Runs are saved under `runsRoot` (by default the application data folder's "training").
    explicit TrainingPanel(ModelLoading* loading, QWidget* parent = nullptr, const QString& runsRoot = {});
    /// Asks a running run to stop and waits for it (the model so far is saved).
    ~TrainingPanel() override;

    bool isRunning() const;
    /// True once a run ended (finished, stopped or refused) and its curves are drawn.
    bool isFinished() const { return m_finished; }
    /// The status line's whole text (the label may show it shortened).
    QString status() const { return m_statusText; }
    /// True while a run waits in a pause.
    bool isPaused() const;
    /// The step the run reported last (0 before its first).
    std::int64_t reportedStep() const;
    /// The folder of the current or last run (empty before the first).
    QString folder() const { return m_folder; }
    /// Where the runs' folders are.
    QString runsRoot() const;

    /// Starts a run with the form's settings. While one runs, newest settings win: that run is stopped (its
    /// model saved) and the new one starts, with the form's settings then, once it has ended.
    void start();
    /// Asks the run to stop after the step it is on; the trainer saves the model trained so far.
    void stop();
    /// The run waits after the step it is on until resume(), step() or stop().
    void pause();
    void resume();
    /// Paused: exactly one more step, then paused again. With no run: a new run that pauses after step 1.
    void step();
    /// Stops a run, clears the plots and thumbnails and fills the form from the task's recipe.
    void reset();
    /// Opens layer 0 of the last run's model in the model view, on repeated random tokens.
    bool openInModelView();
    /// Opens layer 0 of the model in a run's `folder` (one of the runs listed) in the model view.
    bool openRun(const QString& folder);
    /// Opens a head of the trained model on the probe sequence, as the thumbnails do when clicked; refused
    /// (with the reason in the status line) while a run goes, since the model is saved when it ends.
    bool openHead(int layer, int head);
    /// Copies the last run's folder (the model, training.json, the optimizer's state, a tokenizer) into
    /// `directory`, created when missing, and marks the run as saved (it is never deleted to make room);
    /// refused, with the reason in the status line, while a run goes, before the first, or into a folder
    /// that already holds a model (nothing is overwritten).
    bool saveModelAs(const QString& directory);

    /// Whether the form is shown in full (else its one-line summary only).
    bool isFormExpanded() const;
    /// Shows the form in full or as its summary; the user's choice from then on.
    void setFormExpanded(bool expanded);

    /// Before the window closes: with a run going, asks whether to stop it (its model is saved, the
    /// question says where) and close. False: keep the window open.
    bool confirmClose();
    /// Replaces the close question's dialog (for tests): given the question, true means stop and close.
    void setCloseQuestion(std::function<bool(const QString&)> question)
    {
        m_closeQuestion = std::move(question);
    }

signals:
    void runFinished();

protected:
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* buildButtons();
    QWidget* buildHeader();
    void setStatus(const QString& text);
    /// The buttons in one row, or two rows when the tab is narrow.
    void arrangeButtons(bool twoRows);
    /// The buttons' widths side by side, as they are shown now.
    int buttonsWidth() const;
    /// Open and Save As with their texts beside their icons, or their icons only.
    void showButtonTexts(bool texts);
    /// The header in one row when it fits, else the buttons above the summary and status.
    void arrangeHeader();
    void arrange();
    /// The width the tab is shown in: a dock scrolls the panel rather than shrink it below its minimum.
    int shownWidth() const;
    void showForm(bool expanded);
    QAction* addShortcut(QToolButton* button, const QString& text, const QKeySequence& key);
    void launch(bool paused);
    void drawPending();
    void onPaused();
    void onFinished();
    void updateButtons();

    ModelLoading* m_loading;
    std::unique_ptr<TrainingRunFolders> m_runs;
    TrainingForm* m_form;
    QScrollArea* m_formScroll;
    QToolButton* m_formToggle;
    bool m_formChosen = false; // the user chose expanded or collapsed: no automatic choice any more
    TrainingRunList* m_runList;
    TrainingPlots* m_plots;
    TrainingRun* m_run;
    QToolButton *m_start, *m_pause, *m_step, *m_stop, *m_reset, *m_open, *m_saveAs;
    QAction* m_pauseAction = nullptr;
    QList<QPair<QToolButton*, QAction*>> m_actions;
    ElidedLabel *m_status, *m_summary;
    QString m_statusText;
    QWidget* m_header = nullptr;
    QWidget* m_buttonBox;
    QGridLayout* m_buttonGrid = nullptr;
    QHBoxLayout *m_headerTop, *m_headerBottom;
    bool m_twoRows = false;
    int m_headerRows = 0;
    QPointer<QWidget> m_watchedParent; // a dock's scroll area: its width, not the panel's, is the room
    QTimer* m_timer;

    training::TrainSettings m_running; // the settings of the current or last run
    QString m_folder;
    bool m_finished = false;
    bool m_restart = false; // start the form's settings when the run ends
    bool m_discard = false; // reset: the ending run's reports are not drawn
    bool m_saved = false;   // m_folder holds a trained model
    std::vector<std::int64_t> m_probeIds;
    training::StepReport m_last;
    std::function<bool(const QString&)> m_closeQuestion;
};

} // namespace qkv::ui
