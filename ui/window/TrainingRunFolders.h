// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The folders the Training workspace's runs are saved in: one per run, named after the time it started, under
// the application's data folder. Listed with what each holds, marked when Save Model As copied it elsewhere,
// deleted when asked, and the oldest unsaved ones removed past a limit. A folder is deleted only when its
// name is a run's and it lies directly in the runs' folder; never one whose run goes (in this process or
// another: a running run holds a lock file in its folder) or one the user saved.

#include "Tasks.h"

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <optional>

class QLockFile;

namespace qkv::ui {

/// What the list shows of one run's folder.
struct TrainingRunFolder {
    QString path;
    QString name;           ///< the folder's name: when the run started (UTC), to the millisecond
    QDateTime started;      ///< read from the name (UTC)
    QString task;           ///< from training.json ("induction"); empty before the run has ended
    std::int64_t steps = 0; ///< the last step trained (0: unknown)
    bool hasModel = false;  ///< config.json is there
    bool running = false;   ///< a run holds the folder's lock
    QStringList savedTo;    ///< where Save Model As copied it; empty: not saved
    bool isSaved() const { return !savedTo.isEmpty(); }
};

/// What a finished run was trained on, from its training.json, to open it as the window did.
struct TrainingRunTask {
    training::TaskSettings task;
    std::uint64_t seed = 1;
};

class TrainingRunFolders {
public:
    /// Unsaved runs kept when a run starts: older ones are deleted (docs/user-guide.md, "Training").
    static constexpr int keptUnsavedRuns = 20;

    /// The runs under `root`; by default the application data folder's "training".
    explicit TrainingRunFolders(QString root = defaultRoot());
    static QString defaultRoot();
    const QString& root() const { return m_root; }

    /// A new, empty folder for a run starting now, locked as running until unlockRun(). Empty (with `error`)
    /// when it cannot be created.
    QString createRun(QString* error = nullptr);
    /// The run in `path` has ended: its lock goes.
    void unlockRun();

    /// Every run folder, newest first (folders whose names are not a run's are left out).
    QList<TrainingRunFolder> list() const;
    TrainingRunFolder read(const QString& path) const;
    /// The task and seed from the folder's training.json; none when it has no task (ids from a file) or
    /// cannot be read.
    static std::optional<TrainingRunTask> readTask(const QString& path);

    /// Records that the run in `path` was copied to `destination` (kept in a hidden file of the folder).
    bool markSaved(const QString& path, const QString& destination, QString* error = nullptr);
    /// Deletes the run folder `path`, saved or not; refused (with `error`) when it is not a run folder of
    /// root() or its run goes.
    bool remove(const QString& path, QString* error = nullptr);
    /// Deletes the unsaved runs past the newest `keep`, never a running or saved one; the paths deleted.
    QStringList prune(int keep = keptUnsavedRuns);

    /// The name of the hidden file that records Save Model As.
    static QString savedMarkerName();

private:
    bool isRunFolder(const QString& path) const;
    static bool isLocked(const QString& path);

    QString m_root;
    std::shared_ptr<QLockFile> m_lock; // the run of this object that goes
};

} // namespace qkv::ui
