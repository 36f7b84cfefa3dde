// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitsPanel.h"

#include "CircuitsView.h"
#include "Document.h"
#include "LabelText.h"
#include "Model.h"
#include "ModelLoading.h"
#include "OnScreenRefresh.h"
#include "SessionModelHead.h"

#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

CircuitsPanel::CircuitsPanel(ModelLoading* loading, Document* document, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_document(document), m_view(new CircuitsView(this)), m_job(this)
{
    setObjectName(QStringLiteral("circuitsPanel"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    m_view->setWhatsThis(tr(
        "<h3>Circuits</h3><p>Why the open head attends where it does, and what it writes, from its weights "
        "alone. Left: the singular values of the QK circuit W_Q·W_Kᵀ and of the OV circuit W_V·W_O, largest "
        "first (a few large ones: the head reads and writes a low-dimensional subspace). Next: the "
        "eigenvalues "
        "of W_OV, and for a model's head of the full OV circuit through the vocabulary, in the complex plane "
        "with the unit circle; the copying score Σ Re λ / Σ |λ| is near 1 for a head that copies the token "
        "it "
        "attends to. Then the prompt's tokens scored against each other by W_QK alone (no bias, scale or "
        "positions). Right, for a model's head: the vocabulary's tokens the chosen token seeks most as a "
        "query, and the logits attending to it raises most. Every edit of the head moves them.</p>"));

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    const auto request = [this] { m_refresh->request(); };
    connect(m_document, &Document::sessionChanged, this, [request](Document::Changes changes) {
        if (changes & (Document::Everything | Document::Model))
            request();
    });
    connect(m_document, &Document::currentHeadChanged, this, request);
    connect(m_document, &Document::sessionReset, this, request);
    connect(m_document, &Document::selectionChanged, this, [this, request](Index query, Index) {
        if (int(query) == m_lookupToken)
            return;
        m_lookupToken = int(query);
        request();
    });
    // Another model may sit where the last one was: what was asked of the old one counts for nothing.
    connect(m_loading, &ModelLoading::modelOpened, this, [this, request] {
        m_requested.reset();
        m_fullOvHead.reset();
        request();
    });
    connect(m_view, &CircuitsView::lookupTokenChosen, this, [this, request](int index) {
        m_lookupToken = index;
        request();
    });
    m_lookupToken = int(m_document->selectedQuery());
    m_refresh->requestOnceBuilt();
}

CircuitsPanel::~CircuitsPanel() = default;

void CircuitsPanel::refresh()
{
    const Session& session = m_document->session();
    const int head = std::clamp(m_document->currentHead(), 0, std::max(session.headCount() - 1, 0));
    m_view->setSessionDisplay(sessionCircuitsDisplay(session, head));
    refreshModelPart();
}

void CircuitsPanel::showModelMessage(const QString& fullOvWhy, const QString& listsWhy,
                                     const QStringList& tokens)
{
    m_requested.reset();
    CircuitsModelDisplay display;
    display.fullOvMessage = fullOvWhy;
    display.listsMessage = listsWhy;
    display.lookupTokens = tokens;
    display.lookupToken = tokens.isEmpty() ? -1 : std::clamp(m_lookupToken, 0, int(tokens.size()) - 1);
    m_view->setModelDisplay(display);
    m_view->setBusy(false);
}

void CircuitsPanel::refreshModelPart()
{
    const Session& session = m_document->session();
    if (!session.model) {
        showModelMessage(tr("full OV: a model's head only"),
                         tr("What a token seeks and writes: for a model's head only (File ▸ Open Model…)."));
        return;
    }
    const std::shared_ptr<const Model> model = m_loading->model();
    if (!model || model->folder() != session.model->folder) {
        showModelMessage(tr("full OV: the model is not open"), tr("The session's model is not open."));
        return;
    }
    const QStringList tokens = tokenLabels(session.tokens, session.n());
    const int head = std::clamp(m_document->currentHead(), 0, std::max(session.headCount() - 1, 0));
    const std::optional<Index> modelHead = modelHeadOf(session, head, *model, m_loading->request());
    if (!modelHead) {
        showModelMessage(tr("full OV: model head not known"),
                         tr("Which model head this is is not known (open it from the model)."), tokens);
        return;
    }
    const std::vector<std::int64_t>& ids = session.model->ids;
    const int lookup = tokens.isEmpty() ? -1 : std::clamp(m_lookupToken, 0, int(tokens.size()) - 1);
    Request request{model.get(), session.model->layer, *modelHead, std::nullopt};
    if (lookup >= 0 && std::size_t(session.n()) == ids.size())
        request.query = ids[std::size_t(lookup)];
    if (m_requested == request)
        return; // shown already, or on its way
    m_requested = request;

    Request fullOvHead = request;
    fullOvHead.query.reset();
    ModelCircuitsRequest work;
    work.model = model;
    work.layer = request.layer;
    work.head = request.head;
    work.query = request.query;
    if (m_circuitsModel.lock() == model)
        work.circuits = m_circuits;
    if (m_fullOvHead == fullOvHead)
        work.fullOv = m_fullOv;

    CircuitsModelDisplay waiting;
    waiting.lookupTokens = tokens;
    waiting.lookupToken = lookup;
    if (work.fullOv) {
        waiting.fullOvEigenvalues = work.fullOv->eigenvalues;
        waiting.fullOvCopyingScore = work.fullOv->copyingScore;
    } else {
        waiting.fullOvMessage = tr("full OV: computing…");
    }
    waiting.listsMessage = tr("Computing…");
    m_view->setModelDisplay(waiting);
    m_view->setBusy(true);
    m_job.run(
        true, [work] { return computeModelCircuits(work); },
        [this, request, tokens, lookup](ModelCircuitsOutcome outcome) {
            finish(std::move(outcome), request, tokens, lookup);
        });
}

void CircuitsPanel::finish(ModelCircuitsOutcome outcome, const Request& request, const QStringList& tokens,
                           int lookup)
{
    if (!(m_requested == request))
        return; // the session moved on to a message of its own (no model, another session) meanwhile
    m_view->setBusy(false);
    if (!outcome.error.isEmpty()) {
        m_requested.reset(); // asked again, it is computed again
        const QString why = tr("Cannot compute the model's circuits: %1").arg(outcome.error);
        showModelMessage(why, why, tokens);
        return;
    }
    m_circuits = outcome.circuits;
    if (const std::shared_ptr<const Model> model = m_loading->model(); model.get() == request.model)
        m_circuitsModel = model;
    m_fullOv = outcome.fullOv;
    m_fullOvHead = request;
    m_fullOvHead->query.reset();

    CircuitsModelDisplay display;
    display.lookupTokens = tokens;
    display.lookupToken = lookup;
    display.fullOvEigenvalues = outcome.fullOv->eigenvalues;
    display.fullOvCopyingScore = outcome.fullOv->copyingScore;
    display.topKeys = outcome.topKeys;
    display.topWrites = outcome.topWrites;
    if (!request.query)
        display.listsMessage = tr("The tokens are no longer the model's text.");
    m_view->setModelDisplay(display);
}

} // namespace qkv::ui
