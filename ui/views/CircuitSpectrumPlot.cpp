// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitSpectrumPlot.h"

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

QCPGraph* newSeries(QCustomPlot* plot, const QString& name, const QColor& color,
                    QCPScatterStyle::ScatterShape shape)
{
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(color, 1.0));
    graph->setScatterStyle(QCPScatterStyle(shape, color, color, 6));
    return graph;
}

// Rank 1, 2, … against the values that can be drawn: finite, and positive on a logarithmic axis.
void fill(QCPGraph* graph, const std::vector<double>& values, bool logarithmic, double& low, double& high)
{
    QVector<double> ranks, shown;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double value = values[i];
        if (!std::isfinite(value) || (logarithmic && value <= 0.0))
            continue;
        ranks.append(double(i + 1));
        shown.append(value);
        low = std::min(low, value);
        high = std::max(high, value);
    }
    graph->setData(ranks, shown, true);
}

} // namespace

CircuitSpectrumPlot::CircuitSpectrumPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this))
{
    setObjectName(QStringLiteral("circuitSpectrumPlot"));
    m_plot->setObjectName(QStringLiteral("circuitSpectrumCanvas"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(160, 110));
    m_title->setText(tr("Singular values"));
    useSmallAxisLabels(m_plot, 8.0);
    m_plot->xAxis->setLabel(tr("rank"));
    // Ranks are whole numbers: ticks at 1, 2, … or at multiples of them when there are many.
    auto ranks = QSharedPointer<QCPAxisTickerFixed>::create();
    ranks->setTickStep(1.0);
    ranks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(ranks);
    m_qk = newSeries(m_plot, tr("W_QK"), seriesColor(0), QCPScatterStyle::ssDisc);
    m_ov = newSeries(m_plot, tr("W_OV"), seriesColor(1), QCPScatterStyle::ssSquare);
    putLegendBelowAxes(m_plot);
    replot();
}

CircuitSpectrumPlot::~CircuitSpectrumPlot() = default;

void CircuitSpectrumPlot::setSpectra(const std::vector<double>& qk, const std::vector<double>& ov)
{
    m_qkValues = qk;
    m_ovValues = ov;
    replot();
}

void CircuitSpectrumPlot::setLogarithmic(bool logarithmic)
{
    if (logarithmic == m_logarithmic)
        return;
    m_logarithmic = logarithmic;
    QCPAxis* axis = m_plot->yAxis;
    axis->setScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logarithmic)
        axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    replot();
}

std::vector<double> CircuitSpectrumPlot::plottedQk() const
{
    std::vector<double> values;
    for (auto it = m_qk->data()->constBegin(); it != m_qk->data()->constEnd(); ++it)
        values.push_back(it->value);
    return values;
}

std::vector<double> CircuitSpectrumPlot::plottedOv() const
{
    std::vector<double> values;
    for (auto it = m_ov->data()->constBegin(); it != m_ov->data()->constEnd(); ++it)
        values.push_back(it->value);
    return values;
}

void CircuitSpectrumPlot::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitPlotToHeight(m_plot, m_title, tr("rank"),
                    isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height()));
}

void CircuitSpectrumPlot::replot()
{
    double low = HUGE_VAL, high = -HUGE_VAL;
    fill(m_qk, m_qkValues, m_logarithmic, low, high);
    fill(m_ov, m_ovValues, m_logarithmic, low, high);
    m_ov->setVisible(!m_ovValues.empty());
    if (m_ov->visible())
        m_ov->addToLegend();
    else
        m_ov->removeFromLegend();
    const std::size_t ranks = std::max(m_qkValues.size(), m_ovValues.size());
    m_plot->xAxis->setRange(0.5, std::max<double>(double(ranks), 1.0) + 0.5);
    if (low > high) { // nothing to draw
        low = m_logarithmic ? 0.1 : 0.0;
        high = 1.0;
    }
    if (m_logarithmic) {
        const double lowest = low == high ? low / 10.0 : low;
        m_plot->yAxis->setRange(lowest / 1.5, high * 1.5);
    } else {
        m_plot->yAxis->setRange(0.0, high > 0.0 ? high * 1.08 : 1.0);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
