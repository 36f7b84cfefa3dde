// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingCurveView.h"

#include "LowPlot.h"
#include "PlotFigure.h"
#include "SeriesPalette.h"

#include <qcustomplot.h>

#include <QFontMetricsF>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr double axisPoints = 8.0; // the tick and axis labels: small, the plots are often low
constexpr double legendPoints = 7.0;
constexpr int maximumLegendItems = 8; // more lines than this: a legend would hide them

/// The ticks made of `mantissas` × 10^e for every e divisible by `stride`, inside [lower, upper].
QVector<double> ticksOf(std::initializer_list<int> mantissas, int stride, double lower, double upper)
{
    QVector<double> ticks;
    const int first = static_cast<int>(std::floor(std::log10(lower)));
    const int last = static_cast<int>(std::ceil(std::log10(upper)));
    for (int e = first; e <= last; ++e) {
        if (e % stride != 0)
            continue;
        for (int m : mantissas) {
            const double value = m * std::pow(10.0, e);
            if (value >= lower * (1.0 - 1e-9) && value <= upper * (1.0 + 1e-9))
                ticks.append(value);
        }
    }
    return ticks;
}

} // namespace

QVector<double> logAxisTicks(double lower, double upper, int maximum)
{
    if (!(lower > 0.0) || !(upper > lower) || !std::isfinite(upper))
        return {};
    maximum = std::max(1, maximum);
    for (std::initializer_list<int> mantissas :
         {std::initializer_list<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 5}, {1, 3}, {1}}) {
        const QVector<double> ticks = ticksOf(mantissas, 1, lower, upper);
        if (!ticks.isEmpty() && ticks.size() <= maximum)
            return ticks;
        if (ticks.isEmpty()) // a range inside one digit step: its middle, to two significant digits
            return {QString::number(std::sqrt(lower * upper), 'g', 2).toDouble()};
    }
    for (int stride = 2;; ++stride) // many decades: every stride-th power of ten
        if (const QVector<double> ticks = ticksOf({1}, stride, lower, upper); ticks.size() <= maximum)
            return ticks;
}

TrainingCurveView::TrainingCurveView(const QString& name, const CurveAxes& axes, QWidget* parent)
    : QWidget(parent), m_axes(axes), m_plot(new QCustomPlot(this))
{
    setObjectName(name);
    m_plot->setObjectName(name + QStringLiteral("Canvas"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(160, 80));
    m_title->setText(axes.title);
    useSmallAxisLabels(m_plot, axisPoints);
    m_plot->xAxis->setLabel(axes.xLabel);
    m_plot->yAxis->setLabel(axes.yLabel);
    if (axes.logarithmic) {
        m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        m_plot->yAxis->setSubTicks(false);
    }
    m_plot->legend->setFont(pointSized(m_plot->font(), legendPoints));
    m_plot->legend->setRowSpacing(-3);
    m_plot->legend->setBrush(QColor(255, 255, 255, 200));
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, axes.logarithmic ? Qt::AlignRight | Qt::AlignTop
                                                                             : Qt::AlignLeft | Qt::AlignTop);
    // After each layout: the log axis's ticks for its height, and the legend only where there is room.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        fitLogAxis();
        showLegendIfRoom();
    });
    clear();
}

TrainingCurveView::~TrainingCurveView() = default;

void TrainingCurveView::clear()
{
    m_plot->clearGraphs();
    m_last = 1.0;
    m_low = m_high = 0.0;
    m_plot->xAxis->setRange(0.0, 1.0);
    if (m_axes.logarithmic)
        m_plot->yAxis->setRange(0.1, 10.0);
    else
        m_plot->yAxis->setRange(m_axes.lower, m_axes.upper);
    redraw();
}

void TrainingCurveView::setSeries(int index, const QString& name, double width)
{
    while (m_plot->graphCount() <= index) {
        QCPGraph* graph = m_plot->addGraph();
        graph->setPen(QPen(seriesColor(m_plot->graphCount() - 1), 1.5));
        graph->setName(QString()); // not QCustomPlot's "Graph n"
    }
    QCPGraph* graph = m_plot->graph(index);
    graph->setName(name);
    QPen pen = graph->pen();
    pen.setWidthF(width);
    graph->setPen(pen);
    redraw();
}

void TrainingCurveView::addPoint(int index, double x, double y)
{
    if (index < 0)
        return;
    if (index >= m_plot->graphCount())
        setSeries(index, QString());
    if (!std::isfinite(x) || !std::isfinite(y) || (m_axes.logarithmic && y <= 0.0))
        return;
    m_plot->graph(index)->addData(x, y);
    m_low = m_high > 0.0 ? std::min(m_low, y) : y;
    m_high = std::max(m_high, y);
    redraw();
}

void TrainingCurveView::setLastStep(double last)
{
    m_last = std::isfinite(last) ? std::max(1.0, last) : 1.0;
    m_plot->xAxis->setRange(0.0, m_last);
    redraw();
}

int TrainingCurveView::seriesCount() const
{
    return m_plot->graphCount();
}

int TrainingCurveView::pointCount(int index) const
{
    return index >= 0 && index < m_plot->graphCount() ? m_plot->graph(index)->dataCount() : 0;
}

QString TrainingCurveView::seriesName(int index) const
{
    return index >= 0 && index < m_plot->graphCount() ? m_plot->graph(index)->name() : QString();
}

QColor TrainingCurveView::seriesColorAt(int index) const
{
    return index >= 0 && index < m_plot->graphCount() ? m_plot->graph(index)->pen().color() : QColor();
}

bool TrainingCurveView::isLegendShown() const
{
    return m_plot->legend->visible();
}

QRect TrainingCurveView::dataArea() const
{
    return m_plot->axisRect()->rect().translated(m_plot->pos());
}

QVector<double> TrainingCurveView::yTickPixels() const
{
    QVector<double> pixels;
    QCPAxis* axis = m_plot->yAxis;
    for (double tick : axis->tickVector())
        if (axis->range().contains(tick))
            pixels.append(axis->coordToPixel(tick));
    return pixels;
}

int TrainingCurveView::tickLabelHeight() const
{
    return QFontMetrics(m_plot->yAxis->tickLabelFont()).height();
}

QString TrainingCurveView::figureTitle() const
{
    return m_title->text();
}

void TrainingCurveView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    // A figure keeps its title and x label however low the plot is on screen.
    const bool low = isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height());
    fitPlotToHeight(m_plot, m_title, m_axes.xLabel, false);
    renderPlot(m_plot, device, size);
    fitPlotToHeight(m_plot, m_title, m_axes.xLabel, low);
}

void TrainingCurveView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitPlotToHeight(m_plot, m_title, m_axes.xLabel,
                    isLowPlot(height(), QFontMetrics(m_plot->xAxis->tickLabelFont()).height()));
    redraw();
}

void TrainingCurveView::redraw()
{
    if (m_axes.logarithmic && m_high > 0.0)
        m_plot->yAxis->setRange(m_low * 0.8, m_high * 1.25);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingCurveView::fitLogAxis()
{
    if (!m_axes.logarithmic)
        return;
    auto ticker = m_plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    if (!ticker)
        return;
    // Two label heights between ticks, as the linear axes have (PlotFigure's keepTickLabelsApart).
    const double label = QFontMetricsF(m_plot->yAxis->tickLabelFont()).height();
    const int maximum = std::clamp(static_cast<int>(m_plot->axisRect()->height() / (2.0 * label)), 1, 6);
    const QCPRange range = m_plot->yAxis->range();
    const QVector<double> ticks = logAxisTicks(range.lower, range.upper, maximum);
    if (ticker->ticks().keys() == ticks)
        return;
    ticker->clear();
    for (double tick : ticks)
        ticker->addTick(tick, QString::number(tick, 'g', 3));
    // Laid out again now, so this replot draws the new labels (as keepTickLabelsApart does).
    QCPLayout* layout = m_plot->plotLayout();
    layout->update(QCPLayoutElement::upPreparation);
    layout->update(QCPLayoutElement::upMargins);
    layout->update(QCPLayoutElement::upLayout);
}

void TrainingCurveView::showLegendIfRoom()
{
    QCPLegend* legend = m_plot->legend;
    int named = 0;
    for (int i = 0; i < m_plot->graphCount(); ++i)
        named += m_plot->graph(i)->name().isEmpty() ? 0 : 1;
    if (legend->itemCount() != named) // unnamed series stay out of the legend
        for (int i = 0; i < m_plot->graphCount(); ++i) {
            QCPGraph* graph = m_plot->graph(i);
            if (graph->name().isEmpty())
                graph->removeFromLegend();
            else
                graph->addToLegend();
        }
    // One column when the plot is high enough, else the entries side by side in as few rows as fit a low,
    // wide plot (the bottom dock's).
    const QRect area = m_plot->axisRect()->rect();
    bool room = false;
    for (int perRow = 1; perRow <= std::max(1, named) && !room; ++perRow) {
        legend->setWrap(perRow);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
        const QSize wanted = legend->minimumOuterSizeHint();
        room = wanted.height() <= area.height() * 0.6 && wanted.width() <= area.width() * 0.6;
    }
    legend->setVisible(named > 0 && named <= maximumLegendItems && room);
}

} // namespace qkv::ui
