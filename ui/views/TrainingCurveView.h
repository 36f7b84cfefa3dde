// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Curves over a training run's steps: the loss (train and validation, on a log axis) or a score per head
// (0 to 1). A view: it draws the points it is given, one palette colour per series, and the x axis reaching
// the run's last step; what the points mean is its owner's business.

#include "Figure.h"

#include <QColor>
#include <QPointF>
#include <QString>
#include <QVector>
#include <QWidget>

class QCustomPlot;
class QCPTextElement;

namespace qkv::ui {

/// What the axes of a TrainingCurveView say and how the y axis is scaled.
struct CurveAxes {
    QString title;
    QString xLabel;
    QString yLabel;
    bool logarithmic = false; ///< a log y axis whose range follows the data; else the fixed range below
    double lower = 0.0;
    double upper = 1.0;
};

class TrainingCurveView : public QWidget, public Figure {
    Q_OBJECT
public:
    /// `name` is the figure's and the plot widget's object name ("lossPlot").
    TrainingCurveView(const QString& name, const CurveAxes& axes, QWidget* parent = nullptr);
    ~TrainingCurveView() override;

    /// No series; the x axis from 0 to 1.
    void clear();
    /// Series `index` is called `name` (in the legend) and drawn `width` pixels wide in the palette's colour
    /// `index`; it and the series before it are created when missing.
    void setSeries(int index, const QString& name, double width = 1.5);
    /// Appends a point to series `index` (created when missing). A value that is not finite, or not positive
    /// on a log axis, is not drawn.
    void addPoint(int index, double x, double y);
    /// The x axis from 0 to `last` (at least 1).
    void setLastStep(double last);

    int seriesCount() const;
    /// Points drawn in series `index` (0 when there is no such series).
    int pointCount(int index) const;
    QString seriesName(int index) const;
    QColor seriesColorAt(int index) const;
    /// Whether the legend is shown: only when it leaves the lines most of the plot.
    bool isLegendShown() const;
    /// Where the data is drawn, in the view's coordinates, as last laid out.
    QRect dataArea() const;
    /// The y axis's tick labels' centres in pixels, as last laid out (for checks that they do not overlap).
    QVector<double> yTickPixels() const;
    /// The height of one tick label.
    int tickLabelHeight() const;

    QString figureName() const override { return objectName(); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {640, 400}; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitLogAxis();
    void showLegendIfRoom();
    void redraw();

    CurveAxes m_axes;
    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    double m_last = 1.0;
    double m_low = 0.0, m_high = 0.0; // the log axis's data range (m_high 0: no data yet)
};

/// The ticks of a log axis from `lower` to `upper` (both > 0), at most `maximum` of them: powers of ten when
/// the range spans decades, else 1-2-5 steps or every digit, so a short range still has labels.
QVector<double> logAxisTicks(double lower, double upper, int maximum);

} // namespace qkv::ui
