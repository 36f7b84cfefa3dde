#pragma once
// Keeps a view's work for when it is on screen: a view behind another tab or dock, or in a closed dock,
// refreshes when it is shown instead of on every edit.

#include <QObject>

#include <functional>

class QWidget;

namespace qkv::ui {

/// The refresh of one view, run only while the view is on screen. request() runs it at once when the view
/// is visible, or when its application window is not shown at all (a view built for a test or for
/// command-line export); otherwise it marks the view stale, and the refresh runs when the view is shown.
/// flush() runs a stale refresh now (before the view is exported while hidden).
class OnScreenRefresh : public QObject {
    Q_OBJECT
public:
    /// `view` is watched for its show events and owns this object.
    OnScreenRefresh(QWidget* view, std::function<void()> refresh);

    void request();
    void flush();
    /// Whether a refresh waits for the view to be shown.
    bool isStale() const { return m_stale; }
    /// Whether `view` is hidden while the application window it belongs to is on screen.
    static bool isOffScreen(const QWidget* view);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* m_view;
    std::function<void()> m_refresh;
    bool m_stale = false;
};

} // namespace qkv::ui
