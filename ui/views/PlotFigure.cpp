#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QPaintEngine>

namespace qkv::ui {

namespace {

bool isVectorEngine(const QPaintEngine* engine)
{
    if (!engine)
        return false;
    switch (engine->type()) {
    case QPaintEngine::SVG:
    case QPaintEngine::Pdf:
    case QPaintEngine::Picture:
    case QPaintEngine::MacPrinter:
    case QPaintEngine::Windows: // only printers still paint through GDI
        return true;
    default:
        return false;
    }
}

} // namespace

void renderPlot(QCustomPlot* plot, QPaintDevice* device, const QSize& size)
{
    if (!plot || !device || size.isEmpty())
        return;
    QCPPainter painter;
    if (!painter.begin(device))
        return;
    // Vectorized: no half-pixel antialiasing shifts, colour maps embedded at a higher resolution.
    painter.setMode(QCPPainter::pmVectorized, isVectorEngine(painter.paintEngine()));
    // No caching: tick labels are drawn as text, not as pixmaps made for the screen.
    painter.setMode(QCPPainter::pmNoCaching);
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
}

bool beginFigure(QPainter& painter, QPaintDevice* device, const QSize& size)
{
    if (!device || size.isEmpty() || !painter.begin(device))
        return false;
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
    return true;
}

QCPTextElement* setUpPlot(QCustomPlot* plot, const QSize& minimumSize)
{
    plot->setMinimumSize(minimumSize);
    plot->setMouseTracking(true);
    plot->setInteractions(QCP::Interactions());
    QFont titleFont = plot->font();
    titleFont.setBold(true);
    plot->plotLayout()->insertRow(0);
    auto* title = new QCPTextElement(plot, QString(), titleFont);
    plot->plotLayout()->addElement(0, 0, title);
    plot->plotLayout()->setRowSpacing(0);
    return title;
}

} // namespace qkv::ui
