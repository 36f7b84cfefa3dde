// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Edit ▸ Take Snapshot… (Ctrl+K): asks for a name and keeps the session's inputs as a snapshot.

class QWidget;

namespace qkv::ui {

class Document;

/// Asks for the snapshot's name in a dialog (objectName "snapshotNameDialog"; default "Snapshot N") and
/// adds a snapshot of the document's session as one undo step. Returns false, changing nothing, when the
/// dialog is cancelled or the session already holds the most snapshots it may (then a message says so).
bool promptForSnapshot(QWidget* parent, Document* document);

} // namespace qkv::ui
