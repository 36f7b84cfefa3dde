// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The heatmap plot adapter: a matrix with labelled rows and columns, drawn by QCustomPlot with a colour bar.

#include "EigenTypes.h"
#include "Figure.h"
#include "HeatmapData.h"
#include "HeatmapTicks.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>
#include <memory>
#include <optional>
#include <utility>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QKeyEvent;
class QMenu;
class QScrollBar;
class QShowEvent;

namespace qkv::ui {

class HeatmapInteraction;
class HeatmapLabels;
class HeatmapMenu;
class HeatmapSelection;

/// One matrix as a grid of coloured cells: row 0 at the top, row labels down the left, column labels along
/// the bottom, a colour bar on the right, and each cell's value written in it when the cells are large
/// enough. Only draws: the numbers arrive finished. The widget assembles the parts that do each job: the
/// matrix and its colours (HeatmapData), the labels (HeatmapLabels), the selection's marks
/// (HeatmapSelection), the mouse and keys (HeatmapInteraction) and the context menu (HeatmapMenu).
class Heatmap : public QWidget, public Figure {
    Q_OBJECT
public:
    /// The enums of HeatmapData.h (chosen from the context menu).
    using ColorMode = HeatmapColorMode;
    using ColorMap = HeatmapColorMap;
    using ColorScale = HeatmapColorScale;

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
    ColorScale colorScale() const;
    /// Also chosen from the heatmap's context menu.
    void setColorMap(ColorMap map);
    ColorMap colorMap() const;
    /// setColorScale(Logarithmic), or back to the map's default scale.
    void setLogarithmic(bool logarithmic);
    bool isLogarithmic() const { return colorScale() == ColorScale::Logarithmic; }
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
    const Matrix& values() const;
    QStringList rowLabels() const;
    QStringList columnLabels() const;
    QString title() const { return m_title; }
    ColorMode colorMode() const;
    bool isMasked(Index row, Index column) const;
    /// The values mapped to the two ends of the colour bar.
    std::pair<double, double> colorRange() const;
    /// Whether cell values are written in the cells shown (decided at the last replot): when the cells on
    /// screen are large enough for them, at any matrix size (zoom in on a large matrix to read its numbers).
    bool showsCellValues() const;
    /// The text written in a cell ("" when values are not shown, the cell is out of view or masked).
    QString cellText(Index row, Index column) const;
    /// The tick labels drawn at the last layout (row labels, row annotations, column labels): where each
    /// one's text lies, in this widget's coordinates.
    QList<QRectF> drawnTickLabelRects() const;
    /// Which tick labels are written (as of the last layout).
    TickPlan tickPlan() const;
    /// The hover text of a cell.
    QString cellDescription(Index row, Index column) const;
    /// Replaces the hover text of every cell by what `describe` says of it (an owner that knows more of a
    /// cell than its value); none goes back to the value with its row and column.
    void setCellDescriber(std::function<QString(Index row, Index column)> describe);
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
    QStringList rowAnnotations() const;
    /// The header of the row annotations' column.
    QString rowAnnotationTitle() const;
    /// Outlines the selected cell (at least a few pixels across, however small the cells) and lays
    /// translucent bands over its row and column; −1 for the row or column outlines the whole column or row;
    /// (−1, −1) shows no selection.
    void setHighlight(int row, int column);
    std::pair<int, int> highlight() const;
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
    bool isPaintable() const;
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
    void setUpAxesAndColorBar();
    void rebuild(bool evenIfHidden = false);
    void updateColors();
    /// The cells shown, as many as the pixels they have need (HeatmapData::fillColorMap).
    bool fillColorMap(bool force);
    void afterLayout();
    void renderAt(QPaintDevice* device, const QSize& size);
    void layOutFor(const QRect& viewport);
    void replotSoon();

    QCustomPlot* m_plot;
    QScrollBar* m_horizontalScroll; // shown while zoomed in ("heatmapHorizontalScroll")
    QScrollBar* m_verticalScroll;   // "heatmapVerticalScroll"
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPTextElement* m_titleElement = nullptr;
    HeatmapData m_data;
    std::unique_ptr<HeatmapLabels> m_labels;
    std::unique_ptr<HeatmapSelection> m_selection;
    HeatmapInteraction* m_interaction = nullptr;
    HeatmapMenu* m_menu = nullptr;
    QString m_title;
    QString m_rowTitle;
    QString m_columnTitle;
    QString m_figureName;
    std::function<QString(Index, Index)> m_describeCell;
    bool m_cellsPending = false; // hidden when the matrix arrived: the colour map is filled on show
    std::pair<Index, Index> m_shownShape{-1, -1}; // the zoom is kept while the shape stays
};

} // namespace qkv::ui
