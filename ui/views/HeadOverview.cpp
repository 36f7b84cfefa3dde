// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeadOverview.h"

#include "Document.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "MatrixRef.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"
#include "ViewData.h"

#include <QEvent>
#include <QFrame>
#include <QGridLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPicture>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <utility>

namespace qkv::ui {

namespace {

constexpr const char* headProperty = "qkvHead";
constexpr int figureMargin = 12;
constexpr int figureSpacing = 8;
constexpr int naturalCellWidth = 380;
constexpr int naturalCellHeight = 300;
constexpr double figureTitlePoints = 12.0;
constexpr int colourBarWidth = 70;     // the heatmap's colour bar and its tick labels, beside the title
constexpr int minimumCellHeight = 220; // on screen: rows beyond the height scroll rather than squash

QString frameStyle(const QString& name, bool current)
{
    return current ? QStringLiteral("QFrame#%1 { border: 3px solid palette(highlight); border-radius: 3px; }")
                         .arg(name)
                   : QStringLiteral("QFrame#%1 { border: 3px solid transparent; }").arg(name);
}

} // namespace

HeadOverview::HeadOverview(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_error(new QLabel(this)), m_scroll(new QScrollArea(this)),
      m_gridHost(new QWidget), m_grid(new QGridLayout(m_gridHost))
{
    setObjectName(QStringLiteral("headOverview"));
    m_error->setObjectName(QStringLiteral("headOverviewError"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("QLabel { color: #a40000; padding: 4px; }"));
    m_error->hide();

    m_grid->setContentsMargins(2, 2, 2, 2);
    m_grid->setSpacing(4);
    m_scroll->setObjectName(QStringLiteral("headOverviewScroll"));
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidget(m_gridHost);
    m_scroll->viewport()->installEventFilter(this);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_error);
    layout->addWidget(m_scroll, 1);

    // Only while on screen: hidden, it catches up when shown (OnScreenRefresh).
    m_refresh = new OnScreenRefresh(this, [this] {
        if (std::exchange(m_resultStale, false))
            refresh();
        else
            updateSelection();
    });
    connect(m_document, &Document::resultChanged, this, [this] {
        m_resultStale = true;
        m_refresh->request();
        if (m_refresh->isStale())
            for (Heatmap* map : std::as_const(m_maps))
                map->releaseMatrix(); // hidden: it keeps no old result alive until it is shown
    });
    connect(m_document, &Document::currentHeadChanged, this, &HeadOverview::updateHighlight);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    refresh();
}

HeadOverview::~HeadOverview() = default;

Heatmap* HeadOverview::heatmap(int head) const
{
    return head >= 0 && head < m_maps.size() ? m_maps.at(head) : nullptr;
}

int HeadOverview::figureColumns() const
{
    const auto heads = static_cast<double>(std::max<qsizetype>(1, m_maps.size()));
    return static_cast<int>(std::ceil(std::sqrt(heads)));
}

int HeadOverview::screenColumns() const
{
    const int available =
        m_scroll->viewport()->width() - m_grid->contentsMargins().left() - m_grid->contentsMargins().right();
    const int spacing = m_grid->horizontalSpacing();
    const int fit = std::max(1, (available + spacing) / std::max(1, m_minimumCellWidth + spacing));
    return std::min(fit, figureColumns());
}

void HeadOverview::arrangeGrid()
{
    const int columns = screenColumns();
    if (columns == m_columns)
        return;
    m_columns = columns;
    for (QFrame* frame : std::as_const(m_frames))
        m_grid->removeWidget(frame);
    for (int h = 0; h < m_frames.size(); ++h)
        m_grid->addWidget(m_frames.at(h), h / columns, h % columns);
}

void HeadOverview::rebuildGrid(int heads)
{
    qDeleteAll(m_frames);
    m_frames.clear();
    m_maps.clear();
    m_highlighted = -1;
    for (int h = 0; h < heads; ++h) {
        auto* frame = new QFrame(m_gridHost);
        frame->setObjectName(QStringLiteral("headFrame_%1").arg(h));
        frame->setProperty(headProperty, h);
        frame->setToolTip(tr("Click to show head %1 in the other views").arg(h + 1));
        auto* map = new Heatmap(frame);
        map->setObjectName(QStringLiteral("headHeatmap_%1").arg(h));
        map->setFigureName(QStringLiteral("head%1").arg(h + 1));
        map->setAxisTitles(tr("query"), tr("key"));
        map->setColorMode(Heatmap::ColorMode::Sequential);
        map->setFixedRange(0.0, 1.0);
        auto* inner = new QVBoxLayout(frame);
        inner->setContentsMargins(3, 3, 3, 3);
        inner->addWidget(map);
        m_frames.append(frame);
        m_maps.append(map);

        // Any click on the head (title, axes, cells) makes it current; a click on a cell also selects it.
        frame->installEventFilter(this);
        for (QWidget* child : map->findChildren<QWidget*>()) {
            child->setProperty(headProperty, h);
            child->installEventFilter(this);
        }
        connect(map, &Heatmap::cellClicked, this,
                [this](int row, int column) { m_document->setSelection(row, column); });
    }
    if (const std::optional<PlotStyle> style = windowPlotStyle()) // light or dark, as the window's plots
        applyPlotStyle(m_gridHost, *style);
    m_columns = 0;
}

bool HeadOverview::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_scroll->viewport() && event->type() == QEvent::Resize) {
        arrangeGrid(); // the width the columns share is the viewport's, known only once it is laid out
        return false;
    }
    if (event->type() == QEvent::MouseButtonPress &&
        static_cast<QMouseEvent*>(event)->button() == Qt::LeftButton) {
        const QVariant head = watched->property(headProperty);
        if (head.isValid())
            m_document->setCurrentHead(head.toInt());
    }
    return QWidget::eventFilter(watched, event); // the heatmap still sees the click
}

void HeadOverview::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current) {
        m_error->setText(current.error);
        m_error->show();
        for (Heatmap* map : std::as_const(m_maps)) {
            map->setTitle(QString());
            map->clear();
        }
        return;
    }
    m_error->hide();

    const std::shared_ptr<const AttentionResult>& result = current.result;
    const Session& session = m_document->session();
    const int heads = current.count;
    if (heads != m_maps.size())
        rebuildGrid(heads);
    QFont titleFont = font();
    titleFont.setBold(true); // as the heatmap writes its title
    const QFontMetrics titleMetrics(titleFont);
    int widestTitle = 0;
    for (int h = 0; h < heads; ++h) {
        const HeadResult& r = result->heads[static_cast<std::size_t>(h)];
        const HeadSummary summary = summarizeHead(r);
        Heatmap* map = m_maps.at(h);
        const QString title = tr("Head %1 — H̄ = %2 nats, support %3")
                                  .arg(h + 1)
                                  .arg(summary.meanEntropy, 0, 'f', 2)
                                  .arg(summary.meanSupport, 0, 'f', 1);
        map->setTitle(title);
        widestTitle = std::max(widestTitle, titleMetrics.horizontalAdvance(title));
        // Shared with the result, not copied.
        map->setMasked(std::shared_ptr<const MaskMatrix>(result, &r.allowed));
        map->setMatrix(std::shared_ptr<const Matrix>(result, &r.weights),
                       tokenLabels(session.tokens, r.weights.rows()),
                       tokenLabels(session.keyTokens(), r.weights.cols()));
    }
    // Columns that would cut a title short are dropped; the scroll area takes what does not fit. The heatmap
    // writes its title over the cells only, not over the colour bar beside them.
    m_minimumCellWidth = std::max(220, widestTitle + colourBarWidth + 24);
    for (QFrame* frame : std::as_const(m_frames))
        frame->setMinimumSize(m_minimumCellWidth, minimumCellHeight);
    m_columns = 0;
    arrangeGrid();
    updateHighlight();
    updateSelection();
}

void HeadOverview::updateHighlight()
{
    m_highlighted = m_maps.isEmpty() ? -1 : std::clamp(m_document->currentHead(), 0, headCount() - 1);
    for (int h = 0; h < m_frames.size(); ++h) {
        const QString style = frameStyle(m_frames.at(h)->objectName(), h == m_highlighted);
        if (m_frames.at(h)->styleSheet() != style) // a style sheet set again polishes the frame again
            m_frames.at(h)->setStyleSheet(style);
    }
}

void HeadOverview::updateSelection()
{
    for (Heatmap* map : std::as_const(m_maps))
        map->setHighlight(static_cast<int>(m_document->selectedQuery()),
                          static_cast<int>(m_document->selectedKey()));
}

QString HeadOverview::figureTitle() const
{
    return tr("Attention weights of every head — %1")
        .arg(QString::fromStdString(m_document->session().title));
}

QSize HeadOverview::defaultFigureSize() const
{
    const int heads = std::max(1, headCount());
    const int columns = figureColumns();
    const int rows = (heads + columns - 1) / columns;
    return {
        std::clamp(2 * figureMargin + columns * naturalCellWidth + (columns - 1) * figureSpacing, 560, 2400),
        std::min(2400, 2 * figureMargin + 32 + rows * naturalCellHeight + (rows - 1) * figureSpacing)};
}

void HeadOverview::renderFigure(QPaintDevice* device, const QSize& size) const
{
    m_refresh->flush();
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;

    QFont title = font();
    title.setPointSizeF(figureTitlePoints);
    title.setBold(true);
    painter.setFont(title);
    painter.setPen(Qt::black);
    const QRect titleBox(figureMargin, figureMargin, size.width() - 2 * figureMargin,
                         QFontMetrics(title, device).height() + 4);
    const QString titleText = m_maps.isEmpty() ? m_document->currentHeadResult().error : figureTitle();
    painter.drawText(titleBox, Qt::AlignCenter | Qt::TextSingleLine,
                     QFontMetrics(title, device).elidedText(titleText, Qt::ElideRight, titleBox.width()));

    const int heads = headCount();
    if (heads > 0) {
        const int columns = figureColumns();
        const int rows = (heads + columns - 1) / columns;
        const int top = titleBox.bottom() + figureSpacing;
        const int cellWidth =
            std::max(1, (size.width() - 2 * figureMargin - (columns - 1) * figureSpacing) / columns);
        const int cellHeight =
            std::max(1, (size.height() - top - figureMargin - (rows - 1) * figureSpacing) / rows);
        for (int h = 0; h < heads; ++h) {
            // Each heatmap draws itself at its cell's size into a picture, which keeps vector output vector.
            QPicture picture;
            m_maps.at(h)->renderFigure(&picture, QSize(cellWidth, cellHeight));
            const QPoint corner(figureMargin + (h % columns) * (cellWidth + figureSpacing),
                                top + (h / columns) * (cellHeight + figureSpacing));
            painter.save();
            painter.setClipRect(QRect(corner, QSize(cellWidth, cellHeight)));
            painter.translate(corner);
            // A picture plays back scaled by the device's resolution over its own; undone, so the heatmap
            // keeps the size it was laid out for whatever the device's dots per inch.
            painter.scale(static_cast<double>(picture.logicalDpiX()) / device->logicalDpiX(),
                          static_cast<double>(picture.logicalDpiY()) / device->logicalDpiY());
            painter.drawPicture(QPoint(0, 0), picture);
            painter.restore();
        }
    }
    painter.end();
}

} // namespace qkv::ui
