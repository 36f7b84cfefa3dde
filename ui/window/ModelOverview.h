// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Model workspace: every layer and head of the model opened last as thumbnails (ModelView, the "model"
// figure of ModelFigures), computed in one forward pass on a worker thread while a bar shows the layers done;
// clicking a thumbnail opens that layer and head through ModelLoading.

#include "ModelFigures.h"
#include "ModelSession.h"

#include <QFuture>
#include <QList>
#include <QWidget>

#include <atomic>
#include <memory>

class QProgressBar;

namespace qkv::ui {

class Document;
class ModelLoading;
class ModelView;
class OnScreenRefresh;

class ModelOverview : public QWidget {
    Q_OBJECT
public:
    ModelOverview(ModelLoading* loading, Document* document, QWidget* parent = nullptr);
    ~ModelOverview() override;

    ModelView* view() const { return m_view; }
    /// True while thumbnails are being computed (or wait for the tab to be shown).
    bool isBusy() const { return m_busy; }

signals:
    /// New thumbnails are on their way for a model just opened (the window brings the tab forward).
    void modelChanged();

private:
    /// What the thumbnails are of: a model, its tokens and precision (a new head of the same text keeps
    /// them).
    struct Key {
        std::shared_ptr<const Model> model;
        std::vector<std::int64_t> ids;
        Precision precision = Precision::Float64;
        std::string text;
        bool operator==(const Key& other) const
        {
            return model == other.model && ids == other.ids && precision == other.precision;
        }
    };
    struct Outcome {
        quint64 generation = 0;
        std::optional<ModelFigureContent> content;
        QString error;
        bool cancelled = false;
    };

    void onModelOpened();
    void start();
    void finish(const std::shared_ptr<Outcome>& outcome);
    void progress(quint64 generation, int done, int layers);
    void updateSelection();

    ModelLoading* m_loading;
    Document* m_document;
    ModelView* m_view;
    QProgressBar* m_progress;
    OnScreenRefresh* m_refresh;
    RegisteredModelFigure m_figure; // "model"
    Key m_key;
    bool m_busy = false;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel; // of the run in flight
    QList<QFuture<void>> m_running;              // waited for when the window closes
};

} // namespace qkv::ui
