// SPDX-License-Identifier: GPL-3.0-or-later
#include "NormalizerComparisonView.h"

#include "LabelText.h"

#include "Document.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"
#include "SeriesPalette.h"
#include "ViewData.h"

#include <qcustomplot.h>

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {

namespace {

constexpr int longestKeyLabel = 14; // bars are wider than heatmap cells
constexpr int maximumTickLabels = 40;
constexpr double groupWidth = 0.8;       // of the one unit each key has on the x axis
constexpr Index maximumLabelledKeys = 8; // more keys: no values above the bars
constexpr double valuePoints = 7.5;
constexpr double topWithValues = 1.2; // room above a full bar for its value
constexpr double topWithoutValues = 1.05;

QString formatTemperature(double temperature)
{
    return QString::number(temperature, 'g', 4);
}

} // namespace

NormalizerComparisonView::NormalizerComparisonView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_plot(new QCustomPlot(this)), m_titleElement(nullptr),
      m_group(nullptr)
{
    setObjectName(QStringLiteral("normalizerComparison"));
    m_plot->setObjectName(QStringLiteral("normalizerComparisonPlot"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_titleElement = setUpPlot(m_plot, QSize(240, 110));

    // The legend in a row of its own under the plot, so it never hides a bar.
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->plotLayout()->addElement(2, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
    m_plot->plotLayout()->setRowSpacing(0);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setMargins(QMargins(4, 0, 4, 2));

    m_plot->xAxis->grid()->setVisible(false);
    m_plot->xAxis->setSubTicks(false);
    m_plot->xAxis->setTickLength(0, 0);
    m_plot->xAxis->setLabel(tr("key"));
    m_plot->yAxis->setLabel(tr("weight"));
    m_plot->yAxis->setRange(0.0, topWithoutValues);
    m_plot->yAxis->setSubTicks(false);
    auto yTicker = QSharedPointer<QCPAxisTickerFixed>::create();
    yTicker->setTickStep(0.25);
    yTicker->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    m_plot->yAxis->setTicker(yTicker);

    // Bars touch within a group (their darker outline separates them), so a bar's centre is known in plot
    // coordinates and its value can be written above it.
    m_group = new QCPBarsGroup(m_plot);
    m_group->setSpacingType(QCPBarsGroup::stPlotCoords);
    m_group->setSpacing(0.0);

    connect(m_plot, &QCustomPlot::mouseMove, this, &NormalizerComparisonView::onMouseMove);
    connect(m_plot, &QCustomPlot::afterLayout, this, &NormalizerComparisonView::afterLayout);
    // Only while on screen: hidden, it catches up when shown (OnScreenRefresh).
    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    refresh();
}

NormalizerComparisonView::~NormalizerComparisonView() = default;

int NormalizerComparisonView::seriesCount() const
{
    return m_plot->plottableCount();
}

void NormalizerComparisonView::removeBarValues()
{
    for (QCPItemText* item : std::as_const(m_barValues))
        m_plot->removeItem(item);
    m_barValues.clear();
    m_barValuesShown = false;
}

// Values above the bars only when a bar is at least as wide as a line of their text (decided for the
// screen and again for each export size: QCustomPlot lays out before drawing either).
void NormalizerComparisonView::afterLayout()
{
    if (m_barValues.isEmpty())
        return;
    const double barWidth = groupWidth / static_cast<double>(std::max<Index>(1, m_weights.rows()));
    const double pixels = std::abs(m_plot->xAxis->coordToPixel(barWidth) - m_plot->xAxis->coordToPixel(0.0));
    m_barValuesShown = pixels >= QFontMetricsF(m_barValues.first()->font()).height();
    for (QCPItemText* item : std::as_const(m_barValues))
        item->setVisible(m_barValuesShown);
}

void NormalizerComparisonView::clearPlot(const QString& title)
{
    removeBarValues();
    m_group->clear();
    m_plot->clearPlottables();
    m_weights = Matrix();
    m_names.clear();
    m_keyLabels.clear();
    m_title = title;
    m_titleElement->setText(title);
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    m_plot->xAxis->setRange(-0.5, 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void NormalizerComparisonView::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current) {
        clearPlot(current.error);
        return;
    }
    const Session& session = m_document->session();
    const int head = current.index, headCount = current.count;
    const HeadResult& r = *current.head;
    const Index row = m_document->selectedQuery();
    NormalizerComparison comparison;
    try {
        comparison = compareNormalizers(r, row, session.temperature);
    } catch (const std::exception&) {
        // A result of an older session (a newer one is computing): its own resultChanged follows.
        clearPlot(tr("Row %1: waiting for the result").arg(row));
        return;
    }

    removeBarValues();
    m_group->clear();
    m_plot->clearPlottables();
    m_weights = comparison.weights;
    m_names.clear();
    const Index m = m_weights.cols();
    const auto count = static_cast<int>(comparison.names.size());
    QVector<double> keys(static_cast<int>(m));
    for (Index j = 0; j < m; ++j)
        keys[static_cast<int>(j)] = static_cast<double>(j);
    for (int k = 0; k < count; ++k) {
        const QString name = QString::fromStdString(comparison.names[static_cast<std::size_t>(k)]);
        m_names.append(name);
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(name);
        bars->setWidthType(QCPBars::wtPlotCoords);
        bars->setWidth(groupWidth / count);
        const QColor color = seriesColor(k);
        bars->setPen(QPen(color.darker(130), 0.8));
        bars->setBrush(color);
        QVector<double> values(static_cast<int>(m));
        for (Index j = 0; j < m; ++j)
            values[static_cast<int>(j)] = m_weights(k, j);
        bars->setData(keys, values, true);
        bars->setBarsGroup(m_group);
    }

    if (m <= maximumLabelledKeys) {
        QFont font = m_plot->xAxis->tickLabelFont();
        font.setPointSizeF(valuePoints);
        const double barWidth = groupWidth / count;
        for (int k = 0; k < count; ++k)
            for (Index j = 0; j < m; ++j) {
                if (r.allowed(row, j) == 0)
                    continue; // the tick label says "(masked)"
                auto* item = new QCPItemText(m_plot);
                item->setClipToAxisRect(true);
                item->setSelectable(false);
                item->setFont(font);
                item->setColor(QColor(0x30, 0x30, 0x30));
                item->position->setType(QCPItemPosition::ptPlotCoords);
                item->position->setAxes(m_plot->xAxis, m_plot->yAxis);
                item->position->setCoords(static_cast<double>(j) + (k - (count - 1) / 2.0) * barWidth,
                                          m_weights(k, j));
                item->setRotation(-90.0);
                item->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter); // reads upwards from the bar
                item->setPadding(QMargins(3, 0, 0, 0));
                item->setText(QString::number(m_weights(k, j), 'f', 3));
                m_barValues.append(item);
            }
    }
    m_plot->yAxis->setRange(0.0, m_barValues.isEmpty() ? topWithoutValues : topWithValues);

    const std::vector<std::string>& keyTokens = session.keyTokens();
    const bool tokensMatch = static_cast<Index>(keyTokens.size()) == m;
    m_keyLabels.clear();
    int longest = 0;
    for (Index j = 0; j < m; ++j) {
        QString label = tokensMatch ? tokenLabel(keyTokens, j) : QString::number(j);
        label = elidedLabel(label, longestKeyLabel);
        if (r.allowed(row, j) == 0)
            label = tr("%1 (masked)").arg(label);
        longest = std::max(longest, static_cast<int>(label.size()));
        m_keyLabels.append(label);
    }
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const int stride = std::max(1, static_cast<int>((m + maximumTickLabels - 1) / maximumTickLabels));
    for (int j = 0; j < m_keyLabels.size(); j += stride)
        ticker->addTick(j, m_keyLabels.at(j));
    m_plot->xAxis->setTicker(ticker);
    // Many or long labels would run into each other: they are slanted instead.
    m_plot->xAxis->setTickLabelRotation(m * longest > 60 ? -40.0 : 0.0);
    m_plot->xAxis->setRange(-0.5, static_cast<double>(m) - 0.5);

    const QString query = static_cast<Index>(session.tokens.size()) == r.weights.rows()
                              ? tokenLabel(session.tokens, row)
                              : QString::number(row);
    m_title =
        tr("Row ‘%1’ at τ = %2 under five normalizers").arg(query, formatTemperature(session.temperature));
    if (headCount > 1)
        m_title += tr(" — head %1 of %2").arg(head + 1).arg(headCount);
    m_titleElement->setText(m_title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void NormalizerComparisonView::onMouseMove(QMouseEvent* event)
{
    const QPointF position = event->position();
    for (int k = 0; k < m_plot->plottableCount(); ++k) {
        auto* bars = qobject_cast<QCPBars*>(m_plot->plottable(k));
        QVariant details;
        if (!bars || bars->selectTest(position, false, &details) < 0)
            continue;
        const QCPDataSelection selection = details.value<QCPDataSelection>();
        if (selection.isEmpty())
            continue;
        const int j = selection.dataRange().begin();
        if (k >= m_weights.rows() || j < 0 || j >= m_weights.cols())
            continue;
        QToolTip::showText(
            event->globalPosition().toPoint(),
            tr("%1 · key ‘%2’: %3")
                .arg(m_names.value(k), m_keyLabels.value(j), QString::number(m_weights(k, j), 'f', 3)),
            m_plot);
        return;
    }
    QToolTip::hideText();
}

QSize NormalizerComparisonView::defaultFigureSize() const
{
    const int keys = static_cast<int>(std::min<Index>(m_weights.cols(), 60));
    return {std::clamp(160 + 110 * keys, 640, 1600), 440};
}

QString NormalizerComparisonView::figureTitle() const
{
    m_refresh->flush();
    return m_title;
}

void NormalizerComparisonView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    m_refresh->flush();
    renderPlot(m_plot, device, size);
    m_plot->replot(QCustomPlot::rpQueuedReplot); // back to the screen's layout
}

} // namespace qkv::ui
