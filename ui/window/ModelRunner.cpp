// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelRunner.h"

#include "Document.h"
#include "Error.h"
#include "ModelLoading.h"

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace qkv::ui {

namespace {

/// A RunProgress for a worker thread: (done, total) posted to `runner`'s thread, where `report` emits it
/// while the job is still the newest; false (stop) once `cancel` is set.
template <typename Report>
RunProgress postedProgress(ModelRunner* runner, const std::shared_ptr<std::atomic<bool>>& cancel,
                           const Report& report)
{
    return [runner, cancel, report](Index done, Index total) {
        QMetaObject::invokeMethod(
            runner, [report, done, total] { report(int(done), int(total)); }, Qt::QueuedConnection);
        return !cancel->load();
    };
}

/// Runs `job`, recording in `outcome` a stop or the reason it failed (`outOfMemory` for std::bad_alloc).
template <typename Outcome, typename Job>
void recordFailures(Outcome& outcome, const QString& outOfMemory, const Job& job)
{
    try {
        job();
    } catch (const Cancelled&) {
        outcome.cancelled = true;
    } catch (const Error& e) {
        outcome.error = QString::fromStdString(e.what());
    } catch (const std::bad_alloc&) {
        outcome.error = outOfMemory;
    }
}

} // namespace

std::vector<Intervention> sessionInterventions(const Session& session)
{
    std::vector<Intervention> interventions;
    if (!session.model)
        return interventions;
    std::shared_ptr<const Session> own;
    for (const HeadIntervention& head : session.model->interventions) {
        Intervention intervention;
        static_cast<HeadIntervention&>(intervention) = head;
        if (head.kind == HeadIntervention::Kind::Session) {
            if (!own) {
                auto copy = std::make_shared<Session>(session);
                copy->snapshots.clear(); // what z is computed from is the head, not its history
                copy->model.reset();
                own = std::move(copy);
            }
            intervention.session = own;
        }
        interventions.push_back(std::move(intervention));
    }
    return interventions;
}

ModelRunner::ModelRunner(ModelLoading* loading, Document* document, QObject* parent)
    : QObject(parent), m_loading(loading), m_document(document), m_job(this)
{
    connect(m_loading, &ModelLoading::modelOpened, this, &ModelRunner::onModelOpened);
    connect(m_document, &Document::sessionChanged, this, [this] { updatePrediction(); });
}

ModelRunner::~ModelRunner()
{
    for (const auto& cancel : {m_cancelBuild, m_cancelSweep})
        if (cancel)
            cancel->store(true);
    for (QFuture<void>& running : m_running)
        running.waitForFinished(); // their queued results die with this object
}

void ModelRunner::onModelOpened()
{
    const std::shared_ptr<const Model> model = m_loading->model();
    const ModelHeadRequest& request = m_loading->request();
    if (m_run && &m_run->model() == model.get() && m_run->ids() == request.ids &&
        m_run->precision() == request.precision) {
        updatePrediction(true); // another head of the same text: the run stays
        return;
    }
    if (m_cancelBuild)
        m_cancelBuild->store(true); // newest wins
    stopSweep();
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancelBuild = cancel;
    const quint64 generation = ++m_buildGeneration;
    m_building = true;
    m_run.reset();
    m_runError.clear();
    m_prediction.reset();
    m_predictionError.clear();
    m_requested.clear();
    m_applied.clear();
    emit runChanged();
    emit predictionChanged();
    const std::vector<std::int64_t> ids = request.ids;
    const Precision precision = request.precision;
    m_running.removeIf([](const QFuture<void>& running) { return running.isFinished(); });
    m_running.append(QtConcurrent::run([this, model, ids, precision, cancel, generation] {
        BuildOutcome outcome;
        outcome.generation = generation;
        const RunProgress progress = postedProgress(this, cancel, [this, generation](int done, int total) {
            if (generation == m_buildGeneration)
                emit buildProgress(done, total);
        });
        recordFailures(outcome, tr("not enough memory for the model's forward pass on this text"), [&] {
            outcome.run = std::make_shared<const ModelRun>(model, ids, precision, progress);
        });
        QMetaObject::invokeMethod(
            this, [this, outcome] { finishBuild(outcome); }, Qt::QueuedConnection);
    }));
}

void ModelRunner::stopBuilding()
{
    if (m_building && m_cancelBuild)
        m_cancelBuild->store(true);
}

void ModelRunner::finishBuild(const BuildOutcome& outcome)
{
    if (outcome.generation != m_buildGeneration)
        return; // an older model's
    m_building = false;
    m_run = outcome.run;
    m_runError = outcome.cancelled ? tr("Stopped before the forward pass finished; open the model again to "
                                        "see its prediction")
                                   : outcome.error;
    emit runChanged();
    updatePrediction(true);
}

void ModelRunner::updatePrediction(bool force)
{
    if (!m_run)
        return;
    const Session& session = m_document->session();
    // A link that names another text or folder than the run's (a session of another model) applies nothing.
    m_linkMismatch = session.model &&
                     (session.model->ids != m_run->ids() || session.model->folder != m_run->model().folder());
    std::vector<Intervention> interventions =
        m_linkMismatch ? std::vector<Intervention>{} : sessionInterventions(session);
    if (!force && interventions == m_requested)
        return;
    m_requested = interventions;
    const bool any = std::any_of(interventions.begin(), interventions.end(),
                                 [](const Intervention& i) { return i.enabled; });
    const std::shared_ptr<const ModelRun> run = m_run;
    // Without an intervention switched on the prediction is the clean one: no work at all.
    m_job.run(
        any,
        [run, interventions, any]() -> PredictOutcome {
            if (!any)
                return {std::shared_ptr<const Prediction>(run, &run->clean()), QString()};
            try {
                return {std::make_shared<const Prediction>(run->predict(interventions)), QString()};
            } catch (const Error& e) {
                return {nullptr, QString::fromStdString(e.what())};
            } catch (const std::bad_alloc&) {
                return {nullptr, tr("not enough memory for the forward pass with these interventions")};
            }
        },
        [this, interventions](PredictOutcome outcome) {
            m_prediction = std::move(outcome.prediction);
            m_predictionError = outcome.error;
            m_applied = interventions;
            ++m_predictions;
            emit predictionChanged();
        });
}

void ModelRunner::startSweep(Intervention::Kind kind, const SweepMetric& metric)
{
    stopSweep();
    if (!m_run)
        return;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancelSweep = cancel;
    const quint64 generation = ++m_sweepGeneration;
    m_sweeping = true;
    const std::shared_ptr<const ModelRun> run = m_run;
    m_running.removeIf([](const QFuture<void>& running) { return running.isFinished(); });
    m_running.append(QtConcurrent::run([this, run, kind, metric, cancel, generation] {
        SweepOutcome outcome;
        outcome.generation = generation;
        const RunProgress progress = postedProgress(this, cancel, [this, generation](int done, int total) {
            if (generation == m_sweepGeneration)
                emit sweepProgress(done, total);
        });
        recordFailures(outcome, tr("not enough memory for the ablation sweep"),
                       [&] { outcome.values = run->ablationSweep(kind, metric, progress); });
        QMetaObject::invokeMethod(
            this, [this, outcome] { finishSweep(outcome); }, Qt::QueuedConnection);
    }));
}

void ModelRunner::stopSweep()
{
    if (!m_sweeping)
        return;
    if (m_cancelSweep)
        m_cancelSweep->store(true);
    ++m_sweepGeneration; // what it still reports is dropped
    m_sweeping = false;
    emit sweepFailed(QString());
}

void ModelRunner::finishSweep(const SweepOutcome& outcome)
{
    if (outcome.generation != m_sweepGeneration)
        return;
    m_sweeping = false;
    if (outcome.cancelled || !outcome.error.isEmpty())
        emit sweepFailed(outcome.error);
    else
        emit sweepFinished(outcome.values);
}

} // namespace qkv::ui
