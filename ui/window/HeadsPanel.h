// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Head Scores tab: every layer × head of the model opened last as one colour-coded grid, showing a head
// score, the ablation sweep (the change of the loss or the logit difference with each head ablated) or the
// direct logit attribution (the "scores", "sweep" and "attribution" figures of ModelFigures); clicking a cell
// opens that head.

#include "EigenTypes.h"
#include "HeadScores.h"
#include "LatestJob.h"
#include "ModelFigures.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QStackedWidget;

namespace qkv::ui {

class Heatmap;
class ModelLoading;
class ModelRunner;
class OnScreenRefresh;
class PredictionPanel;

class HeadsPanel : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Scores, Sweep, Attribution };

    HeadsPanel(ModelRunner* runner, ModelLoading* loading, PredictionPanel* prediction,
               QWidget* parent = nullptr);
    ~HeadsPanel() override;

    Heatmap* grid() const { return m_grid; }
    Mode mode() const;
    void setMode(Mode mode);
    /// The score shown in Scores mode (its index in qkv::allHeadScores).
    void setScore(int index);
    /// Starts the ablation sweep with the options chosen (Sweep mode's Run button, Ctrl+R).
    void runSweep();
    void stopSweep();
    /// The grid shown, layers × heads (empty when there is none) and why there is none.
    const Matrix& values() const { return m_values; }
    QString message() const { return m_message; }
    /// True while the grid on show is being computed (a sweep, an attribution).
    bool isBusy() const;
    /// The grid as CSV: a header row "layer,H0,H1,…", then one row per layer.
    QString csv() const;
    /// Writes the grid as CSV to `path` (writeHeadGridCsv: atomically); false with the reason in `error`.
    bool writeCsv(const QString& path, QString* error) const;

private:
    QWidget* createScoreOptions();
    QWidget* createSweepOptions();
    /// The controls, the runner and the Prediction tab wired to the grid.
    void connectRunner();
    void refresh();
    /// The input of the grids' figures for `run`, with the Prediction tab's position and tokens.
    ModelFigureInput figureInput(const std::shared_ptr<const ModelRun>& run) const;
    /// Computes the figure `name` now and shows it (the cheap ones: a score, a finished sweep).
    void showFigure(const QString& name, const ModelFigureInput& input);
    void showGrid(const QString& name, const ModelFigureContent& content);
    void showMessage(const QString& message);
    void promptRepeatedTokens();
    void exportCsvDialog();
    void updateControls();

    ModelRunner* m_runner;
    ModelLoading* m_loading;
    PredictionPanel* m_prediction;
    QComboBox* m_mode;
    QStackedWidget* m_options;
    QComboBox* m_score;
    QComboBox* m_sweepKind;
    QComboBox* m_sweepMetric;
    QPushButton* m_run;
    QPushButton* m_stop;
    QPushButton* m_csv;
    QProgressBar* m_progress;
    QLabel* m_status;
    Heatmap* m_grid;
    OnScreenRefresh* m_refresh;
    LatestJob<std::pair<ModelFigureContent, QString>> m_attribution;
    Matrix m_values;
    Matrix m_sweep; // the last finished sweep, for the run it was computed on
    Intervention::Kind m_sweepAblation = Intervention::Kind::Zero;
    SweepMetric m_sweepMetricUsed;
    const void* m_sweepRun = nullptr;
    QString m_message;
};

} // namespace qkv::ui
