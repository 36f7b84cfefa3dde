// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The logit lens as a grid: one row per layer (the residual entering it, read through the final norm and the
// unembedding; the model's output at the top), one column per position, each cell naming its most probable
// token and coloured by that token's probability, or by the answer's when one is chosen. Only draws: the lens
// arrives computed (LensDisplay). Wide grids scroll; only the cells in view are painted.

#include "Figure.h"
#include "LogitLens.h"

#include <QAbstractScrollArea>
#include <QHash>
#include <QString>
#include <QStringList>

#include <memory>

namespace qkv::ui {

/// Everything the view draws, finished.
struct LensDisplay {
    std::shared_ptr<const LogitLens> lens; ///< null: nothing to draw (see message)
    QStringList tokens;                    ///< the input tokens' labels, one per position
    QHash<qint64, QString> labels;         ///< the label of every token id the cells name
    QString answerLabel;                   ///< the answer's label, when the lens has one
    QString title;                         ///< the model and its text
    QString message;                       ///< shown instead of the grid when not empty
};

class LensView : public QAbstractScrollArea, public Figure {
    Q_OBJECT
public:
    explicit LensView(QWidget* parent = nullptr);
    ~LensView() override;

    void setDisplay(LensDisplay display);
    const LensDisplay& display() const { return m_display; }

    /// The lens's rows (layers + 1) and columns (positions); 0 without a lens.
    int layerCount() const;
    int positionCount() const;
    /// What a cell's colour measures: the top token's probability, or the answer's.
    double cellValue(int layer, int position) const;
    /// The cell's most probable token, unelided ("" outside the grid).
    QString cellToken(int layer, int position) const;
    /// The hover text of a cell: its layer and position, the top tokens with their probabilities, and the
    /// answer's probability and rank.
    QString cellDescription(int layer, int position) const;
    /// Where a cell lies on the viewport as of the last layout (empty when it is scrolled out of view).
    QRect cellRect(int layer, int position) const;
    /// The row label of a layer: "L0" …, "output" for the last.
    QString layerLabel(int layer) const;

    QString figureName() const override { return QStringLiteral("lens"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void scrollContentsBy(int dx, int dy) override;
    bool viewportEvent(QEvent* event) override;

private:
    struct Layout;
    /// Where everything goes in `size`: fitted (a figure: every cell, however small) or on screen (cells
    /// at least large enough for a short token, scrolled by the scroll bars).
    Layout layoutFor(const QSize& size, bool fitted) const;
    void paint(QPainter& painter, const Layout& layout) const;
    void paintCells(QPainter& painter, const Layout& layout) const;
    void paintColorBar(QPainter& painter, const Layout& layout) const;
    void updateScrollBars();
    /// The layer and position under a point of the viewport; (−1, −1) outside the cells.
    std::pair<int, int> cellAt(const QPoint& point) const;

    LensDisplay m_display;
};

} // namespace qkv::ui
