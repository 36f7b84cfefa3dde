// SPDX-License-Identifier: GPL-3.0-or-later
#include "Heatmap.h"

#include "ColorScale.h"
#include "HeatmapMenu.h"
#include "HeatmapTicks.h"
#include "LabelText.h"
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QGridLayout>
#include <QScrollBar>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qkv::ui {

namespace {

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
    setUpInteraction();

    rebuild();
}

Heatmap::~Heatmap() = default;

QMenu* Heatmap::contextMenu() const
{
    return m_menu;
}

QSize Heatmap::axisRectSize() const
{
    const QRect rect = m_plot->axisRect()->rect();
    if (rect.width() > 10 && rect.height() > 10)
        return rect.size();
    // Not laid out yet: a guess that the next layout corrects.
    return QSize(std::max(50, m_plot->width() - 120), std::max(50, m_plot->height() - 90));
}

Heatmap::ColorScale Heatmap::defaultScale() const
{
    return m_mode == ColorMode::Diverging ? ColorScale::Diverging : ColorScale::Linear;
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
    m_menu->refresh();
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
    m_menu->refresh();
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
    const QSize pixels = axisRectSize();
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
        if (!planTicksFor(axisRectSize(), pass > 0))
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

void Heatmap::setColorBarLabel(const QString& label)
{
    m_colorBarLabel = label;
    m_scale->axis()->setLabel(
        colorBarText(label, m_colorScale == ColorScale::PerRow && m_mode != ColorMode::Binary));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
