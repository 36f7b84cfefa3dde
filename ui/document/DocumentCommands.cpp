// SPDX-License-Identifier: GPL-3.0-or-later
#include "DocumentCommands.h"

namespace qkv::ui {

EditSessionCommand::EditSessionCommand(Document* document, const QString& text, Document::Changes changes,
                                       std::function<void(Session&)> edit)
    : DocumentCommand(document, text), m_changes(changes), m_edit(std::move(edit))
{
}

void EditSessionCommand::redo()
{
    m_before = document()->session();
    m_edit(sessionToChange());
    changed(m_changes);
}

void EditSessionCommand::undo()
{
    sessionToChange() = std::move(m_before);
    m_before = Session();
    changed(m_changes);
}

void pushEdit(Document* document, const QString& text, Document::Changes changes,
              std::function<void(Session&)> edit)
{
    document->push(new EditSessionCommand(document, text, changes, std::move(edit)));
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
    class SetMatrixCommand : public DocumentCommand {
    public:
        SetMatrixCommand(Document* doc, const QString& label, const MatrixRef& target, Matrix after)
            : DocumentCommand(doc, label), m_ref(target), m_before(matrixValue(doc->session(), target)),
              m_after(std::move(after))
        {
        }
        void redo() override { apply(m_after); }
        void undo() override { apply(m_before); }

    private:
        void apply(const Matrix& value)
        {
            setMatrix(sessionToChange(), m_ref, value);
            changed(Document::Values);
        }
        MatrixRef m_ref;
        Matrix m_before;
        Matrix m_after;
    };
    return new SetMatrixCommand(document, text, ref, value);
}

namespace {

// Adds (or removes) one snapshot at `index`, holding only that snapshot (its session is shared).
class SnapshotCommand : public DocumentCommand {
public:
    SnapshotCommand(Document* document, const QString& text, Snapshot snapshot, int index, bool add)
        : DocumentCommand(document, text), m_snapshot(std::move(snapshot)), m_index(index), m_add(add)
    {
    }
    void redo() override { apply(m_add); }
    void undo() override { apply(!m_add); }

private:
    void apply(bool add)
    {
        std::vector<Snapshot>& snapshots = sessionToChange().snapshots;
        if (add)
            snapshots.insert(snapshots.begin() + m_index, m_snapshot);
        else
            snapshots.erase(snapshots.begin() + m_index);
        changed(Document::Snapshots);
    }
    Snapshot m_snapshot;
    int m_index;
    bool m_add;
};

} // namespace

QUndoCommand* makeAddSnapshotCommand(Document* document, Snapshot snapshot)
{
    const QString text = Document::tr("Take snapshot “%1”").arg(QString::fromStdString(snapshot.name));
    const auto index = static_cast<int>(document->session().snapshots.size());
    return new SnapshotCommand(document, text, std::move(snapshot), index, true);
}

QUndoCommand* makeRemoveSnapshotCommand(Document* document, int index)
{
    const std::vector<Snapshot>& snapshots = document->session().snapshots;
    if (index < 0 || index >= static_cast<int>(snapshots.size()))
        return nullptr;
    const Snapshot& snapshot = snapshots[static_cast<std::size_t>(index)];
    const QString text = Document::tr("Delete snapshot “%1”").arg(QString::fromStdString(snapshot.name));
    return new SnapshotCommand(document, text, snapshot, index, false);
}

} // namespace qkv::ui
