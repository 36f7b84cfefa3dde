// SPDX-License-Identifier: GPL-3.0-or-later
#include "QueryKeySpaceView.h"

#include "Document.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QStandardItemModel>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {
namespace {

const QColor queryColor(0x1f, 0x77, 0xb4);
const QColor keyColor(0xd6, 0x27, 0x28);
enum QueryKeyKind { QueryPoint, KeyPoint };

} // namespace

/// The lines from the selected query to the keys, painted in one pass on the lines layer: an item each
/// (QCPItemLine, a QObject with anchors) would be made and destroyed by the thousand on every edit.
class QueryKeySpaceView::WeightLines : public QCPLayerable {
public:
    struct Line {
        QPointF from, to; // plot coordinates
        QPen pen;
    };

    WeightLines(QCustomPlot* plot, const QString& layer) : QCPLayerable(plot, layer) {}
    void setLines(QList<Line> lines) { m_lines = std::move(lines); }
    const QList<Line>& lines() const { return m_lines; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override
    {
        applyAntialiasingHint(painter, true, QCP::aeItems);
    }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }
    void draw(QCPPainter* painter) override
    {
        const QCPAxis* x = mParentPlot->xAxis;
        const QCPAxis* y = mParentPlot->yAxis;
        const auto pixel = [x, y](QPointF point) {
            return QPointF(x->coordToPixel(point.x()), y->coordToPixel(point.y()));
        };
        for (const Line& line : std::as_const(m_lines)) {
            painter->setPen(line.pen);
            painter->drawLine(pixel(line.from), pixel(line.to));
        }
    }

private:
    QList<Line> m_lines;
};

QueryKeySpaceView::QueryKeySpaceView(Document* document, QWidget* parent)
    : SpaceView(document, QStringLiteral("d_k"), parent)
{
    setObjectName(QStringLiteral("qkSpaceView"));
    m_queries = addScatter(plot(), tr("queries"), QCPScatterStyle::ssDisc, queryColor, 9);
    m_keys = addScatter(plot(), tr("keys"), QCPScatterStyle::ssSquare, keyColor, 8);
    m_queryRing = addRing(plot(), queryColor);
    m_keyRing = addRing(plot(), keyColor);
    keepOutOfLegend(m_queryRing);
    keepOutOfLegend(m_keyRing);
    m_weightLines = new WeightLines(plot(), linesLayer()); // the plot owns it
    m_unrotated =
        addScatter(plot(), tr("before RoPE"), QCPScatterStyle::ssCircle, QColor(0x70, 0x70, 0x70), 9);
    m_unrotated->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(0x70, 0x70, 0x70), 1.5), Qt::NoBrush, 9));
    m_unrotated->removeFromLegend();
    QComboBox* modes = planeModeBox();
    modes->addItem(tr("RoPE pair"), static_cast<int>(PlaneMode::RopePair));
    modes->setToolTip(modes->toolTip() +
                      tr(" RoPE pair (sessions with RoPE positions): the two coordinates that RoPE turns "
                         "together, the rotated queries and keys, and the selected query and key before "
                         "their turn of position × θ."));
    recompute();
}

bool QueryKeySpaceView::showsRope() const
{
    return document()->session().positions.type == PositionType::Rope && planeDimension() >= 2;
}

Index QueryKeySpaceView::planeDimension() const
{
    const HeadResult* head = currentHead();
    return head ? head->Q.cols() : 0;
}

void QueryKeySpaceView::recompute()
{
    // RoPE pairs only where RoPE turns the queries and keys; a session without it falls back to Automatic.
    auto* modes = qobject_cast<QStandardItemModel*>(planeModeBox()->model());
    QStandardItem* ropeItem = modes->item(planeModeBox()->findData(static_cast<int>(PlaneMode::RopePair)));
    if (ropeItem->isEnabled() != showsRope())
        ropeItem->setEnabled(showsRope());
    if (planeOptions().mode == PlaneMode::RopePair && !showsRope()) {
        PlaneOptions automatic = planeOptions();
        automatic.mode = PlaneMode::Automatic;
        setPlaneOptions(automatic); // recomputes
        return;
    }
    PlaneOptions options = syncControls();
    options.pairing = document()->session().positions.pairing;
    options.ropeBase = document()->session().positions.base;
    options.ropeScaling = document()->session().positions.scaling;
    const HeadResult* head = currentHead();
    const bool heavy = head && isHeavyProjection(options, head->Q.rows() + head->K.rows(), head->Q.cols());
    project<QueryKeyPlane>(
        m_projection, heavy, [options](const HeadResult& shown) { return queryKeyPlane(shown, options); },
        [this](std::optional<QueryKeyPlane> plane) {
            m_hasPlane = plane.has_value();
            if (plane)
                m_plane = std::move(*plane);
        });
}

void QueryKeySpaceView::redraw()
{
    const HeadResult* head = currentHead();
    const QString title = tr("Queries and keys, head %1").arg(currentHeadIndex() + 1);
    m_queryPoints.clear();
    m_keyPoints.clear();
    m_lineWidths.clear();
    m_weightLines->setLines({});
    m_emphasisedQuery = m_emphasisedKey = -1;
    m_unrotatedPoints.clear();
    m_unrotated->data()->clear();
    m_unrotated->removeFromLegend();
    if (!head || !m_hasPlane || m_plane.queries.rows() != head->Q.rows() ||
        m_plane.keys.rows() != head->K.rows()) {
        m_queryLabels.clear();
        m_keyLabels.clear();
        showMessage(title, !head            ? tr("Nothing to show: %1").arg(document()->resultError())
                           : isProjecting() ? tr("Projecting %1 points…").arg(head->Q.rows() + head->K.rows())
                                            : tr("These queries and keys cannot be projected"));
        return;
    }
    beginDraw(title);
    const Index n = head->Q.rows(), m = head->K.rows();
    m_queryPoints = pointsOf(m_plane.queries);
    m_keyPoints = pointsOf(m_plane.keys);
    m_queryLabels = queryTokens(n);
    m_keyLabels = keyTokens(m);
    setPoints(m_queries, m_queryPoints);
    setPoints(m_keys, m_keyPoints);
    setAxisLabels(m_plane.xLabel, m_plane.yLabel);

    const Index query = document()->selectedQuery(), key = document()->selectedKey();
    const bool hasQuery = query >= 0 && query < n && head->weights.rows() == n && head->weights.cols() == m;
    if (hasQuery) {
        m_emphasisedQuery = query;
        const QPointF from = m_queryPoints.at(static_cast<int>(query));
        QList<WeightLines::Line> lines;
        for (Index j = 0; j < m; ++j) {
            const double weight = head->weights(query, j);
            // An exact zero (masked, or cut by sparsemax) draws nothing.
            if (!(weight > 0.0)) {
                m_lineWidths.append(0.0);
                continue;
            }
            const double a = std::min(weight, 1.0);
            const double width = 0.5 + 6.0 * a;
            QColor color = queryColor;
            color.setAlphaF(static_cast<float>(0.15 + 0.75 * a));
            QPen pen(color, width);
            pen.setCapStyle(Qt::RoundCap);
            lines.append({from, m_keyPoints.at(static_cast<int>(j)), pen});
            m_lineWidths.append(width);
        }
        m_weightLines->setLines(std::move(lines));
    }
    if (key >= 0 && key < m)
        m_emphasisedKey = key;
    drawRopeTurns(query >= 0 && query < n ? query : -1, key >= 0 && key < m ? key : -1);
    finishDraw(
        {{m_queryPoints, m_queryLabels, queryColor.darker(140), m_queryRing, m_emphasisedQuery, QueryPoint,
          false},
         {m_keyPoints, m_keyLabels, keyColor.darker(140), m_keyRing, m_emphasisedKey, KeyPoint, false}});
}

void QueryKeySpaceView::drawRopeTurns(Index query, Index key)
{
    m_unrotated->data()->clear();
    if (m_plane.unrotatedQueries.rows() != m_plane.queries.rows() ||
        m_plane.unrotatedKeys.rows() != m_plane.keys.rows())
        return; // not a RoPE pair plane
    m_unrotated->addToLegend();
    QList<QPointF> before;
    QList<WeightLines::Line> arcs = m_weightLines->lines();
    // An arc about the origin from where the point was to where RoPE turned it: position × θ, shown modulo
    // one turn (the rotation is the same).
    const auto turn = [&](const Matrix& unrotated, Index row, const QColor& color) {
        const QPointF from(unrotated(row, 0), unrotated(row, 1));
        before.append(from);
        const double radius = std::hypot(from.x(), from.y());
        const double start = std::atan2(from.y(), from.x());
        const double sweep = std::fmod(static_cast<double>(row) * m_plane.pairAngle, 2.0 * M_PI);
        const int steps = std::max(2, static_cast<int>(std::ceil(48.0 * sweep / (2.0 * M_PI))));
        QPen pen(color, 1.5, Qt::DashLine);
        for (int s = 0; s < steps && radius > 0.0; ++s) {
            const double a0 = start + sweep * s / steps, a1 = start + sweep * (s + 1) / steps;
            arcs.append({QPointF(radius * std::cos(a0), radius * std::sin(a0)),
                         QPointF(radius * std::cos(a1), radius * std::sin(a1)), pen});
        }
    };
    if (query >= 0)
        turn(m_plane.unrotatedQueries, query, queryColor);
    if (key >= 0)
        turn(m_plane.unrotatedKeys, key, keyColor);
    m_weightLines->setLines(std::move(arcs));
    setPoints(m_unrotated, before);
    keepInView(before);
    m_unrotatedPoints = before;
}

void QueryKeySpaceView::picked(const Pickable& point)
{
    if (point.kind == QueryPoint)
        document()->setSelection(point.index, document()->selectedKey());
    else
        document()->setSelection(document()->selectedQuery(), point.index);
}

QString QueryKeySpaceView::describe(const Pickable& point) const
{
    if (point.kind == QueryPoint)
        return tr("query ‘%1’").arg(m_queryLabels.value(static_cast<int>(point.index)));
    QString text = tr("key ‘%1’").arg(m_keyLabels.value(static_cast<int>(point.index)));
    const HeadResult* head = currentHead();
    const Index query = m_emphasisedQuery;
    if (head && query >= 0 && query < head->weights.rows() && point.index < head->weights.cols())
        text += tr(": weight %1 from ‘%2’")
                    .arg(formatWeight(head->weights(query, point.index)),
                         m_queryLabels.value(static_cast<int>(query)));
    return text;
}

QPoint QueryKeySpaceView::queryPosition(Index i) const
{
    return positionOf(m_queryPoints.value(static_cast<int>(i)));
}

QPoint QueryKeySpaceView::keyPosition(Index j) const
{
    return positionOf(m_keyPoints.value(static_cast<int>(j)));
}

} // namespace qkv::ui
