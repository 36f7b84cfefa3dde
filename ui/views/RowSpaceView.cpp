// SPDX-License-Identifier: GPL-3.0-or-later
#include "RowSpaceView.h"

#include "Document.h"

#include <qcustomplot.h>

namespace qkv::ui {
namespace {

// The colours of the joint planes: queries blue, keys red, values green.
QColor colorOf(HeadRows rows)
{
    switch (rows) {
    case HeadRows::Queries:
        return {0x1f, 0x77, 0xb4};
    case HeadRows::Keys:
        return {0xd6, 0x27, 0x28};
    case HeadRows::Values:
        break;
    }
    return {0x2c, 0xa0, 0x2c};
}

QString dimensionOf(HeadRows rows)
{
    return rows == HeadRows::Values ? QStringLiteral("d_v") : QStringLiteral("d_k");
}

} // namespace

RowSpaceView::RowSpaceView(Document* document, HeadRows rows, QWidget* parent)
    : SpaceView(document, dimensionOf(rows), parent), m_rows(rows)
{
    setObjectName(rows == HeadRows::Queries ? QStringLiteral("spaceQ")
                  : rows == HeadRows::Keys  ? QStringLiteral("spaceK")
                                            : QStringLiteral("spaceV"));
    const QColor color = colorOf(rows);
    const QString name = rows == HeadRows::Queries ? tr("queries")
                         : rows == HeadRows::Keys  ? tr("keys")
                                                   : tr("values");
    m_graph = addScatter(
        plot(), name, rows == HeadRows::Keys ? QCPScatterStyle::ssSquare : QCPScatterStyle::ssDisc, color, 9);
    m_ring = addRing(plot(), color);
    keepOutOfLegend(m_ring);
    recompute();
}

QString RowSpaceView::figureName() const
{
    return m_rows == HeadRows::Queries ? QStringLiteral("q_alone")
           : m_rows == HeadRows::Keys  ? QStringLiteral("k_alone")
                                       : QStringLiteral("v_alone");
}

const Matrix* RowSpaceView::rowsOf(const HeadResult& head) const
{
    return m_rows == HeadRows::Queries ? &head.Q : m_rows == HeadRows::Keys ? &head.K : &head.V;
}

Index RowSpaceView::planeDimension() const
{
    const HeadResult* head = currentHead();
    return head ? rowsOf(*head)->cols() : 0;
}

void RowSpaceView::recompute()
{
    const PlaneOptions options = syncControls();
    const HeadResult* head = currentHead();
    const bool heavy = head && isHeavyProjection(options, rowsOf(*head)->rows(), rowsOf(*head)->cols());
    const HeadRows rows = m_rows;
    project<RowPlane>(
        m_projection, heavy,
        [options, rows](const HeadResult& shown) { return rowPlane(shown, rows, options); },
        [this](std::optional<RowPlane> plane) {
            m_hasPlane = plane.has_value();
            if (plane)
                m_plane = std::move(*plane);
        });
}

void RowSpaceView::redraw()
{
    const HeadResult* head = currentHead();
    const QString what = m_rows == HeadRows::Queries ? tr("Queries Q")
                         : m_rows == HeadRows::Keys  ? tr("Keys K")
                                                     : tr("Values V");
    const QString title = tr("%1, head %2").arg(what).arg(currentHeadIndex() + 1);
    m_points.clear();
    m_emphasised = -1;
    if (!head || !m_hasPlane || m_plane.points.rows() != rowsOf(*head)->rows()) {
        m_labels.clear();
        showMessage(title, !head            ? tr("Nothing to show: %1").arg(document()->resultError())
                           : isProjecting() ? tr("Projecting %1 points…").arg(rowsOf(*head)->rows())
                                            : tr("These rows cannot be projected"));
        return;
    }
    beginDraw(title);
    const Index count = m_plane.points.rows();
    m_points = pointsOf(m_plane.points);
    m_labels = m_rows == HeadRows::Queries ? queryTokens(count) : keyTokens(count);
    setPoints(m_graph, m_points);
    setAxisLabels(m_plane.xLabel, m_plane.yLabel);
    const Index selected =
        m_rows == HeadRows::Queries ? document()->selectedQuery() : document()->selectedKey();
    if (selected >= 0 && selected < count)
        m_emphasised = selected;
    finishDraw({{m_points, m_labels, colorOf(m_rows).darker(140), m_ring, m_emphasised, 0, false}});
}

void RowSpaceView::picked(const Pickable& point)
{
    if (m_rows == HeadRows::Queries)
        document()->setSelection(point.index, document()->selectedKey());
    else
        document()->setSelection(document()->selectedQuery(), point.index);
}

QString RowSpaceView::describe(const Pickable& point) const
{
    const QString label = m_labels.value(static_cast<int>(point.index));
    return m_rows == HeadRows::Queries ? tr("query ‘%1’").arg(label)
           : m_rows == HeadRows::Keys  ? tr("key ‘%1’").arg(label)
                                       : tr("value ‘%1’").arg(label);
}

QPoint RowSpaceView::pointPosition(Index row) const
{
    return positionOf(m_points.value(static_cast<int>(row)));
}

} // namespace qkv::ui
