// SPDX-License-Identifier: GPL-3.0-or-later
#include "BarPanels.h"

#include <qcustomplot.h>

#include <algorithm>

namespace qkv::ui {

QCPLayoutGrid* replaceWithPanelGrid(QCustomPlot* plot)
{
    auto* grid = new QCPLayoutGrid;
    plot->plotLayout()->remove(plot->axisRect()); // deletes it
    plot->plotLayout()->addElement(1, 0, grid);
    grid->setColumnSpacing(12);
    grid->setRowSpacing(2);
    return grid;
}

QCPAxisRect* addPanel(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column, QCPMarginGroup* group)
{
    auto* rect = new QCPAxisRect(plot);
    grid->addElement(row, column, rect);
    if (group)
        rect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    for (QCPAxis* axis : rect->axes()) {
        axis->setLayer(QStringLiteral("axes"));
        axis->grid()->setLayer(QStringLiteral("grid"));
    }
    rect->axis(QCPAxis::atBottom)->grid()->setVisible(false);
    rect->axis(QCPAxis::atBottom)->setSubTicks(false);
    rect->axis(QCPAxis::atBottom)->setTickLength(0, 0);
    return rect;
}

QCPTextElement* addCaption(QCustomPlot* plot, QCPLayoutGrid* grid, int row, int column)
{
    auto* caption = new QCPTextElement(plot, QString(), plot->font());
    grid->addElement(row, column, caption);
    return caption;
}

QCPBars* addBars(QCPAxisRect* rect, const std::vector<double>& values, const QColor& color, double width,
                 double offset)
{
    auto* bars = new QCPBars(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    bars->setWidthType(QCPBars::wtPlotCoords);
    bars->setWidth(width);
    bars->setPen(QPen(color.darker(130), 0.8));
    bars->setBrush(color);
    QVector<double> keys(static_cast<int>(values.size()));
    QVector<double> data(static_cast<int>(values.size()));
    for (int j = 0; j < keys.size(); ++j) {
        keys[j] = j + offset;
        data[j] = values[static_cast<std::size_t>(j)];
    }
    bars->setData(keys, data, true);
    bars->removeFromLegend(); // the caller names the series that belong in a legend
    return bars;
}

void setKeyTicks(QCPAxis* axis, const QStringList& labels, int maximum)
{
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const auto count = static_cast<int>(labels.size());
    const int stride = std::max(1, (count + maximum - 1) / maximum);
    int longest = 0;
    for (int j = 0; j < labels.size(); j += stride) {
        ticker->addTick(j, labels.at(j));
        longest = std::max(longest, static_cast<int>(labels.at(j).size()));
    }
    axis->setTicker(ticker);
    axis->setTickLabelRotation(longest * std::min(count, maximum) > 30 ? -40.0 : 0.0);
    axis->setRange(-0.5, std::max(0.5, count - 0.5));
}

} // namespace qkv::ui
