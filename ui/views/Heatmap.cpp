// SPDX-License-Identifier: GPL-3.0-or-later
#include "Heatmap.h"

#include "HeatmapInteraction.h"
#include "HeatmapLabels.h"
#include "HeatmapMenu.h"
#include "HeatmapSelection.h"
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QGridLayout>
#include <QScrollBar>

#include <algorithm>

namespace qkv::ui {

Heatmap::Heatmap(QWidget* parent)
    : QWidget(parent), m_plot(new QCustomPlot(this)),
      m_horizontalScroll(new QScrollBar(Qt::Horizontal, this)),
      m_verticalScroll(new QScrollBar(Qt::Vertical, this))
{
    // Scroll bars beside the plot while zoomed in: another way to pan.
    m_horizontalScroll->setObjectName(QStringLiteral("heatmapHorizontalScroll"));
    m_verticalScroll->setObjectName(QStringLiteral("heatmapVerticalScroll"));
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_plot, 0, 0);
    layout->addWidget(m_verticalScroll, 0, 1);
    layout->addWidget(m_horizontalScroll, 1, 0);
    m_horizontalScroll->hide();
    m_verticalScroll->hide();
    setFocusPolicy(Qt::StrongFocus); // a click gives it the keyboard: arrows move the selection
    setUpAxesAndColorBar();

    m_labels = std::make_unique<HeatmapLabels>(m_plot, m_data, m_map, m_scale);
    m_selection = std::make_unique<HeatmapSelection>(m_plot, m_data);
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { m_labels->planForLastLayout(); });
    connect(m_plot, &QCustomPlot::afterLayout, this, &Heatmap::afterLayout);
    m_menu = new HeatmapMenu(this);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& position) {
        m_menu->refresh();
        m_menu->exec(m_plot->mapToGlobal(position));
    });
    m_interaction = new HeatmapInteraction(this, m_plot, m_data, *m_labels, *m_selection, m_horizontalScroll,
                                           m_verticalScroll);
    rebuild();
}

Heatmap::~Heatmap() = default;

// The axes (one unit per cell, row 0 at the top), the colour map and its colour bar, and the right axis the
// row statistics are written along.
void Heatmap::setUpAxesAndColorBar()
{
    m_titleElement = setUpPlot(m_plot, QSize(160, 120));
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 3);
        axis->setTickLabelPadding(tickLabelPadding);
        axis->setBasePen(Qt::NoPen);
    }
    m_plot->yAxis->setRangeReversed(true); // row 0 at the top

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis); // key: column, value: row
    m_map->setInterpolate(false);
    HeatmapData::prepareColorMap(m_map);
    m_map->setTightBoundary(false);

    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->axis()->setSubTicks(false);
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_map->setColorScale(m_scale);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, margins);

    m_plot->yAxis2->setRangeReversed(true);
    m_plot->yAxis2->grid()->setVisible(false);
    m_plot->yAxis2->setSubTicks(false);
    m_plot->yAxis2->setTickLength(0, 3);
    m_plot->yAxis2->setBasePen(Qt::NoPen);
    connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_plot->yAxis2,
            qOverload<const QCPRange&>(&QCPAxis::setRange));
}

void Heatmap::replotSoon()
{
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QMenu* Heatmap::contextMenu() const
{
    return m_menu;
}

void Heatmap::setMatrix(const Matrix& values, const QStringList& rowLabels, const QStringList& columnLabels)
{
    setMatrix(std::make_shared<const Matrix>(values), rowLabels, columnLabels);
}

void Heatmap::setMatrix(std::shared_ptr<const Matrix> values, const QStringList& rowLabels,
                        const QStringList& columnLabels)
{
    m_data.setValues(std::move(values), rowLabels, columnLabels);
    rebuild();
}

void Heatmap::clear()
{
    setMatrix(Matrix(), QStringList(), QStringList());
}

void Heatmap::setTitle(const QString& title)
{
    m_title = title;
    m_titleElement->setText(title);
    replotSoon();
}

void Heatmap::setAxisTitles(const QString& rows, const QString& columns)
{
    m_rowTitle = rows;
    m_columnTitle = columns;
    m_plot->yAxis->setLabel(rows);
    m_plot->xAxis->setLabel(columns);
    replotSoon();
}

void Heatmap::setColorMode(ColorMode mode)
{
    m_data.setMode(mode);
    setColorScale(m_data.defaultScale());
}

Heatmap::ColorMode Heatmap::colorMode() const
{
    return m_data.mode();
}

void Heatmap::setColorScale(ColorScale scale)
{
    const bool refill = (scale == ColorScale::PerRow) != (m_data.colorScale() == ColorScale::PerRow);
    m_data.setColorScale(scale);
    m_menu->refresh();
    if (refill) {
        rebuild(); // the cells hold each row's values divided by its largest
        return;
    }
    updateColors();
    replotSoon();
}

Heatmap::ColorScale Heatmap::colorScale() const
{
    return m_data.colorScale();
}

void Heatmap::setLogarithmic(bool logarithmic)
{
    setColorScale(logarithmic ? ColorScale::Logarithmic : m_data.defaultScale());
}

void Heatmap::setColorMap(ColorMap map)
{
    m_data.setColorMap(map);
    m_menu->refresh();
    updateColors();
    replotSoon();
}

Heatmap::ColorMap Heatmap::colorMap() const
{
    return m_data.colorMap();
}

void Heatmap::setColorBarLabel(const QString& label)
{
    m_data.setColorBarLabel(label);
    m_scale->axis()->setLabel(m_data.colorBarText());
    replotSoon();
}

void Heatmap::setFixedRange(double lower, double upper)
{
    m_data.setFixedRange(std::make_pair(lower, upper));
    updateColors();
    replotSoon();
}

void Heatmap::clearFixedRange()
{
    m_data.setFixedRange(std::nullopt);
    updateColors();
    replotSoon();
}

std::pair<double, double> Heatmap::colorRange() const
{
    return m_data.range();
}

void Heatmap::setMasked(const MaskMatrix* allowed)
{
    setMasked(allowed ? std::make_shared<const MaskMatrix>(*allowed) : nullptr);
}

void Heatmap::setMasked(std::shared_ptr<const MaskMatrix> allowed)
{
    m_data.setMask(std::move(allowed));
    rebuild();
}

void Heatmap::releaseMatrix()
{
    m_data.release();
    m_labels->removeCellTexts();
    m_map->data()->clear();
    m_cellsPending = false;
}

const Matrix& Heatmap::values() const
{
    return m_data.shownValues();
}

QStringList Heatmap::rowLabels() const
{
    return m_data.rowLabels();
}

QStringList Heatmap::columnLabels() const
{
    return m_data.columnLabels();
}

bool Heatmap::isMasked(Index row, Index column) const
{
    return m_data.isMasked(row, column);
}

QString Heatmap::formatValue(double value)
{
    return formatCellValue(value);
}

void Heatmap::setCellDescriber(std::function<QString(Index, Index)> describe)
{
    m_describeCell = std::move(describe);
}

QString Heatmap::cellDescription(Index row, Index column) const
{
    if (m_describeCell)
        return m_describeCell(row, column);
    const QString value = isMasked(row, column) ? tr("masked") : formatValue(m_data.values()(row, column));
    const QString rowTitle = m_rowTitle.isEmpty() ? tr("row") : m_rowTitle;
    const QString columnTitle = m_columnTitle.isEmpty() ? tr("column") : m_columnTitle;
    return tr("%1 ‘%2’ → %3 ‘%4’: %5")
        .arg(rowTitle, m_data.rowLabels().value(static_cast<int>(row)), columnTitle,
             m_data.columnLabels().value(static_cast<int>(column)), value);
}

QPoint Heatmap::cellCentre(Index row, Index column) const
{
    const QPointF inPlot(m_plot->xAxis->coordToPixel(static_cast<double>(column)),
                         m_plot->yAxis->coordToPixel(static_cast<double>(row)));
    return m_plot->mapTo(this, inPlot.toPoint());
}

bool Heatmap::showsCellValues() const
{
    return m_labels->showsCellValues();
}

QString Heatmap::cellText(Index row, Index column) const
{
    return m_labels->cellText(row, column);
}

QList<QRectF> Heatmap::drawnTickLabelRects() const
{
    return m_labels->drawnTickLabelRects(this);
}

TickPlan Heatmap::tickPlan() const
{
    return m_labels->tickPlan();
}

void Heatmap::setRowAnnotations(const QStringList& annotations, const QString& title)
{
    m_labels->setRowAnnotations(annotations, title);
    replotSoon();
}

QStringList Heatmap::rowAnnotations() const
{
    return m_labels->rowAnnotations();
}

QString Heatmap::rowAnnotationTitle() const
{
    return m_labels->rowAnnotationTitle();
}

void Heatmap::setHighlight(int row, int column)
{
    m_selection->setCell(row, column);
    m_selection->update();
    replotSoon();
}

std::pair<int, int> Heatmap::highlight() const
{
    return m_selection->cell();
}

bool Heatmap::showsSelectionBands() const
{
    return m_selection->showsBands();
}

void Heatmap::fitToView()
{
    m_interaction->fitToView();
}

void Heatmap::zoomBy(double factor)
{
    m_interaction->zoomBy(factor);
}

std::pair<double, double> Heatmap::visibleRows() const
{
    return {m_plot->yAxis->range().lower, m_plot->yAxis->range().upper};
}

std::pair<double, double> Heatmap::visibleColumns() const
{
    return {m_plot->xAxis->range().lower, m_plot->xAxis->range().upper};
}

void Heatmap::setPaintable(bool paintable)
{
    m_interaction->setPaintable(paintable);
}

bool Heatmap::isPaintable() const
{
    return m_interaction->isPaintable();
}

void Heatmap::keyPressEvent(QKeyEvent* event)
{
    if (!m_interaction->keyPress(event))
        QWidget::keyPressEvent(event);
}

bool Heatmap::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && m_interaction->pinch(event))
        return true;
    return QWidget::eventFilter(watched, event);
}

void Heatmap::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_cellsPending)
        rebuild();
}

// Puts the matrix into the colour map and sets the axes to one unit per cell.
void Heatmap::rebuild(bool evenIfHidden)
{
    m_labels->removeCellTexts();
    m_labels->forgetPlan();
    updateColors();
    const Index rows = m_data.rows(), columns = m_data.columns();
    QCPColorMapData* cells = m_map->data();
    // A hidden heatmap (another tab) fills its cells when it is shown: large matrices cost time and memory.
    m_cellsPending = !evenIfHidden && !isVisible() && rows > 0 && columns > 0;
    m_data.forgetColorMap();
    if (m_cellsPending) {
        cells->clear();
        return;
    }
    if (rows == 0 || columns == 0) {
        cells->clear();
        m_map->setVisible(false);
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        m_plot->xAxis->setRange(-0.5, 0.5);
        m_plot->yAxis->setRange(-0.5, 0.5);
        m_shownShape = {0, 0};
    } else {
        m_map->setVisible(true);
        // A new shape shows the whole matrix; the same shape keeps the zoom (an edit is not a reset).
        if (m_shownShape != std::make_pair(rows, columns))
            fitToView();
        m_shownShape = {rows, columns};
        fillColorMap(true);
    }
    m_labels->updateRowAnnotations();
    m_selection->update();
    replotSoon();
}

void Heatmap::updateColors()
{
    m_data.applyColors(m_scale);
    if (m_labels->showsCellValues())
        m_labels->updateCellTexts();
}

bool Heatmap::fillColorMap(bool force)
{
    return m_data.fillColorMap(m_map, m_plot->yAxis->range(), m_plot->xAxis->range(), axisRectSize(m_plot),
                               force);
}

// After the layout of a replot, before drawing: the cell size is known now.
void Heatmap::afterLayout()
{
    if (m_data.isEmpty()) {
        m_labels->hideCellTexts();
        return;
    }
    const QSize size = axisRectSize(m_plot);
    if (!m_cellsPending)
        fillColorMap(false); // the cells shown, or the pixels they have, changed: sampled again
    m_labels->settleAfterLayout(size);
    m_selection->update();
    m_labels->updateCellTexts();
}

QSize Heatmap::defaultFigureSize() const
{
    constexpr int cell = 56; // room for a value such as "-0.707" at the default font
    const auto extent = [](Index cells, int fixed, int lowest) {
        return std::clamp(fixed + cell * static_cast<int>(std::min<Index>(cells, 100)), lowest, 1400);
    };
    return {extent(m_data.columns(), 220, 480), extent(m_data.rows(), 150, 360)};
}

void Heatmap::renderFigure(QPaintDevice* device, const QSize& size) const
{
    // Exporting lays the plot out for `size` and then for the screen again: nothing visible changes.
    const_cast<Heatmap*>(this)->renderAt(device, size);
}

void Heatmap::renderAt(QPaintDevice* device, const QSize& size)
{
    emit aboutToRenderFigure(); // an owner that deferred the newest matrix while this was hidden sets it now
    if (m_cellsPending)
        rebuild(true); // never shown (another tab, or a view kept only for export)
    // The selection is the screen's: exported figures leave it out.
    m_selection->setHidden(true);
    m_selection->update();
    const QRect screen = m_plot->viewport();
    layOutFor(QRect(QPoint(0, 0), size));
    renderPlot(m_plot, device, size); // its afterLayout decides the cell texts at `size`
    m_selection->setHidden(false);
    m_selection->update();
    layOutFor(screen);
    if (!m_data.isEmpty())
        m_labels->updateCellTexts();
    replotSoon();
}

// What a replot does before drawing (tick labels planned for the axis rectangle, which they change in turn),
// for any viewport and without drawing.
void Heatmap::layOutFor(const QRect& viewport)
{
    m_plot->setViewport(viewport);
    for (int pass = 0; pass < 6; ++pass) {
        for (const auto phase :
             {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
            m_plot->plotLayout()->update(phase);
        if (!m_labels->planTicksFor(axisRectSize(m_plot), pass > 0))
            break;
    }
}

} // namespace qkv::ui
