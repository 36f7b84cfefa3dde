// SPDX-License-Identifier: GPL-3.0-or-later
#include "StampedScatter.h"

#include <qcustomplot.h>

#include <cmath>

namespace qkv::ui {

namespace {

class StampedScatterGraph : public QCPGraph {
public:
    StampedScatterGraph(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPGraph(keyAxis, valueAxis) {}

protected:
    void drawScatterPlot(QCPPainter* painter, const QVector<QPointF>& scatters,
                         const QCPScatterStyle& style) const override
    {
        const bool forFigure = painter->modes().testFlag(QCPPainter::pmNoCaching) ||
                               painter->modes().testFlag(QCPPainter::pmVectorized);
        if (forFigure || style.shape() == QCPScatterStyle::ssPixmap ||
            style.shape() == QCPScatterStyle::ssCustom) {
            QCPGraph::drawScatterPlot(painter, scatters, style);
            return;
        }
        applyScattersAntialiasingHint(painter); // antialiased, QCPPainter shifts by half a pixel
        if (painter->transform().type() > QTransform::TxTranslate) {
            QCPGraph::drawScatterPlot(painter, scatters, style);
            return;
        }
        const QPixmap& symbol = stamp(painter, style);
        const double ratio = symbol.devicePixelRatio();
        const QPointF shift(painter->transform().dx(), painter->transform().dy());
        const double half = symbol.width() / 2.0; // device pixels
        // The stamp's centre where the shape's would be, to the nearest device pixel.
        for (const QPointF& at : scatters)
            painter->drawPixmap(QPointF(std::round((at.x() + shift.x()) * ratio - half) / ratio - shift.x(),
                                        std::round((at.y() + shift.y()) * ratio - half) / ratio - shift.y()),
                                symbol);
    }

private:
    /// The symbol, centred in a square of whole device pixels; made again when what it is drawn with
    /// changes.
    const QPixmap& stamp(QCPPainter* painter, const QCPScatterStyle& style) const
    {
        const double ratio = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
        const QPen outline = style.isPenDefined() ? style.pen() : pen();
        const bool antialiased = painter->antialiasing();
        if (m_stamp.isNull() || m_shape != style.shape() || m_size != style.size() || m_pen != outline ||
            m_brush != style.brush() || m_ratio != ratio || m_antialiased != antialiased) {
            m_shape = style.shape();
            m_size = style.size();
            m_pen = outline;
            m_brush = style.brush();
            m_ratio = ratio;
            m_antialiased = antialiased;
            // Room for the shape, its outline and the antialiased edge, in whole device pixels.
            const int side = static_cast<int>(std::ceil((style.size() + outline.widthF() + 2.0) * ratio));
            m_stamp = QPixmap(side, side);
            m_stamp.setDevicePixelRatio(ratio);
            m_stamp.fill(Qt::transparent);
            QCPPainter stampPainter(&m_stamp);
            stampPainter.setAntialiasing(antialiased);
            style.applyTo(&stampPainter, pen());
            // At the stamp's centre, undoing the half-pixel shift QCPPainter makes when antialiased.
            const double centre = side / ratio / 2.0;
            style.drawShape(&stampPainter, QPointF(centre - stampPainter.transform().dx(),
                                                   centre - stampPainter.transform().dy()));
        }
        return m_stamp;
    }

    mutable QPixmap m_stamp;
    mutable QCPScatterStyle::ScatterShape m_shape = QCPScatterStyle::ssNone;
    mutable double m_size = 0;
    mutable QPen m_pen;
    mutable QBrush m_brush;
    mutable double m_ratio = 0;
    mutable bool m_antialiased = false;
};

} // namespace

QCPGraph* addStampedScatterGraph(QCustomPlot* plot)
{
    auto* graph = new StampedScatterGraph(plot->xAxis, plot->yAxis); // registers itself with the plot
    graph->setName(QStringLiteral("Graph %1").arg(plot->graphCount() - 1));
    return graph;
}

} // namespace qkv::ui
