// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The undo commands. Every change a person makes is one of these, pushed on the document's stack.

#include "Document.h"
#include "MatrixRef.h"

#include <QUndoCommand>

#include <functional>
#include <optional>

namespace qkv::ui {

/// Ids of commands that merge with the next one of the same id (a slider drag or spin-box run is one step).
enum class MergeId { None = -1, Temperature = 1, Alpha, ScaleValue, MaskParameter, Title };

/// What every command is: the only code that may change the document's session.
class DocumentCommand : public QUndoCommand {
protected:
    DocumentCommand(Document* document, const QString& text) : QUndoCommand(text), m_document(document) {}
    Document* document() const { return m_document; }
    /// The session to change, then the notification of what changed.
    Session& sessionToChange() const { return m_document->mutableSession(); }
    void changed(Document::Changes changes) const { m_document->notifyChanged(changes); }

private:
    Document* m_document;
};

/// A structural edit given as a function: it runs on redo; undo restores the session as it was before.
class EditSessionCommand : public DocumentCommand {
public:
    EditSessionCommand(Document* document, const QString& text, Document::Changes changes,
                       std::function<void(Session&)> edit);
    void redo() override;
    void undo() override;

private:
    Document::Changes m_changes;
    std::function<void(Session&)> m_edit;
    Session m_before;
};

/// Pushes one structural edit (an EditSessionCommand): `edit` changes the session, and runs again on
/// every redo.
void pushEdit(Document* document, const QString& text, Document::Changes changes,
              std::function<void(Session&)> edit);

/// Sets one value reached through `access`; merges with the next command of the same MergeId and target.
template <typename Value> class ChangeValueCommand : public DocumentCommand {
public:
    using Access = std::function<Value&(Session&)>;

    ChangeValueCommand(Document* document, const QString& text, Document::Changes changes, Access access,
                       Value value, MergeId mergeId = MergeId::None, QString target = QString())
        : DocumentCommand(document, text), m_changes(changes), m_access(std::move(access)),
          m_old(m_access(sessionToChange())), m_new(std::move(value)), m_mergeId(mergeId),
          m_target(std::move(target))
    {
    }

    /// Whether the command would change anything (no empty steps on the undo stack).
    bool changesSomething() const { return !(m_old == m_new); }

    void redo() override { apply(m_new); }
    void undo() override { apply(m_old); }
    int id() const override { return static_cast<int>(m_mergeId); }
    bool mergeWith(const QUndoCommand* other) override
    {
        const auto* next = dynamic_cast<const ChangeValueCommand*>(other);
        if (!next || next->m_target != m_target)
            return false;
        m_new = next->m_new;
        setObsolete(m_new == m_old);
        return true;
    }

private:
    void apply(const Value& value)
    {
        m_access(sessionToChange()) = value;
        changed(m_changes);
    }

    Document::Changes m_changes;
    Access m_access;
    Value m_old;
    Value m_new;
    MergeId m_mergeId;
    QString m_target;
};

/// Adds `snapshot` after the others (Edit ▸ Take Snapshot…); undo removes it.
QUndoCommand* makeAddSnapshotCommand(Document* document, Snapshot snapshot);
/// Removes snapshot `index`; undo puts it back in its place. Null when there is no such snapshot.
QUndoCommand* makeRemoveSnapshotCommand(Document* document, int index);

/// One matrix cell.
QUndoCommand* makeCellCommand(Document* document, const MatrixRef& ref, Index row, Index column,
                              double value);
/// A whole matrix of the same shape (paste, import, re-initialise).
QUndoCommand* makeMatrixCommand(Document* document, const QString& text, const MatrixRef& ref,
                                const Matrix& value);

} // namespace qkv::ui
