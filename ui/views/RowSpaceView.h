// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One of a head's Q, K, V in a plane of its own.

#include "SpaceView.h"

#include <optional>

namespace qkv::ui {

/// The queries, keys or values of the current head alone in a plane (rowPlane: the raw coordinates when the
/// width is 2, else a PCA of those rows, or two picked dimensions), each labelled by its token; the selected
/// query (for Q) or key (for K and V) is ringed. Clicking a point selects it.
class RowSpaceView : public SpaceView {
    Q_OBJECT
public:
    RowSpaceView(Document* document, HeadRows rows, QWidget* parent = nullptr);

    QString figureName() const override;
    HeadRows rows() const { return m_rows; }

    // What is shown, for tests and export.
    QList<QPointF> points() const { return m_points; }
    QStringList labels() const { return m_labels; }
    /// The point drawn emphasised (−1: none).
    Index emphasised() const { return m_emphasised; }
    /// A point's centre in this widget's coordinates (as of the last replot).
    QPoint pointPosition(Index row) const;

protected:
    Index planeDimension() const override;
    void recompute() override;
    void redraw() override;
    void finishProjection() const override { m_projection.wait(); }
    void picked(const Pickable& point) override;
    QString describe(const Pickable& point) const override;

private:
    const Matrix* rowsOf(const HeadResult& head) const;

    HeadRows m_rows;
    QCPGraph* m_graph;
    QCPGraph* m_ring;
    RowPlane m_plane;
    bool m_hasPlane = false;
    mutable LatestJob<std::optional<RowPlane>> m_projection{this};
    QList<QPointF> m_points;
    QStringList m_labels;
    Index m_emphasised = -1;
};

} // namespace qkv::ui
