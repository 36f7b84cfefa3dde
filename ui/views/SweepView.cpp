// SPDX-License-Identifier: GPL-3.0-or-later
#include "SweepView.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "LabelText.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"
#include "SeriesPalette.h"

#include <qcustomplot.h>

#include <QMouseEvent>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

namespace qkv::ui {

namespace {

const QColor markerColor(0x55, 0x55, 0x55);
constexpr double heavyEntries = 8192; // n·m above this: swept off the GUI thread (long enough to be felt)
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

QColor colorOf(const NormalizerSpec& spec)
{
    return seriesColor(static_cast<int>(spec.type)); // the normalizer comparison's colour of that normalizer
}

QVector<double> toVector(const std::vector<double>& values)
{
    return QVector<double>(values.begin(), values.end());
}

/// The grid value nearest `x` (in log distance when `logarithmic`).
double nearest(const std::vector<double>& grid, double x, bool logarithmic)
{
    double best = grid.front();
    for (double value : grid) {
        const double d = logarithmic ? std::abs(std::log(value) - std::log(x)) : std::abs(value - x);
        const double b = logarithmic ? std::abs(std::log(best) - std::log(x)) : std::abs(best - x);
        if (d < b)
            best = value;
    }
    return best;
}

} // namespace

SweepView::SweepView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_plot(new QCustomPlot(this)), m_titleElement(nullptr),
      m_markedTemperature(nan), m_markedAlpha(nan)
{
    setObjectName(QStringLiteral("sweepView"));
    m_plot->setObjectName(QStringLiteral("sweepPlot"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_titleElement = setUpPlot(m_plot, QSize(360, 240));

    // Six panels in place of the one axis rect: τ above, α below; entropy, support, top weight across.
    m_plot->plotLayout()->remove(m_plot->axisRect());
    auto* grid = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, grid);
    const QString yLabels[] = {tr("entropy (nats)"), tr("support (keys with a > 0)"), tr("top weight")};
    for (int k = 0; k < PanelCount; ++k) {
        auto* rect = new QCPAxisRect(m_plot);
        grid->addElement(k / 3, k % 3, rect);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        y->setLabel(yLabels[k % 3]);
        if (k < AlphaEntropy) {
            x->setScaleType(QCPAxis::stLogarithmic);
            auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
            ticker->setLogBase(10);
            ticker->setSubTickCount(0);
            x->setTicker(ticker);
            x->setNumberFormat(QStringLiteral("eb"));
            x->setNumberPrecision(0);
            x->setRange(1e-3, 1e3);
            x->setLabel(tr("temperature τ (log scale)"));
        } else {
            x->setRange(1.0, 4.0);
            x->setLabel(tr("entmax α"));
        }
        m_panels[k] = rect;
    }
    auto* legend = new QCPLegend;
    m_plot->plotLayout()->addElement(2, 0, legend);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
    legend->setLayer(QStringLiteral("legend"));
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    legend->setMargins(QMargins(4, 0, 4, 2));
    m_plot->legend = legend;
    m_plot->setAutoAddPlottableToLegend(false); // one entry per normalizer, added by draw()

    connect(m_plot, &QCustomPlot::mousePress, this, &SweepView::onMousePress);
    // Only while on screen: hidden, it catches up when shown (OnScreenRefresh).
    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    refresh();
}

SweepView::~SweepView()
{
    if (m_cancel)
        m_cancel->store(true);
}

std::vector<double> SweepView::temperatureGrid()
{
    return logGrid(1e-3, 1e3, 61);
}

std::vector<double> SweepView::alphaGrid()
{
    return linearGrid(1.0, 4.0, 31);
}

void SweepView::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current) {
        showMessage(current.error);
        return;
    }
    const Session& session = m_document->session();
    const std::shared_ptr<const AttentionResult>& result = current.result;
    const auto head = static_cast<std::size_t>(current.index);
    const HeadResult& r = *current.head;
    const Index row = m_document->selectedQuery();
    const NormalizerSpec normalizer = session.normalizer;
    const double temperature = session.temperature;
    if (m_cancel)
        m_cancel->store(true); // an older sweep still running is of no use any more
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    const bool heavy = double(r.scaled.rows()) * double(r.scaled.cols()) > heavyEntries;
    if (heavy)
        showMessage(tr("Sweeping %1 rows…").arg(std::min<Index>(r.scaled.rows(), meanRowLimit)));
    m_job.run(
        heavy,
        [result, head, row, normalizer, temperature, cancel]() {
            Sweeps sweeps;
            try {
                const HeadResult& h = result->heads[head];
                sweeps.tau = sweepTemperature(h, row, sweepNormalizers(normalizer), temperatureGrid(),
                                              meanRowLimit, cancel.get());
                sweeps.alpha = sweepAlpha(h, row, temperature, alphaGrid(), meanRowLimit, cancel.get());
            } catch (const Cancelled&) {
                sweeps.error = QStringLiteral("stopped");
            } catch (const std::exception&) {
                // A result of an older session (a newer one is computing): its own resultChanged follows.
                sweeps.error = tr("Row %1: waiting for the result").arg(row);
            }
            return sweeps;
        },
        [this](Sweeps sweeps) { display(std::move(sweeps)); });
}

void SweepView::display(Sweeps sweeps)
{
    if (!sweeps.error.isEmpty()) {
        showMessage(sweeps.error);
        return;
    }
    m_tau = std::move(sweeps.tau);
    m_alpha = std::move(sweeps.alpha);
    m_message.clear();
    draw();
}

void SweepView::clearCurves()
{
    m_plot->clearGraphs();
    m_plot->clearItems();
    m_plot->legend->clearItems();
    m_tau = {};
    m_alpha = {};
    m_markedTemperature = m_markedAlpha = nan;
}

void SweepView::showMessage(const QString& message)
{
    clearCurves();
    m_message = message;
    m_title = message;
    m_titleElement->setText(message);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SweepView::draw()
{
    m_plot->clearGraphs();
    m_plot->clearItems();
    m_plot->legend->clearItems();
    const Session& session = m_document->session();
    const auto addCurve = [this](Panel panel, const SweepResult& sweep, const std::vector<double>& values,
                                 const QColor& color, bool mean) {
        QCPAxisRect* rect = m_panels[panel];
        QCPGraph* graph = m_plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        graph->setData(toVector(sweep.parameter), toVector(values), true);
        QPen pen(color, mean ? 1.2 : 2.0);
        if (mean)
            pen.setStyle(Qt::DashLine);
        graph->setPen(pen);
        return graph;
    };
    const auto drawSweep = [&](const SweepResult& sweep, int firstPanel, bool legend) {
        double top[3] = {0.0, 0.0, 0.0};
        for (std::size_t k = 0; k < sweep.row.size(); ++k)
            for (bool mean : {false, true}) {
                const SweepCurve& curve = mean ? sweep.mean[k] : sweep.row[k];
                const QColor color = colorOf(curve.spec);
                const std::vector<double>* series[3] = {&curve.entropy, &curve.support, &curve.topWeight};
                for (int s = 0; s < 3; ++s) {
                    QCPGraph* graph =
                        addCurve(static_cast<Panel>(firstPanel + s), sweep, *series[s], color, mean);
                    for (double v : *series[s])
                        top[s] = std::max(top[s], v);
                    if (s == 0 && legend && !mean) {
                        graph->setName(QString::fromStdString(curve.name));
                        graph->addToLegend(m_plot->legend);
                    }
                }
            }
        m_panels[firstPanel]->axis(QCPAxis::atLeft)->setRange(0.0, std::max(0.1, top[0] * 1.08));
        m_panels[firstPanel + 1]->axis(QCPAxis::atLeft)->setRange(0.0, std::max(1.0, top[1]) + 0.5);
        m_panels[firstPanel + 2]->axis(QCPAxis::atLeft)->setRange(0.0, 1.05);
    };
    drawSweep(m_tau, TauEntropy, true);
    drawSweep(m_alpha, AlphaEntropy, false);
    // The line style's key: dashed is the mean.
    QCPGraph* meanKey = m_plot->addGraph(m_panels[TauEntropy]->axis(QCPAxis::atBottom),
                                         m_panels[TauEntropy]->axis(QCPAxis::atLeft));
    meanKey->setPen(QPen(markerColor, 1.2, Qt::DashLine));
    meanKey->setName(m_tau.sampledRows ? tr("mean over %1 sampled rows").arg(m_tau.nonEmptyRows)
                                       : tr("mean over rows"));
    meanKey->addToLegend(m_plot->legend);

    // The session's own τ and α.
    m_markedTemperature = session.temperature;
    m_markedAlpha = session.normalizer.type == NormalizerType::Entmax ? session.normalizer.alpha : nan;
    for (int k = 0; k < PanelCount; ++k) {
        const double x = k < AlphaEntropy ? m_markedTemperature : m_markedAlpha;
        if (!std::isfinite(x))
            continue;
        auto* line = new QCPItemStraightLine(m_plot);
        line->setClipAxisRect(m_panels[k]);
        line->setSelectable(false);
        for (QCPItemPosition* point : {line->point1, line->point2})
            point->setAxes(m_panels[k]->axis(QCPAxis::atBottom), m_panels[k]->axis(QCPAxis::atLeft));
        line->point1->setCoords(x, 0.0);
        line->point2->setCoords(x, 1.0);
        line->setPen(QPen(markerColor, 1.0, Qt::DotLine));
    }
    const QString tauText = QString::number(session.temperature, 'g', 4);
    for (int k = AlphaEntropy; k < PanelCount; ++k)
        m_panels[k]->axis(QCPAxis::atBottom)->setLabel(tr("entmax α (at τ = %1)").arg(tauText));

    const CurrentHeadResult current = m_document->currentHeadResult();
    const Index row = m_document->selectedQuery();
    const QString query = tokenLabel(session.tokens, row);
    m_title = tr("Row ‘%1’ (solid) and the mean over rows (dashed) as τ and α change").arg(query);
    if (current.count > 1)
        m_title += tr(" — head %1 of %2").arg(current.index + 1).arg(current.count);
    m_titleElement->setText(m_title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QWidget* SweepView::plot() const
{
    return m_plot;
}

QPoint SweepView::positionOf(Panel panel, double x, double y) const
{
    QCPAxisRect* rect = m_panels[panel];
    return QPointF(rect->axis(QCPAxis::atBottom)->coordToPixel(x),
                   rect->axis(QCPAxis::atLeft)->coordToPixel(y))
        .toPoint();
}

void SweepView::onMousePress(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton || !m_message.isEmpty() || m_tau.parameter.empty())
        return;
    const QPoint position = event->position().toPoint();
    for (int k = 0; k < PanelCount; ++k) {
        if (!m_panels[k]->rect().contains(position))
            continue;
        const double x = m_panels[k]->axis(QCPAxis::atBottom)->pixelToCoord(position.x());
        if (k < AlphaEntropy)
            setTemperature(nearest(m_tau.parameter, x > 0 ? x : m_tau.parameter.front(), true));
        else
            setAlpha(nearest(m_alpha.parameter, x, false));
        return;
    }
}

void SweepView::setTemperature(double temperature)
{
    auto command = std::make_unique<ChangeValueCommand<double>>(
        m_document, tr("Set temperature (sweep)"), Document::Options,
        [](Session& s) -> double& { return s.temperature; }, temperature);
    if (command->changesSomething())
        m_document->push(command.release());
}

void SweepView::setAlpha(double alpha)
{
    auto command = std::make_unique<ChangeValueCommand<NormalizerSpec>>(
        m_document, tr("Set entmax α (sweep)"), Document::Options,
        [](Session& s) -> NormalizerSpec& { return s.normalizer; },
        NormalizerSpec{NormalizerType::Entmax, alpha});
    if (command->changesSomething())
        m_document->push(command.release());
}

void SweepView::waitForSweep() const
{
    m_refresh->flush();
    m_job.wait();
}

QString SweepView::figureTitle() const
{
    waitForSweep();
    return m_title;
}

void SweepView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    waitForSweep();
    renderPlot(m_plot, device, size);
    m_plot->replot(QCustomPlot::rpQueuedReplot); // back to the screen's layout
}

} // namespace qkv::ui
