// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Queries and keys in one plane.

#include "SpaceView.h"

#include <optional>

namespace qkv::ui {

/// Queries and keys of the current head in one plane (AttentionViz's joint view): the raw coordinates when
/// d_k = 2, else a PCA of Q ∪ K, or two picked dimensions. Queries are blue discs, keys red squares, each
/// labelled by its token. From the selected query a line goes to every key it gives weight to, wider and
/// more opaque the larger the weight. Clicking a query selects it, clicking a key selects that key.
class QueryKeySpaceView : public SpaceView {
    Q_OBJECT
public:
    explicit QueryKeySpaceView(Document* document, QWidget* parent = nullptr);

    QString figureName() const override { return QStringLiteral("qk_space"); }

    // What is shown, for tests and export.
    QList<QPointF> queryPoints() const { return m_queryPoints; }
    QList<QPointF> keyPoints() const { return m_keyPoints; }
    QStringList queryLabels() const { return m_queryLabels; }
    QStringList keyLabels() const { return m_keyLabels; }
    /// The pen width of the line from the selected query to each key, in key order; 0 where no line is
    /// drawn (a weight of exactly 0: masked, or cut by sparsemax). Empty when nothing is shown.
    QList<double> lineWidths() const { return m_lineWidths; }
    /// The query and key drawn emphasised (−1: none).
    Index emphasisedQuery() const { return m_emphasisedQuery; }
    Index emphasisedKey() const { return m_emphasisedKey; }
    /// A point's centre in this widget's coordinates (as of the last replot).
    QPoint queryPosition(Index i) const;
    QPoint keyPosition(Index j) const;
    /// In the RoPE pair plane: the selected query and then the selected key before RoPE turned them (each
    /// joined to its turned point by a dashed arc about the origin); empty in the other planes.
    QList<QPointF> unrotatedPoints() const { return m_unrotatedPoints; }
    /// Whether the RoPE pair plane is offered: the session turns Q and K with RoPE (d_k ≥ 2).
    bool showsRope() const;

protected:
    Index planeDimension() const override;
    void recompute() override;
    void redraw() override;
    void finishProjection() const override { m_projection.wait(); }
    void picked(const Pickable& point) override;
    QString describe(const Pickable& point) const override;

private:
    class WeightLines;
    /// The RoPE pair plane's arcs and points before the turn, for the selected query and key (−1: none).
    void drawRopeTurns(Index query, Index key);

    QCPGraph* m_queries;
    QCPGraph* m_keys;
    QCPGraph* m_queryRing;
    QCPGraph* m_keyRing;
    WeightLines* m_weightLines;
    QueryKeyPlane m_plane;
    bool m_hasPlane = false;
    mutable LatestJob<std::optional<QueryKeyPlane>> m_projection{this};
    QList<QPointF> m_queryPoints;
    QList<QPointF> m_keyPoints;
    QStringList m_queryLabels;
    QStringList m_keyLabels;
    QList<double> m_lineWidths;
    Index m_emphasisedQuery = -1;
    Index m_emphasisedKey = -1;
    QCPGraph* m_unrotated;
    QList<QPointF> m_unrotatedPoints;
};

} // namespace qkv::ui
