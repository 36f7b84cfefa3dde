#include "Heatmap.h"

#include "ColorScale.h"
#include "HeatmapTicks.h"
#include "LabelText.h"

#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QActionGroup>
#include <QFontMetrics>
#include <QGridLayout>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QNativeGestureEvent>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qkv::ui {

namespace {

constexpr double scrollSteps = 100.0;  // scroll-bar steps per cell
constexpr int minimumCellForText = 28; // pixels: below this the values are not written in the cells

// A palette of ColorScale as QCustomPlot's gradient.
QCPColorGradient gradientOf(Palette palette)
{
    QCPColorGradient gradient;
    gradient.clearColorStops();
    for (const auto& [position, colour] : paletteStops(palette))
        gradient.setColorStopAt(position, colour);
    return gradient;
}

// The colour map's cells, filled in one pass: setCell() per cell is a call and two comparisons each.
class CellData : public QCPColorMapData {
public:
    using QCPColorMapData::QCPColorMapData;
    /// Row i, column j at i · columns + j (row-major, as Matrix is); marks the image for redrawing.
    double* cells()
    {
        mDataModified = true;
        return mData;
    }
};

QSize axisRectSize(QCustomPlot* plot)
{
    const QRect rect = plot->axisRect()->rect();
    if (rect.width() > 10 && rect.height() > 10)
        return rect.size();
    // Not laid out yet: a guess that the next layout corrects.
    return QSize(std::max(50, plot->width() - 120), std::max(50, plot->height() - 90));
}

// Token labels are cut short; row statistics (`whole`) are not.
QSharedPointer<QCPAxisTickerText> textTicker(const QStringList& labels, int stride, bool whole = false)
{
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < labels.size(); i += stride)
        ticker->addTick(i, whole ? labels.at(i) : elidedLabel(labels.at(i)));
    return ticker;
}

// What the colour bar measures; scaled per row, a fraction of each row's largest.
QString colorBarText(const QString& label, bool perRow)
{
    if (!perRow)
        return label;
    return label.isEmpty() ? Heatmap::tr("÷ row maximum") : Heatmap::tr("%1 ÷ row maximum").arg(label);
}

} // namespace

Heatmap::Heatmap(QWidget* parent)
    : QWidget(parent), m_plot(new QCustomPlot(this)), m_map(nullptr), m_scale(nullptr),
      m_titleElement(nullptr)
{
    // Scroll bars beside the plot while zoomed in: another way to pan.
    m_horizontalScroll = new QScrollBar(Qt::Horizontal, this);
    m_verticalScroll = new QScrollBar(Qt::Vertical, this);
    m_horizontalScroll->setObjectName(QStringLiteral("heatmapHorizontalScroll"));
    m_verticalScroll->setObjectName(QStringLiteral("heatmapVerticalScroll"));
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_plot, 0, 0);
    layout->addWidget(m_verticalScroll, 0, 1);
    layout->addWidget(m_horizontalScroll, 1, 0);
    m_horizontalScroll->hide();
    m_verticalScroll->hide();
    setFocusPolicy(Qt::StrongFocus); // a click gives it the keyboard: arrows move the selection
    m_titleElement = setUpPlot(m_plot, QSize(160, 120));

    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 3);
        axis->setTickLabelPadding(tickLabelPadding);
        axis->setBasePen(Qt::NoPen);
    }
    m_plot->yAxis->setRangeReversed(true); // row 0 at the top

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis); // key: column, value: row
    m_map->setInterpolate(false);
    m_map->setData(new CellData(0, 0, QCPRange(0, 1), QCPRange(0, 1)), false); // owned by the map
    m_map->setTightBoundary(false);

    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->axis()->setSubTicks(false);
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_map->setColorScale(m_scale);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, margins);

    m_plot->yAxis2->setRangeReversed(true);
    m_plot->yAxis2->grid()->setVisible(false);
    m_plot->yAxis2->setSubTicks(false);
    m_plot->yAxis2->setTickLength(0, 3);
    m_plot->yAxis2->setBasePen(Qt::NoPen);
    connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_plot->yAxis2,
            qOverload<const QCPRange&>(&QCPAxis::setRange));
    // The row statistics' header stands above their column, apart from the colour bar and its label.
    m_annotationHeader = new QCPItemText(m_plot);
    m_annotationHeader->setClipToAxisRect(false);
    m_annotationHeader->setSelectable(false);
    m_annotationHeader->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_annotationHeader->position->setAxisRect(m_plot->axisRect());
    m_annotationHeader->position->setCoords(1.0, 0.0);
    m_annotationHeader->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_annotationHeader->setTextAlignment(Qt::AlignLeft);
    m_annotationHeader->setPadding(QMargins(tickLabelPadding, 0, 0, 2));
    QFont headerFont = m_plot->yAxis2->labelFont();
    headerFont.setBold(true);
    m_annotationHeader->setFont(headerFont);
    m_annotationHeader->setVisible(false);

    // The selected row and column as translucent bands across the whole matrix: visible when a cell is a
    // single pixel.
    for (QCPItemRect** band : {&m_rowBand, &m_columnBand}) {
        *band = new QCPItemRect(m_plot);
        (*band)->setPen(QPen(QColor(255, 140, 0, 150), 1.0));
        (*band)->setBrush(QColor(255, 140, 0, 60));
        (*band)->setVisible(false);
        (*band)->setSelectable(false);
        (*band)->setLayer(QStringLiteral("overlay"));
    }
    m_highlightRect = new QCPItemRect(m_plot);
    m_highlightRect->setPen(QPen(QColor(255, 140, 0), 2.5));
    m_highlightRect->setBrush(Qt::NoBrush);
    m_highlightRect->setVisible(false);
    m_highlightRect->setLayer(QStringLiteral("overlay"));

    connect(m_plot, &QCustomPlot::beforeReplot, this, &Heatmap::updateTickers);
    connect(m_plot, &QCustomPlot::afterLayout, this, &Heatmap::afterLayout);
    connect(m_plot, &QCustomPlot::mouseMove, this, &Heatmap::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &Heatmap::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &Heatmap::onMouseRelease);
    createContextMenu();
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& position) {
        updateContextMenu();
        m_menu->exec(m_plot->mapToGlobal(position));
    });
    // The rectangle a paint drag covers, until release.
    m_paintRect = new QCPItemRect(m_plot);
    m_paintRect->setPen(QPen(QColor(20, 20, 20), 1.5, Qt::DashLine));
    m_paintRect->setBrush(QColor(255, 255, 255, 90));
    m_paintRect->setVisible(false);
    m_paintRect->setSelectable(false);
    m_paintRect->setLayer(QStringLiteral("overlay"));
    // Zoom (wheel) and pan (drag) within the matrix; the tick labels are planned again for the cells shown.
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->installEventFilter(this); // a touchpad pinch zooms too
    m_plot->axisRect()->setRangeZoomAxes(m_plot->xAxis, m_plot->yAxis);
    m_plot->axisRect()->setRangeDragAxes(m_plot->xAxis, m_plot->yAxis);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
                [this, axis](const QCPRange& range) { keepInMatrix(axis, range); });
    for (auto [bar, axis] :
         {std::pair{m_horizontalScroll, m_plot->xAxis}, std::pair{m_verticalScroll, m_plot->yAxis}})
        connect(bar, &QScrollBar::valueChanged, this, [this, axis = axis](int value) {
            if (m_updatingScrollBars)
                return;
            const double size = axis->range().size();
            const double lower = value / scrollSteps - 0.5;
            axis->setRange(lower, lower + size);
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        });

    rebuild();
}

Heatmap::~Heatmap() = default;

// One menu for the widget's life, its actions named so that tests (and the window) can find them.
void Heatmap::createContextMenu()
{
    m_menu = new QMenu(this);
    m_menu->setObjectName(QStringLiteral("heatmapMenu"));
    const auto add = [](QMenu* menu, QActionGroup* group, const QString& text, const char* name,
                        const QString& tip) {
        QAction* action = menu->addAction(text);
        action->setObjectName(QLatin1String(name));
        action->setStatusTip(tip);
        action->setToolTip(tip);
        action->setCheckable(true);
        group->addAction(action);
        return action;
    };
    QMenu* scales = m_menu->addMenu(tr("Colour Scale"));
    scales->setObjectName(QStringLiteral("colorScaleMenu"));
    auto* scaleGroup = new QActionGroup(this);
    const struct {
        QString text;
        const char* name;
        ColorScale scale;
        QString tip;
    } scaleEntries[] = {
        {tr("Linear"), "colorScale_linear", ColorScale::Linear,
         tr("The colour map from the smallest value to the largest")},
        {tr("Logarithmic"), "colorScale_logarithmic", ColorScale::Logarithmic,
         tr("From the smallest positive value to the largest: small weights that differ by orders of "
            "magnitude get different colours")},
        {tr("Per Row"), "colorScale_perRow", ColorScale::PerRow,
         tr("Each row divided by its own largest value: where each query looks, however spread its "
            "weights are")},
        {tr("Diverging (Symmetric about 0)"), "colorScale_diverging", ColorScale::Diverging,
         tr("Blue for negative, white at 0, red for positive, the same extent both ways")},
    };
    for (const auto& entry : scaleEntries)
        connect(add(scales, scaleGroup, entry.text, entry.name, entry.tip), &QAction::triggered, this,
                [this, scale = entry.scale] { setColorScale(scale); });
    QMenu* maps = m_menu->addMenu(tr("Colour Map"));
    maps->setObjectName(QStringLiteral("colorMapMenu"));
    auto* mapGroup = new QActionGroup(this);
    const struct {
        QString text;
        const char* name;
        ColorMap map;
    } mapEntries[] = {{tr("Viridis"), "colorMap_viridis", ColorMap::Viridis},
                      {tr("Cividis (Colour-Vision Safe)"), "colorMap_cividis", ColorMap::Cividis},
                      {tr("Greyscale (Print)"), "colorMap_greyscale", ColorMap::Greyscale}};
    for (const auto& entry : mapEntries)
        connect(add(maps, mapGroup, entry.text, entry.name, QString()), &QAction::triggered, this,
                [this, map = entry.map] { setColorMap(map); });
    m_menu->addSeparator();
    // The keys are handled by keyPressEvent, only named here (not action shortcuts: one set per heatmap).
    const auto addZoom = [this](const QString& text, const char* name) {
        QAction* action = m_menu->addAction(text);
        action->setObjectName(QLatin1String(name));
        return action;
    };
    connect(addZoom(tr("Zoom In\tCtrl++"), "zoomIn"), &QAction::triggered, this, [this] { zoomBy(0.5); });
    connect(addZoom(tr("Zoom Out\tCtrl+-"), "zoomOut"), &QAction::triggered, this, [this] { zoomBy(2.0); });
    connect(addZoom(tr("Fit\tCtrl+0"), "zoomFit"), &QAction::triggered, this, &Heatmap::fitToView);
    updateContextMenu();
}

// The checked entries follow the heatmap; what does not apply to its kind of matrix is disabled.
void Heatmap::updateContextMenu()
{
    const bool binary = m_mode == ColorMode::Binary;
    const auto check = [this](const char* name, bool checked, bool enabled) {
        if (auto* action = m_menu->findChild<QAction*>(QLatin1String(name))) {
            action->setChecked(checked);
            action->setEnabled(enabled);
        }
    };
    check("colorScale_linear", m_colorScale == ColorScale::Linear, !binary);
    // Logarithmic needs positive values: offered for maps that are not signed by nature.
    check("colorScale_logarithmic", m_colorScale == ColorScale::Logarithmic, m_mode == ColorMode::Sequential);
    check("colorScale_perRow", m_colorScale == ColorScale::PerRow, !binary);
    check("colorScale_diverging", m_colorScale == ColorScale::Diverging, !binary);
    const bool maps = !binary && m_colorScale != ColorScale::Diverging;
    check("colorMap_viridis", m_colorMap == ColorMap::Viridis, maps);
    check("colorMap_cividis", m_colorMap == ColorMap::Cividis, maps);
    check("colorMap_greyscale", m_colorMap == ColorMap::Greyscale, maps);
}

Heatmap::ColorScale Heatmap::defaultScale() const
{
    return m_mode == ColorMode::Diverging ? ColorScale::Diverging : ColorScale::Linear;
}

void Heatmap::setPaintable(bool paintable)
{
    m_paintable = paintable;
    if (!paintable && m_paintAnchor.first >= 0) {
        m_paintAnchor = m_paintCorner = {-1, -1};
        m_plot->setInteraction(QCP::iRangeDrag, true);
        updatePaintRect();
    }
}

void Heatmap::updatePaintRect()
{
    const bool shown = m_paintAnchor.first >= 0 && m_paintMoved;
    m_paintRect->setVisible(shown);
    if (shown) {
        const auto [r0, c0] = m_paintAnchor;
        const auto [r1, c1] = m_paintCorner;
        m_paintRect->topLeft->setCoords(std::min(c0, c1) - 0.5, std::min(r0, r1) - 0.5);
        m_paintRect->bottomRight->setCoords(std::max(c0, c1) + 0.5, std::max(r0, r1) + 0.5);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setMatrix(const Matrix& values, const QStringList& rowLabels, const QStringList& columnLabels)
{
    setMatrix(std::make_shared<const Matrix>(values), rowLabels, columnLabels);
}

void Heatmap::setMatrix(std::shared_ptr<const Matrix> values, const QStringList& rowLabels,
                        const QStringList& columnLabels)
{
    m_shownValues = values ? std::move(values) : std::make_shared<const Matrix>();
    // Eigen's way to point a Map at other data.
    new (&m_values)
        Eigen::Map<const Matrix>(m_shownValues->data(), m_shownValues->rows(), m_shownValues->cols());
    m_rowLabels = labelsOrIndices(rowLabels, m_values.rows());
    m_columnLabels = labelsOrIndices(columnLabels, m_values.cols());
    rebuild();
}

void Heatmap::clear()
{
    setMatrix(Matrix(), QStringList(), QStringList());
}

void Heatmap::setTitle(const QString& title)
{
    m_title = title;
    m_titleElement->setText(title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setAxisTitles(const QString& rows, const QString& columns)
{
    m_rowTitle = rows;
    m_columnTitle = columns;
    m_plot->yAxis->setLabel(rows);
    m_plot->xAxis->setLabel(columns);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setColorMode(ColorMode mode)
{
    m_mode = mode;
    setColorScale(defaultScale());
}

void Heatmap::setColorScale(ColorScale scale)
{
    const bool refill = (scale == ColorScale::PerRow) != (m_colorScale == ColorScale::PerRow);
    m_colorScale = scale;
    updateContextMenu();
    if (refill) {
        rebuild(); // the cells hold each row's values divided by its largest
        return;
    }
    updateColors();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setLogarithmic(bool logarithmic)
{
    setColorScale(logarithmic ? ColorScale::Logarithmic : defaultScale());
}

void Heatmap::setColorMap(ColorMap map)
{
    m_colorMap = map;
    updateContextMenu();
    updateColors();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setFixedRange(double lower, double upper)
{
    m_fixedRange = std::make_pair(lower, upper);
    updateColors();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::clearFixedRange()
{
    m_fixedRange.reset();
    updateColors();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setMasked(const MaskMatrix* allowed)
{
    setMasked(allowed ? std::make_shared<const MaskMatrix>(*allowed) : nullptr);
}

void Heatmap::setMasked(std::shared_ptr<const MaskMatrix> allowed)
{
    m_shownMask = std::move(allowed);
    if (m_shownMask)
        new (&m_allowed)
            Eigen::Map<const MaskMatrix>(m_shownMask->data(), m_shownMask->rows(), m_shownMask->cols());
    else
        new (&m_allowed) Eigen::Map<const MaskMatrix>(nullptr, 0, 0);
    rebuild();
}

void Heatmap::releaseMatrix()
{
    m_shownValues = std::make_shared<const Matrix>();
    m_shownMask.reset();
    new (&m_values) Eigen::Map<const Matrix>(nullptr, 0, 0);
    new (&m_allowed) Eigen::Map<const MaskMatrix>(nullptr, 0, 0);
    removeCellTexts();
    m_map->data()->clear();
    m_sampling = Sampling();
    m_cellsPending = false;
}

bool Heatmap::isMasked(Index row, Index column) const
{
    return m_allowed.rows() == m_values.rows() && m_allowed.cols() == m_values.cols() && row >= 0 &&
           column >= 0 && row < m_allowed.rows() && column < m_allowed.cols() && m_allowed(row, column) == 0;
}

// A mask is 0 or 1: written as such, not as "1.000".
QString Heatmap::cellString(double value) const
{
    return m_mode == ColorMode::Binary ? QString::number(value) : formatValue(value);
}

QString Heatmap::formatValue(double value)
{
    if (!std::isfinite(value))
        return QString::number(value);
    const QString text =
        std::abs(value) >= 1e5 ? QString::number(value, 'g', 3) : QString::number(value, 'f', 3);
    return text == QLatin1String("-0.000") ? QStringLiteral("0.000") : text;
}

QString Heatmap::cellText(Index row, Index column) const
{
    if (!m_cellTextShown || row < 0 || column < 0 || row >= m_values.rows() || column >= m_values.cols())
        return QString();
    const auto [firstRow, firstColumn] = m_cellTextFirst;
    if (row < firstRow || column < firstColumn || column >= firstColumn + m_cellTextColumns)
        return QString();
    const auto index = static_cast<qsizetype>((row - firstRow) * m_cellTextColumns + (column - firstColumn));
    const QCPItemText* item = index < m_cellTexts.size() ? m_cellTexts.at(index) : nullptr;
    return item && item->visible() ? item->text() : QString();
}

QString Heatmap::cellDescription(Index row, Index column) const
{
    const QString value = isMasked(row, column) ? tr("masked") : formatValue(m_values(row, column));
    const QString rowTitle = m_rowTitle.isEmpty() ? tr("row") : m_rowTitle;
    const QString columnTitle = m_columnTitle.isEmpty() ? tr("column") : m_columnTitle;
    return tr("%1 ‘%2’ → %3 ‘%4’: %5")
        .arg(rowTitle, m_rowLabels.value(static_cast<int>(row)), columnTitle,
             m_columnLabels.value(static_cast<int>(column)), value);
}

// Puts the matrix into the colour map and sets the axes to one unit per cell.
void Heatmap::rebuild(bool evenIfHidden)
{
    removeCellTexts();
    m_ticksPlanned = false;
    m_ticksFor = QSize();
    m_relayouts = 0;
    updateColors();
    const Index rows = m_values.rows(), columns = m_values.cols();
    QCPColorMapData* cells = m_map->data();
    // A hidden heatmap (another tab) fills its cells when it is shown: large matrices cost time and memory.
    m_cellsPending = !evenIfHidden && !isVisible() && rows > 0 && columns > 0;
    m_sampling = Sampling();
    if (m_cellsPending) {
        cells->clear();
        return;
    }
    if (rows == 0 || columns == 0) {
        cells->clear();
        m_map->setVisible(false);
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        m_plot->xAxis->setRange(-0.5, 0.5);
        m_plot->yAxis->setRange(-0.5, 0.5);
        m_shownShape = {0, 0};
    } else {
        m_map->setVisible(true);
        // A new shape shows the whole matrix; the same shape keeps the zoom (an edit is not a reset).
        if (m_shownShape != std::make_pair(rows, columns))
            fitToView();
        m_shownShape = {rows, columns};
        fillColorMap(true);
    }
    updateRowAnnotations();
    updateHighlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

namespace {

// Where the colour map puts `samples` cells `step` apart from `first`. Cell centres are the integers
// 0..count−1; QCPColorMap spreads its cells over the range between the first and last centre, and a single
// cell has no such range, so it is given its full extent instead.
QCPRange sampledRange(Index first, Index step, Index samples)
{
    const auto start = static_cast<double>(first);
    return samples > 1
               ? QCPRange(start, start + static_cast<double>((samples - 1) * step))
               : QCPRange(start - 0.5 * static_cast<double>(step), start + 0.5 * static_cast<double>(step));
}

// The cells of one axis the colour map holds: all of them while each takes a pixel or more; else the part
// shown, every step-th cell, about one per pixel (a 4096-row matrix on 500 pixels would otherwise be
// coloured, mirrored and scaled down in full on every replot).
void sampleAxis(const QCPRange& range, Index count, int pixels, Index* first, Index* step, Index* samples)
{
    const Index lowest = std::clamp<Index>(static_cast<Index>(std::floor(range.lower + 0.5)), 0, count - 1);
    const Index highest =
        std::clamp<Index>(static_cast<Index>(std::ceil(range.upper - 0.5)), lowest, count - 1);
    const Index shown = highest - lowest + 1;
    *step = std::max<Index>(1, shown / std::max(1, pixels));
    *first = *step == 1 ? 0 : lowest;
    *samples = *step == 1 ? count : (shown + *step - 1) / *step;
}

} // namespace

// Fills the colour map for the cells shown and the pixels they have (sampleAxis); `force` fills even when
// the sampling is unchanged (new values). True when it filled.
bool Heatmap::fillColorMap(bool force)
{
    const QSize pixels = axisRectSize(m_plot);
    Sampling s;
    sampleAxis(m_plot->yAxis->range(), m_values.rows(), pixels.height(), &s.firstRow, &s.rowStep, &s.rows);
    sampleAxis(m_plot->xAxis->range(), m_values.cols(), pixels.width(), &s.firstColumn, &s.columnStep,
               &s.columns);
    if (!force && s == m_sampling)
        return false;
    m_sampling = s;
    auto* cells = static_cast<CellData*>(m_map->data());
    cells->setSize(static_cast<int>(s.columns), static_cast<int>(s.rows)); // reallocates on a new size only
    cells->setRange(sampledRange(s.firstColumn, s.columnStep, s.columns),
                    sampledRange(s.firstRow, s.rowStep, s.rows));
    if (s.rowStep == 1 && s.columnStep == 1) {
        fillCells(cells->cells());
        return true;
    }
    double* out = cells->cells();
    const bool masked = m_allowed.rows() == m_values.rows() && m_allowed.cols() == m_values.cols();
    const bool perRow = m_rowFactor.size() == m_values.rows();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (Index a = 0; a < s.rows; ++a) {
        const Index i = s.firstRow + a * s.rowStep;
        const double factor = perRow ? m_rowFactor(i) : 1.0;
        for (Index b = 0; b < s.columns; ++b) {
            const Index j = s.firstColumn + b * s.columnStep;
            *out++ = masked && m_allowed(i, j) == 0 ? nan : m_values(i, j) * factor;
        }
    }
    return true;
}

// The matrix row by row (the colour map's layout is Matrix's), masked cells NaN (drawn grey).
void Heatmap::fillCells(double* cells) const
{
    const Index count = m_values.size();
    std::copy(m_values.data(), m_values.data() + count, cells);
    if (m_rowFactor.size() == m_values.rows()) // per-row colour scale
        for (Index i = 0; i < m_values.rows(); ++i)
            Eigen::Map<RowVector>(cells + i * m_values.cols(), m_values.cols()) *= m_rowFactor(i);
    if (m_allowed.rows() != m_values.rows() || m_allowed.cols() != m_values.cols())
        return;
    const std::uint8_t* allowed = m_allowed.data();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (Index k = 0; k < count; ++k)
        if (allowed[k] == 0)
            cells[k] = nan;
}

// Arrow keys move the selected cell by one, Page Up/Down by a screenful of rows, Home/End to the first or
// last column (with Ctrl: row); the move is announced as a click, so everything that follows clicks follows.
void Heatmap::keyPressEvent(QKeyEvent* event)
{
    const Index rows = m_values.rows(), columns = m_values.cols();
    if (rows == 0 || columns == 0) {
        QWidget::keyPressEvent(event);
        return;
    }
    int row = std::max(0, m_highlight.first);
    int column = std::max(0, m_highlight.second);
    const int lastRow = static_cast<int>(rows) - 1, lastColumn = static_cast<int>(columns) - 1;
    const int page = std::max(1, static_cast<int>(std::floor(m_plot->yAxis->range().size())) - 1);
    const bool control = event->modifiers() & Qt::ControlModifier;
    if (control && (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)) {
        zoomBy(0.5);
        return;
    }
    if (control && event->key() == Qt::Key_Minus) {
        zoomBy(2.0);
        return;
    }
    if (control && event->key() == Qt::Key_0) {
        fitToView();
        return;
    }
    if (m_paintable && event->key() == Qt::Key_Space && m_highlight.first >= 0 && m_highlight.second >= 0 &&
        m_highlight.first <= lastRow && m_highlight.second <= lastColumn) {
        emit rectanglePainted(m_highlight.first, m_highlight.second, m_highlight.first, m_highlight.second);
        event->accept();
        return;
    }
    switch (event->key()) {
    case Qt::Key_Up:
        --row;
        break;
    case Qt::Key_Down:
        ++row;
        break;
    case Qt::Key_Left:
        --column;
        break;
    case Qt::Key_Right:
        ++column;
        break;
    case Qt::Key_PageUp:
        row -= page;
        break;
    case Qt::Key_PageDown:
        row += page;
        break;
    case Qt::Key_Home:
        (control ? row : column) = 0;
        break;
    case Qt::Key_End:
        (control ? row : column) = control ? lastRow : lastColumn;
        break;
    default:
        QWidget::keyPressEvent(event);
        return;
    }
    emit cellClicked(std::clamp(row, 0, lastRow), std::clamp(column, 0, lastColumn));
    event->accept();
}

// A pinch on a touchpad (a native zoom gesture) zooms about its centre, as the wheel does about the pointer.
bool Heatmap::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::NativeGesture) {
        const auto* gesture = static_cast<QNativeGestureEvent*>(event);
        if (gesture->gestureType() == Qt::ZoomNativeGesture && m_values.size() > 0) {
            const double factor = std::clamp(1.0 - gesture->value(), 0.25, 4.0);
            const QPointF at = gesture->position();
            m_plot->xAxis->scaleRange(factor, m_plot->xAxis->pixelToCoord(at.x()));
            m_plot->yAxis->scaleRange(factor, m_plot->yAxis->pixelToCoord(at.y()));
            m_plot->replot(QCustomPlot::rpQueuedReplot);
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void Heatmap::fitToView()
{
    if (m_values.size() == 0)
        return;
    m_plot->xAxis->setRange(-0.5, static_cast<double>(m_values.cols()) - 0.5);
    m_plot->yAxis->setRange(-0.5, static_cast<double>(m_values.rows()) - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::zoomBy(double factor)
{
    if (m_values.size() == 0)
        return;
    const auto [row, column] = m_highlight;
    const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
    // About the selected cell when it is in view, else about the centre.
    const double cx = column >= 0 && x.contains(column) ? column : x.center();
    const double cy = row >= 0 && y.contains(row) ? row : y.center();
    m_plot->xAxis->scaleRange(factor, cx);
    m_plot->yAxis->scaleRange(factor, cy);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// Zoom and pan stay within the matrix: at most all of it, at least one cell, never beyond an edge.
void Heatmap::keepInMatrix(QCPAxis* axis, const QCPRange& range)
{
    const Index count = axis == m_plot->xAxis ? m_values.cols() : m_values.rows();
    if (count == 0)
        return;
    const double lowest = -0.5, highest = static_cast<double>(count) - 0.5;
    const double size = std::clamp(range.size(), std::min(1.0, highest - lowest), highest - lowest);
    const double lower = std::clamp(range.center() - size / 2, lowest, highest - size);
    const QCPRange kept(lower, lower + size);
    if (std::abs(kept.lower - range.lower) > 1e-9 || std::abs(kept.upper - range.upper) > 1e-9) {
        axis->setRange(kept); // emits rangeChanged again, with a range that needs no change
        return;
    }
    m_ticksFor = QSize(); // the cells shown changed: plan the labels again
    m_relayouts = 0;
    updateScrollBar(axis == m_plot->xAxis ? m_horizontalScroll : m_verticalScroll, count, kept);
}

// A scroll bar shows where the cells in view lie in the matrix; hidden when all of it is shown.
void Heatmap::updateScrollBar(QScrollBar* bar, Index count, const QCPRange& range)
{
    const double hidden = static_cast<double>(count) - range.size();
    m_updatingScrollBars = true;
    bar->setVisible(hidden > 1e-6);
    bar->setRange(0, static_cast<int>(std::lround(std::max(0.0, hidden) * scrollSteps)));
    bar->setPageStep(static_cast<int>(std::lround(range.size() * scrollSteps)));
    bar->setSingleStep(static_cast<int>(scrollSteps));
    bar->setValue(static_cast<int>(std::lround((range.lower + 0.5) * scrollSteps)));
    m_updatingScrollBars = false;
}

std::pair<double, double> Heatmap::visibleRows() const
{
    return {m_plot->yAxis->range().lower, m_plot->yAxis->range().upper};
}

std::pair<double, double> Heatmap::visibleColumns() const
{
    return {m_plot->xAxis->range().lower, m_plot->xAxis->range().upper};
}

void Heatmap::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_cellsPending)
        rebuild();
}

QSize Heatmap::defaultFigureSize() const
{
    constexpr int cell = 56; // room for a value such as "-0.707" at the default font
    const auto extent = [](Index cells, int fixed, int lowest) {
        return std::clamp(fixed + cell * static_cast<int>(std::min<Index>(cells, 100)), lowest, 1400);
    };
    return {extent(m_values.cols(), 220, 480), extent(m_values.rows(), 150, 360)};
}

void Heatmap::renderFigure(QPaintDevice* device, const QSize& size) const
{
    // Exporting lays the plot out for `size` and then for the screen again: nothing visible changes.
    const_cast<Heatmap*>(this)->renderAt(device, size);
}

void Heatmap::renderAt(QPaintDevice* device, const QSize& size)
{
    emit aboutToRenderFigure(); // an owner that deferred the newest matrix while this was hidden sets it now
    if (m_cellsPending)
        rebuild(true); // never shown (another tab, or a view kept only for export)
    // The selection is the screen's: exported figures leave it out.
    m_selectionHidden = true;
    updateHighlight();
    const QRect screen = m_plot->viewport();
    layOutFor(QRect(QPoint(0, 0), size));
    renderPlot(m_plot, device, size); // its afterLayout decides the cell texts at `size`
    m_selectionHidden = false;
    updateHighlight();
    layOutFor(screen);
    if (m_values.size() > 0)
        updateCellTexts();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// What a replot does before drawing (tick labels planned for the axis rectangle, which they change in turn),
// for any viewport and without drawing.
void Heatmap::layOutFor(const QRect& viewport)
{
    m_plot->setViewport(viewport);
    for (int pass = 0; pass < 6; ++pass) {
        for (const auto phase :
             {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
            m_plot->plotLayout()->update(phase);
        if (!planTicksFor(axisRectSize(m_plot), pass > 0))
            break;
    }
}

void Heatmap::updateColors()
{
    const bool binary = m_mode == ColorMode::Binary;
    const ColorScale scale = binary ? ColorScale::Linear : m_colorScale;
    // A signed map scaled per row stays diverging: each row from −1 to 1.
    const bool diverging =
        scale == ColorScale::Diverging || (scale == ColorScale::PerRow && m_mode == ColorMode::Diverging);
    QCPColorGradient gradient;
    if (binary)
        gradient = gradientOf(Palette::Binary);
    else if (diverging)
        gradient = gradientOf(Palette::Diverging);
    else
        gradient = gradientOf(m_colorMap == ColorMap::Cividis     ? Palette::Cividis
                              : m_colorMap == ColorMap::Greyscale ? Palette::Greyscale
                                                                  : Palette::Viridis);
    // A binary matrix has a two-entry legend, not a continuous bar.
    if (binary) {
        auto legend = QSharedPointer<QCPAxisTickerText>::create();
        legend->addTick(0.25, tr("masked (0)"));
        legend->addTick(0.75, tr("allowed (1)"));
        m_scale->axis()->setTicker(legend);
    } else if (m_scale->axis()->ticker().dynamicCast<QCPAxisTickerText>()) {
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(maskedCellColor());
    m_scale->setGradient(gradient);
    m_scale->axis()->setLabel(colorBarText(m_colorBarLabel, scale == ColorScale::PerRow));

    const auto shown = [this](Index i, Index j) { return !isMasked(i, j) && std::isfinite(m_values(i, j)); };
    m_rowFactor.resize(0);
    if (scale == ColorScale::PerRow) {
        // Each row divided by its largest magnitude: 1 is the row's largest value.
        m_rowFactor = Vector::Ones(m_values.rows());
        bool negative = false;
        for (Index i = 0; i < m_values.rows(); ++i) {
            double largest = 0.0;
            for (Index j = 0; j < m_values.cols(); ++j)
                if (shown(i, j)) {
                    largest = std::max(largest, std::abs(m_values(i, j)));
                    negative = negative || m_values(i, j) < 0;
                }
            m_rowFactor(i) = largest > 0 ? 1.0 / largest : 1.0;
        }
        m_range = {diverging || negative ? -1.0 : 0.0, 1.0};
    } else if (m_fixedRange) {
        m_range = *m_fixedRange;
        if (diverging) {
            const double extent = std::max(std::abs(m_range.first), std::abs(m_range.second));
            m_range = extent > 0 ? std::make_pair(-extent, extent) : std::make_pair(-1.0, 1.0);
        }
    } else {
        double lowest = std::numeric_limits<double>::infinity(), highest = -lowest;
        for (Index i = 0; i < m_values.rows(); ++i)
            for (Index j = 0; j < m_values.cols(); ++j)
                if (shown(i, j)) {
                    lowest = std::min(lowest, m_values(i, j));
                    highest = std::max(highest, m_values(i, j));
                }
        if (lowest > highest) {
            lowest = 0.0;
            highest = 1.0;
        }
        if (diverging) {
            const double extent = std::max(std::abs(lowest), std::abs(highest));
            m_range = extent > 0 ? std::make_pair(-extent, extent) : std::make_pair(-1.0, 1.0);
        } else {
            m_range = highest > lowest ? std::make_pair(lowest, highest)
                                       : std::make_pair(lowest - 0.5, lowest + 0.5);
        }
    }
    // Logarithmic: from the smallest positive value shown (weights of causal maps at 256+ tokens span
    // decades that a linear scale paints one colour).
    const bool logarithmic = scale == ColorScale::Logarithmic;
    if (logarithmic) {
        double smallest = std::numeric_limits<double>::infinity();
        for (Index i = 0; i < m_values.rows(); ++i)
            for (Index j = 0; j < m_values.cols(); ++j)
                if (shown(i, j) && m_values(i, j) > 0)
                    smallest = std::min(smallest, m_values(i, j));
        const double upper = m_range.second > 0 ? m_range.second : 1.0;
        const double lower = std::isfinite(smallest) && smallest < upper ? smallest : upper * 1e-3;
        m_range = {lower, upper};
    }
    m_scale->setDataScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logarithmic)
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else if (m_scale->axis()->ticker().dynamicCast<QCPAxisTickerLog>())
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    m_scale->setDataRange(QCPRange(m_range.first, m_range.second));
    if (m_cellTextShown)
        updateCellTexts();
}

// Plans the tick labels for an axis rectangle of `size`; true when the plan changed. While settling (the
// labels changed the margins, which changed the rectangle) strides only grow: the plan converges, and it is
// always at least as sparse as the rectangle it is drawn in needs.
bool Heatmap::planTicksFor(QSize size, bool settling)
{
    m_ticksFor = size;
    if (m_values.size() == 0)
        return false;
    // Zoomed in, the cells are larger: plan as if the whole matrix had that cell size.
    const double xZoom = static_cast<double>(m_values.cols()) / std::max(1.0, m_plot->xAxis->range().size());
    const double yZoom = static_cast<double>(m_values.rows()) / std::max(1.0, m_plot->yAxis->range().size());
    const QSize effective(static_cast<int>(std::min(1e6, size.width() * xZoom)),
                          static_cast<int>(std::min(1e6, size.height() * yZoom)));
    TickPlan plan =
        planTicks(effective, QFontMetrics(m_plot->xAxis->tickLabelFont()), m_rowLabels, m_columnLabels);
    if (settling && m_ticksPlanned && plan.columnsVertical == m_ticks.columnsVertical) {
        plan.rowStride = std::max(plan.rowStride, m_ticks.rowStride);
        plan.columnStride = std::max(plan.columnStride, m_ticks.columnStride);
    }
    if (m_ticksPlanned && plan == m_ticks)
        return false;
    m_ticks = plan;
    m_ticksPlanned = true;
    m_plot->yAxis->setTicker(textTicker(m_rowLabels, m_ticks.rowStride));
    if (!m_rowAnnotations.isEmpty())
        m_plot->yAxis2->setTicker(textTicker(m_rowAnnotations, m_ticks.rowStride, true));
    m_plot->xAxis->setTicker(textTicker(m_columnLabels, m_ticks.columnStride));
    m_plot->xAxis->setTickLabelRotation(m_ticks.columnsVertical ? -90 : 0);
    return true;
}

// Before each replot: the tick labels that fit the axis rectangle of the last layout.
void Heatmap::updateTickers()
{
    const QSize size = axisRectSize(m_plot);
    if (!m_ticksPlanned || size != m_ticksFor)
        planTicksFor(size, m_relayouts > 0);
}

// After the layout of a replot, before drawing: the cell size is known now.
void Heatmap::afterLayout()
{
    if (m_values.size() == 0) {
        m_cellTextShown = false;
        return;
    }
    const QSize size = axisRectSize(m_plot);
    if (!m_cellsPending)
        fillColorMap(false); // the cells shown, or the pixels they have, changed: sampled again
    // Only a re-layout this plan caused settles (strides that only grow); a new size plans afresh, so a
    // heatmap first laid out tiny (while the window was built) gets its labels back once it is large.
    if (size != m_ticksFor && planTicksFor(size, m_relayouts > 0) && m_relayouts < 6) {
        ++m_relayouts; // the labels changed the margins: lay out once more with the new plan
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else {
        m_relayouts = 0;
    }
    updateHighlight();
    updateCellTexts();
}

QList<QRectF> Heatmap::drawnTickLabelRects() const
{
    QList<QRectF> rects;
    if (m_values.size() == 0)
        return rects;
    const QRect axisRect = m_plot->axisRect()->rect();
    const QPoint origin = m_plot->mapTo(this, QPoint(0, 0));
    const auto addAxis = [&](QCPAxis* axis) {
        const auto ticker = axis->ticker().dynamicCast<QCPAxisTickerText>();
        if (!axis->visible() || !ticker)
            return;
        const QFontMetrics metrics(axis->tickLabelFont());
        const double height = metrics.height();
        const double offset = axis->tickLabelPadding() + axis->offset();
        const QCPRange range = axis->range();
        for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it) {
            if (!range.contains(it.key()))
                continue;
            const double width = metrics.horizontalAdvance(it.value());
            const double centre = axis->coordToPixel(it.key());
            QRectF rect;
            if (axis->axisType() == QCPAxis::atLeft)
                rect = QRectF(axisRect.left() - offset - width, centre - height / 2, width, height);
            else if (axis->axisType() == QCPAxis::atRight)
                rect = QRectF(axisRect.right() + offset, centre - height / 2, width, height);
            else if (std::abs(axis->tickLabelRotation()) > 45)
                rect = QRectF(centre - height / 2, axisRect.bottom() + offset, height, width);
            else
                rect = QRectF(centre - width / 2, axisRect.bottom() + offset, width, height);
            rects.append(rect.translated(origin));
        }
    };
    addAxis(m_plot->yAxis);
    addAxis(m_plot->yAxis2);
    addAxis(m_plot->xAxis);
    return rects;
}

// Values are written in the cells on screen when those cells are large enough for them, whatever the
// matrix's size: zoomed into a corner of 1024 tokens, the numbers there are readable. Only the cells in view
// get a text item (a few hundred at most), reused as the view moves.
void Heatmap::updateCellTexts()
{
    const Index rows = m_values.rows(), columns = m_values.cols();
    const QRect rect = m_plot->axisRect()->rect();
    const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
    const double cellWidth = rows > 0 && columns > 0 ? rect.width() / std::max(1e-9, x.size()) : 0.0;
    const double cellHeight = rows > 0 && columns > 0 ? rect.height() / std::max(1e-9, y.size()) : 0.0;

    bool show = std::min(cellWidth, cellHeight) >= minimumCellForText;
    // The cells in view, partly shown ones included.
    const Index firstRow = std::clamp<Index>(static_cast<Index>(std::floor(y.lower + 0.5)), 0, rows);
    const Index lastRow = std::clamp<Index>(static_cast<Index>(std::ceil(y.upper - 0.5)), -1, rows - 1);
    const Index firstColumn = std::clamp<Index>(static_cast<Index>(std::floor(x.lower + 0.5)), 0, columns);
    const Index lastColumn = std::clamp<Index>(static_cast<Index>(std::ceil(x.upper - 0.5)), -1, columns - 1);
    const Index shownRows = std::max<Index>(0, lastRow - firstRow + 1);
    const Index shownColumns = std::max<Index>(0, lastColumn - firstColumn + 1);
    show = show && shownRows > 0 && shownColumns > 0;
    QFont font = m_plot->xAxis->tickLabelFont();
    if (show) {
        const QFontMetrics metrics(font);
        int widest = 0;
        for (Index i = firstRow; i <= lastRow; ++i)
            for (Index j = firstColumn; j <= lastColumn; ++j)
                widest = std::max(widest, metrics.horizontalAdvance(cellString(m_values(i, j))));
        // Shrinks the font a little (not below 6.5 pt) before giving up on writing the values.
        const double basePoint = font.pointSizeF() > 0 ? font.pointSizeF() : 9.0;
        const double fit = widest > 0 ? (cellWidth - 4) / widest : 1.0;
        const double point = std::floor(basePoint * std::min(1.0, fit) * 2.0) / 2.0;
        font.setPointSizeF(std::max(point, 6.5));
        show = point >= 6.5;
    }
    if (!show) {
        m_cellTextShown = false;
        for (QCPItemText* item : std::as_const(m_cellTexts))
            item->setVisible(false);
        return;
    }

    const qsizetype needed = static_cast<qsizetype>(shownRows * shownColumns);
    while (m_cellTexts.size() < needed) {
        auto* item = new QCPItemText(m_plot);
        item->setClipToAxisRect(true);
        item->setSelectable(false);
        item->position->setType(QCPItemPosition::ptPlotCoords);
        item->position->setAxes(m_plot->xAxis, m_plot->yAxis);
        item->setPositionAlignment(Qt::AlignCenter);
        m_cellTexts.append(item);
    }
    QCPColorGradient gradient = m_map->gradient(); // color() is not const
    const QCPRange range(m_range.first, m_range.second);
    const bool logarithmic = m_scale->dataScaleType() == QCPAxis::stLogarithmic;
    const bool perRow = m_rowFactor.size() == rows;
    qsizetype k = 0;
    for (Index i = firstRow; i <= lastRow; ++i)
        for (Index j = firstColumn; j <= lastColumn; ++j, ++k) {
            QCPItemText* item = m_cellTexts.at(k);
            if (isMasked(i, j)) {
                item->setText(QString());
                item->setVisible(false);
                continue;
            }
            const double value = m_values(i, j);
            item->position->setCoords(static_cast<double>(j), static_cast<double>(i));
            item->setText(cellString(value));
            item->setFont(font);
            item->setColor(
                textColorOn(gradient.color(perRow ? value * m_rowFactor(i) : value, range, logarithmic)));
            item->setVisible(true);
        }
    for (; k < m_cellTexts.size(); ++k)
        m_cellTexts.at(k)->setVisible(false);
    m_cellTextFirst = {firstRow, firstColumn};
    m_cellTextColumns = shownColumns;
    m_cellTextShown = true;
}

void Heatmap::removeCellTexts()
{
    for (QCPItemText* item : std::as_const(m_cellTexts))
        m_plot->removeItem(item);
    m_cellTexts.clear();
    m_cellTextShown = false;
}

QPoint Heatmap::cellCentre(Index row, Index column) const
{
    const QPointF inPlot(m_plot->xAxis->coordToPixel(static_cast<double>(column)),
                         m_plot->yAxis->coordToPixel(static_cast<double>(row)));
    return m_plot->mapTo(this, inPlot.toPoint());
}

bool Heatmap::cellAt(const QPoint& position, Index* row, Index* column) const
{
    if (m_values.size() == 0 || !m_plot->axisRect()->rect().contains(position))
        return false;
    const double x = m_plot->xAxis->pixelToCoord(position.x());
    const double y = m_plot->yAxis->pixelToCoord(position.y());
    const auto j = static_cast<Index>(std::floor(x + 0.5));
    const auto i = static_cast<Index>(std::floor(y + 0.5));
    if (i < 0 || j < 0 || i >= m_values.rows() || j >= m_values.cols())
        return false;
    *row = i;
    *column = j;
    return true;
}

void Heatmap::onMouseMove(QMouseEvent* event)
{
    Index row = 0, column = 0;
    const bool onCell = cellAt(event->position().toPoint(), &row, &column);
    if (m_paintAnchor.first >= 0) {
        if (onCell && std::make_pair(static_cast<int>(row), static_cast<int>(column)) != m_paintCorner) {
            m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
            m_paintMoved = m_paintMoved || m_paintCorner != m_paintAnchor;
            updatePaintRect();
        }
        return;
    }
    if (onCell)
        QToolTip::showText(event->globalPosition().toPoint(),
                           m_paintable ? cellDescription(row, column) + QLatin1Char('\n') + toolTip()
                                       : cellDescription(row, column),
                           m_plot);
    else
        QToolTip::hideText();
}

// A press selects the cell. On a paintable heatmap it also starts a paint drag (Shift: a pan instead), for
// which the plot's own drag-to-pan is off until release.
void Heatmap::onMousePress(QMouseEvent* event)
{
    Index row = 0, column = 0;
    if (event->button() != Qt::LeftButton || !cellAt(event->position().toPoint(), &row, &column))
        return;
    if (m_paintable && !(event->modifiers() & Qt::ShiftModifier)) {
        m_paintAnchor = m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
        m_paintMoved = false;
        m_plot->setInteraction(QCP::iRangeDrag, false);
    }
    emit cellClicked(static_cast<int>(row), static_cast<int>(column));
}

void Heatmap::onMouseRelease(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton || m_paintAnchor.first < 0)
        return;
    Index row = 0, column = 0;
    if (cellAt(event->position().toPoint(), &row, &column)) {
        m_paintCorner = {static_cast<int>(row), static_cast<int>(column)};
        m_paintMoved = m_paintMoved || m_paintCorner != m_paintAnchor;
    }
    const auto [anchor, corner] = std::make_pair(m_paintAnchor, m_paintCorner);
    const bool moved = m_paintMoved;
    m_paintAnchor = m_paintCorner = {-1, -1};
    m_paintMoved = false;
    m_plot->setInteraction(QCP::iRangeDrag, true);
    updatePaintRect();
    // A click without a drag only selects; the shape may have changed meanwhile (an undo mid-drag).
    const bool inside = anchor.first < m_values.rows() && anchor.second < m_values.cols() &&
                        corner.first < m_values.rows() && corner.second < m_values.cols();
    if (moved && inside)
        emit rectanglePainted(anchor.first, anchor.second, corner.first, corner.second);
}

void Heatmap::setColorBarLabel(const QString& label)
{
    m_colorBarLabel = label;
    m_scale->axis()->setLabel(
        colorBarText(label, m_colorScale == ColorScale::PerRow && m_mode != ColorMode::Binary));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::setRowAnnotations(const QStringList& annotations, const QString& title)
{
    m_rowAnnotations = annotations;
    m_annotationTitle = title;
    updateRowAnnotations();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void Heatmap::updateRowAnnotations()
{
    const bool shown = !m_rowAnnotations.isEmpty() && m_rowAnnotations.size() == m_values.rows();
    m_plot->yAxis2->setVisible(shown);
    const bool headed = shown && !m_annotationTitle.isEmpty();
    m_annotationHeader->setVisible(headed);
    m_annotationHeader->setText(m_annotationTitle);
    if (!shown) {
        m_plot->plotLayout()->setColumnSpacing(5);
        m_plot->axisRect()->setMinimumMargins(QMargins());
        return;
    }
    m_plot->yAxis2->setTicker(textTicker(m_rowAnnotations, m_ticks.rowStride, true));
    // A column of its own: room above the axis rectangle for the header, and a clear gap between the
    // wider of header and statistics and the colour bar.
    const QFontMetrics labels(m_plot->yAxis2->tickLabelFont());
    int widest = 0;
    for (int i = 0; i < m_rowAnnotations.size(); i += std::max(1, m_ticks.rowStride))
        widest = std::max(widest, labels.horizontalAdvance(m_rowAnnotations.at(i)));
    const QFontMetrics header(m_annotationHeader->font());
    const QRect headerRect = header.boundingRect(QRect(0, 0, 1000, 1000), Qt::AlignLeft, m_annotationTitle);
    const int column = tickLabelPadding + 3 + widest;
    const int headerWidth = headed ? tickLabelPadding + headerRect.width() : 0;
    m_plot->plotLayout()->setColumnSpacing(std::max(0, headerWidth - column) + 16);
    // The first row's label reaches half a line above the axis rectangle: the header stands above it.
    const int halfLine = labels.height() / 2 + 2;
    m_annotationHeader->setPadding(QMargins(tickLabelPadding, 0, 0, halfLine));
    m_plot->axisRect()->setMinimumMargins(QMargins(0, headed ? headerRect.height() + halfLine + 2 : 0, 0, 0));
}

void Heatmap::setHighlight(int row, int column)
{
    m_highlight = {row, column};
    updateHighlight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool Heatmap::showsSelectionBands() const
{
    return m_rowBand->visible() && m_columnBand->visible();
}

void Heatmap::updateHighlight()
{
    const auto [row, column] = m_highlight;
    const Index rows = m_values.rows(), columns = m_values.cols();
    const bool shown = !m_selectionHidden && (row >= 0 || column >= 0) && row < rows && column < columns &&
                       rows > 0 && columns > 0;
    m_highlightRect->setVisible(shown);
    m_rowBand->setVisible(shown && row >= 0 && column >= 0);
    m_columnBand->setVisible(shown && row >= 0 && column >= 0);
    if (!shown)
        return;
    const double lastColumn = static_cast<double>(columns) - 0.5;
    const double lastRow = static_cast<double>(rows) - 0.5;
    // The outline is at least minimumMark pixels across, centred on the cell, however small the cells.
    constexpr double minimumMark = 9.0;
    const QRect rect = m_plot->axisRect()->rect();
    const double cellWidth = rect.width() > 0 ? rect.width() / m_plot->xAxis->range().size() : 1.0;
    const double cellHeight = rect.height() > 0 ? rect.height() / m_plot->yAxis->range().size() : 1.0;
    const double growX = std::max(0.0, (minimumMark / cellWidth - 1.0) / 2.0);
    const double growY = std::max(0.0, (minimumMark / cellHeight - 1.0) / 2.0);
    const double left = column >= 0 ? column - 0.5 - growX : -0.5;
    const double right = column >= 0 ? column + 0.5 + growX : lastColumn;
    const double top = row >= 0 ? row - 0.5 - growY : -0.5;
    const double bottom = row >= 0 ? row + 0.5 + growY : lastRow;
    m_highlightRect->topLeft->setCoords(left, top);
    m_highlightRect->bottomRight->setCoords(right, bottom);
    m_rowBand->topLeft->setCoords(-0.5, row - 0.5);
    m_rowBand->bottomRight->setCoords(lastColumn, row + 0.5);
    m_columnBand->topLeft->setCoords(column - 0.5, -0.5);
    m_columnBand->bottomRight->setCoords(column + 0.5, lastRow);
}

} // namespace qkv::ui
