// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The selected cell of a heatmap as marks over its cells: an outline, and translucent bands over its row and
// column.

#include <utility>

class QCustomPlot;
class QCPItemRect;

namespace qkv::ui {

class HeatmapData;

/// The marks of the selected cell on one heatmap's plot (they draw above the cells, on the overlay layer).
class HeatmapSelection {
public:
    HeatmapSelection(QCustomPlot* plot, const HeatmapData& data);

    /// (row, column); −1 for the row or column marks the whole column or row; (−1, −1) marks nothing.
    void setCell(int row, int column) { m_cell = {row, column}; }
    std::pair<int, int> cell() const { return m_cell; }
    /// Hidden while a figure is exported: the selection is the screen's.
    void setHidden(bool hidden) { m_hidden = hidden; }
    /// Places the marks for the cells and axes as they are now.
    void update();
    /// Whether the row and column bands are shown (a cell is selected).
    bool showsBands() const;

private:
    QCustomPlot* m_plot;
    const HeatmapData& m_data;
    QCPItemRect* m_rowBand; // the selected cell's row and column across the matrix
    QCPItemRect* m_columnBand;
    QCPItemRect* m_outline; // the selected cell's outline (the row or column alone: it)
    std::pair<int, int> m_cell{-1, -1};
    bool m_hidden = false;
};

} // namespace qkv::ui
