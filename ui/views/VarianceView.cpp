// SPDX-License-Identifier: GPL-3.0-or-later
#include "VarianceView.h"

#include "Document.h"
#include "NumpyRandom.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {

namespace {

const QColor theoryColor(0x1f, 0x77, 0xb4);
const QColor unscaledColor(0xd6, 0x27, 0x28);
const QColor scaledColor(0x2c, 0xa0, 0x2c);
const QColor sessionColor(0x94, 0x67, 0xbd);

QCPGraph* addSeries(QCustomPlot* plot, const QString& name, const QColor& color,
                    QCPScatterStyle::ScatterShape shape, Qt::PenStyle line)
{
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(line == Qt::NoPen ? QPen(Qt::NoPen) : QPen(color, 1.5, line));
    graph->setLineStyle(line == Qt::NoPen ? QCPGraph::lsNone : QCPGraph::lsLine);
    graph->setScatterStyle(QCPScatterStyle(shape, color, line == Qt::NoPen ? color : Qt::white, 7));
    return graph;
}

} // namespace

VarianceView::VarianceView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_samples(new QSpinBox(this)), m_seed(new QDoubleSpinBox(this)),
      m_plot(new QCustomPlot(this)), m_titleElement(nullptr), m_footnote(nullptr)
{
    setObjectName(QStringLiteral("varianceView"));
    m_plot->setObjectName(QStringLiteral("variancePlot"));
    m_samples->setObjectName(QStringLiteral("varianceSamples"));
    m_samples->setRange(2, 40000); // Σ d_k = 2047: at most 1.6e8 normals (VarianceSettings::maxDraws)
    m_samples->setValue(10000);
    m_samples->setSingleStep(1000);
    m_samples->setToolTip(tr("Pairs (q, k) drawn for each d_k"));
    m_seed->setObjectName(QStringLiteral("varianceSeed"));
    m_seed->setDecimals(0); // whole numbers up to 2³² − 1, all np.random.seed takes (more than an int holds)
    m_seed->setRange(0.0, static_cast<double>(NumpyRandom::maxSeed));
    m_seed->setValue(42);
    m_seed->setToolTip(tr("np.random.seed(seed) before the first d_k, as the article's code does (42)"));
    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(4, 2, 4, 0);
    controls->addWidget(new QLabel(tr("samples per d_k:"), this));
    controls->addWidget(m_samples);
    controls->addWidget(new QLabel(tr("seed:"), this));
    controls->addWidget(m_seed);
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(controls);
    layout->addWidget(m_plot, 1);

    m_titleElement = setUpPlot(m_plot, QSize(280, 180));
    m_footnote = new QCPTextElement(m_plot, QString(), m_plot->font());
    m_plot->plotLayout()->addElement(2, 0, m_footnote);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
        ticker->setLogBase(axis == m_plot->xAxis ? 2.0 : 10.0);
        ticker->setSubTickCount(axis == m_plot->xAxis ? 0 : 8);
        axis->setTicker(ticker);
        axis->setNumberFormat(QStringLiteral("g"));
    }
    m_plot->xAxis->setLabel(tr("d_k (dimension of q and k, log scale)"));
    m_plot->yAxis->setLabel(tr("variance of the score (log scale)"));
    // The legend beside the axes, not over them: the points fill the plot corner to corner.
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    auto* body = new QCPLayoutGrid;
    QCPAxisRect* axes = m_plot->axisRect();
    m_plot->plotLayout()->take(axes);
    m_plot->plotLayout()->addElement(1, 0, body);
    body->addElement(0, 0, axes);
    auto* side = new QCPLayoutGrid; // the legend at the top of its column, at its own height
    body->addElement(0, 1, side);
    body->setColumnStretchFactor(1, 0.001);
    side->addElement(0, 0, m_plot->legend);
    side->addElement(1, 0, new QCPLayoutElement(m_plot));
    side->setRowStretchFactor(0, 0.001);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);

    connect(m_samples, &QSpinBox::valueChanged, this, [this] { m_refresh->request(); });
    connect(m_seed, &QDoubleSpinBox::valueChanged, this, [this] { m_refresh->request(); });
    m_refresh = new OnScreenRefresh(this, [this] {
        runExperiment();
        refreshSession();
    });
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    m_refresh->requestOnceBuilt(); // 40 million normals: not at every start of the application
}

// A run in flight stops at its next check instead of holding the closing window (LatestJob waits for it).
VarianceView::~VarianceView()
{
    m_cancel->store(true);
}

void VarianceView::setSamples(int samples)
{
    m_samples->setValue(samples);
}

void VarianceView::setSeed(std::uint32_t seed)
{
    m_seed->setValue(static_cast<double>(seed));
}

std::vector<VariancePoint> VarianceView::points() const
{
    waitForResult();
    return m_shown.points;
}

QString VarianceView::title() const
{
    waitForResult();
    return m_title;
}

QString VarianceView::errorText() const
{
    waitForResult();
    return m_shown.error;
}

void VarianceView::waitForResult() const
{
    m_refresh->flush();
    m_job.wait();
}

// The experiment depends on its settings only: a session edit does not draw 40 million normals again.
void VarianceView::runExperiment()
{
    VarianceSettings settings;
    settings.dimensions = defaultVarianceDimensions();
    settings.samples = m_samples->value();
    settings.seed = static_cast<std::uint64_t>(std::llround(m_seed->value()));
    if (m_requested && m_requested->samples == settings.samples && m_requested->seed == settings.seed)
        return;
    m_requested = settings;
    m_job.run(
        true,
        [settings, cancel = m_cancel]() -> Outcome {
            try {
                return Outcome{settings, measureDotProductVariance(settings, cancel.get()), QString()};
            } catch (const std::exception& error) {
                return Outcome{settings, {}, QString::fromUtf8(error.what())};
            }
        },
        [this](Outcome outcome) { showExperiment(std::move(outcome)); });
}

void VarianceView::showExperiment(Outcome outcome)
{
    m_shown = std::move(outcome);
    redraw();
}

void VarianceView::refreshSession()
{
    m_sessionPoint.reset();
    if (const CurrentHeadResult current = m_document->currentHeadResult()) {
        const HeadResult& r = *current.head;
        const double variance = scoreVariance(r.scores);
        if (r.scores.size() > 1 && std::isfinite(variance) && variance > 0.0)
            m_sessionPoint = std::pair<Index, double>(r.K.cols(), variance);
    }
    redraw();
}

void VarianceView::redraw()
{
    m_plot->clearGraphs();
    m_plot->clearPlottables();
    const std::vector<VariancePoint>& points = m_shown.points;
    if (!m_shown.error.isEmpty()) {
        m_title = tr("Cannot run the variance experiment: %1").arg(m_shown.error);
    } else if (points.empty()) {
        m_title = tr("Measuring Var(q·k)…");
    } else {
        m_title = tr("Var(q·k) grows as d_k; ÷√d_k keeps it near 1\n%1 pairs per d_k, seed %2")
                      .arg(m_shown.settings.samples)
                      .arg(m_shown.settings.seed);
        QCPGraph* theory =
            addSeries(m_plot, tr("theory: d_k"), theoryColor, QCPScatterStyle::ssCircle, Qt::SolidLine);
        QCPGraph* raw =
            addSeries(m_plot, tr("Var(q·k) ± 1 s.e."), unscaledColor, QCPScatterStyle::ssSquare, Qt::NoPen);
        QCPGraph* one = addSeries(m_plot, tr("theory: 1"), scaledColor.darker(120), QCPScatterStyle::ssNone,
                                  Qt::DashLine);
        QCPGraph* scaled =
            addSeries(m_plot, tr("Var(q·k / √d_k)"), scaledColor, QCPScatterStyle::ssTriangle, Qt::NoPen);
        auto* rawErrors = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
        rawErrors->removeFromLegend();
        rawErrors->setPen(QPen(unscaledColor, 1.2));
        auto* scaledErrors = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
        scaledErrors->removeFromLegend();
        scaledErrors->setPen(QPen(scaledColor, 1.2));
        QVector<double> d, v, ve, s, se;
        double low = 1.0;
        double high = 1.0;
        for (const VariancePoint& p : points) {
            d.append(static_cast<double>(p.dK));
            v.append(p.unscaled);
            ve.append(p.unscaledError);
            s.append(p.scaled);
            se.append(p.scaledError);
            low = std::min({low, p.scaled - p.scaledError, p.unscaled - p.unscaledError});
            high = std::max({high, p.unscaled + p.unscaledError, static_cast<double>(p.dK)});
        }
        theory->setData(d, d, true);
        raw->setData(d, v, true);
        rawErrors->setDataPlottable(raw);
        rawErrors->setData(ve);
        one->setData({d.first(), d.last()}, {1.0, 1.0}, true);
        scaled->setData(d, s, true);
        scaledErrors->setDataPlottable(scaled);
        scaledErrors->setData(se);
        double left = d.first();
        double right = d.last();
        if (m_sessionPoint) {
            QCPGraph* session =
                addSeries(m_plot, tr("this session"), sessionColor, QCPScatterStyle::ssStar, Qt::NoPen);
            session->setScatterStyle(
                QCPScatterStyle(QCPScatterStyle::ssStar, QPen(sessionColor, 2.0), sessionColor, 14));
            session->setData({static_cast<double>(m_sessionPoint->first)}, {m_sessionPoint->second}, true);
            left = std::min(left, static_cast<double>(m_sessionPoint->first));
            right = std::max(right, static_cast<double>(m_sessionPoint->first));
            low = std::min(low, m_sessionPoint->second);
            high = std::max(high, m_sessionPoint->second);
        }
        m_plot->xAxis->setRange(left / 1.5, right * 1.5);
        m_plot->yAxis->setRange(std::max(low, 1e-300) / 2.0, high * 2.0);
    }
    m_footnote->setText(m_sessionPoint
                            ? tr("★ this session: Var of the current head's raw scores = %1 at d_k = %2")
                                  .arg(QString::number(m_sessionPoint->second, 'g', 4))
                                  .arg(m_sessionPoint->first)
                            : tr("q and k drawn with NumPy's legacy randn; error bars: one standard error"));
    m_titleElement->setText(m_title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString VarianceView::figureTitle() const
{
    waitForResult();
    return m_title;
}

void VarianceView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    waitForResult();
    renderPlot(m_plot, device, size);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
