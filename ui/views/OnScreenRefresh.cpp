#include "OnScreenRefresh.h"

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
    if (view->isVisible())
        return false;
    // The window the view belongs to; a floating dock's is the main window it floats over.
    const QWidget* top = view->window();
    while (!top->isVisible() && top->parentWidget())
        top = top->parentWidget()->window();
    return top != view && top->isVisible();
}

void OnScreenRefresh::request()
{
    if (isOffScreen(m_view)) {
        m_stale = true;
        return;
    }
    m_stale = false;
    m_refresh();
}

void OnScreenRefresh::flush()
{
    if (!m_stale)
        return;
    m_stale = false;
    m_refresh();
}

bool OnScreenRefresh::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_view && event->type() == QEvent::Show)
        flush();
    return QObject::eventFilter(watched, event);
}

} // namespace qkv::ui
