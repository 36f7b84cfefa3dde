// SPDX-License-Identifier: GPL-3.0-or-later
#include "PipelineLayout.h"

#include "LabelText.h"
#include "PipelineStages.h"

#include <QFontMetrics>
#include <QFontMetricsF>
#include <QHash>

#include <algorithm>
#include <cmath>
#include <limits>

namespace qkv::ui {

namespace {

constexpr double margin = PipelineLayout::margin;
constexpr double lineGap = 10;          // between two lines of stages
constexpr double plainGap = 12;         // between two stages with no operator between them
constexpr double minimumArrow = 30;     // the shortest arrow
constexpr double minimumTextPixels = 9; // cell values smaller than this are not written
constexpr Index maximumLabelledTokens = 64;

QFont withPixels(QFont font, double pixels)
{
    font.setPixelSize(std::max(1, static_cast<int>(std::floor(pixels))));
    return font;
}

// Cells at most three times as wide as tall, but a stage at least a third as wide as its box is tall (4096
// tokens × 32 dimensions is a readable strip, not a line).
double cellWidthIn(double boxWidth, double boxHeight, double cellHeight, Index columns)
{
    const auto count = static_cast<double>(std::max<Index>(1, columns));
    return std::min(boxWidth / count, std::max(3 * cellHeight, std::min(boxWidth, boxHeight / 3) / count));
}

// Every stage gets the same box for a given number of stages per line: its cells as wide as the box allows,
// its rows as tall as the box (so stages with the same rows line up).
struct Candidate {
    int perLine = 1;
    double boxWidth = 0;
    double boxHeight = 0;
    double score = -1;
    double overflow = 0;
};

// The measurements every candidate layout shares, and the steps of the layout.
class Planner {
public:
    Planner(const PipelineStages& stages, PipelineLayout& layout)
        : m_stages(stages.stages()), m_all(stages), m_layout(layout), m_metrics(layout.font),
          m_boldMetrics(boldOf(layout.font)), m_count(static_cast<int>(m_stages.size()))
    {
    }

    void layOut();

private:
    static QFont boldOf(QFont font)
    {
        font.setBold(true);
        return font;
    }
    void measure();
    /// The width of `text` with every digit written as the font's widest digit: at least its own width, the
    /// same for every text of that pattern, measured once.
    double patternWidth(const QString& text);
    double overflowFor(double boxHeight) const;
    bool labelsRows(int s, int lineStart) const;
    double columnLabelHeight(bool verticalColumns, double offset) const;
    Candidate evaluate(int perLine, bool verticalColumns, double overflow) const;
    Candidate settle(int perLine, bool verticalColumns) const;
    Candidate best(bool verticalColumns) const;
    bool place(const Candidate& best, bool verticalColumns);
    void fitCellText();

    const std::vector<PipelineStage>& m_stages;
    const PipelineStages& m_all;
    PipelineLayout& m_layout;
    const QFontMetricsF m_metrics;
    const QFontMetricsF m_boldMetrics;
    const int m_count;
    double m_headerHeight = 0;
    Index m_tokenRows = 0;
    double m_labelWidth = 0; // the widest token label, as written
    double m_rowLabelWidth = 0;
    double m_captionHeight = 0;
    std::vector<double> m_gaps;   // before each stage: its arrow, or a small gap
    std::vector<double> m_widest; // each stage's widest value (infinite when there are too many to write)
    double m_basePixels = 0;
    double m_availableWidth = 0;
    double m_availableHeight = 0;
    QChar m_widestDigit;
    QHash<QString, double> m_patternWidths;
};

void Planner::layOut()
{
    const QSize size = m_layout.size;
    // The title line, on canvases tall enough to spare it (the window's Step by Step names the cell too).
    m_headerHeight = size.height() >= 360 ? m_boldMetrics.height() * 1.3 + 4 : 0.0;
    m_layout.header = QRectF(margin, margin, std::max(1.0, size.width() - 2 * margin), m_headerHeight);
    if (m_count == 0)
        return;
    measure();
    bool verticalColumns = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
        const bool needsVertical = place(best(verticalColumns), verticalColumns);
        if (!needsVertical || verticalColumns)
            break;
        verticalColumns = true; // lay out again with room for upright key labels
    }
    fitCellText();
}

void Planner::measure()
{
    const QStringList& queries = m_all.queries();
    const QStringList& keys = m_all.keys();
    m_tokenRows = std::max(queries.size(), keys.size());
    m_layout.labels = m_tokenRows > 0 && m_tokenRows <= maximumLabelledTokens;
    if (m_layout.labels) {
        for (const QStringList* labels : {&queries, &keys})
            for (const QString& label : *labels)
                m_labelWidth = std::max(m_labelWidth, m_metrics.horizontalAdvance(elidedLabel(label)));
    }
    m_rowLabelWidth = m_labelWidth + tickLabelPadding + 2;
    m_captionHeight = m_boldMetrics.height() + 4;
    m_gaps.resize(static_cast<std::size_t>(m_count));
    for (int s = 0; s < m_count; ++s) {
        const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
        m_gaps[static_cast<std::size_t>(s)] =
            stage.hasArrow()
                ? std::max(minimumArrow, std::max(m_metrics.horizontalAdvance(stage.operatorTop),
                                                  m_metrics.horizontalAdvance(stage.operatorBottom)) +
                                             12)
                : plainGap;
    }
    m_widest.assign(static_cast<std::size_t>(m_count), std::numeric_limits<double>::infinity());
    for (int s = 0; s < m_count; ++s) {
        const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
        const Matrix& values = *stage.values;
        if (values.size() > 4096 || m_tokenRows > maximumLabelledTokens) // beyond 64 tokens: colour only
            continue;
        // Shaping every cell's text took most of an edit's time on the GUI thread: each text is measured
        // by its pattern (every digit written as the widest digit), so a stage measures a handful of texts.
        double width = m_metrics.horizontalAdvance(stage.maskedText);
        for (Index i = 0; i < values.rows(); ++i)
            for (Index j = 0; j < values.cols(); ++j)
                width = std::max(width, patternWidth(stageValueText(values(i, j))));
        m_widest[static_cast<std::size_t>(s)] = width;
    }
    m_basePixels = m_layout.font.pixelSize();
    m_availableWidth = m_layout.size.width() - 2 * margin;
    m_availableHeight = m_layout.size.height() - 2 * margin - m_headerHeight;
}

double Planner::patternWidth(const QString& text)
{
    if (m_widestDigit.isNull()) {
        m_widestDigit = QLatin1Char('0');
        for (char digit = '1'; digit <= '9'; ++digit)
            if (m_metrics.horizontalAdvance(QLatin1Char(digit)) > m_metrics.horizontalAdvance(m_widestDigit))
                m_widestDigit = QLatin1Char(digit);
    }
    QString pattern = text;
    for (QChar& c : pattern)
        if (c >= QLatin1Char('0') && c <= QLatin1Char('9'))
            c = m_widestDigit;
    const auto known = m_patternWidths.constFind(pattern);
    if (known != m_patternWidths.constEnd())
        return *known;
    return m_patternWidths[pattern] = m_metrics.horizontalAdvance(pattern);
}

// A row label is centred on its row and reaches beyond the first and last rows when the rows are lower than
// a line: room above the cells (below the caption) and between the cells and the key labels.
double Planner::overflowFor(double boxHeight) const
{
    return m_layout.labels
               ? std::max(0.0, (m_metrics.height() - boxHeight / static_cast<double>(m_tokenRows)) / 2 + 1)
               : 0.0;
}

// Token labels go left of a stage unless a stage before it in its line has the same ones: rows of the same
// count line up across a line, so one set of labels serves them all.
bool Planner::labelsRows(int s, int lineStart) const
{
    const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
    if (!m_layout.labels || stage.indices == StageIndices::Parameters)
        return false;
    for (int previous = s - 1; previous >= lineStart; --previous) {
        const PipelineStage& before = m_stages[static_cast<std::size_t>(previous)];
        if (before.indices != StageIndices::Parameters)
            return m_all.rowLabelsOf(before) != m_all.rowLabelsOf(stage);
    }
    return true;
}

double Planner::columnLabelHeight(bool verticalColumns, double offset) const
{
    return (verticalColumns ? m_labelWidth : m_metrics.height()) + tickLabelPadding + offset + 2;
}

// The box every stage gets with `perLine` stages a line, and how good it is: first the font at which every
// value fits its cell (when one does), then the size of the cells.
Candidate Planner::evaluate(int perLine, bool verticalColumns, double overflow) const
{
    Candidate candidate;
    candidate.perLine = perLine;
    candidate.overflow = overflow;
    const double captionBlock = m_captionHeight + overflow;
    const double labelHeight = columnLabelHeight(verticalColumns, std::max(0.0, overflow - tickLabelPadding));
    const int lines = (m_count + perLine - 1) / perLine;
    double boxWidth = std::numeric_limits<double>::infinity();
    double fixedHeight = 0;
    for (int line = 0; line < lines; ++line) {
        double fixed = 0;
        bool columnLabels = false;
        for (int s = line * perLine; s < std::min(m_count, (line + 1) * perLine); ++s) {
            const bool first = s == line * perLine;
            const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
            if (!first)
                fixed += m_gaps[static_cast<std::size_t>(s)];
            if (labelsRows(s, line * perLine))
                fixed += m_rowLabelWidth;
            columnLabels = columnLabels || (m_layout.labels && stage.indices == StageIndices::QueryKey);
        }
        boxWidth = std::min(boxWidth, (m_availableWidth - fixed) / perLine);
        fixedHeight += captionBlock + (columnLabels ? labelHeight : 0.0);
    }
    const double boxHeight = (m_availableHeight - fixedHeight - (lines - 1) * lineGap) / lines;
    candidate.boxWidth = boxWidth;
    candidate.boxHeight = boxHeight;
    if (boxWidth < 4 || boxHeight < 4)
        return candidate;
    double score = std::numeric_limits<double>::infinity();
    double text = m_basePixels;
    for (int s = 0; s < m_count; ++s) {
        const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
        const double cellHeight = boxHeight / static_cast<double>(std::max<Index>(1, stage.values->rows()));
        const double cellWidth = cellWidthIn(boxWidth, boxHeight, cellHeight, stage.values->cols());
        score = std::min(score, std::sqrt(cellWidth * cellHeight)); // the cells' area
        const double byWidth = m_basePixels * (cellWidth - 4) / m_widest[static_cast<std::size_t>(s)];
        const double byHeight = m_basePixels * (cellHeight - 2) / m_metrics.ascent(); // digits: no descent
        text = std::min({text, byWidth, byHeight});
    }
    text = std::floor(text);
    if (text >= minimumTextPixels)
        score += 1e6 * text;
    candidate.score = score;
    return candidate;
}

// The room the row labels need depends on the row height it leaves: grow it until it suffices.
Candidate Planner::settle(int perLine, bool verticalColumns) const
{
    double overflow = 0;
    Candidate candidate = evaluate(perLine, verticalColumns, overflow);
    for (int pass = 0; pass < 4 && overflowFor(candidate.boxHeight) > overflow; ++pass) {
        overflow = overflowFor(candidate.boxHeight) + 0.5;
        candidate = evaluate(perLine, verticalColumns, overflow);
    }
    return candidate;
}

// The number of stages a line that makes the cells largest (all on one line when none fits).
Candidate Planner::best(bool verticalColumns) const
{
    Candidate best;
    for (int perLine = m_count; perLine >= 1; --perLine) {
        const Candidate candidate = settle(perLine, verticalColumns);
        if (candidate.score > best.score + 1e-9)
            best = candidate;
    }
    if (best.score < 0)
        best = settle(m_count, verticalColumns);
    return best;
}

// Gives every stage its tile in the boxes of `best`. True when some key labels would have to stand upright.
bool Planner::place(const Candidate& best, bool verticalColumns)
{
    m_layout.columnLabelOffset = std::max(0.0, best.overflow - tickLabelPadding);
    const double captionBlock = m_captionHeight + best.overflow;
    const double labelHeight = columnLabelHeight(verticalColumns, m_layout.columnLabelOffset);
    const double boxWidth = std::max(1.0, best.boxWidth);
    const double boxHeight = std::max(1.0, best.boxHeight);

    m_layout.tiles.assign(static_cast<std::size_t>(m_count), PipelineTile());
    double y = margin + m_headerHeight;
    bool needsVertical = false;
    for (int first = 0; first < m_count; first += best.perLine) {
        double x = margin;
        bool keyLabels = false;
        for (int s = first; s < std::min(m_count, first + best.perLine); ++s) {
            const PipelineStage& stage = m_stages[static_cast<std::size_t>(s)];
            PipelineTile& tile = m_layout.tiles[static_cast<std::size_t>(s)];
            const bool isFirst = s == first;
            // The operator into a stage that starts a line is written in its caption: an arrow from the
            // margin would take the room of its cells.
            const double gap = isFirst ? 0.0 : m_gaps[static_cast<std::size_t>(s)];
            tile.operatorInCaption = isFirst && stage.hasArrow();
            tile.arrow = QRectF(x, y + captionBlock, gap, boxHeight);
            x += gap;
            tile.rowLabels = labelsRows(s, first);
            const double labels = tile.rowLabels ? m_rowLabelWidth : 0.0;
            const Index rows = std::max<Index>(1, stage.values->rows());
            const Index columns = std::max<Index>(1, stage.values->cols());
            tile.cellHeight = boxHeight / static_cast<double>(rows);
            tile.cellWidth = cellWidthIn(boxWidth, boxHeight, tile.cellHeight, columns);
            const double width = tile.cellWidth * static_cast<double>(columns);
            tile.matrix = QRectF(x + labels, y + captionBlock, width, boxHeight);
            const QString caption =
                stage.caption() + (tile.operatorInCaption ? stage.captionOperator() : QString());
            const double captionWidth = m_boldMetrics.horizontalAdvance(caption) + 4;
            const double advance = std::max(labels + width, std::min(boxWidth + labels, captionWidth));
            // The caption may reach over the arrow to the next stage (the last: to the margin).
            const bool last = s + 1 == std::min(m_count, first + best.perLine);
            const double room = last ? m_layout.size.width() - margin - x
                                     : advance + m_gaps[static_cast<std::size_t>(s + 1)] - 6;
            tile.caption = QRectF(x, y, std::max(advance, std::min(captionWidth, room)), m_captionHeight);
            x += advance;
            tile.columnLabels = m_layout.labels && stage.indices == StageIndices::QueryKey;
            keyLabels = keyLabels || tile.columnLabels;
            if (tile.rowLabels || tile.columnLabels) {
                const QStringList rowLabels =
                    tile.rowLabels ? m_all.rowLabelsOf(stage) : QStringList{QString()};
                const QStringList columnLabels =
                    tile.columnLabels ? m_all.columnLabelsOf(stage) : QStringList{QString()};
                tile.ticks = planTicks(tile.matrix.size().toSize(), QFontMetrics(m_layout.font), rowLabels,
                                       columnLabels);
                needsVertical = needsVertical || (tile.columnLabels && tile.ticks.columnsVertical);
            }
        }
        y += captionBlock + boxHeight + lineGap + (keyLabels ? labelHeight : 0.0);
    }
    return needsVertical;
}

// Cell values: one font for the canvas, as large as the default (smaller where needed, never below
// minimumTextPixels); a stage whose cells cannot hold it writes none. Large cells (a slide) write their
// values larger, up to 1.4 times the canvas font.
void Planner::fitCellText()
{
    const double largest = std::floor(m_basePixels * 1.4);
    double common = largest;
    std::vector<double> fits(static_cast<std::size_t>(m_count), 0.0);
    for (int s = 0; s < m_count; ++s) {
        const PipelineTile& tile = m_layout.tiles[static_cast<std::size_t>(s)];
        if (tile.cellWidth < 14 || tile.cellHeight < minimumTextPixels)
            continue;
        const double byWidth = m_basePixels * (tile.cellWidth - 4) / m_widest[static_cast<std::size_t>(s)];
        const double byHeight = m_basePixels * (tile.cellHeight - 2) / m_metrics.ascent();
        const double fit = std::floor(std::min({largest, byWidth, byHeight}));
        fits[static_cast<std::size_t>(s)] = fit;
        if (fit >= minimumTextPixels)
            common = std::min(common, fit);
    }
    m_layout.cellFont = withPixels(m_layout.font, common);
    for (int s = 0; s < m_count; ++s)
        m_layout.tiles[static_cast<std::size_t>(s)].cellText =
            fits[static_cast<std::size_t>(s)] >= minimumTextPixels;
}

} // namespace

// Lays the stages out left to right in formula order, wrapping onto as many lines as make the cells
// largest: every stage gets the same box, its cells as wide as the box allows (at most three times as wide as
// tall), its rows as tall as the box (so stages with the same rows line up). Token labels go left of a stage
// whose rows differ from its left neighbour's, key labels below the query × key stages.
PipelineLayout PipelineLayout::lay(const PipelineStages& stages, QSize size, const QFont& font)
{
    PipelineLayout layout;
    layout.size = size;
    layout.font = font;
    Planner(stages, layout).layOut();
    return layout;
}

QFont PipelineLayout::canvasFont(const QFont& base, QSize size)
{
    QFont font = base;
    const double pixels = base.pixelSize() > 0 ? base.pixelSize() : base.pointSizeF() * 4.0 / 3.0;
    const double grow = std::clamp(std::min(size.width() / 1400.0, size.height() / 800.0), 1.0, 1.5);
    font.setPixelSize(std::max(9, static_cast<int>(std::lround(pixels * grow))));
    return font;
}

QRectF PipelineLayout::cellArea(const PipelineStage& stage, const PipelineTile& tile)
{
    return QRectF(tile.matrix.topLeft(), QSizeF(tile.cellWidth * static_cast<double>(stage.values->cols()),
                                                tile.cellHeight * static_cast<double>(stage.values->rows())));
}

QRect PipelineLayout::repaintRect(const QRectF& cells)
{
    return cells.adjusted(-1, -1, 1, 1).toAlignedRect(); // with the frame's and the bands' strokes
}

} // namespace qkv::ui
