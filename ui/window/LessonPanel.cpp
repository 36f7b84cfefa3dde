// SPDX-License-Identifier: GPL-3.0-or-later
#include "LessonPanel.h"

#include "Error.h"
#include "LessonPlayer.h"
#include "Lessons.h"

#include <QAction>
#include <QButtonGroup>
#include <QDockWidget>
#include <QFileDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace qkv::ui {

namespace {

std::vector<std::string> toStd(const QStringList& list)
{
    std::vector<std::string> out;
    for (const QString& text : list)
        out.push_back(text.toStdString());
    return out;
}

QString optionLetter(int option)
{
    return QChar(QLatin1Char('A').unicode() + option);
}

} // namespace

LessonPanel::LessonPanel(LessonPlayer* player, QDockWidget* dock, QWidget* parent)
    : QWidget(parent), m_player(player), m_dock(dock)
{
    setObjectName(QStringLiteral("lessonPanel"));
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("lessonTitle"));
    m_title->setWordWrap(true);
    QFont bold = m_title->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.2);
    m_title->setFont(bold);
    m_stepLabel = new QLabel(this);
    m_stepLabel->setObjectName(QStringLiteral("lessonStep"));
    m_text = new QTextBrowser(this);
    m_text->setObjectName(QStringLiteral("lessonText"));
    m_text->setOpenExternalLinks(true);
    // Three lines at least, not a scroll bar's worth: a short dock leaves the rest to the question.
    m_text->setMinimumHeight(3 * m_text->fontMetrics().lineSpacing() + 2 * m_text->frameWidth() + 8);
    m_notice = new QLabel(this);
    m_notice->setObjectName(QStringLiteral("lessonNotice"));
    m_notice->setWordWrap(true);
    m_notice->setFrameShape(QFrame::StyledPanel);
    m_notice->setMargin(6);

    m_quiz = new QGroupBox(tr("Question"), this);
    m_quiz->setObjectName(QStringLiteral("lessonQuiz"));
    m_optionsLayout = new QVBoxLayout(m_quiz);
    m_question = new QLabel(m_quiz); // a label, not the box's title: a long question wraps
    m_question->setObjectName(QStringLiteral("lessonQuestion"));
    m_question->setWordWrap(true);
    QFont questionFont = m_question->font();
    questionFont.setBold(true);
    m_question->setFont(questionFont);
    m_optionsLayout->addWidget(m_question);
    m_options = new QButtonGroup(this);
    m_feedback = new QLabel(this);
    m_feedback->setObjectName(QStringLiteral("lessonQuizFeedback"));
    m_feedback->setWordWrap(true);
    m_feedback->setTextFormat(Qt::RichText);
    connect(m_options, &QButtonGroup::idClicked, this, &LessonPanel::showAnswer);

    m_menu = new QMenu(tr("&Lessons"), this);
    m_menu->setObjectName(QStringLiteral("lessonsMenu"));
    m_backAction = new QAction(tr("&Previous Step"), this);
    m_backAction->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Left));
    m_backAction->setStatusTip(tr("Back to the lesson's previous step (its edit undone)"));
    m_nextAction = new QAction(tr("&Next Step"), this);
    m_nextAction->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Right));
    m_nextAction->setStatusTip(tr("On to the lesson's next step"));
    m_closeAction = new QAction(tr("&Close Lesson"), this);
    m_closeAction->setStatusTip(tr("End the lesson; the session stays as it is"));
    m_back = new QPushButton(tr("◀ Back"), this);
    m_back->setObjectName(QStringLiteral("lessonBack"));
    m_back->setToolTip(tr("Previous step (Alt+Left)"));
    m_next = new QPushButton(tr("Next ▶"), this);
    m_next->setObjectName(QStringLiteral("lessonNext"));
    m_next->setToolTip(tr("Next step (Alt+Right)"));
    auto* close = new QPushButton(tr("Close"), this);
    close->setObjectName(QStringLiteral("lessonClose"));
    connect(m_back, &QPushButton::clicked, m_backAction, &QAction::trigger);
    connect(m_next, &QPushButton::clicked, m_nextAction, &QAction::trigger);
    connect(close, &QPushButton::clicked, m_closeAction, &QAction::trigger);
    connect(m_backAction, &QAction::triggered, m_player, &LessonPlayer::back);
    connect(m_nextAction, &QAction::triggered, m_player, &LessonPlayer::next);
    connect(m_closeAction, &QAction::triggered, m_player, &LessonPlayer::stop);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_back);
    buttons->addWidget(m_next);
    buttons->addStretch();
    buttons->addWidget(close);
    // The step scrolls inside the panel: a question's options and explanation would otherwise set the dock's
    // minimum size, and a dock keeps its size after the step, squeezing the views below for the whole lesson.
    auto* body = new QWidget;
    auto* bodyLayout = new QVBoxLayout(body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_text, 1);
    bodyLayout->addWidget(m_quiz);
    bodyLayout->addWidget(m_feedback);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("lessonBody"));
    scroll->setWidget(body);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_stepLabel);
    layout->addWidget(m_notice); // above the step's text: it says why the step did not do what the text says
    layout->addWidget(scroll, 1);
    layout->addLayout(buttons);

    connect(m_player, &LessonPlayer::stepChanged, this, &LessonPanel::showStep);
    connect(m_player, &LessonPlayer::stopped, this, [this] {
        m_dock->hide();
        showStep();
    });
    connect(m_player, &LessonPlayer::failed, this, &LessonPanel::refuse);
    connect(m_player, &LessonPlayer::noticeChanged, this, &LessonPanel::showNotice);
    buildMenu();
    showStep();
}

void LessonPanel::buildMenu()
{
    const std::vector<std::string> views = toStd(m_player->viewNames());
    for (const std::string& file : builtinLessonFiles()) {
        QString title;
        try {
            title = QString::fromStdString(loadBuiltinLesson(file, views).title);
        } catch (const Error&) {
            title = tr("%1 (cannot be loaded)").arg(QString::fromStdString(file)); // says why when chosen
        }
        QAction* action = m_menu->addAction(title);
        const QString name = QString::fromStdString(file);
        action->setData(name);
        connect(action, &QAction::triggered, this, [this, name] { startBuiltin(name); });
    }
    m_menu->addSeparator();
    QAction* open = m_menu->addAction(tr("&Open Lesson File…"));
    open->setStatusTip(tr("Play a lesson from a .lesson.json file"));
    connect(open, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open Lesson"), QString(), tr("Lessons (*.lesson.json *.json);;All files (*)"));
        if (!path.isEmpty())
            startFile(path);
    });
    m_menu->addSeparator();
    m_menu->addAction(m_backAction);
    m_menu->addAction(m_nextAction);
    m_menu->addAction(m_closeAction);
}

bool LessonPanel::startBuiltin(const QString& file)
{
    const std::vector<std::string> views = toStd(m_player->viewNames());
    return start([&] { return loadBuiltinLesson(file.toStdString(), views); });
}

bool LessonPanel::startFile(const QString& path)
{
    const std::vector<std::string> views = toStd(m_player->viewNames());
    return start([&] { return loadLessonFile(path.toStdString(), views); });
}

bool LessonPanel::start(const std::function<Lesson()>& load)
{
    Lesson lesson;
    try {
        lesson = load();
    } catch (const Error& e) {
        refuse(QString::fromStdString(e.what()));
        return false;
    }
    m_lastError.clear();
    m_dock->show();
    m_dock->raise();
    m_player->start(std::move(lesson));
    return true;
}

// A refused lesson is said in the panel (not a modal box): the lesson in progress, if any, goes on.
void LessonPanel::refuse(const QString& message)
{
    m_lastError = message;
    m_dock->show();
    m_dock->raise();
    m_feedback->setText(QStringLiteral("<span style=\"color:#a40000\">") +
                        tr("Cannot play this lesson: %1").arg(message.toHtmlEscaped()) +
                        QStringLiteral("</span>"));
    m_feedback->show();
}

void LessonPanel::showStep()
{
    const bool active = m_player->isActive();
    m_backAction->setEnabled(m_player->canGoBack());
    m_nextAction->setEnabled(m_player->canGoNext());
    m_closeAction->setEnabled(active);
    m_back->setEnabled(m_player->canGoBack());
    m_next->setEnabled(m_player->canGoNext());
    for (QAbstractButton* button : m_options->buttons()) {
        m_options->removeButton(button);
        delete button;
    }
    m_feedback->clear();
    m_feedback->hide();
    showNotice();
    if (!active) {
        m_title->setText(tr("No lesson"));
        m_stepLabel->clear();
        m_text->setHtml(tr("<p>Choose a lesson from the <b>Lessons</b> menu.</p>"));
        m_quiz->hide();
        return;
    }
    const LessonStep& step = m_player->currentStep();
    m_title->setText(QString::fromStdString(m_player->lesson().title));
    m_stepLabel->setText(tr("Step %1 of %2").arg(m_player->step() + 1).arg(m_player->stepCount()));
    m_text->setHtml(QString::fromStdString(step.text));
    m_quiz->setVisible(step.quiz.has_value());
    if (!step.quiz)
        return;
    m_question->setText(QString::fromStdString(step.quiz->question));
    for (std::size_t i = 0; i < step.quiz->options.size(); ++i) {
        const int id = static_cast<int>(i);
        auto* option = new QRadioButton(
            optionLetter(id) + QStringLiteral(") ") + QString::fromStdString(step.quiz->options[i]), m_quiz);
        option->setObjectName(QStringLiteral("lessonOption%1").arg(id));
        m_options->addButton(option, id);
        m_optionsLayout->addWidget(option);
    }
}

void LessonPanel::showNotice()
{
    const QString notice = m_player->isActive() ? m_player->notice() : QString();
    m_notice->setText(notice);
    m_notice->setVisible(!notice.isEmpty());
}

void LessonPanel::showAnswer(int option)
{
    if (!m_player->isActive() || !m_player->currentStep().quiz)
        return;
    const LessonQuiz& quiz = *m_player->currentStep().quiz;
    const bool right = isCorrectAnswer(quiz, static_cast<std::size_t>(option));
    const QString verdict = right
                                ? tr("<b>Correct.</b>")
                                : tr("<b>Not quite:</b> the answer is %1) %2.")
                                      .arg(optionLetter(static_cast<int>(quiz.answer)),
                                           QString::fromStdString(quiz.options[quiz.answer]).toHtmlEscaped());
    m_feedback->setProperty("correct", right);
    m_feedback->setText(verdict + QStringLiteral(" ") + QString::fromStdString(quiz.explanation));
    m_feedback->show();
}

} // namespace qkv::ui
