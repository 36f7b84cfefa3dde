#pragma once
// `qkvlab export`, the part that draws: it needs a QApplication, created by main() after the arguments were
// checked by runCommandLine().

#include <iosfwd>

namespace qkv::app {

struct ExportRequest;

/// Sets QT_QPA_PLATFORM to offscreen unless it is set already, so that export needs no display. Call before
/// creating the QApplication.
void prepareHeadlessPlatform();

/// Draws the requested views into files and prints the paths written on `out`, or prints the export usage
/// and the view names (`listViews`). Returns 0, or 2 with a message on `err` for an unknown view, a session
/// the engine refuses or a file that cannot be written.
int runExport(const ExportRequest& request, std::ostream& out, std::ostream& err);

} // namespace qkv::app
