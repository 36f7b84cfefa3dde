// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelOverview.h"

#include "Document.h"
#include "Error.h"
#include "ModelLoading.h"
#include "ModelView.h"
#include "OnScreenRefresh.h"

#include <QProgressBar>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace qkv::ui {

ModelOverview::ModelOverview(ModelLoading* loading, Document* document, QWidget* parent)
    : QWidget(parent), m_loading(loading), m_document(document), m_view(new ModelView),
      m_progress(new QProgressBar(this)), m_figure(*ModelFigures::find(QStringLiteral("model")))
{
    setObjectName(QStringLiteral("modelOverview"));
    m_progress->setObjectName(QStringLiteral("modelViewProgress"));
    m_progress->setFormat(tr("Layer %v of %m"));
    m_progress->hide();
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("modelViewScroll"));
    scroll->setWidget(m_view);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_progress);
    layout->addWidget(scroll, 1);

    // A forward pass through every layer is heavy: only while the tab is on screen (else when shown).
    m_refresh = new OnScreenRefresh(this, [this] { start(); });
    connect(m_loading, &ModelLoading::modelOpened, this, &ModelOverview::onModelOpened);
    connect(m_document, &Document::currentHeadChanged, this, &ModelOverview::updateSelection);
    connect(m_view, &ModelView::thumbnailClicked, this,
            [this](int layer, int head) { m_loading->openHead(layer, head); });
}

ModelOverview::~ModelOverview()
{
    if (m_cancel)
        m_cancel->store(true);
    for (QFuture<void>& run : m_running)
        run.waitForFinished(); // its queued result dies with this object
}

void ModelOverview::onModelOpened()
{
    const ModelHeadRequest& request = m_loading->request();
    const Key key{m_loading->model(), request.ids, request.precision, request.text};
    if (key == m_key) { // another head of the same text: the thumbnails stay
        updateSelection();
        return;
    }
    m_key = key;
    if (m_cancel)
        m_cancel->store(true); // newest wins
    ++m_generation;
    m_busy = true;
    m_view->clear(
        tr("Computing every layer and head of %1…").arg(QString::fromStdString(modelName(*m_key.model))));
    m_progress->setRange(0, int(m_key.model->config().layers));
    m_progress->setValue(0);
    m_progress->show();
    emit modelChanged();
    m_refresh->request();
}

void ModelOverview::start()
{
    if (!m_busy || !m_key.model)
        return;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    const quint64 generation = m_generation;
    const Key key = m_key;
    m_running.removeIf([](const QFuture<void>& run) { return run.isFinished(); });
    ModelFigureInput input;
    input.model = key.model;
    input.ids = key.ids;
    input.precision = key.precision;
    input.title = QString::fromStdString(modelInputTitle(*key.model, key.text, key.ids.size()));
    input.progress = [this, generation, cancel](Index done, Index layers) {
        QMetaObject::invokeMethod(
            this, [this, generation, done, layers] { progress(generation, int(done), int(layers)); },
            Qt::QueuedConnection);
        return !cancel->load();
    };
    m_running.append(QtConcurrent::run([this, compute = m_figure.compute, input, cancel, generation] {
        auto outcome = std::make_shared<Outcome>();
        outcome->generation = generation;
        try {
            outcome->content = compute(input);
            outcome->cancelled = cancel->load();
        } catch (const Error& e) {
            outcome->error = QString::fromStdString(e.what());
        } catch (const std::bad_alloc&) {
            outcome->error = tr("not enough memory for every layer's attention of this text");
        }
        QMetaObject::invokeMethod(
            this, [this, outcome] { finish(outcome); }, Qt::QueuedConnection);
    }));
}

void ModelOverview::progress(quint64 generation, int done, int layers)
{
    if (generation != m_generation)
        return;
    m_progress->setRange(0, layers);
    m_progress->setValue(done);
}

void ModelOverview::finish(const std::shared_ptr<Outcome>& outcome)
{
    if (outcome->generation != m_generation || outcome->cancelled)
        return; // an older model's, or stopped for a newer one
    m_busy = false;
    m_progress->hide();
    if (!outcome->error.isEmpty()) {
        m_view->clear(tr("Cannot compute the model's attention: %1").arg(outcome->error));
        return;
    }
    m_figure.show(m_view, *outcome->content);
    updateSelection();
}

void ModelOverview::updateSelection()
{
    if (!m_loading->model() || m_view->thumbnailCount() == 0)
        return;
    const ModelHeadRequest& request = m_loading->request();
    const int current = m_document->currentHead();
    const Index head = request.heads.empty() ? Index(current)
                       : current >= 0 && std::size_t(current) < request.heads.size()
                           ? request.heads[std::size_t(current)]
                           : -1;
    m_view->setSelected(int(request.layer), int(head));
}

} // namespace qkv::ui
