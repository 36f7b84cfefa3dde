// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model's forward pass to the logits in the window: the unmodified run of the model opened last, built on
// a worker thread, and the prediction with the session's interventions, recomputed off the GUI thread after
// every edit (the newest edit wins). The ablation sweep over every head runs here too, with progress and
// Stop.

#include "LatestJob.h"
#include "ModelRun.h"

#include <QFuture>
#include <QList>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

namespace qkv::ui {

class Document;
class ModelLoading;

/// The interventions `session` asks for (its `model` link's), each of kind Session bound to a copy of
/// `session` itself (its own first head, with every edit). Empty without a link.
std::vector<Intervention> sessionInterventions(const Session& session);

class ModelRunner : public QObject {
    Q_OBJECT
public:
    ModelRunner(ModelLoading* loading, Document* document, QObject* parent = nullptr);
    ~ModelRunner() override;

    /// The unmodified run of the model opened last; null while it is built, before any model, or when the
    /// model refused (runError()).
    std::shared_ptr<const ModelRun> run() const { return m_run; }
    bool isBuilding() const { return m_building; }
    QString runError() const { return m_runError; }

    /// The newest prediction with the document's interventions (null before the first, or on an error).
    std::shared_ptr<const Prediction> prediction() const { return m_prediction; }
    /// Why there is no prediction ("" when there is one).
    QString predictionError() const { return m_predictionError; }
    /// The interventions prediction() applied.
    const std::vector<Intervention>& appliedInterventions() const { return m_applied; }
    /// True until the prediction for the newest edit is delivered.
    bool isPredicting() const { return m_job.isBusy(); }
    /// Predictions delivered since the window opened (each edit that changes the interventions adds one).
    quint64 predictionCount() const { return m_predictions; }
    /// The session's link does not name the model open (another folder or text): no interventions apply.
    bool linkMismatch() const { return m_linkMismatch; }

    /// Stops building the run (the Stop button of the Prediction tab).
    void stopBuilding();

    /// Runs ModelRun::ablationSweep for every head on a worker thread (a running sweep is stopped first).
    void startSweep(Intervention::Kind kind, const SweepMetric& metric);
    void stopSweep();
    bool isSweeping() const { return m_sweeping; }

signals:
    /// The run started building (isBuilding()), or is ready, or failed.
    void runChanged();
    void buildProgress(int done, int total);
    void predictionChanged();
    void sweepProgress(int done, int total);
    /// A sweep finished: `values` is layers × heads (the metric's change for each head ablated).
    void sweepFinished(const qkv::Matrix& values);
    /// A sweep failed (`message`) or was stopped (empty message).
    void sweepFailed(const QString& message);

private:
    struct BuildOutcome {
        quint64 generation = 0;
        std::shared_ptr<const ModelRun> run;
        QString error;
        bool cancelled = false;
    };
    struct PredictOutcome {
        std::shared_ptr<const Prediction> prediction;
        QString error;
    };
    struct SweepOutcome {
        quint64 generation = 0;
        Matrix values;
        QString error;
        bool cancelled = false;
    };

    void onModelOpened();
    void finishBuild(const BuildOutcome& outcome);
    /// Starts a prediction for the document's interventions when they differ from the last ones asked for.
    void updatePrediction(bool force = false);
    void finishSweep(const SweepOutcome& outcome);

    ModelLoading* m_loading;
    Document* m_document;
    std::shared_ptr<const ModelRun> m_run;
    QString m_runError;
    bool m_building = false;
    quint64 m_buildGeneration = 0;
    std::shared_ptr<std::atomic<bool>> m_cancelBuild;

    LatestJob<PredictOutcome> m_job;
    std::vector<Intervention> m_requested; // asked of the newest job
    std::vector<Intervention> m_applied;   // of the prediction shown
    std::shared_ptr<const Prediction> m_prediction;
    QString m_predictionError;
    quint64 m_predictions = 0;
    bool m_linkMismatch = false;

    bool m_sweeping = false;
    quint64 m_sweepGeneration = 0;
    std::shared_ptr<std::atomic<bool>> m_cancelSweep;
    QList<QFuture<void>> m_running; // waited for when the window closes
};

} // namespace qkv::ui
