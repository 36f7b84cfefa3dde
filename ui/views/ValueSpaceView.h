// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Values and outputs in one plane.

#include "SpaceView.h"

#include <optional>

namespace qkv::ui {

/// Values and outputs of the current head in one plane fitted on V: the V points labelled by their key
/// tokens, their convex hull, and each output row as a point "o(token)" (a softmax output lies inside the
/// hull, a sparsemax output on the face its support spans). Clicking a value selects its key, clicking an
/// output selects its query.
class ValueSpaceView : public SpaceView {
    Q_OBJECT
public:
    explicit ValueSpaceView(Document* document, QWidget* parent = nullptr);

    QString figureName() const override { return QStringLiteral("v_space"); }

    // What is shown, for tests and export.
    QList<QPointF> valuePoints() const { return m_valuePoints; }
    QList<QPointF> outputPoints() const { return m_outputPoints; }
    /// The hull's vertices in drawing order (counter-clockwise, not repeating the first).
    QList<QPointF> hullPoints() const { return m_hullPoints; }
    QStringList valueLabels() const { return m_valueLabels; }
    QStringList outputLabels() const { return m_outputLabels; }
    /// The output and value drawn emphasised (−1: none).
    Index emphasisedOutput() const { return m_emphasisedOutput; }
    Index emphasisedValue() const { return m_emphasisedValue; }
    QPoint valuePosition(Index j) const;
    QPoint outputPosition(Index i) const;

protected:
    Index planeDimension() const override;
    void recompute() override;
    void redraw() override;
    void finishProjection() const override { m_projection.wait(); }
    void picked(const Pickable& point) override;
    QString describe(const Pickable& point) const override;

private:
    QCPGraph* m_values;
    QCPGraph* m_outputs;
    QCPGraph* m_valueRing;
    QCPGraph* m_outputRing;
    QCPCurve* m_hull;
    ValuePlane m_plane;
    bool m_hasPlane = false;
    mutable LatestJob<std::optional<ValuePlane>> m_projection{this};
    QList<QPointF> m_valuePoints;
    QList<QPointF> m_outputPoints;
    QList<QPointF> m_hullPoints;
    QStringList m_valueLabels;
    QStringList m_outputLabels;
    Index m_emphasisedOutput = -1;
    Index m_emphasisedValue = -1;
};

} // namespace qkv::ui
