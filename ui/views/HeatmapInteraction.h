// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A heatmap's input: the mouse (hover text, click, paint drag), the keys, zoom and pan, the scroll bars.

#include "EigenTypes.h"

#include <QObject>

#include <utility>

class QCustomPlot;
class QCPAxis;
class QCPItemRect;
class QCPRange;
class QEvent;
class QKeyEvent;
class QMouseEvent;
class QScrollBar;

namespace qkv::ui {

class Heatmap;
class HeatmapData;
class HeatmapLabels;
class HeatmapSelection;

/// What the mouse, the keys and the scroll bars do on one heatmap. Chosen cells and painted rectangles are
/// announced by the heatmap's signals (cellClicked, rectanglePainted).
class HeatmapInteraction : public QObject {
    Q_OBJECT
public:
    /// `horizontal` and `vertical` are the scroll bars beside the plot, shown while zoomed in.
    HeatmapInteraction(Heatmap* heatmap, QCustomPlot* plot, const HeatmapData& data, HeatmapLabels& labels,
                       const HeatmapSelection& selection, QScrollBar* horizontal, QScrollBar* vertical);

    /// Moves the selection, zooms or paints; false for a key it does not use.
    bool keyPress(QKeyEvent* event);
    /// A touchpad pinch on the plot zooms; true when `event` was one.
    bool pinch(QEvent* event);
    void fitToView();
    void zoomBy(double factor);
    void setPaintable(bool paintable);
    bool isPaintable() const { return m_paintable; }

private:
    void keepInMatrix(QCPAxis* axis, const QCPRange& range);
    void updateScrollBar(QScrollBar* bar, Index count, const QCPRange& range);
    bool cellAt(const QPoint& position, Index* row, Index* column) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void updatePaintRect();

    Heatmap* m_heatmap;
    QCustomPlot* m_plot;
    const HeatmapData& m_data;
    HeatmapLabels& m_labels;
    const HeatmapSelection& m_selection;
    QScrollBar* m_horizontalScroll;
    QScrollBar* m_verticalScroll;
    bool m_updatingScrollBars = false;
    bool m_paintable = false;
    std::pair<int, int> m_paintAnchor{-1, -1}; // the first cell of a paint drag; (−1, −1): not painting
    std::pair<int, int> m_paintCorner{-1, -1};
    bool m_paintMoved = false; // the drag left its first cell: a click alone only selects
    QCPItemRect* m_paintRect;
};

} // namespace qkv::ui
