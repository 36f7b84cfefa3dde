// SPDX-License-Identifier: GPL-3.0-or-later
// qkvlab: the workbench window, or a headless command (see CommandLine.h).

#include "CommandLine.h"
#include "ExportCommand.h"
#include "MainWindow.h"
#include "MatrixProduct.h"
#include "RasterFills.h"
#include "TestHooks.h"

#include <QApplication>
#include <QIcon>

#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace {

int runHeadless(int argc, char* argv[], qkv::app::CommandLineOutcome& outcome)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    outcome = qkv::app::runCommandLine(args, std::cin, std::cout, std::cerr);
    if (outcome.handled)
        return outcome.exitCode;
    if (outcome.exportRequest) {
        qkv::app::prepareHeadlessPlatform();
        int qtArgc = 1; // the export's arguments are not Qt's
        QApplication app(qtArgc, argv);
        qkv::ui::RasterFills::keepOnPaintingThread(); // as in the window below
        return qkv::app::runExport(*outcome.exportRequest, std::cout, std::cerr);
    }
    if (outcome.modelExportRequest) {
        qkv::app::prepareHeadlessPlatform();
        int qtArgc = 1;
        QApplication app(qtArgc, argv);
        qkv::ui::RasterFills::keepOnPaintingThread();
        return qkv::app::runModelExport(*outcome.modelExportRequest, std::cout, std::cerr);
    }
    return -1;
}

} // namespace

int main(int argc, char* argv[])
{
    qkv::prepareMatrixProducts(); // OpenBLAS for this CPU; it calls setenv, so before any other thread
    qkv::app::CommandLineOutcome outcome;
    try {
        if (const int exitCode = runHeadless(argc, argv, outcome); exitCode >= 0)
            return exitCode;
    } catch (const std::bad_alloc&) {
        std::cerr << "qkvlab: not enough memory for this session\n";
        return 2;
    }

    QApplication app(argc, argv);
    // Qt's raster fills stay on the painting thread: handing them to Qt's thread pool costs more than it
    // saves.
    qkv::ui::RasterFills::keepOnPaintingThread();
    QApplication::setApplicationName(QStringLiteral("QKV Lab"));
    QApplication::setOrganizationName(QStringLiteral("QKV Lab"));
    QApplication::setApplicationVersion(QStringLiteral(QKV_VERSION));
    // The installed desktop entry's id: Wayland compositors find the entry, and so the icon, by it.
    QApplication::setDesktopFileName(QStringLiteral("io.github.qkvlab.QKVLab"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/io.github.qkvlab.QKVLab.svg")));
    qkv::ui::MainWindow window;
    window.openSession(QString::fromStdString(outcome.sessionToOpen));
    window.show();
    window.recoverUnsavedWork(); // what a crashed or killed instance left (asks, or QKV_RECOVERY)
    window.startAutosave();
    if (const std::optional<int> exitCode = qkv::app::runTestHooks(window))
        return *exitCode;
    return QApplication::exec();
}
