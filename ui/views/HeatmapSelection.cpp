// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapSelection.h"

#include "HeatmapData.h"

#include <qcustomplot.h>

#include <algorithm>

namespace qkv::ui {

HeatmapSelection::HeatmapSelection(QCustomPlot* plot, const HeatmapData& data)
    : m_plot(plot), m_data(data), m_rowBand(new QCPItemRect(plot)), m_columnBand(new QCPItemRect(plot)),
      m_outline(new QCPItemRect(plot))
{
    // The selected row and column as translucent bands across the whole matrix: visible when a cell is a
    // single pixel.
    for (QCPItemRect* band : {m_rowBand, m_columnBand}) {
        band->setPen(QPen(QColor(255, 140, 0, 150), 1.0));
        band->setBrush(QColor(255, 140, 0, 60));
        band->setVisible(false);
        band->setSelectable(false);
        band->setLayer(QStringLiteral("overlay"));
    }
    m_outline->setPen(QPen(QColor(255, 140, 0), 2.5));
    m_outline->setBrush(Qt::NoBrush);
    m_outline->setVisible(false);
    m_outline->setLayer(QStringLiteral("overlay"));
}

bool HeatmapSelection::showsBands() const
{
    return m_rowBand->visible() && m_columnBand->visible();
}

void HeatmapSelection::update()
{
    const auto [row, column] = m_cell;
    const Index rows = m_data.rows(), columns = m_data.columns();
    const bool shown =
        !m_hidden && (row >= 0 || column >= 0) && row < rows && column < columns && rows > 0 && columns > 0;
    m_outline->setVisible(shown);
    m_rowBand->setVisible(shown && row >= 0 && column >= 0);
    m_columnBand->setVisible(shown && row >= 0 && column >= 0);
    if (!shown)
        return;
    const double lastColumn = static_cast<double>(columns) - 0.5;
    const double lastRow = static_cast<double>(rows) - 0.5;
    // The outline is at least minimumMark pixels across, centred on the cell, however small the cells.
    constexpr double minimumMark = 9.0;
    const QRect rect = m_plot->axisRect()->rect();
    const double cellWidth = rect.width() > 0 ? rect.width() / m_plot->xAxis->range().size() : 1.0;
    const double cellHeight = rect.height() > 0 ? rect.height() / m_plot->yAxis->range().size() : 1.0;
    const double growX = std::max(0.0, (minimumMark / cellWidth - 1.0) / 2.0);
    const double growY = std::max(0.0, (minimumMark / cellHeight - 1.0) / 2.0);
    const double left = column >= 0 ? column - 0.5 - growX : -0.5;
    const double right = column >= 0 ? column + 0.5 + growX : lastColumn;
    const double top = row >= 0 ? row - 0.5 - growY : -0.5;
    const double bottom = row >= 0 ? row + 0.5 + growY : lastRow;
    m_outline->topLeft->setCoords(left, top);
    m_outline->bottomRight->setCoords(right, bottom);
    m_rowBand->topLeft->setCoords(-0.5, row - 0.5);
    m_rowBand->bottomRight->setCoords(lastColumn, row + 0.5);
    m_columnBand->topLeft->setCoords(column - 0.5, -0.5);
    m_columnBand->bottomRight->setCoords(column + 0.5, lastRow);
}

} // namespace qkv::ui
