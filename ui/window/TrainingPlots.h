// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Training tab's plots: train and validation loss over steps (log axis), the previous-token and
// induction scores of every head over steps, and the loss at each position of the probe sequence.

#include "Trainer.h"

#include <QObject>

#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPBars;
class QWidget;

namespace qkv::ui {

class TrainingPlots : public QObject {
    Q_OBJECT
public:
    explicit TrainingPlots(QObject* parent = nullptr);
    ~TrainingPlots() override;

    /// The plots as widgets, without a parent: the panel lays them out (and so owns them).
    QWidget* loss() const;
    QWidget* induction() const;
    QWidget* previous() const;
    QWidget* probe() const;

    /// No data in any plot.
    void clear();
    /// Adds the steps' losses and head scores, the x axes reaching the run's last step.
    void add(const std::vector<training::StepReport>& reports);
    /// The probe's loss of predicting token i + 1 at each position i; `scored` marks the positions the task
    /// determines (drawn in another colour).
    void setProbe(const std::vector<double>& losses, const std::vector<std::uint8_t>& scored,
                  std::int64_t step);
    /// Redraws what changed since the last call.
    void replot();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QCustomPlot *m_loss, *m_induction, *m_previous, *m_probe;
    QCPBars *m_scoredBars, *m_otherBars;
    double m_probeTop = 0.0; // the probe axis only grows during a run, so bars can be compared over time
};

} // namespace qkv::ui
