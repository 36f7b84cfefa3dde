// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Exact patching against its linear estimate: one point per cell of a patching grid, the exact value across,
// attribution patching's up, and the diagonal where the two agree. A view: it draws the points it is given.

#include "Figure.h"

#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;
class QCPTextElement;
class QMouseEvent;

namespace qkv::ui {

class PatchScatterView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit PatchScatterView(QWidget* parent = nullptr);
    ~PatchScatterView() override;

    /// One point per cell (exact[k], attribution[k]), named labels[k] in the hover text; pairs with a value
    /// that is not finite are left out. Empty vectors show empty axes with `title`.
    void setPoints(const QVector<double>& exact, const QVector<double>& attribution,
                   const QStringList& labels, const QString& title);
    int pointCount() const;
    /// The point nearest `position` (in this widget's coordinates) within a few pixels, or −1.
    int pointAt(const QPoint& position) const;
    /// Where point k is drawn, in this widget's coordinates (as of the last replot).
    QPoint pointPosition(int k) const;
    /// The hover text of point k.
    QString pointDescription(int k) const;

    QString figureName() const override { return QStringLiteral("patch_scatter"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {600, 600}; }

private:
    void onMouseMove(QMouseEvent* event);

    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPGraph* m_points;
    QCPItemStraightLine* m_diagonal;
    QVector<double> m_exact, m_attribution;
    QStringList m_labels;
};

} // namespace qkv::ui
