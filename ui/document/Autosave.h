// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Autosave and crash recovery: an unsaved session is copied to the application's data folder, and what a
// crashed or killed instance left there is offered back on the next start.

#include <QDateTime>
#include <QFuture>
#include <QObject>
#include <QString>
#include <QTimer>

#include <functional>

namespace qkv::ui {

class Document;

/// One recovery file and what its sidecar says about it.
struct RecoveryInfo {
    QString sessionPath;  ///< FOLDER/recovery-PID.qkv.json, an ordinary session file
    QString infoPath;     ///< FOLDER/recovery-PID.info.json, the sidecar (may be missing after a crash)
    qint64 pid = 0;       ///< the process that wrote it
    QDateTime time;       ///< when it was written
    QString title;        ///< the window's document name then
    QString originalPath; ///< the file the session came from or was saved to; empty if never saved
};

enum class RecoveryChoice {
    Restore, ///< open it as a modified, unsaved document (with its original path)
    Discard, ///< delete it
    Keep     ///< leave it to be offered again on the next start
};

/// Writes the document's session to FOLDER/recovery-PID.qkv.json while it is modified: every
/// intervalSeconds() and right after each structural edit (Document::Shape), through qkv::saveSession, so
/// atomically; the sidecar FOLDER/recovery-PID.info.json (JSON: time, title, original path, and the
/// process's identity) describes it. The files are removed when the document becomes clean (saved, undone
/// to the saved state, another session opened) and by discard() (the window closed without saving).
///
/// Files are named by process id, and a file counts as orphaned only when that process is no longer
/// running (same boot, same process start time), so a second running instance never takes a live one's
/// file.
class Autosave : public QObject {
    Q_OBJECT
public:
    static constexpr int defaultIntervalSeconds = 30;

    /// Writes nothing until start() (but removes this process's files whenever the document becomes
    /// clean); the folder is defaultFolder().
    explicit Autosave(Document* document, QObject* parent = nullptr);
    ~Autosave() override;

    /// QStandardPaths::AppDataLocation/recovery (tests move it with XDG_DATA_HOME or setFolder()).
    static QString defaultFolder();
    QString folder() const { return m_folder; }
    void setFolder(const QString& folder) { m_folder = folder; }
    /// 0 turns autosave off (no timer, no writes after structural edits).
    int intervalSeconds() const { return m_intervalSeconds; }
    void setIntervalSeconds(int seconds);

    /// Starts watching the document (and writes at once if it is already modified).
    void start();
    bool isStarted() const { return m_started; }

    /// This process's files.
    QString sessionPath() const;
    QString infoPath() const;

    /// Writes the recovery files now, on this thread, if the document is modified (removes them if it is
    /// clean). On failure emits failed() and returns false with the message. (The timer and structural edits
    /// write a copy of the session on a worker thread instead, and emit saved() or failed() when done.)
    bool saveNow(QString* error = nullptr);
    /// Removes this process's recovery files (closing without saving).
    void discard();

    /// Recovery files in `folder` whose process is no longer running, newest first.
    static QList<RecoveryInfo> orphans(const QString& folder);
    /// Offers each orphan to `choose`, newest first, until one is restored: Restore takes the file over
    /// (renamed to this process's name, so no other instance offers it again) and loads it into the
    /// document as modified and unsaved with its original path; Discard deletes it; Keep leaves it. Returns
    /// true when a session was restored.
    bool recover(const std::function<RecoveryChoice(const RecoveryInfo&)>& choose);

signals:
    void saved(const QString& path);
    void failed(const QString& message);

private:
    void onSessionChanged(int changes);
    void onModifiedChanged(bool modified);
    bool restore(const RecoveryInfo& orphan, QString* error);
    bool prepareFolder(QString* problem);
    QByteArray sidecar() const;
    void writeInBackground();
    void onWriteFinished(quint64 id, const QString& problem);
    /// Blocks until a background write ended; its report is then ignored.
    void waitForWrite();

    Document* m_document;
    QString m_folder;
    int m_intervalSeconds = defaultIntervalSeconds;
    bool m_started = false;
    bool m_dirty = false;          // changed since the last write
    bool m_restoring = false;      // the document is being replaced by a recovered session
    QTimer m_timer;                // the periodic write
    QTimer m_soon;                 // one write after a structural edit, at the next turn of the event loop
    QFuture<void> m_running;       // the background write, if any
    quint64 m_writeId = 0;         // of the newest background write
    quint64 m_overtakenWrites = 0; // background writes up to this id are waited for: reports ignored
    bool m_pending = false;        // another write was asked for while one was running
};

} // namespace qkv::ui
