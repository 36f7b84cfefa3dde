// SPDX-License-Identifier: GPL-3.0-or-later
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <algorithm>

#include <QFontMetricsF>
#include <QPaintEngine>
#include <QPalette>
#include <QWidget>

namespace qkv::ui {

namespace {

bool isVectorEngine(const QPaintEngine* engine)
{
    if (!engine)
        return false;
    switch (engine->type()) {
    case QPaintEngine::SVG:
    case QPaintEngine::Pdf:
    case QPaintEngine::Picture:
    case QPaintEngine::MacPrinter:
    case QPaintEngine::Windows: // only printers still paint through GDI
        return true;
    default:
        return false;
    }
}

const char* const styleProperty = "qkvPlotStyle";
const char* const baseFontProperty = "qkvBaseFont";
const char* const styledFontProperty = "qkvStyledFont";

// Scales one font of `owner` by `scale` relative to the font its view chose: a font that is still the one
// given last time keeps its recorded base, any other font (set by the view since) becomes the new base.
template <typename Get, typename Set>
void scaleFont(QObject* owner, const char* which, double scale, Get get, Set set)
{
    const QByteArray base = QByteArray(baseFontProperty) + which;
    const QByteArray styled = QByteArray(styledFontProperty) + which;
    QFont font = get();
    if (owner->property(styled.constData()).value<QFont>() != font || !owner->property(base).isValid())
        owner->setProperty(base.constData(), font);
    font = owner->property(base.constData()).value<QFont>();
    if (font.pointSizeF() > 0)
        font.setPointSizeF(font.pointSizeF() * scale);
    else if (font.pixelSize() > 0)
        font.setPixelSize(qRound(font.pixelSize() * scale));
    owner->setProperty(styled.constData(), font);
    set(font);
}

void styleAxis(QCPAxis* axis, const PlotStyle& style)
{
    const QPen pen(style.foreground, 0);
    axis->setBasePen(pen);
    axis->setTickPen(pen);
    axis->setSubTickPen(pen);
    axis->setTickLabelColor(style.foreground);
    axis->setLabelColor(style.foreground);
    QPen gridPen = axis->grid()->pen();
    gridPen.setColor(style.grid);
    axis->grid()->setPen(gridPen);
    scaleFont(
        axis, "tick", style.fontScale, [axis] { return axis->tickLabelFont(); },
        [axis](const QFont& f) { axis->setTickLabelFont(f); });
    scaleFont(
        axis, "label", style.fontScale, [axis] { return axis->labelFont(); },
        [axis](const QFont& f) { axis->setLabelFont(f); });
}

void styleElements(const QList<QCPLayoutElement*>& elements, const PlotStyle& style)
{
    for (QCPLayoutElement* element : elements) {
        if (auto* rect = qobject_cast<QCPAxisRect*>(element)) {
            for (QCPAxis* axis : rect->axes())
                styleAxis(axis, style);
            styleElements(rect->insetLayout()->elements(false), style);
        } else if (auto* scale = qobject_cast<QCPColorScale*>(element)) {
            styleAxis(scale->axis(), style);
        } else if (auto* text = qobject_cast<QCPTextElement*>(element)) {
            text->setTextColor(style.foreground);
            scaleFont(
                text, "", style.fontScale, [text] { return text->font(); },
                [text](const QFont& f) { text->setFont(f); });
        } else if (auto* legend = qobject_cast<QCPLegend*>(element)) {
            // A legend its view left unframed (a row or column of its own beside the points) stays so:
            // framed, its right and bottom edges fell a pixel outside it and were cut at the plot's edge.
            if (legend->brush().style() != Qt::NoBrush)
                legend->setBrush(style.background);
            if (legend->borderPen().style() != Qt::NoPen)
                legend->setBorderPen(QPen(style.foreground, 0));
            legend->setTextColor(style.foreground);
            scaleFont(
                legend, "", style.fontScale, [legend] { return legend->font(); },
                [legend](const QFont& f) { legend->setFont(f); });
            for (int i = 0; i < legend->itemCount(); ++i)
                if (QCPAbstractLegendItem* item = legend->item(i)) {
                    item->setTextColor(style.foreground);
                    scaleFont(
                        item, "", style.fontScale, [item] { return item->font(); },
                        [item](const QFont& f) { item->setFont(f); });
                }
        }
    }
}

void restyle(QCustomPlot* plot)
{
    const PlotStyle style = plotStyle(plot);
    plot->setBackground(style.background);
    styleElements(plot->plotLayout()->elements(true), style);
}

} // namespace

PlotStyle PlotStyle::fromPalette(const QPalette& palette, double fontScale)
{
    PlotStyle style;
    style.background = palette.color(QPalette::Active, QPalette::Base);
    style.foreground = palette.color(QPalette::Active, QPalette::Text);
    const QColor& b = style.background;
    const QColor& f = style.foreground;
    style.grid =
        QColor((3 * b.red() + f.red()) / 4, (3 * b.green() + f.green()) / 4, (3 * b.blue() + f.blue()) / 4);
    style.fontScale = fontScale;
    return style;
}

PlotStyle plotStyle(const QCustomPlot* plot)
{
    const QVariant stored = plot->property(styleProperty);
    if (!stored.isValid())
        return {};
    const QVariantList values = stored.toList();
    PlotStyle style;
    style.background = values.value(0).value<QColor>();
    style.foreground = values.value(1).value<QColor>();
    style.grid = values.value(2).value<QColor>();
    style.fontScale = values.value(3).toDouble();
    return style;
}

void applyPlotStyle(QCustomPlot* plot, const PlotStyle& style)
{
    const bool first = !plot->property(styleProperty).isValid();
    if (!first && plotStyle(plot) == style)
        return;
    plot->setProperty(styleProperty,
                      QVariantList{style.background, style.foreground, style.grid, style.fontScale});
    if (first)
        QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { restyle(plot); });
    restyle(plot);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

namespace {
std::optional<PlotStyle>& currentWindowPlotStyle()
{
    static std::optional<PlotStyle> style; // the GUI thread's only
    return style;
}
} // namespace

std::optional<PlotStyle> windowPlotStyle()
{
    return currentWindowPlotStyle();
}

void applyPlotStyle(const QWidget* root, const PlotStyle& style)
{
    currentWindowPlotStyle() = style;
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>())
        applyPlotStyle(plot, style);
    for (QWidget* widget : root->findChildren<QWidget*>()) // views painted by hand, not plots
        if (auto* canvas = dynamic_cast<StyledCanvas*>(widget))
            canvas->setPlotStyle(style);
}

void renderPlot(QCustomPlot* plot, QPaintDevice* device, const QSize& size)
{
    if (!plot || !device || size.isEmpty())
        return;
    QCPPainter painter;
    if (!painter.begin(device))
        return;
    // Vectorized: no half-pixel antialiasing shifts, colour maps embedded at a higher resolution.
    painter.setMode(QCPPainter::pmVectorized, isVectorEngine(painter.paintEngine()));
    // No caching: tick labels are drawn as text, not as pixmaps made for the screen.
    painter.setMode(QCPPainter::pmNoCaching);
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
}

bool beginFigure(QPainter& painter, QPaintDevice* device, const QSize& size)
{
    if (!device || size.isEmpty() || !painter.begin(device))
        return false;
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
    return true;
}

namespace {

/// Fewer ticks on an axis too short for QCustomPlot's five: a vertical axis keeps two label heights between
/// ticks, a horizontal one six (labels such as "-0.25" are wider than tall). Text tickers (the heatmaps')
/// place their own labels. Checked after each layout, and a change laid out at once: a queued replot for it
/// made every replot of the Q/K plane whose legend came or went (a message, then points) replot twice.
void keepTickLabelsApart(QCustomPlot* plot)
{
    QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] {
        bool changed = false;
        for (QCPAxisRect* rect : plot->axisRects()) {
            for (QCPAxis* axis : rect->axes()) {
                const QSharedPointer<QCPAxisTicker> ticker = axis->ticker();
                if (!ticker || ticker.dynamicCast<QCPAxisTickerText>())
                    continue;
                const bool vertical = axis->orientation() == Qt::Vertical;
                const double room = vertical ? rect->height() : rect->width();
                const double labelHeight = QFontMetricsF(axis->tickLabelFont()).height();
                const double spacing = labelHeight * (vertical ? 2.0 : 6.0);
                const int count = std::clamp(static_cast<int>(room / std::max(spacing, 1.0)), 2, 5);
                if (ticker->tickCount() != count) {
                    ticker->setTickCount(count);
                    changed = true;
                }
            }
        }
        if (changed) { // laid out again now, so this replot draws the new ticks (QCustomPlot::updateLayout)
            QCPLayout* layout = plot->plotLayout();
            layout->update(QCPLayoutElement::upPreparation);
            layout->update(QCPLayoutElement::upMargins);
            layout->update(QCPLayoutElement::upLayout);
        }
    });
}

} // namespace

QCPTextElement* setUpPlot(QCustomPlot* plot, const QSize& minimumSize)
{
    keepTickLabelsApart(plot);
    plot->setMinimumSize(minimumSize);
    plot->setMouseTracking(true);
    plot->setInteractions(QCP::Interactions());
    // QCustomPlot's default repaints the widget inside replot(), which paints every dirty widget of the
    // window then and there; several plots replotting after one edit painted the window several times.
    plot->setPlottingHint(QCP::phImmediateRefresh, false);
    QFont titleFont = plot->font();
    titleFont.setBold(true);
    plot->plotLayout()->insertRow(0);
    auto* title = new QCPTextElement(plot, QString(), titleFont);
    plot->plotLayout()->addElement(0, 0, title);
    plot->plotLayout()->setRowSpacing(0);
    return title;
}

QFont pointSized(QFont font, double points)
{
    font.setPointSizeF(points);
    return font;
}

void useSmallAxisLabels(QCustomPlot* plot, double points)
{
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setLabelFont(pointSized(plot->font(), points));
        axis->setTickLabelFont(pointSized(plot->font(), points));
        axis->setLabelPadding(2);
    }
}

void putLegendBelowAxes(QCustomPlot* plot)
{
    auto* legendRow = new QCPLayoutGrid;
    plot->plotLayout()->addElement(2, 0, legendRow);
    plot->plotLayout()->setRowStretchFactor(2, 0.001);
    plot->axisRect()->insetLayout()->take(plot->legend);
    legendRow->addElement(0, 0, new QCPLayoutElement(plot));
    legendRow->addElement(0, 1, plot->legend);
    legendRow->addElement(0, 2, new QCPLayoutElement(plot));
    legendRow->setColumnStretchFactors({1.0, 0.001, 1.0});
    plot->legend->setFont(pointSized(plot->font(), 7.0));
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setMargins(QMargins(2, 0, 2, 0));
    plot->legend->setVisible(true);
}

QString plotLibraryVersion()
{
    return QStringLiteral("QCustomPlot ") + QLatin1String(QCUSTOMPLOT_VERSION_STR);
}

} // namespace qkv::ui
