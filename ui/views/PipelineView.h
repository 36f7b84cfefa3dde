#pragma once
// The pipeline canvas: the whole computation of the current head on one canvas, in the order of the formula.

#include "ColorScale.h"
#include "EigenTypes.h"
#include "Figure.h"
#include "HeatmapTicks.h"
#include "PlotFigure.h"

#include <QFont>
#include <QImage>
#include <QList>
#include <QPixmap>
#include <QRectF>
#include <QRegion>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

class QPainter;

namespace qkv {
struct AttentionResult;
}

namespace qkv::ui {

class Document;

/// Every stage of the current head as a small heatmap with its title and shape, left to right in the order
/// of the formula (wrapping onto more lines when the canvas is narrow): X (and Z) with W_Q, W_K, W_V → Q, K,
/// V → scores → scaled → masked → weights → head output, then concat and W_O → final output when there are
/// several heads or W_O. The operator is written on the arrow into each stage. The document's selected
/// query row and key column are highlighted in every stage; clicking a cell selects it. Values are written
/// in the cells when they fit, token labels when they fit, colour only beyond. Only draws: every number is
/// the document's. A hidden canvas does no work until it is shown (or exported).
class PipelineView : public QWidget, public Figure {
    Q_OBJECT
public:
    /// What a stage's rows and columns are: both token sides (X in self-attention), queries, keys, queries ×
    /// keys, or parameter dimensions.
    enum class Indices { Tokens, QueryRows, KeyRows, QueryKey, Parameters };

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
    /// The stage's title as its caption draws it, and in what font: smaller (to 70 %) before elided.
    std::pair<QString, QFont> captionTitle(const QString& stage) const;

    /// The screen's colours and text size (the palette's, presentation mode's): exported figures stay black
    /// on white at their own size.
    void setPlotStyle(const PlotStyle& style);

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
    struct Stage {
        QString name;
        QString title;
        QString operatorTop; // above the arrow into the stage ("" and "": no arrow, a small gap)
        QString operatorBottom;
        Indices indices = Indices::Parameters;
        const Matrix* values = nullptr;
        const MaskMatrix* allowed = nullptr; // cells where it is 0 are grey
        QString maskedText;                  // written in masked cells
        Palette palette = Palette::Diverging;
        double lower = -1.0;
        double upper = 1.0;
        bool perRow = false; // each row coloured from 0 to its largest value (lower and upper unused)
        QImage image;        // one pixel per cell (every k-th cell beyond imageLimit)
        bool hasArrow() const { return !operatorTop.isEmpty() || !operatorBottom.isEmpty(); }
    };
    struct Tile {
        QRectF matrix; // the cells
        QRectF caption;
        QRectF arrow; // the gap before the stage
        double cellWidth = 0;
        double cellHeight = 0;
        bool rowLabels = false;
        bool columnLabels = false;
        TickPlan ticks;
        bool cellText = false;
        bool operatorInCaption = false; // the stage starts a line: no arrow into it
    };
    struct Layout {
        QSize size;
        QRectF header;
        std::vector<Tile> tiles; // one per stage
        QFont font;
        QFont cellFont;
        bool labels = false;
        double columnLabelOffset = 0; // below the cells, before the key labels
        QColor ink{Qt::black};        // text, arrows
        QColor muted{90, 90, 90};     // shapes, operator details
    };

    void onResultChanged();
    void ensureBuilt() const;
    void rebuild() const;
    void updateLayout();
    int stageIndex(const QString& name) const;
    Layout layOut(QSize size, const QFont& font) const;
    void paint(QPainter& painter, const Layout& layout) const;
    void paintHeader(QPainter& painter, const Layout& layout) const;
    void paintStage(QPainter& painter, const Stage& stage, const Tile& tile, const Layout& layout) const;
    /// Where the stage's cells are drawn in its tile.
    static QRectF cellArea(const Stage& stage, const Tile& tile);
    /// What a repaint of a stage's cells paints: the cells and a pixel around them, in whole pixels.
    static QRect repaintRect(const QRectF& cells);
    static std::pair<QString, QFont> fittedTitle(const Stage& stage, const Tile& tile, const Layout& layout);
    void paintHighlight(QPainter& painter, const Stage& stage, const Tile& tile) const;
    void paintArrow(QPainter& painter, const Stage& stage, const Tile& tile, const Layout& layout) const;
    static QString captionOperator(const Stage& stage);
    QStringList rowLabelsOf(const Stage& stage) const;
    QStringList columnLabelsOf(const Stage& stage) const;
    bool cellAt(const QPointF& position, int* stage, Index* row, Index* column) const;

    Document* m_document;
    // Built by rebuild() (from const methods too: a hidden canvas builds when it is first drawn or exported).
    mutable bool m_dirty = true;
    mutable std::shared_ptr<const AttentionResult> m_result;
    mutable Matrix m_X, m_Z, m_WQ, m_WK, m_WV, m_WO; // the session's, as the result was computed from
    mutable std::vector<Stage> m_stages;
    mutable QStringList m_recoloured;
    mutable QStringList m_queries;
    mutable QStringList m_keys;
    mutable QStringList m_queryDims; // X's d_model dimensions: X's columns, W_Q's rows
    mutable QStringList m_keyDims;   // the key side's: Z's columns, W_K's and W_V's rows
    mutable QString m_header;
    mutable QString m_message; // why there is nothing to show
    Layout m_layout;           // for the widget's size
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
