// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingProbeView.h"

#include "LowPlot.h"
#include "PlotFigure.h"
#include "SeriesPalette.h"

#include <qcustomplot.h>

#include <QFontMetrics>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

QCPBars* newBars(QCustomPlot* plot, const QString& name, const QColor& color)
{
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(name);
    bars->setPen(Qt::NoPen);
    bars->setBrush(color);
    bars->setWidth(0.9);
    return bars;
}

} // namespace

TrainingProbeView::TrainingProbeView(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this))
{
    setObjectName(QStringLiteral("probePlot"));
    m_plot->setObjectName(QStringLiteral("probePlotCanvas"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(160, 80));
    useSmallAxisLabels(m_plot, 8.0);
    m_plot->xAxis->setLabel(tr("position"));
    m_plot->yAxis->setLabel(tr("loss"));
    m_other = newBars(m_plot, tr("other"), neutralSeriesColor());
    m_scored = newBars(m_plot, tr("scored"), seriesColor(1));
    putLegendBelowAxes(m_plot);
    clear(QString());
}

TrainingProbeView::~TrainingProbeView() = default;

void TrainingProbeView::clear(const QString& title)
{
    m_scored->data()->clear();
    m_other->data()->clear();
    m_top = 0.0;
    m_title->setText(title);
    m_plot->xAxis->setRange(-0.5, 0.5);
    m_plot->yAxis->setRange(0.0, 1.0);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingProbeView::setLosses(const std::vector<double>& losses, const std::vector<std::uint8_t>& scored,
                                  const QString& title)
{
    QVector<double> scoredKeys, scoredValues, otherKeys, otherValues;
    for (std::size_t i = 0; i < losses.size(); ++i) {
        if (!std::isfinite(losses[i]) || losses[i] < 0.0)
            continue;
        const bool isScored = i < scored.size() && scored[i] != 0;
        (isScored ? scoredKeys : otherKeys).append(static_cast<double>(i));
        (isScored ? scoredValues : otherValues).append(losses[i]);
        m_top = std::max(m_top, losses[i]);
    }
    m_scored->setData(scoredKeys, scoredValues, true);
    m_other->setData(otherKeys, otherValues, true);
    m_title->setText(title);
    m_plot->xAxis->setRange(-0.5, std::max(0.5, static_cast<double>(losses.size()) - 0.5));
    m_plot->yAxis->setRange(0.0, std::max(1.0, m_top * 1.05));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int TrainingProbeView::barCount() const
{
    return m_scored->dataCount() + m_other->dataCount();
}

int TrainingProbeView::scoredBarCount() const
{
    return m_scored->dataCount();
}

void TrainingProbeView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitPlotToHeight(m_plot, m_title, tr("position"),
                    isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height()));
}

QRect TrainingProbeView::dataArea() const
{
    return m_plot->axisRect()->rect().translated(m_plot->pos());
}

QString TrainingProbeView::figureTitle() const
{
    return m_title->text();
}

void TrainingProbeView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    // A figure keeps its title and x label however low the plot is on screen.
    const bool low = isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height());
    fitPlotToHeight(m_plot, m_title, tr("position"), false);
    renderPlot(m_plot, device, size);
    fitPlotToHeight(m_plot, m_title, tr("position"), low);
}

} // namespace qkv::ui
