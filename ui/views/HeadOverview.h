// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Every head of the session side by side, with a per-head summary (the Model workspace shows every layer of a
// model).

#include "Figure.h"

#include <QList>
#include <QString>
#include <QWidget>

class QFrame;
class QGridLayout;
class QLabel;
class QScrollArea;

namespace qkv::ui {

class Document;
class Heatmap;
class OnScreenRefresh;

/// A grid of small weight heatmaps, one per head (weights 0 to 1, masked cells grey), each titled with the
/// head's mean entropy and mean support (summarizeHead). The current head is framed; clicking a head makes
/// it current, and clicking a cell also selects that cell.
class HeadOverview : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit HeadOverview(Document* document, QWidget* parent = nullptr);
    ~HeadOverview() override;

    int headCount() const { return static_cast<int>(m_maps.size()); }
    /// The small multiple of head `head` (objectName "headHeatmap_<head>"), null when there is none.
    Heatmap* heatmap(int head) const;
    /// The head shown framed (the document's current head).
    int highlightedHead() const { return m_highlighted; }

    QString figureName() const override { return QStringLiteral("heads"); }
    QString figureTitle() const override;
    /// The title over the grid of small multiples, each drawn by its heatmap (vector output on vector
    /// devices).
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void refresh();
    void rebuildGrid(int heads);
    void updateHighlight();
    void updateSelection();
    /// Columns of the figure: a square-ish grid.
    int figureColumns() const;
    /// Columns on screen: as many as fit the width with every title whole, at most the figure's.
    int screenColumns() const;
    void arrangeGrid();

    Document* m_document;
    OnScreenRefresh* m_refresh; // refresh() when the result changed, else updateSelection()
    bool m_resultStale = false;
    QLabel* m_error;
    QScrollArea* m_scroll;
    QWidget* m_gridHost;
    QGridLayout* m_grid;
    QList<QFrame*> m_frames;
    QList<Heatmap*> m_maps;
    int m_highlighted = -1;
    int m_columns = 0;          // of the grid as arranged
    int m_minimumCellWidth = 0; // the widest title, whole
};

} // namespace qkv::ui
