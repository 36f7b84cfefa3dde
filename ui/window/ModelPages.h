// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The pages of a real model in the window, built together because they share one forward pass (ModelRunner):
// the Model workspace (every head's attention beside the interventions), the Prediction tab, the Head
// Scores tab, the Patching tab and the Logit Lens. A session saved with a model link reopens its model folder
// in the background when it is opened.

#include <QList>
#include <QObject>

#include <functional>

class QDockWidget;
class QPoint;
class QSplitter;
class QWidget;

namespace qkv::ui {

class CircuitsPanel;
class CompositionPanel;
class DecompositionPanel;
class Document;
class Figure;
class HeadsPanel;
class InterventionsPanel;
class LensPanel;
class ModelLoading;
class ModelOverview;
class ModelRunner;
class PatchingPanel;
class Workspaces;
class PredictionPanel;

class ModelPages : public QObject {
    Q_OBJECT
public:
    /// The pages are children of `window`.
    ModelPages(ModelLoading* loading, Document* document, QWidget* window);
    ~ModelPages() override;

    ModelRunner* runner() const { return m_runner; }
    ModelOverview* overview() const { return m_overview; }
    InterventionsPanel* interventions() const { return m_interventions; }
    PredictionPanel* prediction() const { return m_prediction; }
    HeadsPanel* heads() const { return m_heads; }
    PatchingPanel* patching() const { return m_patching; }
    LensPanel* lens() const { return m_lens; }
    /// The Circuits tab of the head's workbench (the model's full circuits come from the model open here).
    CircuitsPanel* circuits() const { return m_circuits; }
    CompositionPanel* composition() const { return m_composition; }
    DecompositionPanel* decomposition() const { return m_decomposition; }
    /// The widgets of the tabs: Model (thumbnails and interventions), Prediction, Head Scores, Patching,
    /// Logit Lens.
    QWidget* modelTab() const;
    QWidget* predictionTab() const;
    QWidget* headsTab() const;
    QWidget* patchingTab() const;
    QWidget* lensTab() const;
    /// Their exportable views.
    QList<const Figure*> figures() const;
    /// The tabs as the Model workspace's docks: the model's overview on the left (the Logit Lens a tab behind
    /// it), the Prediction above the Head Scores and Patching tabs on the right, each tab's widget given to
    /// `wrap` first (the window's scroll area); the Score Terms tab joins the Head workspace's tabs below its
    /// heatmaps, where the cell it takes apart is selected, and the Circuits tab the head's views at the
    /// bottom of the head's workbench, behind the others. Returns the overview's dock.
    QDockWidget* addDocks(Workspaces* workspaces, const std::function<QWidget*(QWidget*)>& wrap);

signals:
    /// Something to tell in the status bar (a model folder of a session that cannot be reopened).
    void message(const QString& text);

private:
    void addCircuitsDock(Workspaces* workspaces, const std::function<QWidget*(QWidget*)>& wrap);
    void showThumbnailMenu(int layer, int head, const QPoint& globalPosition);
    /// A session with a model link that names no model open: reopen its folder in the background.
    void followSession();

    ModelLoading* m_loading;
    Document* m_document;
    ModelRunner* m_runner;
    ModelOverview* m_overview;
    InterventionsPanel* m_interventions;
    PredictionPanel* m_prediction;
    HeadsPanel* m_heads;
    PatchingPanel* m_patching;
    LensPanel* m_lens;
    CompositionPanel* m_composition;
    DecompositionPanel* m_decomposition;
    CircuitsPanel* m_circuits;
    QSplitter* m_modelTab;
};

} // namespace qkv::ui
