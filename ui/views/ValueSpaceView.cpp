// SPDX-License-Identifier: GPL-3.0-or-later
#include "ValueSpaceView.h"

#include "Document.h"

#include <qcustomplot.h>

#include <algorithm>
#include <exception>

namespace qkv::ui {

namespace {

const QColor valueColor(0x2c, 0xa0, 0x2c);
const QColor outputColor(0x94, 0x67, 0xbd);
enum ValueKind { ValuePoint, OutputPoint };

} // namespace

ValueSpaceView::ValueSpaceView(Document* document, QWidget* parent)
    : SpaceView(document, QStringLiteral("d_v"), parent)
{
    setObjectName(QStringLiteral("vSpaceView"));
    // The hull first, so the points are drawn over its fill.
    m_hull = new QCPCurve(plot()->xAxis, plot()->yAxis);
    m_hull->setName(tr("convex hull of V"));
    m_hull->setPen(QPen(valueColor.lighter(120), 1.2));
    QColor fill = valueColor;
    fill.setAlpha(32);
    m_hull->setBrush(fill);
    m_hull->setSelectable(QCP::stNone);
    m_values = addScatter(plot(), tr("values"), QCPScatterStyle::ssDiamond, valueColor, 10);
    m_outputs = addScatter(plot(), tr("outputs"), QCPScatterStyle::ssTriangle, outputColor, 9);
    m_outputs->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(outputColor, 1.5), outputColor.lighter(150), 9));
    m_valueRing = addRing(plot(), valueColor);
    m_outputRing = addRing(plot(), outputColor);
    keepOutOfLegend(m_valueRing);
    keepOutOfLegend(m_outputRing);
    recompute();
}

Index ValueSpaceView::planeDimension() const
{
    const HeadResult* head = currentHead();
    return head ? head->V.cols() : 0;
}

void ValueSpaceView::recompute()
{
    const PlaneOptions options = syncControls();
    const HeadResult* head = currentHead();
    const bool heavy = head && isHeavyProjection(options, head->V.rows(), head->V.cols());
    project<ValuePlane>(
        m_projection, heavy, [options](const HeadResult& shown) { return valuePlane(shown, options); },
        [this](std::optional<ValuePlane> plane) {
            m_hasPlane = plane.has_value();
            if (plane)
                m_plane = std::move(*plane);
        });
}

void ValueSpaceView::redraw()
{
    const HeadResult* head = currentHead();
    const QString title = tr("Values and outputs, head %1").arg(currentHeadIndex() + 1);
    m_valuePoints.clear();
    m_outputPoints.clear();
    m_hullPoints.clear();
    m_emphasisedOutput = m_emphasisedValue = -1;
    if (!head || !m_hasPlane || m_plane.values.rows() != head->V.rows() ||
        m_plane.outputs.rows() != head->output.rows()) {
        m_valueLabels.clear();
        m_outputLabels.clear();
        showMessage(title, !head            ? tr("Nothing to show: %1").arg(document()->resultError())
                           : isProjecting() ? tr("Projecting %1 points…").arg(head->V.rows())
                                            : tr("These values cannot be projected"));
        return;
    }
    beginDraw(title);
    const Index m = head->V.rows(), n = head->output.rows();
    m_valuePoints = pointsOf(m_plane.values);
    m_outputPoints = pointsOf(m_plane.outputs);
    m_valueLabels = keyTokens(m);
    m_outputLabels.clear();
    for (const QString& token : queryTokens(n))
        m_outputLabels.append(QStringLiteral("o(") + token + QLatin1Char(')'));
    setPoints(m_values, m_valuePoints);
    setPoints(m_outputs, m_outputPoints);
    setAxisLabels(m_plane.xLabel, m_plane.yLabel);

    QVector<double> hullX, hullY;
    for (Index vertex : m_plane.hull) {
        const QPointF p = m_valuePoints.at(static_cast<int>(vertex));
        m_hullPoints.append(p);
        hullX.append(p.x());
        hullY.append(p.y());
    }
    if (!hullX.isEmpty()) { // closed
        hullX.append(hullX.front());
        hullY.append(hullY.front());
    }
    m_hull->setData(hullX, hullY);

    const Index query = document()->selectedQuery(), key = document()->selectedKey();
    if (query >= 0 && query < n)
        m_emphasisedOutput = query;
    if (key >= 0 && key < m)
        m_emphasisedValue = key;
    finishDraw({{m_valuePoints, m_valueLabels, valueColor.darker(150), m_valueRing, m_emphasisedValue,
                 ValuePoint, false},
                {m_outputPoints, m_outputLabels, outputColor.darker(140), m_outputRing, m_emphasisedOutput,
                 OutputPoint, true}});
}

void ValueSpaceView::picked(const Pickable& point)
{
    if (point.kind == OutputPoint)
        document()->setSelection(point.index, document()->selectedKey());
    else
        document()->setSelection(document()->selectedQuery(), point.index);
}

QString ValueSpaceView::describe(const Pickable& point) const
{
    if (point.kind == OutputPoint)
        return tr("output of query ‘%1’")
            .arg(queryTokens(m_outputPoints.size()).value(static_cast<int>(point.index)));
    return tr("value of key ‘%1’").arg(m_valueLabels.value(static_cast<int>(point.index)));
}

QPoint ValueSpaceView::valuePosition(Index j) const
{
    return positionOf(m_valuePoints.value(static_cast<int>(j)));
}

QPoint ValueSpaceView::outputPosition(Index i) const
{
    return positionOf(m_outputPoints.value(static_cast<int>(i)));
}

} // namespace qkv::ui
