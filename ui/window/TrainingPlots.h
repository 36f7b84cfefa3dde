// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Training workspace's plots, fed from the trainer's reports: the loss (train and validation), every
// head's previous-token and induction scores, the probe's loss per position and its attention in every head;
// and a page given by the panel (the runs). The views only draw; this turns reports into what they draw and
// arranges them for the room there is: one plot per tab when it is low, the curves side by side and the
// probe beside its attention on two tabs when there is room for that, all on one page in a large area.

#include "Trainer.h"

#include <QWidget>

#include <cstdint>
#include <vector>

class QSplitter;
class QTabWidget;

namespace qkv::ui {

class ModelView;
class TrainingCurveView;
class TrainingProbeView;

class TrainingPlots : public QWidget {
    Q_OBJECT
public:
    /// `extraPage` (the runs) is the last tab, titled `extraTitle`, in every arrangement.
    TrainingPlots(QWidget* extraPage, const QString& extraTitle, QWidget* parent = nullptr);

    enum class Arrangement {
        OnePerTab, ///< low: each plot on a tab of its own
        Grouped,   ///< the curves side by side on one tab, the probe beside its attention on another
        OnePage    ///< the curves above the probe and its attention, on one tab
    };
    Arrangement arrangement() const { return m_arrangement; }
    /// The arrangement for plots `size` large (the tab bar included).
    static Arrangement arrangementFor(const QSize& size);

    TrainingCurveView* loss() const { return m_loss; }
    TrainingCurveView* previous() const { return m_previous; }
    TrainingCurveView* induction() const { return m_induction; }
    TrainingProbeView* probe() const { return m_probe; }
    ModelView* thumbnails() const { return m_thumbnails; }
    /// Brings the tab showing `plot` forward.
    void showPlot(QWidget* plot);

    /// No data in any plot; the thumbnails say what will appear.
    void clear();
    /// Adds the steps' losses and head scores, the x axes reaching the run's last step.
    void add(const std::vector<training::StepReport>& reports);
    /// The probe's loss per position at `step` and its attention in every layer and head (`heads` a layer).
    void setProbe(const training::ProbeReport& probe, std::int64_t step, int heads);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void arrange(Arrangement arrangement);
    QString probeTabTitle() const;

    TrainingCurveView *m_loss, *m_previous, *m_induction;
    TrainingProbeView* m_probe;
    ModelView* m_thumbnails;
    QWidget* m_extraPage;
    QString m_extraTitle;
    QTabWidget* m_tabs;
    QSplitter *m_curves, *m_probeRow, *m_onePage;
    Arrangement m_arrangement = Arrangement::Grouped;
    std::int64_t m_probeStep = 0; // the step of the probe drawn (0: none)
};

} // namespace qkv::ui
