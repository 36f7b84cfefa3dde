#pragma once
// The Training tab: a form for a small model and a task, a run on a worker thread with live loss and
// head-score curves, and the trained folder opened in the model view.

#include "Trainer.h"

#include <QFutureWatcher>
#include <QString>
#include <QWidget>

#include <atomic>
#include <mutex>
#include <vector>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTimer;

namespace qkv::ui {

class ModelLoading;

class TrainingPanel : public QWidget {
    Q_OBJECT
public:
    explicit TrainingPanel(ModelLoading* loading, QWidget* parent = nullptr);
    /// Asks a running run to stop and waits for it (the model so far is saved).
    ~TrainingPanel() override;

    bool isRunning() const { return m_watcher->isRunning(); }
    /// True once a run ended (finished, stopped or refused) and its curves are drawn.
    bool isFinished() const { return m_finished; }
    /// The folder of the current or last run (empty before the first).
    QString folder() const { return m_folder; }

    /// Starts a run with the form's settings (ignored while one runs).
    void start();
    /// Asks the run to stop after the step it is on.
    void stop();
    /// Opens layer 0 of the trained model in the model view, on repeated random tokens.
    bool openInModelView();

signals:
    void runFinished();

private:
    QWidget* buildForm();
    void fillFromRecipe();
    training::TrainSettings settingsFromForm() const;
    void drawPending();
    void onFinished();
    void resetPlots();

    ModelLoading* m_loading;
    QComboBox* m_task;
    QSpinBox *m_layers, *m_heads, *m_dModel, *m_batch, *m_steps, *m_seed;
    QCheckBox* m_mlp;
    QComboBox* m_positions;
    QDoubleSpinBox* m_rate;
    QPushButton *m_start, *m_stop, *m_open;
    QLabel *m_folderLabel, *m_status;
    QCustomPlot *m_lossPlot, *m_inductionPlot, *m_previousPlot;
    QTimer* m_timer;
    QFutureWatcher<void>* m_watcher;

    // Shared with the worker: reports not drawn yet, the stop request, and the outcome.
    std::mutex m_mutex;
    std::vector<training::StepReport> m_pending;
    std::atomic<bool> m_stopRequested{false};
    training::TrainOutcome m_outcome;
    QString m_error;

    training::TrainSettings m_running; // the settings of the current or last run
    QString m_folder;
    bool m_finished = false;
    training::StepReport m_last;
};

} // namespace qkv::ui
