// SPDX-License-Identifier: GPL-3.0-or-later
#include "PipelineView.h"

#include "Document.h"
#include "PipelinePainter.h"
#include "PlotFigure.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

const Matrix emptyMatrix;

} // namespace

QString PipelineView::valueText(double value)
{
    return stageValueText(value);
}

PipelineView::PipelineView(Document* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    setObjectName(QStringLiteral("pipelineView"));
    setMouseTracking(true);
    setMinimumSize(120, 90);
    setAutoFillBackground(false);
    // Its What's This text is the window's (ViewHelp), with every other view's.
    connect(m_document, &Document::resultChanged, this, &PipelineView::onResultChanged);
    connect(m_document, &Document::currentHeadChanged, this, &PipelineView::onResultChanged);
    connect(m_document, &Document::sessionChanged, this, [this](Document::Changes changes) {
        if (changes & Document::Tokens)
            onResultChanged();
    });
    connect(m_document, &Document::selectionChanged, this, [this] {
        m_paintedStale = true;
        update();
    });
}

PipelineView::~PipelineView() = default;

void PipelineView::onResultChanged()
{
    m_dirty = true;
    if (!isVisible())
        return; // built when shown (or exported)
    rebuild();
    updateLayout();
    update();
}

void PipelineView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_dirty) {
        rebuild();
        updateLayout();
    }
}

void PipelineView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (isVisible())
        updateLayout();
}

void PipelineView::ensureBuilt() const
{
    if (m_dirty)
        rebuild();
}

void PipelineView::rebuild() const
{
    m_dirty = false;
    m_paintedStale = true;
    m_stages.build(*m_document);
}

void PipelineView::updateLayout()
{
    ensureBuilt();
    m_paintedStale = true;
    QFont font = PipelineLayout::canvasFont(this->font(), size());
    font.setPixelSize(std::max(9, static_cast<int>(std::lround(font.pixelSize() * m_style.fontScale))));
    m_layout = PipelineLayout::lay(m_stages, size(), font);
    m_layout.ink = m_style.foreground;
    m_layout.muted = QColor::fromRgbF((m_style.foreground.redF() * 2 + m_style.background.redF()) / 3,
                                      (m_style.foreground.greenF() * 2 + m_style.background.greenF()) / 3,
                                      (m_style.foreground.blueF() * 2 + m_style.background.blueF()) / 3);
}

void PipelineView::setPlotStyle(const PlotStyle& style)
{
    if (style == m_style)
        return;
    m_style = style;
    m_layout.size = QSize(); // laid out again (fonts, colours) when next painted
    m_paintsEverything = true;
    update();
}

QString PipelineView::figureTitle() const
{
    return tr("Attention pipeline");
}

const PipelineStage* PipelineView::stage(const QString& name) const
{
    ensureBuilt();
    const int s = m_stages.indexOf(name);
    return s < 0 ? nullptr : &m_stages.stages()[static_cast<std::size_t>(s)];
}

const PipelineTile* PipelineView::tile(const QString& name) const
{
    const int s = stage(name) ? m_stages.indexOf(name) : -1;
    return s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size()
               ? nullptr
               : &m_layout.tiles[static_cast<std::size_t>(s)];
}

QStringList PipelineView::recolouredStages() const
{
    ensureBuilt();
    return m_stages.recoloured();
}

QStringList PipelineView::stageNames() const
{
    ensureBuilt();
    QStringList names;
    for (const PipelineStage& stage : m_stages.stages())
        names << stage.name;
    return names;
}

QString PipelineView::stageCaption(const QString& name) const
{
    const PipelineStage* found = stage(name);
    return found ? found->caption() : QString();
}

QString PipelineView::stageOperator(const QString& name) const
{
    const PipelineStage* found = stage(name);
    if (!found)
        return QString();
    return found->operatorBottom.isEmpty() ? found->operatorTop
                                           : found->operatorTop + QLatin1Char('\n') + found->operatorBottom;
}

QColor PipelineView::stageColour(const QString& name, Index row, Index column) const
{
    const PipelineStage* found = stage(name);
    if (!found)
        return QColor();
    const Index rows = found->values->rows(), columns = found->values->cols();
    if (row < 0 || column < 0 || row >= rows || column >= columns)
        return QColor();
    return found->image.pixelColor(static_cast<int>(column / stageImageStep(columns)),
                                   static_cast<int>(row / stageImageStep(rows)));
}

std::pair<Index, Index> PipelineView::stageShape(const QString& name) const
{
    const Matrix& values = stageValues(name);
    return {values.rows(), values.cols()};
}

const Matrix& PipelineView::stageValues(const QString& name) const
{
    const PipelineStage* found = stage(name);
    return found ? *found->values : emptyMatrix;
}

bool PipelineView::isMasked(const QString& name, Index row, Index column) const
{
    const PipelineStage* found = stage(name);
    return found && found->isMasked(row, column);
}

PipelineView::Indices PipelineView::stageIndices(const QString& name) const
{
    const PipelineStage* found = stage(name);
    return found ? found->indices : Indices::Parameters;
}

std::pair<int, int> PipelineView::stageHighlight(const QString& name) const
{
    return qkv::ui::stageHighlight(stageIndices(name), m_document->selectedQuery(),
                                   m_document->selectedKey());
}

bool PipelineView::showsCellValues() const
{
    return std::any_of(m_layout.tiles.begin(), m_layout.tiles.end(),
                       [](const PipelineTile& tile) { return tile.cellText; });
}

bool PipelineView::showsTokenLabels() const
{
    return std::any_of(m_layout.tiles.begin(), m_layout.tiles.end(),
                       [](const PipelineTile& tile) { return tile.rowLabels || tile.columnLabels; });
}

QString PipelineView::cellText(const QString& name, Index row, Index column) const
{
    const PipelineTile* laidOut = tile(name);
    if (!laidOut || !laidOut->cellText)
        return QString();
    const PipelineStage& found = *stage(name);
    if (row < 0 || column < 0 || row >= found.values->rows() || column >= found.values->cols())
        return QString();
    return found.cellText(row, column);
}

QRectF PipelineView::cellRect(const QString& name, Index row, Index column) const
{
    const PipelineTile* laidOut = tile(name);
    if (!laidOut)
        return QRectF();
    const PipelineStage& found = *stage(name);
    if (row < 0 || column < 0 || row >= found.values->rows() || column >= found.values->cols())
        return QRectF();
    return QRectF(laidOut->matrix.left() + static_cast<double>(column) * laidOut->cellWidth,
                  laidOut->matrix.top() + static_cast<double>(row) * laidOut->cellHeight, laidOut->cellWidth,
                  laidOut->cellHeight);
}

QFont PipelineView::cellFont() const
{
    return m_layout.cellFont;
}

QRectF PipelineView::stageRect(const QString& name) const
{
    const PipelineTile* laidOut = tile(name);
    return laidOut ? PipelineLayout::cellArea(*stage(name), *laidOut) : QRectF();
}

QRectF PipelineView::captionRect(const QString& name) const
{
    const PipelineTile* laidOut = tile(name);
    return laidOut ? laidOut->caption : QRectF();
}

std::pair<QString, QFont> PipelineView::captionTitle(const QString& name) const
{
    const PipelineTile* laidOut = tile(name);
    if (!laidOut)
        return {};
    return PipelinePainter::fittedTitle(*stage(name), *laidOut, m_layout);
}

QList<QRectF> PipelineView::drawnLabelRects() const
{
    ensureBuilt();
    QList<QRectF> rects;
    const QFontMetrics metrics(m_layout.font);
    const QStringList none{QString()}; // the side without labels: one empty placeholder
    const std::vector<PipelineStage>& stages = m_stages.stages();
    for (std::size_t s = 0; s < stages.size() && s < m_layout.tiles.size(); ++s) {
        const PipelineStage& stage = stages[s];
        const PipelineTile& tile = m_layout.tiles[s];
        const QRectF area = stageRect(stage.name);
        if (tile.rowLabels) {
            const QStringList labels = m_stages.rowLabelsOf(stage);
            const int drawn =
                (static_cast<int>(labels.size()) + tile.ticks.rowStride - 1) / tile.ticks.rowStride;
            rects << tickLabelRects(tile.ticks, area, metrics, labels, none).mid(0, drawn);
        }
        if (tile.columnLabels)
            rects << tickLabelRects(tile.ticks, area.adjusted(0, 0, 0, m_layout.columnLabelOffset), metrics,
                                    none, m_stages.columnLabelsOf(stage))
                         .mid(1);
    }
    return rects;
}

QString PipelineView::cellDescription(const QString& name, Index row, Index column) const
{
    const PipelineStage* found = stage(name);
    return found ? m_stages.describeCell(*found, row, column) : QString();
}

void PipelineView::paintEvent(QPaintEvent*)
{
    ensureBuilt();
    if (m_layout.size != size())
        updateLayout();
    const qreal ratio = devicePixelRatioF();
    if (m_painted.devicePixelRatio() != ratio || m_painted.size() != size() * ratio) {
        m_painted = QPixmap(size() * ratio);
        m_painted.setDevicePixelRatio(ratio);
        m_paintedStale = true;
        m_paintsEverything = true;
    }
    if (m_paintedStale) {
        m_paintedStale = false;
        PaintedCanvas now = paintedCanvas();
        const QRegion region = m_paintsEverything ? QRegion(rect()) : changedRegion(now);
        m_paintsEverything = false;
        m_paintedCanvas = std::move(now);
        m_lastRepainted = region;
        QPainter painter(&m_painted);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        const PipelinePainter canvas(m_stages, m_layout, m_document->selectedQuery(),
                                     m_document->selectedKey());
        if (region == QRegion(rect())) {
            m_painted.fill(m_style.background);
            canvas.paint(painter, figureTitle());
        } else {
            // Stage by stage, each clipped to a rectangle (a scaled image clipped to a region of several
            // rectangles is sampled on other pixels than one drawn whole), with its caption and labels,
            // which may reach into the pixel around the cells.
            for (std::size_t s = 0; s < m_stages.stages().size() && s < m_layout.tiles.size(); ++s) {
                const QRect cells = PipelineLayout::repaintRect(m_paintedCanvas.stages[s].area);
                if (!region.intersects(cells))
                    continue;
                painter.save();
                painter.setClipRect(cells);
                painter.fillRect(cells, m_style.background);
                canvas.paintStage(painter, s);
                painter.restore();
            }
        }
    }
    QPainter(this).drawPixmap(0, 0, m_painted);
}

PipelineView::PaintedCanvas PipelineView::paintedCanvas() const
{
    PaintedCanvas canvas;
    canvas.header = m_stages.header() +
                    QStringLiteral("|%1|%2").arg(m_document->selectedQuery()).arg(m_document->selectedKey());
    canvas.message = m_stages.message();
    canvas.labels =
        m_stages.queries() + m_stages.keys() + m_stages.queryDimensions() + m_stages.keyDimensions();
    canvas.headerBox = m_layout.header;
    const std::vector<PipelineStage>& stages = m_stages.stages();
    for (std::size_t s = 0; s < stages.size() && s < m_layout.tiles.size(); ++s) {
        const PipelineStage& stage = stages[s];
        const PipelineTile& tile = m_layout.tiles[s];
        canvas.stages.push_back({PipelineLayout::cellArea(stage, tile), tile.caption, tile.arrow, stage.title,
                                 stage.operatorTop, stage.operatorBottom, stage.image.cacheKey(),
                                 stageHighlight(stage.name), tile.cellText});
    }
    return canvas;
}

QRegion PipelineView::changedRegion(const PaintedCanvas& now) const
{
    const PaintedCanvas& before = m_paintedCanvas;
    const QRegion everything(rect());
    if (now.header != before.header || now.message != before.message || now.labels != before.labels ||
        now.headerBox != before.headerBox || now.stages.size() != before.stages.size())
        return everything;
    QRegion changed;
    for (std::size_t s = 0; s < now.stages.size(); ++s) {
        const PaintedStage &a = now.stages[s], &b = before.stages[s];
        if (a.area != b.area || a.caption != b.caption || a.arrow != b.arrow || a.title != b.title ||
            a.operatorTop != b.operatorTop || a.operatorBottom != b.operatorBottom ||
            a.highlight != b.highlight || a.cellText != b.cellText)
            return everything;
        if (a.image == b.image)
            continue;
        if (a.cellText) // numbers may reach past their cells
            return everything;
        changed += PipelineLayout::repaintRect(a.area);
    }
    return changed;
}

void PipelineView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    ensureBuilt();
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;
    const PipelineLayout layout =
        PipelineLayout::lay(m_stages, size, PipelineLayout::canvasFont(font(), size));
    PipelinePainter(m_stages, layout, m_document->selectedQuery(), m_document->selectedKey())
        .paint(painter, figureTitle());
    painter.end();
}

bool PipelineView::cellAt(const QPointF& position, int* stage, Index* row, Index* column) const
{
    ensureBuilt();
    const std::vector<PipelineStage>& stages = m_stages.stages();
    for (std::size_t s = 0; s < stages.size() && s < m_layout.tiles.size(); ++s) {
        const QRectF area = stageRect(stages[s].name);
        if (!area.contains(position))
            continue;
        const PipelineTile& tile = m_layout.tiles[s];
        *stage = static_cast<int>(s);
        *row = std::clamp<Index>(static_cast<Index>((position.y() - area.top()) / tile.cellHeight), 0,
                                 stages[s].values->rows() - 1);
        *column = std::clamp<Index>(static_cast<Index>((position.x() - area.left()) / tile.cellWidth), 0,
                                    stages[s].values->cols() - 1);
        return true;
    }
    return false;
}

void PipelineView::mousePressEvent(QMouseEvent* event)
{
    int s = 0;
    Index row = 0, column = 0;
    if (event->button() != Qt::LeftButton || !cellAt(event->position(), &s, &row, &column)) {
        QWidget::mousePressEvent(event);
        return;
    }
    switch (m_stages.stages()[static_cast<std::size_t>(s)].indices) {
    case Indices::QueryKey:
        m_document->setSelection(row, column);
        break;
    case Indices::Tokens:
    case Indices::QueryRows:
        m_document->setSelection(row, m_document->selectedKey());
        break;
    case Indices::KeyRows:
        m_document->setSelection(m_document->selectedQuery(), row);
        break;
    case Indices::Parameters:
        break;
    }
    event->accept();
}

void PipelineView::mouseMoveEvent(QMouseEvent* event)
{
    int s = 0;
    Index row = 0, column = 0;
    if (!cellAt(event->position(), &s, &row, &column)) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(),
                       cellDescription(m_stages.stages()[static_cast<std::size_t>(s)].name, row, column),
                       this);
}

} // namespace qkv::ui
