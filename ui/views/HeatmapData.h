// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a heatmap shows and how its numbers become colours: the matrix, its mask and labels, the colour mode,
// map and scale, the colour range, and the cells handed to the plot's colour map.

#include "EigenTypes.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <utility>

class QCPColorMap;
class QCPColorScale;
class QCPRange;
class QSize;

namespace qkv::ui {

/// Sequential: viridis from the smallest to the largest value. Diverging: blue–white–red, symmetric about 0.
/// Binary: two colours with a two-entry legend (a mask: 0 masked, 1 allowed).
enum class HeatmapColorMode { Sequential, Diverging, Binary };
/// The colours of a sequential map: viridis, cividis (colour-vision safe), greyscale (print).
enum class HeatmapColorMap { Viridis, Cividis, Greyscale };
/// How values become colours (ignored by Binary maps). Linear: the colour map from the smallest value to the
/// largest. Logarithmic: from the smallest positive value to the largest. PerRow: each row divided by its own
/// largest magnitude (weights of long rows, whose largest weight is small, stay readable). Diverging:
/// blue–white–red, white at 0, symmetric about it.
enum class HeatmapColorScale { Linear, Logarithmic, PerRow, Diverging };

/// How a value is written in a cell and in the hover text: 3 decimals, or 3 significant digits from 10⁵ on.
QString formatCellValue(double value);

/// The matrix (shared with whoever made it, a result), its mask and labels, and its colouring. Knows nothing
/// of the widget: it fills the plot's colour map and colour bar it is given.
class HeatmapData {
public:
    HeatmapData();

    /// Shows `values` (null: nothing); labels that do not match the matrix's size are replaced by indices.
    void setValues(std::shared_ptr<const Matrix> values, const QStringList& rowLabels,
                   const QStringList& columnLabels);
    /// Cells where `allowed` is 0 are masked; null (or a mismatched shape) masks nothing.
    void setMask(std::shared_ptr<const MaskMatrix> allowed);
    /// Lets go of the matrix and mask (labels and colours stay).
    void release();

    const Matrix& shownValues() const { return *m_shownValues; }
    const Eigen::Map<const Matrix>& values() const { return m_values; }
    Index rows() const { return m_values.rows(); }
    Index columns() const { return m_values.cols(); }
    bool isEmpty() const { return m_values.size() == 0; }
    const QStringList& rowLabels() const { return m_rowLabels; }
    const QStringList& columnLabels() const { return m_columnLabels; }
    bool isMasked(Index row, Index column) const;
    /// How a value is written in a cell: a Binary map's as "0", "1", others by formatValue().
    QString cellString(double value) const;
    /// The factor a row is coloured by (the per-row scale), 1 otherwise.
    double rowFactor(Index row) const;

    HeatmapColorMode mode() const { return m_mode; }
    void setMode(HeatmapColorMode mode) { m_mode = mode; }
    HeatmapColorMap colorMap() const { return m_colorMap; }
    void setColorMap(HeatmapColorMap map) { m_colorMap = map; }
    HeatmapColorScale colorScale() const { return m_colorScale; }
    void setColorScale(HeatmapColorScale scale) { m_colorScale = scale; }
    /// Diverging for a Diverging map, Linear otherwise.
    HeatmapColorScale defaultScale() const;
    void setFixedRange(std::optional<std::pair<double, double>> range) { m_fixedRange = range; }
    const QString& colorBarLabel() const { return m_colorBarLabel; }
    void setColorBarLabel(const QString& label) { m_colorBarLabel = label; }
    /// What the colour bar says: the label, "÷ row maximum" when scaled per row.
    QString colorBarText() const;
    /// The values mapped to the two ends of the colour bar (as of the last applyColors()).
    std::pair<double, double> range() const { return m_range; }

    /// Gives `map` cell storage that fillColorMap() fills in one pass (the map owns it).
    static void prepareColorMap(QCPColorMap* map);
    /// The gradient, legend, range and scale type of the colour bar for the current values and settings.
    void applyColors(QCPColorScale* scale);
    /// Fills `map` with the cells shown (`rows` × `columns` of the axes, on `pixels`): all of them while each
    /// takes a pixel or more, else about one per pixel. `force` fills even when the cells it holds would
    /// not change (new values). True when it filled.
    bool fillColorMap(QCPColorMap* map, const QCPRange& rows, const QCPRange& columns, QSize pixels,
                      bool force);
    /// Forgets which cells the colour map holds: the next fill fills.
    void forgetColorMap();

private:
    bool shown(Index row, Index column) const;
    void computeRange(HeatmapColorScale scale, bool diverging);
    void fillCells(double* cells) const;

    std::shared_ptr<const Matrix> m_shownValues;
    std::shared_ptr<const MaskMatrix> m_shownMask;
    Eigen::Map<const Matrix> m_values{nullptr, 0, 0};
    Eigen::Map<const MaskMatrix> m_allowed{nullptr, 0, 0}; // empty: nothing masked
    QStringList m_rowLabels;
    QStringList m_columnLabels;
    HeatmapColorMode m_mode = HeatmapColorMode::Sequential;
    HeatmapColorMap m_colorMap = HeatmapColorMap::Viridis;
    HeatmapColorScale m_colorScale = HeatmapColorScale::Linear;
    Vector m_rowFactor; // PerRow: what each row is multiplied by before colouring; empty otherwise
    QString m_colorBarLabel;
    std::optional<std::pair<double, double>> m_fixedRange;
    std::pair<double, double> m_range{0.0, 1.0};
    /// Which cells the colour map holds: every step-th row and column from the first (all when steps are 1).
    struct Sampling {
        Index firstRow = 0, rowStep = 1, rows = 0;
        Index firstColumn = 0, columnStep = 1, columns = 0;
        friend bool operator==(const Sampling& a, const Sampling& b)
        {
            return a.firstRow == b.firstRow && a.rowStep == b.rowStep && a.rows == b.rows &&
                   a.firstColumn == b.firstColumn && a.columnStep == b.columnStep && a.columns == b.columns;
        }
    };
    Sampling m_sampling;
};

} // namespace qkv::ui
