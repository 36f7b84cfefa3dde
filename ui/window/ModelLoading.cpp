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
    m_document->reset(*m_loaded);
    m_model = model;
    m_request = request;
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

void ModelLoading::resetToModel()
{
    if (!m_loaded)
        return;
    const Session loaded = *m_loaded;
    pushEdit(m_document, tr("Reset to Model"), Document::Everything,
             [loaded](Session& session) { session = loaded; });
}

} // namespace qkv::ui
