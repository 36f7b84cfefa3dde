// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one place a QCustomPlot becomes a figure: every plot-based view's renderFigure() ends here.

#include <QColor>
#include <QFont>
#include <QSize>
#include <QString>

#include <optional>

class QCPTextElement;
class QCustomPlot;
class QPaintDevice;
class QPainter;
class QPalette;
class QWidget;

namespace qkv::ui {

/// Lays `plot` out at `size` and draws it into the rectangle (0, 0) – `size` of `device`, in the device's
/// device-independent pixels. Vector devices (QSvgGenerator, QPdfWriter, printers) get vector output with
/// text as text; raster devices get the full antialiasing. Text is never drawn from cached pixmaps.
///
/// QCustomPlot relayouts the plot at `size` while drawing and puts its viewport back afterwards, but leaves
/// the layout of `size` until its next replot: a view that decides things from its layout (tick labels, cell
/// texts) prepares for `size` before calling this and lays itself out for the screen again after.
void renderPlot(QCustomPlot* plot, QPaintDevice* device, const QSize& size);

/// Starts painting a figure that is not a plot: antialiased, on white paper filling `size`. False when the
/// device cannot be painted on.
bool beginFigure(QPainter& painter, QPaintDevice* device, const QSize& size);

/// The set-up every plot view shares: a minimum size, hover tracking, no dragging or zooming, replots that
/// repaint with the rest of the window (not at once), and a bold
/// title row above the axes. Returns the title element.
QCPTextElement* setUpPlot(QCustomPlot* plot, const QSize& minimumSize);

/// `font` at `points` points.
QFont pointSized(QFont font, double points);
/// Axis and tick labels at `points` points, close to their axes: the low plots' labels.
void useSmallAxisLabels(QCustomPlot* plot, double points);
/// The legend in a row of its own under the axes, where it hides no point: centred between two empty cells
/// (alone in the row it would spread its entries over the plot's width), its entries side by side, small and
/// without a border.
void putLegendBelowAxes(QCustomPlot* plot);

/// The colours and text size of the plots' frame: background, axes, tick labels, titles and legends (the
/// data's own colours are the views' business).
struct PlotStyle {
    QColor background{Qt::white};
    QColor foreground{Qt::black}; ///< axes, tick and axis labels, titles, legend text
    QColor grid{200, 200, 200};
    double fontScale = 1.0; ///< relative to the fonts the views chose (presentation mode: 1.5)

    /// Base and Text of `palette`, the grid between them.
    static PlotStyle fromPalette(const QPalette& palette, double fontScale = 1.0);

    friend bool operator==(const PlotStyle& a, const PlotStyle& b)
    {
        return a.background == b.background && a.foreground == b.foreground && a.grid == b.grid &&
               a.fontScale == b.fontScale;
    }
    friend bool operator!=(const PlotStyle& a, const PlotStyle& b) { return !(a == b); }
};

/// A view painted by hand rather than by QCustomPlot that takes the plots' style all the same (the pipeline
/// canvas).
class StyledCanvas {
public:
    virtual ~StyledCanvas() = default;
    /// The screen's colours and text size (exported figures keep their own).
    virtual void setPlotStyle(const PlotStyle& style) = 0;
};

/// Gives `plot` `style`, now and on every later replot (so axes and titles a view adds later follow it).
/// Nothing happens when `plot` has that style already: no restyle and no replot.
void applyPlotStyle(QCustomPlot* plot, const PlotStyle& style);
/// applyPlotStyle() on every plot inside `root`, and the style to every StyledCanvas there; `style` becomes
/// the windowPlotStyle() that plots made later take.
void applyPlotStyle(const QWidget* root, const PlotStyle& style);
/// The style the main window last gave its plots (none before, and in command-line export): for views that
/// build plots later (one per head), so that the window need not look for new plots on every edit.
std::optional<PlotStyle> windowPlotStyle();
/// The style `plot` was last given (the default style when none).
PlotStyle plotStyle(const QCustomPlot* plot);

/// The plotting library's name and version ("QCustomPlot 2.1.0"), for the About box.
QString plotLibraryVersion();

} // namespace qkv::ui
