// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchScatterView.h"

#include "PlotFigure.h"
#include "SeriesPalette.h"

#include <qcustomplot.h>

#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr double hoverRadius = 8.0; // pixels

} // namespace

PatchScatterView::PatchScatterView(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this))
{
    setObjectName(QStringLiteral("patchScatter"));
    m_plot->setObjectName(QStringLiteral("patchScatterCanvas"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_title = setUpPlot(m_plot, QSize(120, 120));
    m_plot->xAxis->setLabel(tr("exact"));
    m_plot->yAxis->setLabel(tr("attribution"));
    m_diagonal = new QCPItemStraightLine(m_plot);
    m_diagonal->point1->setCoords(0.0, 0.0);
    m_diagonal->point2->setCoords(1.0, 1.0);
    m_diagonal->setPen(QPen(neutralSeriesColor(), 1.0, Qt::DashLine));
    m_points = m_plot->addGraph();
    m_points->setLineStyle(QCPGraph::lsNone);
    m_points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, seriesColor(0), 6));
    connect(m_plot, &QCustomPlot::mouseMove, this, &PatchScatterView::onMouseMove);
    setPoints({}, {}, {}, QString());
}

PatchScatterView::~PatchScatterView() = default;

void PatchScatterView::setPoints(const QVector<double>& exact, const QVector<double>& attribution,
                                 const QStringList& labels, const QString& title)
{
    m_exact.clear();
    m_attribution.clear();
    m_labels.clear();
    double low = 0.0, high = 1.0; // 0 (nothing restored) and 1 (everything) always in view
    for (qsizetype k = 0; k < std::min(exact.size(), attribution.size()); ++k) {
        if (!std::isfinite(exact[k]) || !std::isfinite(attribution[k]))
            continue;
        m_exact << exact[k];
        m_attribution << attribution[k];
        m_labels << labels.value(k);
        low = std::min({low, exact[k], attribution[k]});
        high = std::max({high, exact[k], attribution[k]});
    }
    // QCPGraph sorts its data by key; the hover text looks points up by position instead of by index.
    m_points->setData(m_exact, m_attribution);
    const double margin = 0.06 * (high - low);
    m_plot->xAxis->setRange(low - margin, high + margin);
    m_plot->yAxis->setRange(low - margin, high + margin);
    m_title->setText(title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int PatchScatterView::pointCount() const
{
    return int(m_exact.size());
}

QPoint PatchScatterView::pointPosition(int k) const
{
    const QPointF inPlot(m_plot->xAxis->coordToPixel(m_exact.value(k)),
                         m_plot->yAxis->coordToPixel(m_attribution.value(k)));
    return m_plot->mapTo(this, inPlot.toPoint());
}

int PatchScatterView::pointAt(const QPoint& position) const
{
    int nearest = -1;
    double best = hoverRadius;
    for (int k = 0; k < pointCount(); ++k) {
        const QPointF offset = QPointF(pointPosition(k) - position);
        const double distance = std::hypot(offset.x(), offset.y());
        if (distance <= best) {
            best = distance;
            nearest = k;
        }
    }
    return nearest;
}

QString PatchScatterView::pointDescription(int k) const
{
    return tr("%1: exact %2, attribution %3")
        .arg(m_labels.value(k))
        .arg(m_exact.value(k), 0, 'f', 3)
        .arg(m_attribution.value(k), 0, 'f', 3);
}

void PatchScatterView::onMouseMove(QMouseEvent* event)
{
    const int k = pointAt(m_plot->mapTo(this, event->position().toPoint()));
    if (k >= 0)
        QToolTip::showText(event->globalPosition().toPoint(), pointDescription(k), m_plot);
    else
        QToolTip::hideText();
}

QString PatchScatterView::figureTitle() const
{
    return m_title->text();
}

void PatchScatterView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    renderPlot(m_plot, device, size);
}

} // namespace qkv::ui
