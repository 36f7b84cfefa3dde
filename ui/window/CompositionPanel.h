// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Below the Model workspace's thumbnails: how much each earlier head's output is read by the open head's
// query, key or value (qkv::compositionScores, chosen in a selector), as a layer × head grid, computed off
// the GUI thread (the newest head wins) while on screen; the strongest few are drawn as arrows on the
// thumbnails.

#include "Composition.h"
#include "LatestJob.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QLabel;

namespace qkv {
class Model;
}

namespace qkv::ui {

class Document;
class Heatmap;
class ModelLoading;
class ModelView;
class OnScreenRefresh;

class CompositionPanel : public QWidget {
    Q_OBJECT
public:
    /// `thumbnails` gets the arrows (may be null).
    CompositionPanel(ModelLoading* loading, Document* document, ModelView* thumbnails,
                     QWidget* parent = nullptr);

    /// The grid (objectName "compositionHeatmap"): earlier layers as rows, their heads as columns.
    Heatmap* heatmap() const { return m_heatmap; }
    /// The selector (objectName "compositionKind"): Q-, K- or V-composition.
    void setKind(CompositionKind kind);
    CompositionKind kind() const;
    /// The line beside the selector: why there is no grid, or that it is being computed ("" with a grid,
    /// whose title says which head it is of).
    QString statusText() const;
    /// True while the newest scores are being computed.
    bool isBusy() const { return m_job.isBusy(); }
    /// The head the grid is of (layer, head); (−1, −1) when none is shown.
    std::pair<Index, Index> shownHead() const { return {m_shownLayer, m_shownHead}; }

    /// How many of the strongest heads get an arrow on the thumbnails.
    static constexpr int arrowCount = 5;

private:
    struct Request {
        std::shared_ptr<const Model> model;
        Index layer = 0, head = 0;
        friend bool operator==(const Request& a, const Request& b)
        {
            return a.model == b.model && a.layer == b.layer && a.head == b.head;
        }
    };
    struct Outcome {
        std::optional<CompositionScores> scores;
        QString error;
    };

    void refresh();
    void showMessage(const QString& message);
    void finish(Outcome outcome);
    void showScores();

    ModelLoading* m_loading;
    Document* m_document;
    ModelView* m_thumbnails;
    QComboBox* m_kind;
    QLabel* m_status;
    Heatmap* m_heatmap;
    OnScreenRefresh* m_refresh;
    std::optional<Request> m_requested; ///< of the scores shown or being computed
    std::optional<CompositionScores> m_scores;
    Index m_shownLayer = -1, m_shownHead = -1;
    LatestJob<Outcome> m_job; // last: destroyed (waited for) first
};

} // namespace qkv::ui
