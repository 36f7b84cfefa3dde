#include "DocumentCommands.h"

namespace qkv::ui {

EditSessionCommand::EditSessionCommand(Document* document, const QString& text, Document::Changes changes,
                                       std::function<void(Session&)> edit)
    : QUndoCommand(text), m_document(document), m_changes(changes), m_edit(std::move(edit))
{
}

void EditSessionCommand::redo()
{
    m_before = m_document->session();
    m_edit(m_document->mutableSession());
    m_document->notifyChanged(m_changes);
}

void EditSessionCommand::undo()
{
    m_document->mutableSession() = std::move(m_before);
    m_before = Session();
    m_document->notifyChanged(m_changes);
}

QUndoCommand* makeCellCommand(Document* document, const MatrixRef& ref, Index row, Index column, double value)
{
    const QString text = Document::tr("Edit %1[%2][%3]").arg(displayName(ref)).arg(row).arg(column);
    return new ChangeValueCommand<double>(
        document, text, Document::Values,
        [ref, row, column](Session& s) -> double& { return cell(s, ref, row, column); }, value);
}

QUndoCommand* makeMatrixCommand(Document* document, const QString& text, const MatrixRef& ref,
                                const Matrix& value)
{
    // Stores only the one matrix before and after, not the whole session.
    class SetMatrixCommand : public QUndoCommand {
    public:
        SetMatrixCommand(Document* doc, const QString& label, const MatrixRef& target, Matrix after)
            : QUndoCommand(label), m_document(doc), m_ref(target),
              m_before(matrixValue(doc->session(), target)), m_after(std::move(after))
        {
        }
        void redo() override { apply(m_after); }
        void undo() override { apply(m_before); }

    private:
        void apply(const Matrix& value)
        {
            setMatrix(m_document->mutableSession(), m_ref, value);
            m_document->notifyChanged(Document::Values);
        }
        Document* m_document;
        MatrixRef m_ref;
        Matrix m_before;
        Matrix m_after;
    };
    return new SetMatrixCommand(document, text, ref, value);
}

} // namespace qkv::ui
