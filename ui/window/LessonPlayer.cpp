#include "LessonPlayer.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "Examples.h"

#include <QUndoStack>

namespace qkv::ui {

LessonPlayer::LessonPlayer(Document* document, FigureNavigator navigator, QObject* parent)
    : QObject(parent), m_document(document), m_navigator(std::move(navigator))
{
    // A session opened meanwhile clears the history: the steps' commands are gone, and Back must not undo
    // whatever is pushed next at the same index.
    // The stack, not the document: the document's destructor clears its stack, and the document is then
    // already half destroyed.
    QUndoStack* stack = m_document->undoStack();
    connect(stack, &QUndoStack::indexChanged, this, [this, stack] {
        if (stack->count() == 0)
            m_applied.assign(m_applied.size(), Applied{});
    });
}

void LessonPlayer::start(Lesson lesson)
{
    m_lesson = std::move(lesson);
    m_applied.assign(m_lesson.steps.size(), Applied{});
    m_step = 0;
    m_active = !m_lesson.steps.empty();
    if (m_active)
        apply();
}

void LessonPlayer::stop()
{
    if (!m_active)
        return;
    m_active = false;
    emit stopped();
}

void LessonPlayer::next()
{
    if (!canGoNext())
        return;
    ++m_step;
    apply();
}

void LessonPlayer::back()
{
    if (!canGoBack())
        return;
    const Applied& left = m_applied[static_cast<std::size_t>(m_step)];
    QUndoStack* stack = m_document->undoStack();
    if (left.pushed && stack->index() == left.undoIndexAfter)
        stack->undo();
    m_applied[static_cast<std::size_t>(m_step)] = Applied{};
    --m_step;
    showViewAndCell();
    emit stepChanged();
}

void LessonPlayer::apply()
{
    const LessonStep& step = currentStep();
    Applied applied;
    if (step.example || step.edit) {
        // The whole step is one undo step: Edit ▸ Undo (or Back) returns to the session before it, the
        // person's own included, so a lesson never discards work.
        Session session = m_document->session();
        try {
            if (step.example)
                session = loadExample(*step.example);
            if (step.edit)
                applyLessonEdit(session, *step.edit, m_document->initializer());
        } catch (const Error& e) {
            emit failed(QString::fromStdString(e.what()));
            return;
        }
        if (!(session == m_document->session())) {
            const QString text =
                step.example
                    ? tr("Lesson: open %1").arg(QString::fromStdString(session.title))
                    : tr("Lesson: %1, step %2").arg(QString::fromStdString(m_lesson.title)).arg(m_step + 1);
            pushEdit(m_document, text, Document::Everything,
                     [session = std::move(session)](Session& s) { s = session; });
            applied = {true, m_document->undoStack()->index()};
        }
    }
    m_applied[static_cast<std::size_t>(m_step)] = applied;
    showViewAndCell();
    emit stepChanged();
}

void LessonPlayer::showViewAndCell()
{
    const LessonStep& step = currentStep();
    m_navigator.show(QString::fromStdString(step.view));
    if (step.cell)
        m_document->setSelection(step.cell->first, step.cell->second);
}

} // namespace qkv::ui
