// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The computed matrices of the current head, one heatmap tab each.

#include <QHash>
#include <QSet>
#include <QWidget>

class QLabel;
class QTabWidget;

namespace qkv::ui {

class Document;
class Heatmap;
class OnScreenRefresh;
class PipelineView;

/// The pipeline canvas (the first tab, shown by default), then tabs of heatmaps (Q, K, V, scores, scaled
/// scores, mask, weights, head output, final output) that follow the document's result and current head. When
/// the engine refuses the session, its message is shown above the tabs and the heatmaps are emptied rather
/// than left showing stale numbers. Only the tab on show is refreshed; the others are when they are shown (or
/// exported).
class ResultViews : public QWidget {
    Q_OBJECT
public:
    explicit ResultViews(Document* document, QWidget* parent = nullptr);

    QTabWidget* tabs() const { return m_tabs; }
    /// The heatmap named "Q", "K", "V", "scores", "scaled", "mask", "weights", "output" or "finalOutput"
    /// (its objectName is "heatmap_" + name); null for another name.
    Heatmap* heatmap(const QString& name) const;
    /// The whole computation on one canvas (objectName "pipelineView").
    PipelineView* pipeline() const { return m_pipeline; }
    /// Every heatmap, in tab order.
    QList<Heatmap*> heatmaps() const;

    /// Keeps every heatmap's colour scale (weights and mask always span 0 to 1) so two states compare.
    void setColorRangesLocked(bool locked);

signals:
    /// The Mask tab was dragged across from the anchor cell to (row, column) (or Space was pressed on its
    /// selected cell): the window applies it to the mask as the mask editor would
    /// (MaskModel::paintRectangle).
    void maskPainted(int anchorRow, int anchorColumn, int row, int column);

private:
    /// What a heatmap's indices are: rows of queries (Q, outputs), rows of keys (K, V), or queries × keys.
    enum class IndexRoles { QueryRows, KeyRows, QueryKey };

    void refresh();
    /// Shows the newest matrix in `map` when it changed since, and the selected cell.
    void refreshHeatmap(Heatmap* map);
    void showResult(Heatmap* map);
    void select(Heatmap* map, int row, int column);
    void showSelection();
    void highlightSelection(Heatmap* map);
    Heatmap* addHeatmap(const QString& name, const QString& tabText);

    Document* m_document;
    QLabel* m_error;
    QTabWidget* m_tabs;
    PipelineView* m_pipeline = nullptr;
    QHash<Heatmap*, IndexRoles> m_roles;
    QHash<Heatmap*, OnScreenRefresh*> m_refresh;
    QSet<Heatmap*> m_stale; // whose matrix is older than the document's result
};

} // namespace qkv::ui
