// SPDX-License-Identifier: GPL-3.0-or-later
#include "OnScreenRefresh.h"

#include <QDockWidget>
#include <QEvent>
#include <QWidget>

namespace qkv::ui {

OnScreenRefresh::OnScreenRefresh(QWidget* view, std::function<void()> refresh)
    : QObject(view), m_view(view), m_refresh(std::move(refresh))
{
    view->installEventFilter(this);
}

bool OnScreenRefresh::isOffScreen(const QWidget* view)
{
    const QWidget* top = view->window();
    if (!view->isVisible()) {
        // The window the view belongs to; a floating dock's is the main window it floats over.
        while (!top->isVisible() && top->parentWidget())
            top = top->parentWidget()->window();
        return top != view && top->isVisible();
    }
    // A dock behind another one's tab stays "visible": the main window moves it out of its area instead.
    return top != view && !QRect(view->mapTo(top, QPoint(0, 0)), view->size()).intersects(top->rect());
}

void OnScreenRefresh::request()
{
    if (isOffScreen(m_view)) {
        m_stale = true;
        followDock();
        return;
    }
    m_stale = false;
    m_refresh();
}

void OnScreenRefresh::requestOnceBuilt()
{
    m_stale = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            if (m_stale)
                request();
        },
        Qt::QueuedConnection);
}

void OnScreenRefresh::flush()
{
    if (!m_stale)
        return;
    m_stale = false;
    m_refresh();
}

// A dock brought to the front of its tab group is not shown again (it never was hidden): its
// visibilityChanged() says so.
void OnScreenRefresh::followDock()
{
    QDockWidget* dock = nullptr;
    for (QWidget* w = m_view->parentWidget(); w && !dock; w = w->parentWidget())
        dock = qobject_cast<QDockWidget*>(w);
    if (dock == m_dock)
        return;
    if (m_dock)
        disconnect(m_dock, &QDockWidget::visibilityChanged, this, nullptr);
    m_dock = dock;
    if (m_dock)
        connect(m_dock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
            if (visible)
                flush();
        });
}

bool OnScreenRefresh::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_view && event->type() == QEvent::Show)
        flush();
    return QObject::eventFilter(watched, event);
}

} // namespace qkv::ui
