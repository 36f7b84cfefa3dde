#pragma once

#include <QMainWindow>

class QPlainTextEdit;

namespace qkv::ui {

/// Placeholder window until the workbench: shows the session's attention weights as text.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    /// Opens a session file or "example:NAME" ("" = the default example). Shows the engine's message on failure.
    bool openSession(const QString& source);

private:
    QPlainTextEdit* m_text;
};

} // namespace qkv::ui
