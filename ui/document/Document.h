// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The open session: its value, its undo stack, its file, and the latest engine result.

#include "AttentionResult.h"
#include "Initializers.h"
#include "Session.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

class QUndoCommand;
class QUndoStack;

namespace qkv::ui {

/// The current head's part of the newest result, or why there is none (Document::currentHeadResult()).
struct CurrentHeadResult {
    std::shared_ptr<const AttentionResult> result; ///< null when the engine refused the session
    const HeadResult* head = nullptr;              ///< the shown head of `result`; null without one
    int index = 0;                                 ///< which head: the document's, clamped to the result's
    int count = 0;                                 ///< how many heads the result has
    QString error;                                 ///< "Cannot compute attention: …" when there is no head
    explicit operator bool() const { return head != nullptr; }
};

/// One finished computation, handed from the worker thread as a plain value.
struct ComputeOutcome {
    std::shared_ptr<const AttentionResult> result; ///< null when the engine refused the session
    QString error;
    double milliseconds = 0;
    quint64 generation = 0;
    /// The buffers the engine wrote into (the result's own when there is one), for the next computation.
    std::shared_ptr<AttentionResult> buffer;
    /// The copy of the session a background job computed (null when computed at once from the document's).
    std::shared_ptr<const Session> session;
};

class Document : public QObject {
    Q_OBJECT
public:
    /// What an edit touched, so views redraw only what they must.
    enum Change {
        Values = 0x1,  ///< numbers inside matrices
        Tokens = 0x2,  ///< token texts, padding flags or dimension names
        Shape = 0x4,   ///< sizes, heads, cross-attention, presence of matrices
        Options = 0x8, ///< score, scale, temperature, mask, normalizer, precision
        Everything = 0xF,
        Snapshots = 0x10, ///< the snapshots kept with the session (nothing to recompute)
        Model = 0x20      ///< the model link: its interventions (nothing to recompute here)
    };
    Q_DECLARE_FLAGS(Changes, Change)

    explicit Document(QObject* parent = nullptr);
    ~Document() override;

    const Session& session() const { return m_session; }
    /// The newest finished result (null if the engine refused the session: see resultError()).
    std::shared_ptr<const AttentionResult> result() const { return m_result; }
    QString resultError() const { return m_resultError; }
    /// The head the views show, taken from the newest result (the current head clamped to the heads it has),
    /// or the message a view shows instead when the engine refused the session.
    CurrentHeadResult currentHeadResult() const;
    double lastComputeMilliseconds() const { return m_lastMilliseconds; }
    /// True until the result of the newest edit is published: result() may still be an older session's.
    bool isComputing() const { return m_publishedGeneration != m_generation; }
    /// Stops the running background computation: the newest edit's result becomes an error saying it was
    /// stopped (the edit itself stays; undo, or any other edit, computes again).
    void cancelComputation();

    /// Sessions estimated to need more memory than this (bytes) are refused with a message instead of
    /// computed. Default: qkv::defaultMemoryLimit().
    std::uint64_t memoryLimit() const { return m_memoryLimit; }
    void setMemoryLimit(std::uint64_t bytes);

    QUndoStack* undoStack() const { return m_undoStack; }
    QString filePath() const { return m_filePath; }
    /// The file name, or the title for a session that was never saved.
    QString displayName() const;
    bool isModified() const;

    /// Replaces the whole session (New, Open): clears the undo history.
    void reset(const Session& session, const QString& filePath = QString());
    /// Loads a session file or "example:NAME". On failure returns false with the engine's message and
    /// changes nothing.
    bool open(const QString& source, QString* error);
    /// Saves atomically; on success the document is clean and takes the new path.
    bool saveAs(const QString& path, QString* error);

    /// Pushes an undoable edit: one of the commands of DocumentCommands.h (pushEdit() for a structural one).
    void push(QUndoCommand* command);

    /// New entries of resized matrices, and re-initialisation, come from this (a preference, not undoable).
    InitializerSpec initializer() const { return m_initializer; }
    void setInitializer(const InitializerSpec& spec) { m_initializer = spec; }

    /// The head the views show (view state, not undoable).
    int currentHead() const { return m_currentHead; }
    void setCurrentHead(int head);

    /// The selected cell: query i and key j, shared by every view (view state, not undoable). Clamped to the
    /// session's n and m.
    Index selectedQuery() const { return m_selectedQuery; }
    Index selectedKey() const { return m_selectedKey; }
    void setSelection(Index query, Index key);

    /// Keeps `experiment` as the patching experiment of the session's model link (the Patching tab's last
    /// run), so that Save writes it. Like the view state, not an undo step and not a change of the session:
    /// running an experiment never asks to save before a head opens. False when there is no model link.
    bool recordPatchExperiment(const PatchExperiment& experiment);

    /// Sessions whose work (n·m·(d_k + d_v)·heads) stays below this are computed at once on the GUI thread;
    /// bigger ones in the background, newest edit winning.
    static constexpr double synchronousWorkLimit = 4e6;
    /// Blocks until the newest edit's result is published (isComputing() is false). For tests and
    /// command-line export.
    void waitForResult();

signals:
    void sessionChanged(qkv::ui::Document::Changes changes);
    /// A new result (or error) is published: emitted just before resultChanged, for views that start
    /// background work from it (the PCA planes), so that the work runs while the others redraw (a projection
    /// started after them would be the last thing an edit waits for).
    void resultArrived();
    void resultChanged();
    /// isComputing() turned true (an edit started a background computation) or false (its result, or
    /// the reason there is none, is published).
    void computingChanged(bool computing);
    void currentHeadChanged(int head);
    /// reset() replaced the whole session (New, Open, a model's head, recovery), after sessionChanged.
    void sessionReset();
    void selectionChanged(qkv::Index query, qkv::Index key);
    void modifiedChanged(bool modified);
    void filePathChanged(const QString& path);

private:
    // Only commands change the session (DocumentCommand gives them these two), so every change is undoable.
    friend class DocumentCommand;
    Session& mutableSession() { return m_session; }
    void notifyChanged(Changes changes);

    /// Whether the session is small enough to compute on the GUI thread (synchronousWorkLimit).
    bool computesAtOnce() const;
    void recompute();
    void startBackground();
    void onBackgroundFinished();
    void publish(const ComputeOutcome& outcome);
    void selectStrongestKeyOfFirstQuery();
    void announceComputing();
    /// Buffers for the next computation: an earlier result nothing else holds any more (same-shaped
    /// matrices are reused: no large allocation, no page faults, no freeing on the GUI thread), else new.
    std::shared_ptr<AttentionResult> takeBuffer();
    void recycle(std::shared_ptr<AttentionResult> buffer);
    /// The session for a background job: a copy of m_session, into an earlier copy that neither a job nor
    /// the shown result holds any more (same shapes: no allocation; a fresh copy of a large session costs the
    /// GUI thread more in page faults than in copying).
    std::shared_ptr<const Session> takeSnapshot();

    Session m_session;
    QUndoStack* m_undoStack;
    QString m_filePath;
    InitializerSpec m_initializer;
    int m_currentHead = 0;
    Index m_selectedQuery = 0;
    Index m_selectedKey = 0;

    std::shared_ptr<const AttentionResult> m_result;
    std::shared_ptr<AttentionResult> m_resultBuffer; // m_result, writable once nothing else holds it
    std::shared_ptr<AttentionResult> m_spareBuffer;  // the result before it, for the next computation
    // The copies of the session background jobs computed; they take turns, as the result buffers do.
    std::array<std::shared_ptr<Session>, 2> m_snapshots;
    // The copy m_result was computed from (null when computed at once): the next job copies from m_result
    // the projections whose inputs it has the same (an edit of W_Q computes one projection of three).
    std::shared_ptr<const Session> m_resultSession;
    QString m_resultError;
    double m_lastMilliseconds = 0;
    quint64 m_generation = 0;          // of the newest edit
    quint64 m_publishedGeneration = 0; // of the result shown
    bool m_backgroundPending = false;  // an edit came while a job ran: start the newest when it ends
    bool m_jobHandled = true;          // the watcher's job has been published (or dropped) already
    bool m_selectOnPublish = false;    // reset() without a saved selection: pick one from its result
    bool m_announcedComputing = false; // what computingChanged() last said
    std::uint64_t m_memoryLimit;
    std::shared_ptr<std::atomic<bool>> m_cancelJob; // the running job's stop flag
    QFutureWatcher<ComputeOutcome> m_watcher;
};

} // namespace qkv::ui

Q_DECLARE_OPERATORS_FOR_FLAGS(qkv::ui::Document::Changes)
