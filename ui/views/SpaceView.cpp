// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpaceView.h"

#include "Document.h"
#include "LabelText.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"
#include "Projection.h"
#include "StampedScatter.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace qkv::ui {

namespace {

constexpr double pickRadius = 8.0;           // pixels: how near a click must be to a point
constexpr Index maximumLabelledPoints = 120; // beyond this, token names only in the hover text

} // namespace

QList<QPointF> SpaceView::pointsOf(const Matrix& rows)
{
    QList<QPointF> points;
    points.reserve(static_cast<int>(rows.rows()));
    for (Index r = 0; r < rows.rows(); ++r)
        points.append(QPointF(rows(r, 0), rows(r, 1)));
    return points;
}

void SpaceView::setPoints(QCPGraph* graph, const QList<QPointF>& points)
{
    QVector<double> x, y;
    x.reserve(points.size());
    y.reserve(points.size());
    for (const QPointF& p : points) {
        x.append(p.x());
        y.append(p.y());
    }
    graph->setData(x, y);
}

QCPGraph* SpaceView::addScatter(QCustomPlot* plot, const QString& name, int shape, const QColor& color,
                                double size)
{
    QCPGraph* graph = addStampedScatterGraph(plot);
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(
        QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(shape), color.darker(130), color, size));
    graph->setPen(QPen(color));
    graph->setSelectable(QCP::stNone);
    return graph;
}

QCPGraph* SpaceView::addRing(QCustomPlot* plot, const QColor& color)
{
    QCPGraph* graph = plot->addGraph();
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(color, 2.0), Qt::NoBrush, 19));
    graph->setSelectable(QCP::stNone);
    return graph;
}

QString SpaceView::formatWeight(double weight)
{
    return QString::number(weight, 'f', 3);
}

void SpaceView::finishDraw(std::initializer_list<PointSet> sets)
{
    Index count = 0;
    for (const PointSet& set : sets) {
        count += set.points.size();
        if (set.emphasised >= 0 && set.emphasised < set.points.size())
            setPoints(set.ring, {set.points.at(static_cast<int>(set.emphasised))});
        else
            set.ring->data()->clear();
    }
    int widest = 0;
    QList<QPointF> extent;
    QList<Pickable> pickables;
    for (const PointSet& set : sets) {
        for (int i = 0; i < set.points.size(); ++i) {
            if (labelsFit(count)) {
                addLabel(set.points.at(i), set.labels.at(i), set.labelColor, i == set.emphasised,
                         set.labelsBelow);
                widest = std::max(widest, labelWidth(set.labels.at(i)));
            }
            pickables.append({set.points.at(i), set.kind, i});
        }
        extent += set.points;
    }
    endDraw(extent, pickables, widest);
}

QString SpaceView::linesLayer()
{
    return QStringLiteral("lines");
}

SpaceView::SpaceView(Document* document, const QString& dimension, QWidget* parent)
    : QWidget(parent), m_document(document), m_mode(new QComboBox(this)), m_first(new QSpinBox(this)),
      m_second(new QSpinBox(this)), m_plot(new QCustomPlot(this)), m_titleElement(nullptr),
      m_legendCell(new QCPLayoutGrid), m_progress(new QTimer(this))
{
    m_progress->setSingleShot(true);
    connect(m_progress, &QTimer::timeout, this, [this] {
        if (m_projecting)
            redraw(); // "Projecting…"
    });
    m_mode->setObjectName(QStringLiteral("planeMode"));
    m_mode->addItem(tr("Automatic"), static_cast<int>(PlaneMode::Automatic));
    m_mode->addItem(tr("PCA"), static_cast<int>(PlaneMode::Pca));
    m_mode->addItem(tr("Pick dimensions"), static_cast<int>(PlaneMode::PickedDimensions));
    m_mode->setToolTip(tr("Automatic: the raw coordinates when %1 is 1 or 2, else a principal component "
                          "analysis. PCA: always the principal components. Pick dimensions: two raw "
                          "coordinates of your choice.")
                           .arg(dimension));
    m_first->setObjectName(QStringLiteral("firstDimension"));
    m_first->setToolTip(tr("The %1 coordinate along x").arg(dimension));
    m_second->setObjectName(QStringLiteral("secondDimension"));
    m_second->setToolTip(tr("The %1 coordinate along y").arg(dimension));

    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(4, 2, 4, 0);
    auto* modeLabel = new QLabel(tr("&Plane:"), this);
    modeLabel->setBuddy(m_mode);
    controls->addWidget(modeLabel);
    controls->addWidget(m_mode);
    controls->addSpacing(8);
    controls->addWidget(new QLabel(tr("x: %1").arg(dimension), this));
    controls->addWidget(m_first);
    controls->addWidget(new QLabel(tr("y: %1").arg(dimension), this));
    controls->addWidget(m_second);
    controls->addStretch(1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(controls);
    layout->addWidget(m_plot, 1);

    m_plot->setObjectName(QStringLiteral("plot"));
    m_titleElement = setUpPlot(m_plot, QSize(200, 110));

    // The legend in a cell of its own, so it never covers a point (arrangePlot).
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    arrangePlot(false);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setMargins(QMargins(6, 0, 6, 4));
    m_legendCell->setMargins(QMargins(0, 0, 2, 2)); // off the widget's edge

    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->grid()->setPen(QPen(QColor(225, 225, 225), 1.0));
        axis->grid()->setZeroLinePen(QPen(QColor(190, 190, 190), 1.0));
        axis->setSubTicks(false);
    }
    // The lines from a query to the keys lie under the points.
    m_plot->addLayer(linesLayer(), m_plot->layer(QStringLiteral("main")), QCustomPlot::limBelow);

    connect(m_mode, &QComboBox::currentIndexChanged, this, &SpaceView::onModeChanged);
    connect(m_first, &QSpinBox::valueChanged, this, &SpaceView::onDimensionChanged);
    connect(m_second, &QSpinBox::valueChanged, this, &SpaceView::onDimensionChanged);
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { fitRanges(m_plot->viewport().size()); });
    connect(m_plot, &QCustomPlot::mousePress, this, &SpaceView::onMousePress);
    connect(m_plot, &QCustomPlot::mouseMove, this, &SpaceView::onMouseMove);

    // Only while on screen: hidden, the view catches up when shown (OnScreenRefresh).
    m_refresh = new OnScreenRefresh(this, [this] {
        if (std::exchange(m_projectionStale, false))
            recompute();
        else
            redraw();
    });
    const auto reproject = [this] {
        m_projectionStale = true;
        m_refresh->request();
    };
    connect(m_document, &Document::resultArrived, this, reproject); // before the other views redraw
    connect(m_document, &Document::currentHeadChanged, this, reproject);
    connect(m_document, &Document::sessionChanged, this, [this](Document::Changes changes) {
        if (changes & Document::Tokens)
            m_refresh->request();
    });
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
}

SpaceView::~SpaceView() = default;

void SpaceView::setPlaneOptions(const PlaneOptions& options)
{
    m_options = options;
    recompute();
}

QString SpaceView::xAxisLabel() const
{
    return m_xLabel;
}

QString SpaceView::yAxisLabel() const
{
    return m_yLabel;
}

std::shared_ptr<const AttentionResult> SpaceView::shownResult() const
{
    return m_document->currentHeadResult().result;
}

const HeadResult* SpaceView::currentHead() const
{
    return m_document->currentHeadResult().head;
}

int SpaceView::currentHeadIndex() const
{
    return m_document->currentHeadResult().index;
}

QStringList SpaceView::queryTokens(Index count) const
{
    return tokenLabels(m_document->session().tokens, count);
}

QStringList SpaceView::keyTokens(Index count) const
{
    return tokenLabels(m_document->session().keyTokens(), count);
}

PlaneOptions SpaceView::syncControls()
{
    const Index d = planeDimension();
    const int last = static_cast<int>(std::max<Index>(0, d - 1));
    m_options.first = std::clamp<Index>(m_options.first, 0, firstLast());
    m_options.second = std::clamp<Index>(m_options.second, 0, last);
    updateControls();
    return m_options;
}

void SpaceView::updateControls()
{
    const QSignalBlocker blockMode(m_mode);
    const QSignalBlocker blockFirst(m_first);
    const QSignalBlocker blockSecond(m_second);
    const Index d = planeDimension();
    const int last = static_cast<int>(std::max<Index>(0, d - 1));
    m_mode->setCurrentIndex(m_mode->findData(static_cast<int>(m_options.mode)));
    // setRange lays the window out again even when nothing changes
    if (m_first->maximum() != firstLast())
        m_first->setRange(0, static_cast<int>(firstLast()));
    if (m_second->maximum() != last)
        m_second->setRange(0, last);
    m_first->setValue(static_cast<int>(m_options.first));
    m_second->setValue(static_cast<int>(m_options.second));
    const bool picking = m_options.mode == PlaneMode::PickedDimensions && d > 0;
    const bool pair = m_options.mode == PlaneMode::RopePair && d > 1;
    m_first->setEnabled(picking || pair);
    m_second->setEnabled(picking && d > 1);
    m_first->setPrefix(pair ? tr("pair ") : QString());
}

Index SpaceView::firstLast() const
{
    const Index d = planeDimension();
    return std::max<Index>(0, (m_options.mode == PlaneMode::RopePair ? d / 2 : d) - 1);
}

void SpaceView::onModeChanged()
{
    m_options.mode = static_cast<PlaneMode>(m_mode->currentData().toInt());
    recompute();
}

void SpaceView::onDimensionChanged()
{
    m_options.first = m_first->value();
    m_options.second = m_second->value();
    recompute();
}

bool SpaceView::labelsFit(Index points)
{
    return points <= maximumLabelledPoints;
}

void SpaceView::beginDraw(const QString& title)
{
    m_plot->clearItems();
    m_alsoInView.clear();
    m_labelsBelow = false;
    m_message.clear();
    m_title = title;
    m_titleElement->setText(title);
}

void SpaceView::endDraw(const QList<QPointF>& extent, const QList<Pickable>& pickables, int widestLabel)
{
    m_extent = extent + m_alsoInView;
    m_pickables = pickables;
    m_widestLabel = widestLabel;
    m_plot->legend->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SpaceView::showMessage(const QString& title, const QString& message)
{
    beginDraw(title);
    m_message = message;
    for (int i = 0; i < m_plot->plottableCount(); ++i) {
        QCPAbstractPlottable* plottable = m_plot->plottable(i);
        if (auto* graph = qobject_cast<QCPGraph*>(plottable))
            graph->data()->clear();
        else if (auto* curve = qobject_cast<QCPCurve*>(plottable))
            curve->data()->clear();
    }
    auto* text = new QCPItemText(m_plot);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setPositionAlignment(Qt::AlignCenter);
    text->setText(message);
    text->setColor(QColor(0xa4, 0x00, 0x00));
    setAxisLabels({}, {});
    m_plot->legend->setVisible(false);
    m_extent.clear();
    m_pickables.clear();
    m_widestLabel = 0;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SpaceView::setAxisLabels(const std::string& x, const std::string& y)
{
    m_xLabel = QString::fromStdString(x);
    m_yLabel = QString::fromStdString(y);
    m_plot->xAxis->setLabel(m_xLabel); // shortened to the axis when drawn (fitAxisLabels)
    m_plot->yAxis->setLabel(m_yLabel);
}

void SpaceView::fitAxisLabels() const
{
    // A short plot (a bottom dock at a scale factor of 2) cut an axis title with its share of the variance at
    // both ends.
    const QRect rect = m_plot->axisRect()->rect();
    for (const auto& [axis, full, length] : {std::tuple{m_plot->xAxis, m_xLabel, rect.width()},
                                             std::tuple{m_plot->yAxis, m_yLabel, rect.height()}}) {
        const QFontMetrics metrics(axis->labelFont());
        QString text = full;
        if (metrics.horizontalAdvance(text) > length)
            text.replace(QStringLiteral(" of variance"), QString()); // core's PCA label (SpaceLayout.cpp)
        const QString elided = metrics.elidedText(text, Qt::ElideRight, std::max(0, length));
        axis->setLabel(elided.isEmpty() && !full.isEmpty() ? QStringLiteral("…") : elided); // keep its room
    }
}

QFont SpaceView::labelFont() const
{
    QFont small = font();
    small.setPointSizeF(std::max(7.0, (small.pointSizeF() > 0 ? small.pointSizeF() : 9.0) - 0.5));
    return small;
}

int SpaceView::labelWidth(const QString& text) const
{
    QFont bold = labelFont();
    bold.setBold(true);
    return QFontMetrics(bold).horizontalAdvance(elidedLabel(text));
}

void SpaceView::addLabel(const QPointF& at, const QString& text, const QColor& color, bool bold, bool below)
{
    auto* label = new QCPItemText(m_plot);
    label->setSelectable(false);
    label->setClipToAxisRect(true);
    label->position->setType(QCPItemPosition::ptPlotCoords);
    label->position->setCoords(at);
    // Beside the point, to the right: the padding keeps the text clear of the marker (and of the ring
    // around a selected one).
    const int side = bold ? 11 : 7;
    label->setPositionAlignment(Qt::AlignLeft | (below ? Qt::AlignTop : Qt::AlignBottom));
    label->setPadding(below ? QMargins(side, 4, 0, 0) : QMargins(side, 0, 0, 4));
    if (below)
        m_labelsBelow = true;
    QFont labelFont = this->labelFont();
    labelFont.setBold(bold);
    label->setFont(labelFont);
    label->setColor(color);
    label->setText(elidedLabel(text));
}

QPoint SpaceView::positionOf(const QPointF& coords) const
{
    const QPointF inPlot(m_plot->xAxis->coordToPixel(coords.x()), m_plot->yAxis->coordToPixel(coords.y()));
    return m_plot->mapTo(this, inPlot.toPoint());
}

void SpaceView::keepOutOfLegend(QCPGraph* graph)
{
    graph->removeFromLegend();
}

// Lays the plot out at `viewport` and sets equal-aspect ranges in which every point and its label fit. The
// layout depends on the tick labels and they on the ranges, so this settles in two passes.
void SpaceView::placeLegend(const QSize& viewport) const
{
    // In a bottom dock at 1280 × 720 the plot is a wide strip: a legend row under it left the points about
    // 70 px of height.
    const bool beside = viewport.height() < 300 && viewport.width() >= 2 * viewport.height();
    if (beside != m_legendBeside)
        arrangePlot(beside);
}

void SpaceView::arrangePlot(bool beside) const
{
    m_legendBeside = beside;
    // Everything is taken out (nothing is deleted but the spacers) and put back in its new place.
    QCPLayoutGrid* layout = m_plot->plotLayout();
    QCPAxisRect* points = m_plot->axisRect();
    const auto takeOut = [](QCPLayoutGrid* grid, QCPLayoutElement* element) {
        if (grid->elements(false).contains(element))
            grid->take(element);
    };
    for (QCPLayoutElement* element :
         {static_cast<QCPLayoutElement*>(m_titleElement), static_cast<QCPLayoutElement*>(points),
          static_cast<QCPLayoutElement*>(m_legendCell)})
        takeOut(layout, element);
    layout->simplify();
    takeOut(m_legendCell, m_titleElement);
    takeOut(m_legendCell, m_plot->legend);
    m_legendCell->clear(); // the spacers
    const auto spacer = [this] { return new QCPLayoutElement(m_plot); };
    if (beside) {
        // Down the right: the title (a row of its own above would take much of the points' height at a
        // scale factor of 2), the legend one entry per line, then space. The points keep the whole height.
        layout->addElement(0, 0, points);
        layout->addElement(0, 1, m_legendCell);
        layout->setColumnStretchFactors({1, 0.001});
        m_legendCell->addElement(0, 0, m_titleElement);
        m_legendCell->addElement(1, 0, m_plot->legend);
        m_legendCell->addElement(2, 0, spacer());
        m_legendCell->setRowStretchFactors({0.001, 0.001, 1});
        m_plot->legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
    } else {
        // The title above, the legend centred in a row of its own below.
        layout->addElement(0, 0, m_titleElement);
        layout->addElement(1, 0, points);
        layout->addElement(2, 0, m_legendCell);
        layout->setRowStretchFactors({1, 1, 0.001});
        m_legendCell->addElement(0, 0, spacer());
        m_legendCell->addElement(0, 1, m_plot->legend);
        m_legendCell->addElement(0, 2, spacer());
        m_legendCell->setColumnStretchFactors({1, 0.001, 1});
        m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    }
}

void SpaceView::fitRanges(const QSize& viewport) const
{
    if (viewport.isEmpty())
        return;
    m_plot->setViewport(QRect(QPoint(0, 0), viewport));
    placeLegend(viewport);
    m_plot->xAxis->setLabel(m_xLabel); // the layout below makes room for a label; fitAxisLabels shortens it
    m_plot->yAxis->setLabel(m_yLabel);

    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const QPointF& p : m_extent) {
        if (!std::isfinite(p.x()) || !std::isfinite(p.y()))
            continue;
        x0 = std::min(x0, p.x());
        x1 = std::max(x1, p.x());
        y0 = std::min(y0, p.y());
        y1 = std::max(y1, p.y());
    }
    if (x0 > x1) { // nothing to show
        x0 = y0 = -1.0;
        x1 = y1 = 1.0;
    }
    // Room around the points for the marker and its ring, and for the labels where there are any (none past
    // labelsFit: with a thousand tokens in a short strip the labels' room would leave little for the points).
    const double labelHeight = m_widestLabel > 0 ? QFontMetrics(labelFont()).height() : 0;
    const double left = 16.0;
    const double right = 16.0 + m_widestLabel; // labels go to the right
    const double top = 16.0 + labelHeight;     // and above (or below)
    const double bottom = 16.0 + (m_labelsBelow ? labelHeight : 0);

    for (int pass = 0; pass < 2; ++pass) {
        QCPLayoutGrid* layout = m_plot->plotLayout();
        layout->update(QCPLayoutElement::upPreparation);
        layout->update(QCPLayoutElement::upMargins);
        layout->update(QCPLayoutElement::upLayout);
        const QRect rect = m_plot->axisRect()->rect();
        const double width = std::max(40, rect.width());
        const double height = std::max(40, rect.height());
        const double w = std::max(20.0, width - left - right);
        const double h = std::max(20.0, height - top - bottom);
        // Units per pixel, the same along both axes.
        double scale = std::max((x1 - x0) / w, (y1 - y0) / h);
        const double magnitude = std::max({std::abs(x0), std::abs(x1), std::abs(y0), std::abs(y1), 1e-300});
        if (!(scale > 1e-12 * magnitude / std::min(w, h)))
            scale = 2.0 * std::max(1.0, magnitude) / std::min(w, h); // a single place: a span around it
        const double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
        const double xLow = cx - (left + 0.5 * w) * scale;
        const double yLow = cy - (bottom + 0.5 * h) * scale;
        m_plot->xAxis->setRange(xLow, xLow + width * scale);
        m_plot->yAxis->setRange(yLow, yLow + height * scale);
    }
    fitAxisLabels(); // a label's length does not change the margins (only whether there is one)
    m_plot->plotLayout()->update(QCPLayoutElement::upPreparation); // ticks for the final ranges
}

bool SpaceView::isHeavyProjection(const PlaneOptions& options, Index rows, Index width)
{
    const bool pca = options.mode == PlaneMode::Pca || options.mode == PlaneMode::Automatic;
    return pca && isLargePcaProblem(rows, width);
}

QString SpaceView::figureTitle() const
{
    m_refresh->flush();
    return m_title;
}

void SpaceView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    m_refresh->flush();
    finishProjection();
    const QRect screen = m_plot->viewport();
    fitRanges(size);
    renderPlot(m_plot, device, size);
    // Back to the screen's layout, so positions and clicks stay right without a replot.
    fitRanges(screen.size());
}

const SpaceView::Pickable* SpaceView::pickableAt(const QPointF& pixel) const
{
    const Pickable* nearest = nullptr;
    double best = pickRadius * pickRadius;
    for (const Pickable& p : m_pickables) {
        const double dx = m_plot->xAxis->coordToPixel(p.coords.x()) - pixel.x();
        const double dy = m_plot->yAxis->coordToPixel(p.coords.y()) - pixel.y();
        const double distance = dx * dx + dy * dy;
        if (distance <= best) {
            best = distance;
            nearest = &p;
        }
    }
    return nearest;
}

void SpaceView::onMousePress(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton)
        return;
    if (const Pickable* point = pickableAt(event->position()))
        picked(*point);
}

void SpaceView::onMouseMove(QMouseEvent* event)
{
    if (const Pickable* point = pickableAt(event->position()))
        QToolTip::showText(event->globalPosition().toPoint(), describe(*point), m_plot);
    else
        QToolTip::hideText();
}

} // namespace qkv::ui
