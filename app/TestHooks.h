// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Hidden hooks for tests that drive a real window process (the crash-recovery test) without a GUI
// driver. Each is read from the environment once, at start, and does nothing when unset.

#include <optional>

namespace qkv::ui {
class MainWindow;
}

namespace qkv::app {

/// After the window is up (and recovery offered):
/// - QKV_TEST_EDIT=append-token appends one query token through the token model, exactly as the editor's
///   Add button does (one undoable structural edit);
/// - QKV_TEST_REPORT=PATH writes the window's session to PATH and {"modified", "filePath", "title"} to
///   PATH.state.json, then returns the exit status (0, or 2 with a message when it cannot write).
/// Returns nothing when the window should run as usual.
std::optional<int> runTestHooks(ui::MainWindow& window);

} // namespace qkv::app
