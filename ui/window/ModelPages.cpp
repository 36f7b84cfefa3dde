// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelPages.h"

#include "CircuitsPanel.h"
#include "CompositionPanel.h"
#include "DecompositionPanel.h"
#include "Document.h"
#include "HeadsPanel.h"
#include "Heatmap.h"
#include "InterventionModel.h"
#include "InterventionsPanel.h"
#include "LensPanel.h"
#include "LensView.h"
#include "ModelLoading.h"
#include "ModelOverview.h"
#include "ModelRunner.h"
#include "ModelView.h"
#include "PatchingPanel.h"
#include "PredictionPanel.h"
#include "Workspaces.h"

#include <QAction>
#include <QDockWidget>
#include <QInputDialog>
#include <QMainWindow>
#include <QMenu>
#include <QSplitter>

namespace qkv::ui {

ModelPages::ModelPages(ModelLoading* loading, Document* document, QWidget* window)
    : QObject(window), m_loading(loading), m_document(document),
      m_runner(new ModelRunner(loading, document, this)), m_overview(new ModelOverview(loading, document)),
      m_interventions(new InterventionsPanel(document)),
      m_prediction(new PredictionPanel(m_runner, loading, document, window)),
      m_heads(new HeadsPanel(m_runner, loading, m_prediction, window)),
      m_patching(new PatchingPanel(loading, window)), m_lens(new LensPanel(m_runner, loading, window)),
      m_composition(new CompositionPanel(loading, document, m_overview->view())),
      m_decomposition(new DecompositionPanel(loading, document, window)),
      m_circuits(new CircuitsPanel(loading, document, window)), m_modelTab(new QSplitter(window))
{
    m_runner->setObjectName(QStringLiteral("modelRunner"));
    m_modelTab->setObjectName(QStringLiteral("modelTab"));
    // The composition grid under the thumbnails it draws its arrows on.
    auto* overviewColumn = new QSplitter(Qt::Vertical, m_modelTab);
    overviewColumn->setObjectName(QStringLiteral("modelOverviewColumn"));
    overviewColumn->addWidget(m_overview);
    overviewColumn->addWidget(m_composition);
    overviewColumn->setStretchFactor(0, 3);
    overviewColumn->setStretchFactor(1, 2);
    overviewColumn->setChildrenCollapsible(false);
    m_modelTab->addWidget(overviewColumn);
    m_modelTab->addWidget(m_interventions);
    m_modelTab->setStretchFactor(0, 3);
    m_modelTab->setStretchFactor(1, 1);
    m_modelTab->setChildrenCollapsible(false);
    connect(m_overview->view(), &ModelView::thumbnailMenuRequested, this, &ModelPages::showThumbnailMenu);
    connect(m_interventions, &InterventionsPanel::message, this, &ModelPages::message);
    connect(m_runner, &ModelRunner::runChanged, this, [this] {
        const std::shared_ptr<const Model> model = m_loading->model();
        m_interventions->setLimits(model ? int(model->config().layers) : 0,
                                   model ? int(model->config().heads) : 0);
    });
    connect(m_document, &Document::sessionReset, this, &ModelPages::followSession);
}

ModelPages::~ModelPages() = default;

QWidget* ModelPages::modelTab() const
{
    return m_modelTab;
}

QWidget* ModelPages::predictionTab() const
{
    return m_prediction;
}

QWidget* ModelPages::headsTab() const
{
    return m_heads;
}

QWidget* ModelPages::patchingTab() const
{
    return m_patching;
}

QWidget* ModelPages::lensTab() const
{
    return m_lens;
}

QList<const Figure*> ModelPages::figures() const
{
    return {m_overview->view(), m_prediction->view(), m_heads->grid(), m_lens->view()};
}

QDockWidget* ModelPages::addDocks(Workspaces* workspaces, const std::function<QWidget*(QWidget*)>& wrap)
{
    const auto add = [workspaces, &wrap](const QString& title, const QString& name, QWidget* widget) {
        return workspaces->addDock(Workspace::Model, title, name, wrap(widget), Qt::LeftDockWidgetArea);
    };
    QDockWidget* model = add(tr("Model"), QStringLiteral("dockModel"), modelTab());
    QDockWidget* prediction = add(tr("Prediction"), QStringLiteral("dockPrediction"), predictionTab());
    QDockWidget* headScores = add(tr("Head Scores"), QStringLiteral("dockHeadScores"), headsTab());
    QDockWidget* patching = add(tr("Patching"), QStringLiteral("dockPatching"), patchingTab());
    QDockWidget* lens = add(tr("Logit Lens"), QStringLiteral("dockLogitLens"), lensTab());
    // One area split in two (the page has no central widget to take what two areas would leave). A split
    // beside a dock in a tab group would add a tab instead: the lens joins the overview after the splits.
    QMainWindow* page = workspaces->page(Workspace::Model);
    page->splitDockWidget(model, prediction, Qt::Horizontal);
    page->splitDockWidget(prediction, headScores, Qt::Vertical);
    page->tabifyDockWidget(headScores, patching);
    headScores->raise();
    page->tabifyDockWidget(model, lens);
    model->raise(); // the overview in front: the lens computes only once it is shown
    QMainWindow* head = workspaces->page(Workspace::Head);
    QDockWidget* terms =
        workspaces->addDock(Workspace::Head, tr("Score Terms"), QStringLiteral("dockScoreTerms"),
                            wrap(m_decomposition), Qt::BottomDockWidgetArea);
    if (auto* normalizers = head->findChild<QDockWidget*>(QStringLiteral("dockNormalizers")))
        head->tabifyDockWidget(normalizers, terms);
    if (auto* queryKey = head->findChild<QDockWidget*>(QStringLiteral("dockQueryKeySpace")))
        queryKey->raise();
    addCircuitsDock(workspaces, wrap);
    if (auto* show = workspaces->findChild<QAction*>(QStringLiteral("viewAction_dockPatching")))
        show->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    return model;
}

void ModelPages::addCircuitsDock(Workspaces* workspaces, const std::function<QWidget*(QWidget*)>& wrap)
{
    QMainWindow* head = workspaces->page(Workspace::Head);
    QDockWidget* circuits =
        workspaces->addDock(Workspace::Head, tr("Circuits"), QStringLiteral("dockCircuits"), wrap(m_circuits),
                            Qt::BottomDockWidgetArea);
    // A tab after the head's other views, the Q/K Space tab staying in front (the window raised it).
    auto* experiments = head->findChild<QDockWidget*>(QStringLiteral("dockExperiments"));
    if (!experiments)
        return;
    head->tabifyDockWidget(experiments, circuits);
    if (auto* front = head->findChild<QDockWidget*>(QStringLiteral("dockQueryKeySpace")))
        front->raise();
}

void ModelPages::showThumbnailMenu(int layer, int head, const QPoint& globalPosition)
{
    QMenu menu(m_overview->view());
    InterventionModel* model = m_interventions->model();
    const bool linked = model->hasLink();
    const auto add = [model, layer, head](HeadIntervention::Kind kind, double factor) {
        HeadIntervention intervention;
        intervention.layer = layer;
        intervention.head = head;
        intervention.kind = kind;
        intervention.factor = factor;
        model->addIntervention(intervention);
    };
    QAction* zero = menu.addAction(tr("Ablate (&Zero)"), [add] { add(HeadIntervention::Kind::Zero, 1.0); });
    QAction* mean = menu.addAction(tr("Ablate (&Mean)"), [add] { add(HeadIntervention::Kind::Mean, 1.0); });
    QAction* scale = menu.addAction(tr("&Scale…"), [this, add, layer, head] {
        bool ok = false;
        const double factor =
            QInputDialog::getDouble(m_overview, tr("Scale Head"),
                                    tr("Multiply the output of layer %1, head %2 by:").arg(layer).arg(head),
                                    2.0, -100.0, 100.0, 3, &ok);
        if (ok)
            add(HeadIntervention::Kind::Scale, factor);
    });
    for (QAction* action : {zero, mean, scale}) {
        action->setEnabled(linked);
        action->setObjectName(action == zero   ? QStringLiteral("ablateZero")
                              : action == mean ? QStringLiteral("ablateMean")
                                               : QStringLiteral("scaleHead"));
    }
    menu.addSeparator();
    menu.addAction(tr("&Open Head"), [this, layer, head] { m_loading->openHead(layer, head); })
        ->setObjectName(QStringLiteral("openHead"));
    menu.exec(globalPosition);
}

void ModelPages::followSession()
{
    const Session& session = m_document->session();
    if (!session.model)
        return;
    const std::shared_ptr<const Model> open = m_loading->model();
    if (open && open->folder() == session.model->folder && m_loading->request().ids == session.model->ids)
        return; // the model and text are open already
    m_loading->reopen(*session.model, [this](const QString& problem) { emit message(problem); });
}

} // namespace qkv::ui
