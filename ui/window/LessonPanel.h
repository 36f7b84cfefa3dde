// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Lessons menu and the side panel a lesson plays in: title, "Step k of N", the step's text, what its
// Training workspace action has to tell, a question to answer when the step has one, and Back / Next / Close.

#include <QWidget>

#include <functional>

class QAction;
class QButtonGroup;
class QDockWidget;
class QGroupBox;
class QLabel;
class QMenu;
class QPushButton;
class QTextBrowser;
class QVBoxLayout;

namespace qkv {
struct Lesson;
}

namespace qkv::ui {

class LessonPlayer;

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    /// `dock` is the dock the panel lives in: shown when a lesson starts, hidden when it ends.
    LessonPanel(LessonPlayer* player, QDockWidget* dock, QWidget* parent = nullptr);

    /// Lessons ▸ one entry per built-in lesson, Open Lesson File…, and the step actions.
    QMenu* menu() const { return m_menu; }
    /// Starts the built-in lesson `file` ("01-love.lesson.json"); on a refused lesson shows its message and
    /// returns false.
    bool startBuiltin(const QString& file);
    /// Starts the lesson file at `path`; on a refused file shows its message and returns false.
    bool startFile(const QString& path);
    /// The message of the last refused lesson ("" after a lesson started).
    QString lastError() const { return m_lastError; }

private:
    void buildMenu();
    bool start(const std::function<Lesson()>& load);
    void refuse(const QString& message);
    void showStep();
    void showAnswer(int option);
    void showNotice();

    LessonPlayer* m_player;
    QDockWidget* m_dock;
    QMenu* m_menu = nullptr;
    QAction* m_backAction = nullptr;
    QAction* m_nextAction = nullptr;
    QAction* m_closeAction = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_stepLabel = nullptr;
    QTextBrowser* m_text = nullptr;
    QLabel* m_notice = nullptr;
    QGroupBox* m_quiz = nullptr;
    QLabel* m_question = nullptr;
    QVBoxLayout* m_optionsLayout = nullptr;
    QButtonGroup* m_options = nullptr;
    QLabel* m_feedback = nullptr;
    QPushButton* m_back = nullptr;
    QPushButton* m_next = nullptr;
    QString m_lastError;
};

} // namespace qkv::ui
