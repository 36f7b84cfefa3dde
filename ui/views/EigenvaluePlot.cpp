// SPDX-License-Identifier: GPL-3.0-or-later
#include "EigenvaluePlot.h"

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

QCPGraph* newPoints(QCustomPlot* plot, const QString& name, const QColor& color,
                    QCPScatterStyle::ScatterShape shape)
{
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(shape, QPen(color, 1.5), Qt::NoBrush, 7));
    return graph;
}

// The finite eigenvalues as points; `extent` grows to the largest |Re| or |Im| among them.
void fill(QCPGraph* graph, const std::vector<std::complex<double>>& values, double& extent)
{
    QVector<double> re, im;
    for (const std::complex<double>& value : values) {
        if (!std::isfinite(value.real()) || !std::isfinite(value.imag()))
            continue;
        re.append(value.real());
        im.append(value.imag());
        extent = std::max({extent, std::abs(value.real()), std::abs(value.imag())});
    }
    // Not sorted by Re: points with the same real part must all stay.
    graph->data()->clear();
    graph->addData(re, im, false);
}

} // namespace

EigenvaluePlot::EigenvaluePlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this))
{
    setObjectName(QStringLiteral("eigenvaluePlot"));
    m_plot->setObjectName(QStringLiteral("eigenvalueCanvas"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(140, 100));
    m_title->setText(tr("Eigenvalues"));
    useSmallAxisLabels(m_plot, 8.0);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        axis->ticker()->setTickCount(4);
    m_plot->xAxis->setLabel(tr("Re λ"));
    m_plot->yAxis->setLabel(tr("Im λ"));
    m_circle = new QCPCurve(m_plot->xAxis, m_plot->yAxis);
    m_circle->setPen(QPen(neutralSeriesColor(), 1.0, Qt::DashLine));
    m_circle->setName(tr("|λ| = 1"));
    QVector<double> t, x, y;
    constexpr int segments = 96;
    for (int k = 0; k <= segments; ++k) {
        const double angle = 2.0 * M_PI * k / segments;
        t.append(k);
        x.append(std::cos(angle));
        y.append(std::sin(angle));
    }
    m_circle->setData(t, x, y, true);
    m_circle->removeFromLegend();
    m_ov = newPoints(m_plot, tr("W_OV"), seriesColor(1), QCPScatterStyle::ssCircle);
    m_fullOv = newPoints(m_plot, tr("full OV"), seriesColor(2), QCPScatterStyle::ssCross);
    // No legend: the copying scores' lines under the plot carry each series' mark (CircuitsView).
    // The ranges follow the data area's shape, known once the plot is laid out, before it draws.
    connect(m_plot, &QCustomPlot::afterLayout, this, &EigenvaluePlot::fitAxes);
    setEigenvalues({}, {});
}

EigenvaluePlot::~EigenvaluePlot() = default;

void EigenvaluePlot::setEigenvalues(const std::vector<std::complex<double>>& ov,
                                    const std::vector<std::complex<double>>& fullOv)
{
    m_extent = 1.0;
    fill(m_ov, ov, m_extent);
    fill(m_fullOv, fullOv, m_extent);
    fitAxes();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void EigenvaluePlot::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitPlotToHeight(m_plot, m_title, tr("Re λ"),
                    isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height()));
}

int EigenvaluePlot::ovPointCount() const
{
    return m_ov->dataCount();
}

int EigenvaluePlot::fullOvPointCount() const
{
    return m_fullOv->dataCount();
}

// One unit is as long across as up, so the circle stays round: the longer side of the data area gets the
// wider range.
void EigenvaluePlot::fitAxes()
{
    const double half = m_extent * 1.1;
    const QRect area = m_plot->axisRect()->rect();
    const double width = std::max(area.width(), 1), height = std::max(area.height(), 1);
    const double across = width >= height ? half * width / height : half;
    const double up = width >= height ? half : half * height / width;
    m_plot->xAxis->setRange(-across, across);
    m_plot->yAxis->setRange(-up, up);
}

} // namespace qkv::ui
