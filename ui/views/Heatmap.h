// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The heatmap plot adapter: a matrix with labelled rows and columns, drawn by QCustomPlot with a colour bar.

#include "EigenTypes.h"
#include "Figure.h"
#include "HeatmapTicks.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>
#include <utility>

class QCustomPlot;
class QCPAxis;
class QCPColorMap;
class QCPRange;
class QCPColorScale;
class QCPItemRect;
class QCPItemText;
class QCPTextElement;
class QKeyEvent;
class QMenu;
class QScrollBar;
class QMouseEvent;
class QShowEvent;

namespace qkv::ui {

class HeatmapMenu;

/// One matrix as a grid of coloured cells: row 0 at the top, row labels down the left, column labels along
/// the bottom, a colour bar on the right, and each cell's value written in it when the cells are large
/// enough. Only draws: the numbers arrive finished.
class Heatmap : public QWidget, public Figure {
    Q_OBJECT
public:
    /// Sequential: viridis from the smallest to the largest value. Diverging: blue–white–red, symmetric about
    /// 0.
    /// Binary: two colours with a two-entry legend (a mask: 0 masked, 1 allowed).
    enum class ColorMode { Sequential, Diverging, Binary };
    /// The colours of a sequential map: viridis, cividis (colour-vision safe), greyscale (print).
    enum class ColorMap { Viridis, Cividis, Greyscale };
    /// How values become colours (chosen from the context menu; ignored by Binary maps). Linear: the colour
    /// map from the smallest value to the largest. Logarithmic: from the smallest positive value to the
    /// largest. PerRow: each row divided by its own largest magnitude (weights of long rows, whose largest
    /// weight is small, stay readable). Diverging: blue–white–red, white at 0, symmetric about it.
    enum class ColorScale { Linear, Logarithmic, PerRow, Diverging };

    explicit Heatmap(QWidget* parent = nullptr);
    ~Heatmap() override;

    /// Shows `values`; labels that do not match the matrix's size are replaced by indices. An empty matrix
    /// shows an empty plot.
    void setMatrix(const Matrix& values, const QStringList& rowLabels, const QStringList& columnLabels);
    /// The same for a matrix the heatmap shares instead of copying (one of a result's, kept alive by an
    /// aliasing pointer to the result); null shows an empty plot.
    void setMatrix(std::shared_ptr<const Matrix> values, const QStringList& rowLabels,
                   const QStringList& columnLabels);
    /// Empties the plot (nothing to show, for example when the engine refused the session).
    void clear();
    void setTitle(const QString& title);
    /// Axis titles, also used by the hover text ("query ‘I’ → key ‘love’: 0.707").
    void setAxisTitles(const QString& rows, const QString& columns);
    /// Also sets the colour scale: Diverging for a Diverging map, Linear otherwise.
    void setColorMode(ColorMode mode);
    void setColorScale(ColorScale scale);
    ColorScale colorScale() const { return m_colorScale; }
    /// Also chosen from the heatmap's context menu.
    void setColorMap(ColorMap map);
    ColorMap colorMap() const { return m_colorMap; }
    /// setColorScale(Logarithmic), or back to the map's default scale.
    void setLogarithmic(bool logarithmic);
    bool isLogarithmic() const { return m_colorScale == ColorScale::Logarithmic; }
    /// What the colours measure ("weight", "score"), written along the colour bar.
    void setColorBarLabel(const QString& label);
    /// Fixes the colour range (weights: 0 to 1) instead of following the data.
    void setFixedRange(double lower, double upper);
    void clearFixedRange();
    /// Cells where `allowed` is 0 are drawn grey, distinct from any value; null (or a mismatched shape)
    /// masks nothing. The mask is copied.
    void setMasked(const MaskMatrix* allowed);
    /// The same for a mask the heatmap shares instead of copying.
    void setMasked(std::shared_ptr<const MaskMatrix> allowed);
    /// Lets go of the matrix and mask while hidden, for an owner that sets newer ones before it is shown
    /// again (OnScreenRefresh), so that a stale tab keeps no old result alive. Labels, zoom and colours stay.
    void releaseMatrix();

    /// The plot, for export.
    QCustomPlot* plot() const { return m_plot; }

    // What is shown, for tests and export.
    const Matrix& values() const { return *m_shownValues; }
    QStringList rowLabels() const { return m_rowLabels; }
    QStringList columnLabels() const { return m_columnLabels; }
    QString title() const { return m_title; }
    ColorMode colorMode() const { return m_mode; }
    bool isMasked(Index row, Index column) const;
    /// The values mapped to the two ends of the colour bar.
    std::pair<double, double> colorRange() const { return m_range; }
    /// Whether cell values are written in the cells shown (decided at the last replot): when the cells on
    /// screen are large enough for them, at any matrix size (zoom in on a large matrix to read its numbers).
    bool showsCellValues() const { return m_cellTextShown; }
    /// The text written in a cell ("" when values are not shown, the cell is out of view or masked).
    QString cellText(Index row, Index column) const;
    /// The tick labels drawn at the last layout (row labels, row annotations, column labels): where each
    /// one's text lies, in this widget's coordinates.
    QList<QRectF> drawnTickLabelRects() const;
    /// Which tick labels are written (as of the last layout).
    TickPlan tickPlan() const { return m_ticks; }
    /// The hover text of a cell.
    QString cellDescription(Index row, Index column) const;
    /// The centre of a cell in this widget's coordinates (as of the last replot).
    QPoint cellCentre(Index row, Index column) const;
    /// How a value is written in a cell and in the hover text (3 decimals; a Binary map's cells: "0", "1").
    static QString formatValue(double value);

    // Figure: the plot alone, laid out (tick labels, cell values) for the export size; the selection outline
    // is left out. The widget itself may be hidden and keeps its on-screen layout.
    /// The name for export and files ("weights"); set by the owner.
    void setFigureName(const QString& name) { m_figureName = name; }
    QString figureName() const override { return m_figureName; }
    QString figureTitle() const override { return m_title; }
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    /// Large enough for the cell values of small matrices, growing with the matrix up to a page.
    QSize defaultFigureSize() const override;

    /// Text at the right end of each row (the weights' entropy and support), a column of its own with
    /// `title` as its header above it (apart from the colour bar); empty hides it.
    void setRowAnnotations(const QStringList& annotations, const QString& title = QString());
    QStringList rowAnnotations() const { return m_rowAnnotations; }
    /// The header of the row annotations' column.
    QString rowAnnotationTitle() const { return m_annotationTitle; }
    /// Outlines the selected cell (at least a few pixels across, however small the cells) and lays
    /// translucent bands over its row and column; −1 for the row or column outlines the whole column or row;
    /// (−1, −1) shows no selection.
    void setHighlight(int row, int column);
    std::pair<int, int> highlight() const { return m_highlight; }
    /// Shows the whole matrix (Ctrl+0).
    void fitToView();
    /// Scales the rows and columns shown by `factor` (0.5: zoom in twice, Ctrl++; 2: out, Ctrl+−) about the
    /// selected cell when it is in view. The mouse wheel and a touchpad pinch zoom about the pointer, a drag
    /// pans.
    void zoomBy(double factor);
    /// The row and column coordinates shown (cell i spans i − 0.5 to i + 0.5).
    std::pair<double, double> visibleRows() const;
    std::pair<double, double> visibleColumns() const;
    /// Whether the selected row and column are shown as bands (a cell is selected).
    bool showsSelectionBands() const;
    /// Paintable (the Mask tab): a left drag across cells shows a rectangle and, on release, emits
    /// rectanglePainted(); Space emits it for the selected cell alone; Shift+drag pans. Not paintable: a drag
    /// pans.
    void setPaintable(bool paintable);
    bool isPaintable() const { return m_paintable; }
    /// The context menu's actions, by objectName: "colorScale_linear", "colorScale_logarithmic",
    /// "colorScale_perRow", "colorScale_diverging", "colorMap_viridis", "colorMap_cividis",
    /// "colorMap_greyscale", "zoomIn", "zoomOut", "zoomFit".
    QMenu* contextMenu() const;

signals:
    /// A cell was chosen: clicked, or reached with the arrow keys, Page Up/Down, Home/End.
    void cellClicked(int row, int column);
    /// A paintable heatmap was dragged from the anchor cell to (row, column), or Space was pressed on the
    /// selected cell (then both are that cell). The owner decides what painting does.
    void rectanglePainted(int anchorRow, int anchorColumn, int row, int column);
    /// Emitted before a figure of the heatmap is drawn, so that an owner that left it stale while hidden
    /// (OnScreenRefresh) can give it the newest matrix first.
    void aboutToRenderFigure();

protected:
    void showEvent(QShowEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    // Heatmap.cpp: the matrix in the colour map, its colours, and export.
    void rebuild(bool evenIfHidden = false);
    void renderAt(QPaintDevice* device, const QSize& size);
    void layOutFor(const QRect& viewport);
    /// The axis rectangle as last laid out (a guess before the first layout).
    QSize axisRectSize() const;
    void updateColors();
    void fillCells(double* cells) const;
    bool fillColorMap(bool force);
    ColorScale defaultScale() const;
    QString cellString(double value) const;
    // HeatmapLabels.cpp: tick labels, cell values, row statistics and the selection over the cells.
    void updateTickers();
    bool planTicksFor(QSize size, bool settling);
    void afterLayout();
    void updateCellTexts();
    void removeCellTexts();
    void updateRowAnnotations();
    void updateHighlight();
    // HeatmapInteraction.cpp: mouse, keys, zoom, pan, scroll bars and the paint drag.
    void setUpInteraction();
    void keepInMatrix(QCPAxis* axis, const QCPRange& range);
    bool cellAt(const QPoint& position, Index* row, Index* column) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void updatePaintRect();
    void updateScrollBar(QScrollBar* bar, Index count, const QCPRange& range);

    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    QCPTextElement* m_titleElement;
    QList<QCPItemText*> m_cellTexts; // row-major, created only while the cells are large enough

    // The matrix and mask shown, shared with whoever made them (a result): read through the maps below.
    std::shared_ptr<const Matrix> m_shownValues = std::make_shared<const Matrix>();
    std::shared_ptr<const MaskMatrix> m_shownMask;
    Eigen::Map<const Matrix> m_values{nullptr, 0, 0};
    Eigen::Map<const MaskMatrix> m_allowed{nullptr, 0, 0}; // empty: nothing masked
    QStringList m_rowLabels;
    QStringList m_columnLabels;
    QString m_title;
    QString m_rowTitle;
    QString m_columnTitle;
    ColorMode m_mode = ColorMode::Sequential;
    ColorMap m_colorMap = ColorMap::Viridis;
    ColorScale m_colorScale = ColorScale::Linear;
    Vector m_rowFactor; // PerRow: what each row is multiplied by before colouring; empty otherwise
    QString m_colorBarLabel;
    HeatmapMenu* m_menu = nullptr;
    bool m_paintable = false;
    std::pair<int, int> m_paintAnchor{-1, -1}; // the first cell of a paint drag; (−1, −1): not painting
    std::pair<int, int> m_paintCorner{-1, -1};
    bool m_paintMoved = false; // the drag left its first cell: a click alone only selects
    QCPItemRect* m_paintRect = nullptr;
    QScrollBar* m_horizontalScroll = nullptr; // shown while zoomed in ("heatmapHorizontalScroll")
    QScrollBar* m_verticalScroll = nullptr;   // "heatmapVerticalScroll"
    bool m_updatingScrollBars = false;
    std::pair<Index, Index> m_cellTextFirst{0, 0}; // the first row and column of the cells written
    Index m_cellTextColumns = 0;                   // columns of the window of cells written
    std::optional<std::pair<double, double>> m_fixedRange;
    std::pair<double, double> m_range{0.0, 1.0};
    TickPlan m_ticks;            // which tick labels are written
    bool m_ticksPlanned = false; // m_ticks was planned for the current labels
    QSize m_ticksFor;            // the axis rectangle m_ticks was planned for
    bool m_cellTextShown = false;
    bool m_cellsPending = false; // hidden when the matrix arrived: the colour map is filled on show
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
    int m_relayouts = 0; // guards the re-layout after a tick-label change
    QString m_figureName;
    QStringList m_rowAnnotations;
    QCPItemRect* m_highlightRect = nullptr; // the selected cell's outline (the row or column alone: it)
    QCPItemRect* m_rowBand = nullptr;       // the selected cell's row and column across the matrix
    QCPItemRect* m_columnBand = nullptr;
    QCPItemText* m_annotationHeader = nullptr; // the row statistics' column header
    QString m_annotationTitle;
    bool m_selectionHidden = false;               // while exporting
    std::pair<Index, Index> m_shownShape{-1, -1}; // the zoom is kept while the shape stays
    std::pair<int, int> m_highlight{-1, -1};
};

} // namespace qkv::ui
