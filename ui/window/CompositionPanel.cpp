// SPDX-License-Identifier: GPL-3.0-or-later
#include "CompositionPanel.h"

#include "Document.h"
#include "Error.h"
#include "Heatmap.h"
#include "Model.h"
#include "ModelLoading.h"
#include "ModelView.h"
#include "OnScreenRefresh.h"
#include "SessionModelHead.h"
#include "TrainingModel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

namespace {

QString kindName(CompositionKind kind)
{
    switch (kind) {
    case CompositionKind::Query:
        return CompositionPanel::tr("Q-composition");
    case CompositionKind::Key:
        return CompositionPanel::tr("K-composition");
    case CompositionKind::Value:
        return CompositionPanel::tr("V-composition");
    }
    return QString();
}

/// The `count` largest positive scores of the grid (earlier layers × heads) as arrows, each as strong as
/// its score relative to the largest (the grid gives the scores themselves).
QList<HeadArrow> strongestArrows(const Matrix& grid, int count)
{
    QList<HeadArrow> arrows;
    for (Index l = 0; l < grid.rows(); ++l)
        for (Index h = 0; h < grid.cols(); ++h)
            if (grid(l, h) > 0)
                arrows.append({int(l), int(h), grid(l, h)});
    std::sort(arrows.begin(), arrows.end(),
              [](const HeadArrow& a, const HeadArrow& b) { return a.strength > b.strength; });
    arrows = arrows.mid(0, count);
    const double strongest = arrows.isEmpty() ? 1.0 : arrows.front().strength;
    for (HeadArrow& arrow : arrows)
        arrow.strength /= strongest;
    return arrows;
}

} // namespace

CompositionPanel::CompositionPanel(ModelLoading* loading, Document* document, ModelView* thumbnails,
                                   QWidget* parent)
    : QWidget(parent), m_loading(loading), m_document(document), m_thumbnails(thumbnails),
      m_kind(new QComboBox(this)), m_status(new QLabel(this)), m_heatmap(new Heatmap(this)), m_job(this)
{
    setObjectName(QStringLiteral("compositionPanel"));
    m_kind->setObjectName(QStringLiteral("compositionKind"));
    for (CompositionKind kind : {CompositionKind::Query, CompositionKind::Key, CompositionKind::Value})
        m_kind->addItem(kindName(kind), int(kind));
    m_kind->setToolTip(tr("Which input of the open head reads the earlier heads' outputs: its query (Q), its "
                          "key (K) or its value (V)"));
    m_status->setObjectName(QStringLiteral("compositionStatus"));
    m_status->setWordWrap(true);
    m_heatmap->setObjectName(QStringLiteral("compositionHeatmap"));
    m_heatmap->setFigureName(QStringLiteral("composition"));
    m_heatmap->setAxisTitles(tr("layer"), tr("head"));
    m_heatmap->setColorMode(Heatmap::ColorMode::Sequential);
    m_heatmap->setColorBarLabel(tr("score"));
    m_heatmap->setMinimumHeight(fontMetrics().height() * 8);

    auto* row = new QHBoxLayout;
    row->setContentsMargins(4, 2, 4, 0);
    auto* label = new QLabel(tr("&Composition:"), this);
    label->setBuddy(m_kind);
    row->addWidget(label);
    row->addWidget(m_kind);
    row->addWidget(m_status, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(row);
    layout->addWidget(m_heatmap, 1);
    setWhatsThis(tr("<h3>Composition</h3><p>How much the open head reads what each head of an earlier "
                    "layer writes, from the weights alone: ‖W_OV·W_QK‖ over the product of their norms "
                    "(for Q-composition through the head's query side, for K-composition its key side, for "
                    "V-composition its value and output). 0: the earlier head writes where this one does "
                    "not read. The strongest few are drawn as arrows on the thumbnails.</p>"));

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    const auto request = [this] { m_refresh->request(); };
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] { showScores(); });
    connect(m_document, &Document::currentHeadChanged, this, request);
    connect(m_document, &Document::sessionReset, this, request);
    connect(m_loading, &ModelLoading::modelOpened, this, request);
    m_refresh->requestOnceBuilt();
}

void CompositionPanel::setKind(CompositionKind kind)
{
    m_kind->setCurrentIndex(m_kind->findData(int(kind)));
}

CompositionKind CompositionPanel::kind() const
{
    return CompositionKind(m_kind->currentData().toInt());
}

QString CompositionPanel::statusText() const
{
    return m_status->text();
}

void CompositionPanel::showMessage(const QString& message)
{
    m_requested.reset();
    m_scores.reset();
    m_shownLayer = m_shownHead = -1;
    // A newer request than any in flight: what that one computed is dropped.
    m_job.run(
        false, [] { return Outcome(); }, [](Outcome) {});
    m_status->setText(message);
    m_heatmap->clear();
    if (m_thumbnails)
        m_thumbnails->setArrows(-1, -1, {});
}

void CompositionPanel::refresh()
{
    const std::optional<SessionModelHead> head = sessionModelHead(*m_loading, *m_document);
    if (!head) {
        showMessage(tr("Open a head of a model to see which earlier heads it reads."));
        return;
    }
    if (head->layer == 0) {
        showMessage(tr("Layer 0, head %1 reads no earlier head.").arg(head->head));
        return;
    }
    const Request request{head->model, head->layer, head->head};
    if (m_requested == request)
        return; // shown already, or on its way
    m_requested = request;
    m_status->setText(
        tr("Computing the composition into layer %1, head %2…").arg(head->layer).arg(head->head));
    m_job.run(
        true,
        [request]() -> Outcome {
            try {
                const auto weights = training::sharedWeights<double>(*request.model);
                return {compositionScores<double>(*weights, request.layer, request.head), QString()};
            } catch (const Error& e) {
                return {std::nullopt, QString::fromStdString(e.what())};
            } catch (const std::bad_alloc&) {
                return {std::nullopt, tr("not enough memory for the model's weights")};
            }
        },
        [this](Outcome outcome) { finish(std::move(outcome)); });
}

void CompositionPanel::finish(Outcome outcome)
{
    if (!outcome.scores) {
        const QString error = outcome.error;
        showMessage(tr("Cannot compute the composition: %1").arg(error));
        return;
    }
    m_scores = std::move(outcome.scores);
    m_shownLayer = m_requested->layer;
    m_shownHead = m_requested->head;
    showScores();
}

void CompositionPanel::showScores()
{
    if (!m_scores || m_shownLayer < 1)
        return;
    const Matrix grid = m_scores->into(kind(), m_shownLayer, m_shownHead);
    QStringList layers, heads;
    for (Index l = 0; l < grid.rows(); ++l)
        layers << QStringLiteral("L%1").arg(l);
    for (Index h = 0; h < grid.cols(); ++h)
        heads << QStringLiteral("H%1").arg(h);
    m_heatmap->setMatrix(grid, layers, heads);
    // From 0, where an earlier head's output misses this head's input entirely.
    const double largest = grid.size() ? grid.maxCoeff() : 0.0;
    m_heatmap->setFixedRange(0.0, largest > 0 ? largest : 1.0);
    // Short, under the selector that says which composition, so that a narrow column keeps it whole.
    m_heatmap->setTitle(tr("into layer %1, head %2").arg(m_shownLayer).arg(m_shownHead));
    m_status->clear();
    if (m_thumbnails)
        m_thumbnails->setArrows(int(m_shownLayer), int(m_shownHead), strongestArrows(grid, arrowCount));
}

} // namespace qkv::ui
