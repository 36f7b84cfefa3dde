// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingPlots.h"

#include <qcustomplot.h>

#include <algorithm>

namespace qkv::ui {

namespace {

QCustomPlot* newPlot(const QString& title, const QString& xLabel, const QString& yLabel, const char* name)
{
    auto* plot = new QCustomPlot;
    plot->setObjectName(QLatin1String(name));
    plot->setMinimumSize(110, 90);
    plot->plotLayout()->insertRow(0);
    auto* heading = new QCPTextElement(plot, title, QFont(plot->font().family(), 9));
    heading->setObjectName(QStringLiteral("title"));
    plot->plotLayout()->addElement(0, 0, heading);
    QFont small = plot->font();
    small.setPointSizeF(8.0);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setLabelFont(small);
        axis->setTickLabelFont(small);
    }
    plot->xAxis->setLabel(xLabel);
    plot->yAxis->setLabel(yLabel);
    QFont legendFont = plot->font();
    legendFont.setPointSizeF(7.0);
    plot->legend->setFont(legendFont);
    plot->legend->setRowSpacing(-3);
    plot->legend->setBrush(QColor(255, 255, 255, 200));
    return plot;
}

QColor lineColor(int index)
{
    static const QColor colors[] = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                                    QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                    QColor(227, 119, 194), QColor(127, 127, 127)};
    return colors[index % 8];
}

QString headName(int layer, int head)
{
    return QObject::tr("L%1 H%2").arg(layer).arg(head);
}

void addScore(QCustomPlot* plot, int line, int layer, int head, double step, double value)
{
    while (plot->graphCount() <= line) {
        QCPGraph* graph = plot->addGraph();
        graph->setPen(QPen(lineColor(plot->graphCount() - 1), 1.5));
        graph->setName(QString()); // not QCustomPlot's "Graph n": named below
    }
    QCPGraph* graph = plot->graph(line);
    if (graph->name().isEmpty())
        graph->setName(headName(layer, head));
    graph->addData(step, value);
}

/// A legend only where it leaves the lines room: a plot large enough and at most 8 entries.
void showLegend(QCustomPlot* plot)
{
    const int items = plot->legend->itemCount();
    plot->legend->setVisible(items > 0 && items <= 8 && plot->width() >= 180 && plot->height() >= 170);
}

} // namespace

TrainingPlots::TrainingPlots(QObject* parent) : QObject(parent)
{
    m_loss = newPlot(tr("Loss"), tr("step"), tr("cross-entropy"), "lossPlot");
    m_loss->yAxis->setScaleType(QCPAxis::stLogarithmic);
    m_loss->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    m_loss->setToolTip(
        tr("Training loss of every step and validation loss on held-out sequences (log scale)"));
    m_loss->setWhatsThis(tr("<h3>Loss</h3><p>The cross-entropy of every step's batch (thin) and, every few "
                            "steps, of held-out validation sequences (thick), on a log axis. For induction, "
                            "a sudden drop is the phase change: the induction head has formed.</p>"));
    m_induction = newPlot(tr("Induction"), tr("step"), tr("score"), "inductionPlot");
    m_induction->setToolTip(
        tr("Induction score of every head in layer 1 and above, on repeated random tokens"));
    m_induction->setWhatsThis(
        tr("<h3>Induction score</h3><p>For every head of layer 1 and above: the attention a token of the "
           "repeated half pays to the token after its earlier copy, on repeated random tokens. A line "
           "rising towards 1 is an induction head forming.</p>"));
    m_previous = newPlot(tr("Previous token"), tr("step"), tr("score"), "previousPlot");
    m_previous->setToolTip(tr("Previous-token score of every head, on repeated random tokens"));
    m_previous->setWhatsThis(
        tr("<h3>Previous-token score</h3><p>For every head: the mean attention a token pays to the token "
           "just before it. An induction head needs a head in an earlier layer that does this.</p>"));
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous})
        plot->xAxis->ticker()->setTickCount(3); // step numbers of four digits side by side in a narrow plot
    for (QCustomPlot* plot : {m_induction, m_previous}) {
        plot->yAxis->setRange(0.0, 1.0);
        plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignLeft | Qt::AlignTop);
    }
    m_probe = newPlot(tr("Loss per position"), tr("position"), tr("loss"), "probePlot");
    m_probe->setToolTip(tr("The loss of predicting each next token of the probe sequence; the positions "
                           "the task determines are orange"));
    m_probe->setWhatsThis(
        tr("<h3>Loss per position</h3><p>One probe sequence, drawn once for the run, at the newest "
           "evaluated step: each bar is the loss of predicting the token after that position. Orange bars "
           "are the positions the task determines (for induction, the repeated half); they can only be "
           "predicted by looking back, so they fall when the induction head forms.</p>"));
    m_otherBars = new QCPBars(m_probe->xAxis, m_probe->yAxis);
    m_otherBars->setName(tr("other"));
    m_otherBars->setPen(Qt::NoPen);
    m_otherBars->setBrush(QColor(150, 160, 175));
    m_scoredBars = new QCPBars(m_probe->xAxis, m_probe->yAxis);
    m_scoredBars->setName(tr("scored"));
    m_scoredBars->setPen(Qt::NoPen);
    m_scoredBars->setBrush(lineColor(1));
    for (QCPBars* bars : {m_otherBars, m_scoredBars})
        bars->setWidth(0.9);
    // The legend in a row under the bars, where it hides none of them.
    auto* legendRow = new QCPLayoutGrid;
    m_probe->plotLayout()->addElement(2, 0, legendRow);
    m_probe->plotLayout()->setRowStretchFactor(2, 0.001);
    m_probe->axisRect()->insetLayout()->take(m_probe->legend);
    legendRow->addElement(0, 0, m_probe->legend);
    m_probe->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_probe->legend->setBorderPen(Qt::NoPen);
    m_probe->legend->setVisible(true);
    clear();
}

TrainingPlots::~TrainingPlots()
{
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous, m_probe})
        if (!plot->parent())
            delete plot;
}

QWidget* TrainingPlots::loss() const
{
    return m_loss;
}

QWidget* TrainingPlots::induction() const
{
    return m_induction;
}

QWidget* TrainingPlots::previous() const
{
    return m_previous;
}

QWidget* TrainingPlots::probe() const
{
    return m_probe;
}

void TrainingPlots::clear()
{
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous})
        plot->clearGraphs();
    m_loss->addGraph()->setName(tr("train"));
    m_loss->graph(0)->setPen(QPen(lineColor(0), 1.0));
    m_loss->addGraph()->setName(tr("validation"));
    m_loss->graph(1)->setPen(QPen(lineColor(1), 2.0));
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous}) {
        plot->installEventFilter(this);
        showLegend(plot);
    }
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous})
        plot->xAxis->setRange(0.0, 1.0);
    m_loss->yAxis->setRange(0.1, 10.0);
    m_scoredBars->data()->clear();
    m_otherBars->data()->clear();
    m_probeTop = 0.0;
    m_probe->xAxis->setRange(-0.5, 0.5);
    m_probe->yAxis->setRange(0.0, 1.0);
    qobject_cast<QCPTextElement*>(m_probe->plotLayout()->element(0, 0))->setText(tr("Loss per position"));
    replot();
}

void TrainingPlots::add(const std::vector<training::StepReport>& reports)
{
    if (reports.empty())
        return;
    for (const training::StepReport& r : reports) {
        const double step = double(r.step);
        m_loss->graph(0)->addData(step, r.loss);
        if (!r.evaluated)
            continue;
        m_loss->graph(1)->addData(step, r.validationLoss);
        const Matrix& previous = r.scores.previousToken;
        const Matrix& induction = r.scores.induction;
        for (int layer = 0; layer < previous.rows(); ++layer)
            for (int head = 0; head < previous.cols(); ++head)
                addScore(m_previous, layer * int(previous.cols()) + head, layer, head, step,
                         previous(layer, head));
        for (int layer = 1; layer < induction.rows(); ++layer)
            for (int head = 0; head < induction.cols(); ++head)
                addScore(m_induction, (layer - 1) * int(induction.cols()) + head, layer, head, step,
                         induction(layer, head));
    }
    for (QCustomPlot* plot : {m_induction, m_previous})
        showLegend(plot);
    const double last = double(std::max<std::int64_t>(1, reports.back().lastStep));
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous})
        plot->xAxis->setRange(0.0, last);
    bool found = false;
    const QCPRange range = m_loss->graph(0)->getValueRange(found);
    if (found)
        m_loss->yAxis->setRange(range.lower * 0.8, range.upper * 1.25);
}

void TrainingPlots::setProbe(const std::vector<double>& losses, const std::vector<std::uint8_t>& scored,
                             std::int64_t step)
{
    QVector<double> scoredKeys, scoredValues, otherKeys, otherValues;
    for (std::size_t i = 0; i < losses.size(); ++i) {
        const bool isScored = i < scored.size() && scored[i] != 0;
        (isScored ? scoredKeys : otherKeys).append(double(i));
        (isScored ? scoredValues : otherValues).append(losses[i]);
        m_probeTop = std::max(m_probeTop, losses[i]);
    }
    m_scoredBars->setData(scoredKeys, scoredValues, true);
    m_otherBars->setData(otherKeys, otherValues, true);
    m_probe->xAxis->setRange(-0.5, std::max(0.5, double(losses.size()) - 0.5));
    m_probe->yAxis->setRange(0.0, std::max(1.0, m_probeTop * 1.05));
    qobject_cast<QCPTextElement*>(m_probe->plotLayout()->element(0, 0))
        ->setText(tr("Loss per position, step %1").arg(step));
}

bool TrainingPlots::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Resize)
        if (auto* plot = qobject_cast<QCustomPlot*>(watched))
            showLegend(plot);
    return QObject::eventFilter(watched, event);
}

void TrainingPlots::replot()
{
    for (QCustomPlot* plot : {m_loss, m_induction, m_previous, m_probe})
        plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
