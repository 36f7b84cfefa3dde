// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where the pipeline canvas draws each stage for a given size: its cells, caption, arrow and labels.

#include "HeatmapTicks.h"

#include <QColor>
#include <QFont>
#include <QRect>
#include <QRectF>
#include <QSize>

#include <vector>

namespace qkv::ui {

struct PipelineStage;
class PipelineStages;

/// Where one stage is drawn.
struct PipelineTile {
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

/// The canvas laid out for one size: a tile per stage, the title line, the fonts and the colours of text.
struct PipelineLayout {
    QSize size;
    QRectF header;
    std::vector<PipelineTile> tiles; // one per stage
    QFont font;
    QFont cellFont;
    bool labels = false;
    double columnLabelOffset = 0; // below the cells, before the key labels
    QColor ink{Qt::black};        // text, arrows
    QColor muted{90, 90, 90};     // shapes, operator details

    /// Pixels around the canvas.
    static constexpr double margin = 10;

    /// Lays the stages out left to right in formula order, wrapping onto as many lines as make the cells
    /// largest, in `font` (see PipelineLayout.cpp).
    static PipelineLayout lay(const PipelineStages& stages, QSize size, const QFont& font);
    /// The widget's font in pixels (the canvas is measured in device-independent pixels on every device), a
    /// little larger on large canvases (a slide).
    static QFont canvasFont(const QFont& base, QSize size);
    /// Where the stage's cells are drawn in its tile.
    static QRectF cellArea(const PipelineStage& stage, const PipelineTile& tile);
    /// What a repaint of a stage's cells paints: the cells and a pixel around them, in whole pixels.
    static QRect repaintRect(const QRectF& cells);
};

} // namespace qkv::ui
