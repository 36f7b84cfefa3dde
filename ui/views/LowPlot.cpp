// SPDX-License-Identifier: GPL-3.0-or-later
#include "LowPlot.h"

#include <qcustomplot.h>

namespace qkv::ui {

namespace {

constexpr int lowPlotLines = 14; // below this many text lines of height, the title and x label cost too much

} // namespace

bool isLowPlot(int height, int lineHeight)
{
    return height < lowPlotLines * lineHeight;
}

void fitPlotToHeight(QCustomPlot* plot, QCPTextElement* title, const QString& xLabel, bool low)
{
    QCPLayoutGrid* layout = plot->plotLayout();
    const bool titled = layout->hasElement(0, 0) && layout->element(0, 0) == title;
    const QString label = low ? QString() : xLabel;
    if (titled == !low && plot->xAxis->label() == label)
        return;
    plot->xAxis->setLabel(label);
    if (low && titled) {
        layout->take(title);
        layout->simplify(); // the empty first row goes
    } else if (!low && !titled) {
        layout->insertRow(0);
        layout->addElement(0, 0, title);
    }
    title->setVisible(!low); // an element out of the layout would still draw where it was
    plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
