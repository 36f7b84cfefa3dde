// SPDX-License-Identifier: GPL-3.0-or-later
#include "PredictionView.h"

#include "BarPanels.h"
#include "ColorScale.h"
#include "LabelText.h"
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr int stripRows = 2; // row 1: unmodified (top), row 0: with the interventions

QString signedNumber(double value, int digits = 3)
{
    if (!std::isfinite(value))
        return QStringLiteral("—");
    return (value >= 0 ? QStringLiteral("+") : QStringLiteral("−")) +
           PredictionView::formatNumber(std::abs(value), digits);
}

QCPColorGradient lossGradient()
{
    QCPColorGradient gradient;
    QMap<double, QColor> stops;
    for (const auto& [position, color] : paletteStops(Palette::Viridis))
        stops.insert(position, color);
    gradient.setColorStops(stops);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    return gradient;
}

} // namespace

PredictionView::PredictionView(QWidget* parent)
    : QWidget(parent), m_plot(new QCustomPlot(this)), m_lossMap(nullptr), m_marker(nullptr)
{
    setObjectName(QStringLiteral("predictionView"));
    m_plot->setObjectName(QStringLiteral("predictionPlot"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(360, 400)); // scrolls in a low dock rather than squeezing the bars
    m_barGrid = replaceWithPanelGrid(m_plot);
    m_cleanCaption = addCaption(m_plot, m_barGrid, 0, 0);
    m_modifiedCaption = addCaption(m_plot, m_barGrid, 0, 1);
    m_cleanBars = addPanel(m_plot, m_barGrid, 1, 0, nullptr);
    m_modifiedBars = addPanel(m_plot, m_barGrid, 1, 1, nullptr);
    m_barGrid->setRowStretchFactor(0, 0.001);
    for (QCPAxisRect* rect : {m_cleanBars, m_modifiedBars}) {
        QCPAxis* tokens = rect->axis(QCPAxis::atLeft);
        tokens->setRangeReversed(true); // the most probable at the top
        tokens->setSubTicks(false);
        tokens->setTickLength(0, 0);
        tokens->grid()->setVisible(false);
        rect->axis(QCPAxis::atBottom)->setLabel(tr("probability of the next token"));
        rect->axis(QCPAxis::atBottom)->grid()->setVisible(true);
    }
    m_strip = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(2, 0, m_strip);
    for (QCPAxis* axis : m_strip->axes()) {
        axis->setLayer(QStringLiteral("axes"));
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 0);
    }
    auto rows = QSharedPointer<QCPAxisTickerText>::create();
    rows->addTick(1, tr("unmodified"));
    rows->addTick(0, tr("with interventions"));
    m_strip->axis(QCPAxis::atLeft)->setTicker(rows);
    m_strip->axis(QCPAxis::atLeft)->setRange(-0.5, stripRows - 0.5);
    m_strip->axis(QCPAxis::atLeft)->setLabel(tr("loss"));
    m_summary = new QCPTextElement(m_plot, QString(), m_plot->font());
    m_plot->plotLayout()->addElement(3, 0, m_summary);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->plotLayout()->setRowStretchFactor(1, 1.0);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.32);
    m_plot->plotLayout()->setRowStretchFactor(3, 0.001);
    m_plot->setMouseTracking(true);
    connect(m_plot, &QCustomPlot::mouseMove, this, &PredictionView::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &PredictionView::onMousePress);
    m_display.message = tr("Open a model (File ▸ Open Model…) to see what it predicts.");
    draw();
}

PredictionView::~PredictionView() = default;

QString PredictionView::formatNumber(double value, int digits)
{
    if (!std::isfinite(value))
        return QStringLiteral("—");
    return QString::number(value, 'g', digits);
}

void PredictionView::setDisplay(PredictionDisplay display)
{
    m_display = std::move(display);
    draw();
}

QString PredictionView::figureTitle() const
{
    return m_title->text();
}

QString PredictionView::summaryText() const
{
    const PredictionRunDisplay& clean = m_display.clean;
    const PredictionRunDisplay& modified = m_display.modified;
    QStringList parts;
    if (clean.meanLoss) {
        QString loss = tr("Mean loss: unmodified %1").arg(formatNumber(*clean.meanLoss, 4));
        if (modified.meanLoss)
            loss += tr(", with interventions %1 (Δ %2)")
                        .arg(formatNumber(*modified.meanLoss, 4),
                             signedNumber(*modified.meanLoss - *clean.meanLoss));
        parts << loss;
    }
    if (!m_display.logitLabel.isEmpty() && clean.logitDifference) {
        QString difference =
            tr("%1: unmodified %2").arg(m_display.logitLabel, formatNumber(*clean.logitDifference, 4));
        if (modified.logitDifference)
            difference += tr(", with interventions %1 (Δ %2)")
                              .arg(formatNumber(*modified.logitDifference, 4),
                                   signedNumber(*modified.logitDifference - *clean.logitDifference));
        parts << difference;
    }
    return parts.join(QStringLiteral("\n"));
}

void PredictionView::draw()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_lossMap = nullptr;
    m_marker = nullptr;
    const PredictionDisplay& d = m_display;
    const bool shown = d.message.isEmpty() && d.position >= 0 && d.position < d.tokens.size();
    if (!shown) {
        m_title->setText(d.message.isEmpty() ? tr("No prediction") : d.message);
        m_cleanCaption->setText(QString());
        m_modifiedCaption->setText(QString());
        m_summary->setText(QString());
        for (QCPAxisRect* rect : {m_cleanBars, m_modifiedBars, m_strip})
            rect->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    for (QCPAxisRect* rect : {m_cleanBars, m_modifiedBars, m_strip})
        rect->setVisible(true);
    // A long text would push the figure wider than any screen: its title keeps the beginning.
    const QString title = d.title.size() > 40 ? d.title.left(36) + QStringLiteral("…\"") : d.title;
    m_title->setText(
        tr("%1 — next token after position %2 (%3)").arg(title).arg(d.position).arg(d.tokens.at(d.position)));
    m_cleanCaption->setText(tr("Unmodified model"));
    // A long list of interventions would widen the figure past the screen: the caption keeps the start.
    const QString interventions =
        d.interventions.size() > 44 ? d.interventions.left(40) + QStringLiteral("…") : d.interventions;
    m_modifiedCaption->setText(interventions.isEmpty() ? tr("With interventions (none switched on)")
                                                       : tr("With %1").arg(interventions));
    double upper = 0.0;
    for (const PredictionRunDisplay* run : {&d.clean, &d.modified})
        for (const PredictionBar& bar : run->top)
            if (std::isfinite(bar.probability))
                upper = std::max(upper, bar.probability);
    upper = upper > 0.0 ? upper : 1.0;
    drawBars(m_cleanBars, d.clean, seriesColor(0), upper, m_barLimit);
    drawBars(m_modifiedBars, d.modified, seriesColor(1), upper, m_barLimit);
    drawLossStrip();
    m_summary->setText(summaryText());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int PredictionView::barLimitFor(int height) const
{
    // What is not bars takes about a dozen lines of text (title, captions, axes, the loss strip and its
    // slanted tokens, the summary); each bar needs a line and a little.
    const int line = QFontMetrics(m_plot->font()).height();
    return std::clamp(static_cast<int>((height - 12.0 * line) / (1.3 * line)), 3, 10);
}

void PredictionView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    const int limit = barLimitFor(m_plot->height());
    if (limit != m_barLimit) {
        m_barLimit = limit;
        draw();
    }
}

void PredictionView::drawBars(QCPAxisRect* rect, const PredictionRunDisplay& run, const QColor& color,
                              double upper, int limit)
{
    QCPAxis* tokens = rect->axis(QCPAxis::atLeft);
    QCPAxis* values = rect->axis(QCPAxis::atBottom);
    auto* bars = new QCPBars(tokens, values);
    bars->setWidthType(QCPBars::wtPlotCoords);
    bars->setWidth(0.7);
    bars->setPen(QPen(color.darker(130), 0.8));
    bars->setBrush(color);
    bars->removeFromLegend();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    QVector<double> keys, probabilities;
    const int count = std::min(limit, static_cast<int>(run.top.size()));
    for (int k = 0; k < count; ++k) {
        const PredictionBar& bar = run.top.at(k);
        keys << k;
        probabilities << (std::isfinite(bar.probability) ? bar.probability : 0.0);
        ticker->addTick(k, bar.token);
        QString label = probabilityText(bar.probability);
        if (bar.delta)
            label += tr("  Δ %1").arg(signedNumber(*bar.delta, 2));
        auto* text = new QCPItemText(m_plot);
        text->setClipAxisRect(rect);
        text->position->setAxes(values, tokens);
        text->position->setCoords(probabilities.back() + upper * 0.01, k);
        text->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        text->setText(label);
        text->setColor(plotStyle(m_plot).foreground);
        text->setFont(values->tickLabelFont());
    }
    bars->setData(keys, probabilities, true);
    tokens->setTicker(ticker);
    tokens->setRange(-0.5, std::max(static_cast<double>(count), 1.0) - 0.5);
    values->setRange(0.0, upper * 2.0); // room for the labels right of the longest bar
    // Ticks only where a probability can be: the room past 1 is for the labels.
    auto valueTicks = QSharedPointer<QCPAxisTickerText>::create();
    const double top = std::min(1.0, upper * 2.0);
    double step = 0.5;
    for (double candidate : {0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25})
        if (top / candidate <= 5.0) {
            step = candidate;
            break;
        }
    for (int i = 0; i * step <= top + 1e-12; ++i)
        valueTicks->addTick(i * step, QString::number(i * step * 100.0, 'g', 3) + QLatin1Char('%'));
    values->setTicker(valueTicks);
}

void PredictionView::drawLossStrip()
{
    const PredictionDisplay& d = m_display;
    const auto n = static_cast<int>(d.tokens.size());
    setKeyTicks(m_strip->axis(QCPAxis::atBottom), d.tokens, 24);
    m_lossMap = new QCPColorMap(m_strip->axis(QCPAxis::atBottom), m_strip->axis(QCPAxis::atLeft));
    m_lossMap->removeFromLegend();
    m_lossMap->setInterpolate(false);
    m_lossMap->setTightBoundary(false);
    // QCPColorMap spreads its cells between the first and last centres: one token still gets a cell.
    m_lossMap->data()->setSize(std::max(n, 2), stripRows);
    m_lossMap->data()->setRange(QCPRange(0, std::max(n, 2) - 1), QCPRange(0, stripRows - 1));
    double highest = -qInf(), lowest = qInf();
    for (int i = 0; i < std::max(n, 2); ++i) {
        for (int row = 0; row < stripRows; ++row) {
            const std::vector<double>& loss = row == 1 ? d.clean.loss : d.modified.loss;
            const double value = i < n && std::size_t(i) < loss.size() ? loss[std::size_t(i)] : qQNaN();
            m_lossMap->data()->setCell(i, row, std::isfinite(value) ? value : qQNaN());
            if (std::isfinite(value)) {
                highest = std::max(highest, value);
                lowest = std::min(lowest, value);
            }
        }
    }
    m_lossMap->setGradient(lossGradient());
    // From the lowest loss to the highest, so that differences between positions and runs show.
    if (!(lowest < highest))
        lowest = highest = std::isfinite(highest) ? highest : 0.0;
    m_lossMap->setDataRange(QCPRange(lowest, highest > lowest ? highest : lowest + 1.0));
    m_strip->axis(QCPAxis::atBottom)
        ->setLabel(std::isfinite(lowest) && lowest < highest
                       ? tr("loss −ln p(next token): dark %1 … bright %2")
                             .arg(formatNumber(lowest, 4), formatNumber(highest, 4))
                       : tr("loss −ln p(next token)"));
    m_marker = new QCPItemRect(m_plot);
    m_marker->setClipAxisRect(m_strip);
    for (QCPItemPosition* corner : {m_marker->topLeft, m_marker->bottomRight})
        corner->setAxes(m_strip->axis(QCPAxis::atBottom), m_strip->axis(QCPAxis::atLeft));
    m_marker->topLeft->setCoords(d.position - 0.5, stripRows - 0.5);
    m_marker->bottomRight->setCoords(d.position + 0.5, -0.5);
    m_marker->setPen(QPen(QColor(0xd6, 0x27, 0x28), 2.0));
    m_marker->setBrush(Qt::NoBrush);
}

int PredictionView::positionAt(const QPoint& pixel) const
{
    if (!m_strip->visible() || !m_strip->rect().contains(pixel))
        return -1;
    const int i = static_cast<int>(std::lround(m_strip->axis(QCPAxis::atBottom)->pixelToCoord(pixel.x())));
    return i >= 0 && i < m_display.tokens.size() ? i : -1;
}

void PredictionView::onMouseMove(QMouseEvent* event)
{
    const int i = positionAt(event->pos());
    if (i < 0) {
        QToolTip::hideText();
        return;
    }
    const auto lossAt = [i](const std::vector<double>& loss) {
        return std::size_t(i) < loss.size() ? formatNumber(loss[std::size_t(i)], 4) : QStringLiteral("—");
    };
    QToolTip::showText(
        event->globalPosition().toPoint(),
        tr("Position %1 (%2): loss unmodified %3, with interventions %4. Click to show the "
           "prediction after it.")
            .arg(i)
            .arg(m_display.tokens.at(i), lossAt(m_display.clean.loss), lossAt(m_display.modified.loss)),
        m_plot);
}

void PredictionView::onMousePress(QMouseEvent* event)
{
    const int i = positionAt(event->pos());
    if (i >= 0 && event->button() == Qt::LeftButton)
        emit positionClicked(i);
}

void PredictionView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    // As many bars as the figure's size takes, then back to the screen's.
    auto* self = const_cast<PredictionView*>(this);
    const int screen = m_barLimit;
    self->m_barLimit = barLimitFor(size.height());
    self->draw();
    renderPlot(m_plot, device, size);
    self->m_barLimit = screen;
    self->draw();
}

} // namespace qkv::ui
