// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Keeps a view's work for when it is on screen: a view behind another tab or dock, or in a closed dock,
// refreshes when it is shown instead of on every edit.

#include <QObject>
#include <QPointer>

#include <functional>

class QDockWidget;
class QWidget;

namespace qkv::ui {

/// The refresh of one view, run only while the view is on screen. request() runs it at once when the view
/// is on screen, or when its application window is not shown at all (a view built for a test or for
/// command-line export); otherwise (hidden, or in a dock behind another dock's tab) it marks the view stale,
/// and the refresh runs when the view is shown or its dock brought to the front.
/// flush() runs a stale refresh now (before the view is exported while hidden).
class OnScreenRefresh : public QObject {
    Q_OBJECT
public:
    /// `view` is watched for its show events and owns this object.
    OnScreenRefresh(QWidget* view, std::function<void()> refresh);

    void request();
    /// For a refresh too costly to run while the window is being built: marks the view stale now and
    /// requests the refresh once control returns to the event loop, when the view knows where it sits (a
    /// view that is still off screen then waits to be shown; flush() runs it before that).
    void requestOnceBuilt();
    void flush();
    /// Whether a refresh waits for the view to be shown.
    bool isStale() const { return m_stale; }
    /// Whether `view` is hidden, or lies outside its window (a dock behind another's tab), while the
    /// application window it belongs to is on screen.
    static bool isOffScreen(const QWidget* view);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void followDock();

    QWidget* m_view;
    QPointer<QDockWidget> m_dock; // the dock the view is in, followed while the view is stale
    std::function<void()> m_refresh;
    bool m_stale = false;
};

} // namespace qkv::ui
