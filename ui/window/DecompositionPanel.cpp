// SPDX-License-Identifier: GPL-3.0-or-later
#include "DecompositionPanel.h"

#include "Document.h"
#include "Error.h"
#include "Model.h"
#include "ModelLoading.h"
#include "OnScreenRefresh.h"
#include "SessionModelHead.h"

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

/// The terms by |value|, largest first (ties in row-major order), at most `count` of them.
std::vector<DecompositionTerm> largestTerms(const Matrix& terms, int count)
{
    std::vector<DecompositionTerm> all;
    all.reserve(std::size_t(terms.size()));
    for (Index r = 0; r < terms.rows(); ++r)
        for (Index c = 0; c < terms.cols(); ++c)
            all.push_back({r, c, terms(r, c)});
    const auto kept = std::min(all.size(), std::size_t(std::max(0, count)));
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(kept), all.end(),
                      [](const DecompositionTerm& a, const DecompositionTerm& b) {
                          return std::abs(a.value) > std::abs(b.value);
                      });
    all.resize(kept);
    return all;
}

bool isFinite(const ScoreDecomposition& d)
{
    const auto finite = [](double v) { return std::isfinite(v); };
    return std::isfinite(d.score) && d.terms.allFinite() &&
           std::all_of(d.query.begin(), d.query.end(), finite) &&
           std::all_of(d.key.begin(), d.key.end(), finite);
}

QString tokenLabel(const Session& session, Index position)
{
    return position >= 0 && std::size_t(position) < session.tokens.size()
               ? QStringLiteral(" ‘%1’").arg(QString::fromStdString(session.tokens[std::size_t(position)]))
               : QString();
}

} // namespace

DecompositionPanel::DecompositionPanel(ModelLoading* loading, Document* document, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_document(document), m_view(new DecompositionView(this)),
      m_job(this)
{
    setObjectName(QStringLiteral("decompositionPanel"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    m_view->setWhatsThis(tr(
        "<h3>Score Terms</h3><p>Why the head gives the selected cell its score. The residual stream "
        "entering the head's layer is a sum of parts: the token's embedding, its position, each earlier "
        "head's output, each earlier layer's output bias and MLP. Each part gives the query and the key a "
        "part of their own (plus a bias part), so the score is the sum of every query-side part times every "
        "key-side part. Rows: the query side's components; columns: the key side's; the last column and "
        "row (Σ) sum them, the corner is the score. Computed from the model's weights as loaded.</p>"));

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    const auto request = [this] { m_refresh->request(); };
    connect(m_document, &Document::selectionChanged, this, request);
    connect(m_document, &Document::currentHeadChanged, this, request);
    connect(m_document, &Document::sessionReset, this, request);
    connect(m_document, &Document::sessionChanged, this, request);
    connect(m_loading, &ModelLoading::modelOpened, this, request);
    m_refresh->requestOnceBuilt();
}

void DecompositionPanel::showMessage(const QString& message)
{
    m_requested.reset();
    DecompositionDisplay display;
    display.message = message;
    m_job.run(
        false, [display] { return display; },
        [this](DecompositionDisplay shown) { m_view->setDisplay(shown); });
}

void DecompositionPanel::refresh()
{
    const Session& session = m_document->session();
    const std::optional<SessionModelHead> head = sessionModelHead(*m_loading, *m_document);
    if (!head) {
        showMessage(session.model ? tr("The model of this session is not open yet: the score terms follow "
                                       "once it is (File ▸ Open Model…).")
                                  : tr("Taking a score apart needs a head cut from a model (File ▸ Open "
                                       "Model…)."));
        return;
    }
    const Index query = m_document->selectedQuery(), key = m_document->selectedKey();
    const auto n = Index(head->ids.size());
    if (query < 0 || key < 0 || query >= n || key >= n) {
        showMessage(tr("Select a cell of the attention to take its score apart."));
        return;
    }
    Request request{head->model, DecomposeRequest{head->layer, head->head, head->ids, query, key}};
    if (m_requested == request)
        return; // shown already, or on its way
    m_requested = request;
    const QString title = tr("Layer %1, head %2: query %3%4 → key %5%6")
                              .arg(head->layer)
                              .arg(head->head)
                              .arg(query)
                              .arg(tokenLabel(session, query))
                              .arg(key)
                              .arg(tokenLabel(session, key));
    m_job.run(
        true,
        [request, title]() -> DecompositionDisplay {
            DecompositionDisplay display;
            try {
                ScoreDecomposition decomposition = decomposeScore(*request.model, request.cell);
                if (!isFinite(decomposition)) {
                    display.message = tr("The terms of this score are not finite numbers: the model's "
                                         "weights or activations overflow.");
                    return display;
                }
                display.largest = largestTerms(decomposition.terms, largestTermCount);
                display.decomposition = std::move(decomposition);
                display.title = title;
            } catch (const Error& e) {
                display.message = tr("Cannot take the score apart: %1").arg(QString::fromStdString(e.what()));
            } catch (const std::bad_alloc&) {
                display.message = tr("Not enough memory to take this score apart.");
            }
            return display;
        },
        [this](DecompositionDisplay display) {
            if (!display.decomposition)
                m_requested.reset(); // asked again, it is computed again
            m_view->setDisplay(display);
        });
}

} // namespace qkv::ui
