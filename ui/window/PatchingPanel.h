// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Patching tab of the Model workspace: a clean and a corrupted prompt, the metric's tokens, a site and a
// method; the grid of every layer × position (or head) of exact patching and of attribution patching side
// by side, normalized (0: the corrupted run, 1: fully restored), filled as it is computed off the GUI thread
// (PatchingRunner), and a scatter of one against the other. Clicking a head's cell opens that head.

#include "PatchingDisplay.h"
#include "PatchingInput.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QSpinBox;
class QSplitter;
class QToolButton;

namespace qkv::ui {

class Heatmap;
class ModelLoading;
class PatchingPrompts;
class PatchingRunner;
class PatchScatterView;

class PatchingPanel : public QWidget {
    Q_OBJECT
public:
    enum class Methods { Exact, Attribution, Both };

    PatchingPanel(ModelLoading* loading, QWidget* parent = nullptr);
    ~PatchingPanel() override;

    PatchingPrompts* prompts() const { return m_prompts; }
    PatchingRunner* runner() const { return m_runner; }
    Heatmap* grid(PatchMethod method) const;
    PatchScatterView* scatter() const { return m_scatter; }
    void setSite(PatchSite site);
    void setMethods(Methods methods);
    /// Limits the positional sites to positions first … last (inclusive); nothing: every position.
    void setPositionRange(std::optional<std::pair<int, int>> range);
    /// head_out_pos: the position whose heads are shown.
    void setShownPosition(int position);
    /// Checks the fields and starts the grid (Run, Ctrl+Return); a problem is shown instead and nothing
    /// changes. False when nothing started.
    bool run();
    void stop();
    /// Fills the fields with an experiment given as token ids (a lesson step) and runs it, as run().
    bool runExperiment(const std::vector<std::int64_t>& clean, const std::vector<std::int64_t>& corrupt,
                       std::int64_t answer, std::int64_t wrong, PatchSite site, Methods methods);
    bool isRunning() const;
    /// The message above the grids ("" when none).
    QString message() const;
    /// The slice shown of `method`'s grid (empty before any).
    const PatchGridSlice& shownSlice(PatchMethod method) const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    QWidget* createOptions();
    QWidget* createGrids();
    void connectRunner();
    void onModelOpened();
    void updateControls();
    void updatePositionLimits();
    void showGrids();
    void shareGridWidths();
    void arrangeGrids();
    void showMessage(const QString& message, bool problem);
    void setMetrics(std::optional<double> clean, std::optional<double> corrupt);
    void openCell(PatchMethod method, int row, int column);

    ModelLoading* m_loading;
    PatchingRunner* m_runner;
    PatchingPrompts* m_prompts;
    QComboBox* m_site;
    QComboBox* m_methods;
    QCheckBox* m_limitPositions;
    QSpinBox* m_firstPosition;
    QSpinBox* m_lastPosition;
    QToolButton* m_run;
    QToolButton* m_stop;
    QProgressBar* m_progress;
    QLabel* m_status;
    QLabel* m_metrics;
    QWidget* m_depthRow;
    QComboBox* m_depth;
    QSplitter* m_grids;
    Heatmap* m_exact;
    Heatmap* m_attribution;
    PatchScatterView* m_scatter;
    PatchGridSlice m_exactSlice, m_attributionSlice;
    QStringList m_shownTokens;   // the clean prompt's labels of the grids shown
    QStringList m_pendingTokens; // those of the newest run
    QList<int> m_gridShares;     // the panes' shares of the width, as last given
};

} // namespace qkv::ui
