// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapData.h"

#include "ColorScale.h"
#include "LabelText.h"

#include <qcustomplot.h>

#include <QCoreApplication>

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

QString tr(const char* text)
{
    return QCoreApplication::translate("qkv::ui::Heatmap", text);
}

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

// An extent symmetric about 0 for a diverging map (−1 to 1 when everything is 0).
std::pair<double, double> symmetric(double lowest, double highest)
{
    const double extent = std::max(std::abs(lowest), std::abs(highest));
    return extent > 0 ? std::make_pair(-extent, extent) : std::make_pair(-1.0, 1.0);
}

} // namespace

QString formatCellValue(double value)
{
    if (!std::isfinite(value))
        return QString::number(value);
    const QString text =
        std::abs(value) >= 1e5 ? QString::number(value, 'g', 3) : QString::number(value, 'f', 3);
    return text == QLatin1String("-0.000") ? QStringLiteral("0.000") : text;
}

HeatmapData::HeatmapData() : m_shownValues(std::make_shared<const Matrix>()) {}

void HeatmapData::setValues(std::shared_ptr<const Matrix> values, const QStringList& rowLabels,
                            const QStringList& columnLabels)
{
    m_shownValues = values ? std::move(values) : std::make_shared<const Matrix>();
    // Eigen's way to point a Map at other data.
    new (&m_values)
        Eigen::Map<const Matrix>(m_shownValues->data(), m_shownValues->rows(), m_shownValues->cols());
    m_rowLabels = labelsOrIndices(rowLabels, m_values.rows());
    m_columnLabels = labelsOrIndices(columnLabels, m_values.cols());
}

void HeatmapData::setMask(std::shared_ptr<const MaskMatrix> allowed)
{
    m_shownMask = std::move(allowed);
    if (m_shownMask)
        new (&m_allowed)
            Eigen::Map<const MaskMatrix>(m_shownMask->data(), m_shownMask->rows(), m_shownMask->cols());
    else
        new (&m_allowed) Eigen::Map<const MaskMatrix>(nullptr, 0, 0);
}

void HeatmapData::release()
{
    m_shownValues = std::make_shared<const Matrix>();
    m_shownMask.reset();
    new (&m_values) Eigen::Map<const Matrix>(nullptr, 0, 0);
    new (&m_allowed) Eigen::Map<const MaskMatrix>(nullptr, 0, 0);
    m_sampling = Sampling();
}

bool HeatmapData::isMasked(Index row, Index column) const
{
    return m_allowed.rows() == m_values.rows() && m_allowed.cols() == m_values.cols() && row >= 0 &&
           column >= 0 && row < m_allowed.rows() && column < m_allowed.cols() && m_allowed(row, column) == 0;
}

// A mask is 0 or 1: written as such, not as "1.000".
QString HeatmapData::cellString(double value) const
{
    return m_mode == HeatmapColorMode::Binary ? QString::number(value) : formatCellValue(value);
}

double HeatmapData::rowFactor(Index row) const
{
    return m_rowFactor.size() == m_values.rows() ? m_rowFactor(row) : 1.0;
}

HeatmapColorScale HeatmapData::defaultScale() const
{
    return m_mode == HeatmapColorMode::Diverging ? HeatmapColorScale::Diverging : HeatmapColorScale::Linear;
}

// What the colour bar measures; scaled per row, a fraction of each row's largest.
QString HeatmapData::colorBarText() const
{
    if (m_colorScale != HeatmapColorScale::PerRow || m_mode == HeatmapColorMode::Binary)
        return m_colorBarLabel;
    return m_colorBarLabel.isEmpty() ? tr("÷ row maximum") : tr("%1 ÷ row maximum").arg(m_colorBarLabel);
}

bool HeatmapData::shown(Index row, Index column) const
{
    return !isMasked(row, column) && std::isfinite(m_values(row, column));
}

void HeatmapData::applyColors(QCPColorScale* colorBar)
{
    const bool binary = m_mode == HeatmapColorMode::Binary;
    const HeatmapColorScale scale = binary ? HeatmapColorScale::Linear : m_colorScale;
    // A signed map scaled per row stays diverging: each row from −1 to 1.
    const bool diverging = scale == HeatmapColorScale::Diverging ||
                           (scale == HeatmapColorScale::PerRow && m_mode == HeatmapColorMode::Diverging);
    QCPColorGradient gradient;
    if (binary)
        gradient = gradientOf(Palette::Binary);
    else if (diverging)
        gradient = gradientOf(Palette::Diverging);
    else
        gradient = gradientOf(m_colorMap == HeatmapColorMap::Cividis     ? Palette::Cividis
                              : m_colorMap == HeatmapColorMap::Greyscale ? Palette::Greyscale
                                                                         : Palette::Viridis);
    // A binary matrix has a two-entry legend, not a continuous bar.
    if (binary) {
        auto legend = QSharedPointer<QCPAxisTickerText>::create();
        legend->addTick(0.25, tr("masked (0)"));
        legend->addTick(0.75, tr("allowed (1)"));
        colorBar->axis()->setTicker(legend);
    } else if (colorBar->axis()->ticker().dynamicCast<QCPAxisTickerText>()) {
        colorBar->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(maskedCellColor());
    colorBar->setGradient(gradient);
    colorBar->axis()->setLabel(colorBarText());

    computeRange(scale, diverging);
    const bool logarithmic = scale == HeatmapColorScale::Logarithmic;
    colorBar->setDataScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logarithmic)
        colorBar->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else if (colorBar->axis()->ticker().dynamicCast<QCPAxisTickerLog>())
        colorBar->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    colorBar->setDataRange(QCPRange(m_range.first, m_range.second));
}

// The colour range (and the per-row factors) for the values shown.
void HeatmapData::computeRange(HeatmapColorScale scale, bool diverging)
{
    m_rowFactor.resize(0);
    if (scale == HeatmapColorScale::PerRow) {
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
        if (diverging)
            m_range = symmetric(m_range.first, m_range.second);
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
        if (diverging)
            m_range = symmetric(lowest, highest);
        else
            m_range = highest > lowest ? std::make_pair(lowest, highest)
                                       : std::make_pair(lowest - 0.5, lowest + 0.5);
    }
    // Logarithmic: from the smallest positive value shown (weights of causal maps at 256+ tokens span
    // decades that a linear scale paints one colour).
    if (scale == HeatmapColorScale::Logarithmic) {
        double smallest = std::numeric_limits<double>::infinity();
        for (Index i = 0; i < m_values.rows(); ++i)
            for (Index j = 0; j < m_values.cols(); ++j)
                if (shown(i, j) && m_values(i, j) > 0)
                    smallest = std::min(smallest, m_values(i, j));
        const double upper = m_range.second > 0 ? m_range.second : 1.0;
        const double lower = std::isfinite(smallest) && smallest < upper ? smallest : upper * 1e-3;
        m_range = {lower, upper};
    }
}

void HeatmapData::prepareColorMap(QCPColorMap* map)
{
    map->setData(new CellData(0, 0, QCPRange(0, 1), QCPRange(0, 1)), false); // owned by the map
}

bool HeatmapData::fillColorMap(QCPColorMap* map, const QCPRange& rows, const QCPRange& columns, QSize pixels,
                               bool force)
{
    Sampling s;
    sampleAxis(rows, m_values.rows(), pixels.height(), &s.firstRow, &s.rowStep, &s.rows);
    sampleAxis(columns, m_values.cols(), pixels.width(), &s.firstColumn, &s.columnStep, &s.columns);
    if (!force && s == m_sampling)
        return false;
    m_sampling = s;
    auto* cells = static_cast<CellData*>(map->data());
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

void HeatmapData::forgetColorMap()
{
    m_sampling = Sampling();
}

// The matrix row by row (the colour map's layout is Matrix's), masked cells NaN (drawn grey).
void HeatmapData::fillCells(double* cells) const
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

} // namespace qkv::ui
