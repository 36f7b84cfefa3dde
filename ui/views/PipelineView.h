// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The pipeline canvas: the whole computation of the current head on one canvas, in the order of the formula.

#include "EigenTypes.h"
#include "Figure.h"
#include "PipelineLayout.h"
#include "PipelineStages.h"
#include "PlotFigure.h"

#include <QFont>
#include <QList>
#include <QPixmap>
#include <QRectF>
#include <QRegion>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <utility>
#include <vector>

namespace qkv::ui {

class Document;

/// Every stage of the current head as a small heatmap with its title and shape, left to right in the order
/// of the formula (wrapping onto more lines when the canvas is narrow): X (and Z) with W_Q, W_K, W_V → Q, K,
/// V → scores → scaled → masked → weights → head output, then concat and W_O → final output when there are
/// several heads or W_O. The operator is written on the arrow into each stage. The document's selected
/// query row and key column are highlighted in every stage; clicking a cell selects it. Values are written
/// in the cells when they fit, token labels when they fit, colour only beyond. Only draws: every number is
/// the document's. A hidden canvas does no work until it is shown (or exported).
class PipelineView : public QWidget, public Figure, public StyledCanvas {
    Q_OBJECT
public:
    /// What a stage's rows and columns are: both token sides (X in self-attention), queries, keys, queries ×
    /// keys, or parameter dimensions.
    using Indices = StageIndices;

    explicit PipelineView(Document* document, QWidget* parent = nullptr);
    ~PipelineView() override;

    /// False while the canvas is hidden and the result changed since it was last built (it builds when shown,
    /// drawn or asked for its stages).
    bool isUpToDate() const { return !m_dirty; }

    // What is shown (built from the newest result, on demand while hidden), for tests and export.
    /// The stages in formula order: "X", "X+PE" (sinusoidal or learned positions), "Z", "Z+PE", "W_Q", "Q",
    /// "W_K", "K", "W_V", "V", "scores", "scaled", "masked", "weights", "output", "concat", "W_O", "final"
    /// (those that exist); empty without a result.
    QStringList stageNames() const;
    /// The stage's caption: its title and shape ("Q  3×3").
    QString stageCaption(const QString& stage) const;
    /// The operator written on the arrow into the stage ("Q·Kᵀ", "softmax\n÷ τ = 1"); "" when none.
    QString stageOperator(const QString& stage) const;
    /// Rows × columns of the stage; (0, 0) for an unknown stage.
    std::pair<Index, Index> stageShape(const QString& stage) const;
    /// The numbers the stage shows (an empty matrix for an unknown stage).
    const Matrix& stageValues(const QString& stage) const;
    bool isMasked(const QString& stage, Index row, Index column) const;
    /// The colour the stage gives a cell (beyond imageLimit cells a side, that of the cell sampled for it);
    /// invalid for an unknown stage or cell. The weights of more than 32 query rows are coloured per row:
    /// from 0 to the row's largest weight.
    QColor stageColour(const QString& stage, Index row, Index column) const;
    Indices stageIndices(const QString& stage) const;
    /// The stages the last build coloured; the others kept the image of the build before (they show the
    /// same numbers) or share the stage before them's.
    QStringList recolouredStages() const;
    /// What the last repaint on screen painted again (in widget pixels): the cells of the stages that changed
    /// colour, or everything.
    QRegion lastRepaintedRegion() const { return m_lastRepainted; }
    /// The highlighted row and column of the stage (−1: none): the selected query and/or key in its terms.
    std::pair<int, int> stageHighlight(const QString& stage) const;

    // As laid out for the widget's size.
    /// Whether any stage writes its values in its cells.
    bool showsCellValues() const;
    /// Whether token labels are written beside the stages.
    bool showsTokenLabels() const;
    /// The text written in a cell ("" when its stage writes no values).
    QString cellText(const QString& stage, Index row, Index column) const;
    /// Where a cell is drawn, in widget coordinates (empty for an unknown stage or cell).
    QRectF cellRect(const QString& stage, Index row, Index column) const;
    /// How a value is written in a cell: whole numbers as integers ("1", "-2"), others as the heatmaps write
    /// them (Heatmap::formatValue, 3 decimals).
    static QString valueText(double value);
    /// The font cell values are written in.
    QFont cellFont() const;
    /// Where the token labels are drawn, in widget coordinates.
    QList<QRectF> drawnLabelRects() const;
    /// What the tooltip over a cell says: "X [‘cat’, ‘noun’] = 1" (rows and columns named by token or by
    /// d_model dimension where the stage has them, else by index).
    QString cellDescription(const QString& stage, Index row, Index column) const;
    /// Where each stage's matrix and caption are drawn.
    QRectF stageRect(const QString& stage) const;
    QRectF captionRect(const QString& stage) const;
    /// The stage's title as its caption draws it, and in what font: written smaller, down to seven tenths of
    /// the size, before it is elided.
    std::pair<QString, QFont> captionTitle(const QString& stage) const;

    /// The screen's colours and text size (the palette's, presentation mode's): exported figures stay black
    /// on white at their own size.
    void setPlotStyle(const PlotStyle& style) override;

    QString figureName() const override { return QStringLiteral("pipeline"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    /// A slide: 1600 × 900.
    QSize defaultFigureSize() const override { return {1600, 900}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    void onResultChanged();
    void ensureBuilt() const;
    void rebuild() const;
    void updateLayout();
    /// The stage named `name` and its tile as laid out for the widget (null when unknown or not laid out).
    const PipelineStage* stage(const QString& name) const;
    const PipelineTile* tile(const QString& name) const;
    bool cellAt(const QPointF& position, int* stage, Index* row, Index* column) const;

    Document* m_document;
    // Built by rebuild() (from const methods too: a hidden canvas builds when it is first drawn or exported).
    mutable bool m_dirty = true;
    mutable PipelineStages m_stages;
    PipelineLayout m_layout; // for the widget's size
    PlotStyle m_style;
    // The canvas as last painted on screen: a repaint that changes nothing (a grab, a window uncovered, a
    // neighbour's repaint) copies it instead of laying out every label again. Any rebuild, layout or
    // selection change marks it stale.
    QPixmap m_painted;
    mutable bool m_paintedStale = true;
    // What m_painted shows. When a new result changed only some stages' colours (an edit of W_Q leaves X,
    // W_K, K, W_V and V as they were), the repaint is clipped to those stages' cells; anything else (layout,
    // labels, header, captions, selection, style) paints everything again.
    struct PaintedStage {
        QRectF area; // the cells
        QRectF caption;
        QRectF arrow;
        QString title;
        QString operatorTop;
        QString operatorBottom;
        qint64 image = 0;
        std::pair<int, int> highlight;
        bool cellText = false;
    };
    struct PaintedCanvas {
        QString header;
        QString message;
        QStringList labels; // queries, keys and both sides' dimensions
        QRectF headerBox;
        std::vector<PaintedStage> stages;
    };
    PaintedCanvas paintedCanvas() const;
    /// The region to paint again to show `now` where m_paintedCanvas was shown; everything when more than
    /// the cells of some stages changed.
    QRegion changedRegion(const PaintedCanvas& now) const;
    PaintedCanvas m_paintedCanvas;
    bool m_paintsEverything = true; // the next repaint: after a style change or on a new pixmap
    QRegion m_lastRepainted;
};

} // namespace qkv::ui
