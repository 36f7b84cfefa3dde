// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelLoading.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "ModelDialog.h"

#include <QEventLoop>
#include <QFutureWatcher>
#include <QMessageBox>
#include <QProgressDialog>
#include <QtConcurrent/QtConcurrentRun>

#include <variant>

namespace qkv::ui {

ModelLink linkFor(const Model& model, const ModelHeadRequest& request, const Session& current)
{
    ModelLink link = modelLinkFor(model, request);
    // Another head of the same model keeps the patching experiment (a head opened from its grid reads the
    // clean prompt); of the same text, also the ablations and scalings made so far; the head open is live.
    if (current.model && current.model->folder == link.folder)
        link.patching = current.model->patching;
    if (current.model && current.model->folder == link.folder && current.model->ids == link.ids)
        for (const HeadIntervention& intervention : current.model->interventions)
            if (intervention.kind != HeadIntervention::Kind::Session)
                link.interventions.push_back(intervention);
    return link;
}

ModelLoading::ModelLoading(Document* document, QWidget* window, std::function<bool()> mayReplace)
    : QObject(window), m_document(document), m_window(window), m_mayReplace(std::move(mayReplace))
{
}

void ModelLoading::openDialog()
{
    if (!m_mayReplace())
        return;
    ModelDialog dialog(m_window);
    if (dialog.exec() == QDialog::Accepted)
        open(dialog.model(), dialog.request());
}

bool ModelLoading::open(const std::shared_ptr<const Model>& model, const ModelHeadRequest& request,
                        QString* error, bool showErrors)
{
    if (m_opening) { // reached from the waiting below (a timer, a queued call): one forward pass at a time
        const QString message = tr("a model is still opening; wait for it to finish");
        if (error)
            *error = message;
        return false;
    }
    // The forward pass reads and multiplies every earlier layer's weights: seconds for a large model, so it
    // runs on a worker thread while the window waits behind a busy indicator. Clicks and keys wait too (they
    // are handled afterwards): an edit or a second open meanwhile would race the session being replaced.
    m_opening = true;
    emit openingChanged(true);
    using Outcome = std::variant<Session, QString>;
    QFutureWatcher<Outcome> watcher;
    QEventLoop loop;
    connect(&watcher, &QFutureWatcher<Outcome>::finished, &loop, &QEventLoop::quit);
    watcher.setFuture(QtConcurrent::run([model, request]() -> Outcome {
        try {
            return sessionFromModel(*model, request);
        } catch (const Error& e) {
            return QString::fromStdString(e.what());
        } catch (const std::bad_alloc&) {
            return tr("not enough memory for this model");
        }
    }));
    QProgressDialog progress(tr("Running %1 up to layer %2…")
                                 .arg(QString::fromStdString(model->config().modelType))
                                 .arg(request.layer),
                             QString(), 0, 0, m_window);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    if (!watcher.isFinished())
        loop.exec(QEventLoop::ExcludeUserInputEvents);
    progress.reset();
    m_opening = false;
    emit openingChanged(false);
    const Outcome outcome = watcher.result();
    if (const QString* message = std::get_if<QString>(&outcome)) {
        if (error)
            *error = *message;
        if (showErrors)
            QMessageBox::warning(m_window, tr("Cannot open the model"), *message);
        return false;
    }
    m_loaded = std::get<Session>(outcome);
    if (!m_loaded->model)
        m_loaded->model = linkFor(*model, request, m_document->session());
    ++m_reopenGeneration; // a reopen still running is for a session this one replaces
    m_model = model;      // before the session: what follows the reset finds its model open
    m_request = request;
    m_document->reset(*m_loaded);
    emit modelSessionChanged(true);
    emit modelOpened();
    return true;
}

bool ModelLoading::openHead(Index layer, Index head)
{
    if (!m_model || !m_mayReplace())
        return false;
    ModelHeadRequest request = m_request;
    request.layer = layer;
    request.heads = {head};
    return open(m_model, request);
}

bool ModelLoading::openHead(Index layer, Index head, const std::vector<std::int64_t>& ids,
                            const std::string& text)
{
    if (!m_model || !m_mayReplace())
        return false;
    ModelHeadRequest request = m_request;
    request.layer = layer;
    request.heads = {head};
    request.ids = ids;
    request.text = text;
    return open(m_model, request);
}

bool ModelLoading::openIds(const std::vector<std::int64_t>& ids, const std::string& text)
{
    if (!m_model || !m_mayReplace())
        return false;
    ModelHeadRequest request = m_request;
    request.ids = ids;
    request.text = text;
    return open(m_model, request);
}

void ModelLoading::reopen(const ModelLink& link, std::function<void(const QString&)> problem)
{
    const quint64 generation = ++m_reopenGeneration;
    ModelHeadRequest request;
    request.layer = link.layer;
    request.heads = {link.head};
    request.ids = link.ids;
    request.precision = m_document->session().precision;
    struct Outcome {
        std::shared_ptr<const Model> model;
        std::optional<Session> loaded;
        QString error;
    };
    auto* watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this,
            [this, watcher, generation, link, request, problem = std::move(problem)] {
                watcher->deleteLater();
                const Outcome outcome = watcher->result();
                const Session& session = m_document->session();
                if (generation != m_reopenGeneration || !session.model || !(*session.model == link))
                    return; // another session, or its link was edited meanwhile
                if (!outcome.error.isEmpty()) {
                    problem(
                        tr("Cannot reopen the model of this session (%1): %2. The session is kept as it is.")
                            .arg(QString::fromStdString(link.folder), outcome.error));
                    return;
                }
                m_model = outcome.model;
                m_request = request;
                m_loaded = outcome.loaded;
                if (m_loaded)
                    m_loaded->model = link;
                emit modelSessionChanged(m_loaded.has_value());
                emit modelOpened();
            });
    const std::string folder = link.folder;
    watcher->setFuture(QtConcurrent::run([folder, request]() -> Outcome {
        Outcome outcome;
        try {
            auto model = std::make_shared<const Model>(Model::open(folder));
            outcome.model = model;
            try {
                outcome.loaded = sessionFromModel(*model, request); // for Edit ▸ Reset to Model
            } catch (const Error&) {
            }
        } catch (const Error& e) {
            outcome.error = QString::fromStdString(e.what());
        } catch (const std::bad_alloc&) {
            outcome.error = tr("not enough memory for this model");
        }
        return outcome;
    }));
}

void ModelLoading::resetToModel()
{
    if (!m_loaded)
        return;
    const Session loaded = *m_loaded;
    // The head as it was loaded; the interventions stay as they are (they have their own undo steps).
    pushEdit(m_document, tr("Reset to Model"), Document::Everything | Document::Model,
             [loaded](Session& session) {
                 std::optional<ModelLink> link = std::move(session.model);
                 session = loaded;
                 if (link)
                     session.model = std::move(link);
             });
}

} // namespace qkv::ui
