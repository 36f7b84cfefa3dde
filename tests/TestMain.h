// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The main() of every test suite, in place of QTEST_MAIN, QTEST_GUILESS_MAIN and QTEST_APPLESS_MAIN: the same
// program, with the process set up first. A GUI suite picks the offscreen platform itself, so that one run by
// hand needs no display (ctest sets QT_QPA_PLATFORM=offscreen as well), and every suite writes its settings
// and data in Qt's test locations, never in the user's.
//
//     QKV_TEST_MAIN(TestDocument)          // a QApplication (a QGuiApplication without Qt Widgets)
//     QKV_TEST_GUILESS_MAIN(TestCli)       // a QCoreApplication
//     QKV_TEST_APPLESS_MAIN(TestEngine)    // no application object

#include "MatrixProduct.h"

#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QtTest>

#if defined(QT_WIDGETS_LIB)
#include <QApplication>
#elif defined(QT_GUI_LIB)
#include <QGuiApplication>
#endif

namespace qkv::test {

enum class TestApplication { None, Core, Gui };

/// The process set-up of every suite, first in main(), before the application object exists.
inline void setUpTestProcess(TestApplication application)
{
    // OpenBLAS for this CPU, as the program opens it: it sets environment variables, so before any thread.
    ::qkv::prepareMatrixProducts();
    // A platform named in the environment wins (QT_QPA_PLATFORM=xcb shows a suite's windows).
    if (application == TestApplication::Gui && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    // Settings, autosaves and training runs go to ~/.qttest, never into the user's own folders.
    QStandardPaths::setTestModeEnabled(true);
}

/// Every run of a suite starts as on a new machine: no settings (a saved window layout, preferences) and
/// no data (autosaves, training runs) left by an earlier run of the same suite. Test mode keeps these in
/// ~/.qttest, per suite, so suites running side by side never share them.
inline void forgetEarlierRuns()
{
    QSettings().clear();
    for (auto location : {QStandardPaths::AppDataLocation, QStandardPaths::AppLocalDataLocation,
                          QStandardPaths::CacheLocation}) {
        const QString folder = QStandardPaths::writableLocation(location);
        if (folder.contains(QLatin1String("/.qttest/")))
            QDir(folder).removeRecursively();
    }
}

} // namespace qkv::test

// What QTEST_MAIN's main() does, after setUpTestProcess(): TestObject::initMain() if there is one, the
// application object (`createApplication`, empty for an appless suite), then the test object and its run.
#define QKV_TEST_MAIN_WITH(TestObject, application, createApplication)                                       \
    int main(int argc, char* argv[])                                                                         \
    {                                                                                                        \
        ::qkv::test::setUpTestProcess(::qkv::test::TestApplication::application);                            \
        QTest::Internal::callInitMain<TestObject>();                                                         \
        createApplication;                                                                                   \
        if (::qkv::test::TestApplication::application != ::qkv::test::TestApplication::None)                 \
            ::qkv::test::forgetEarlierRuns();                                                                \
        TestObject tc;                                                                                       \
        QTEST_SET_MAIN_SOURCE_PATH                                                                           \
        return QTest::qExec(&tc, argc, argv);                                                                \
    }

#define QKV_TEST_APPLICATION(Application)                                                                    \
    Application app(argc, argv);                                                                             \
    app.setAttribute(Qt::AA_Use96Dpi, true)

// As QTEST_MAIN: the richest application object the suite links.
#if defined(QT_WIDGETS_LIB)
#define QKV_TEST_MAIN(TestObject) QKV_TEST_MAIN_WITH(TestObject, Gui, QKV_TEST_APPLICATION(QApplication))
#elif defined(QT_GUI_LIB)
#define QKV_TEST_MAIN(TestObject) QKV_TEST_MAIN_WITH(TestObject, Gui, QKV_TEST_APPLICATION(QGuiApplication))
#else
#define QKV_TEST_MAIN(TestObject) QKV_TEST_MAIN_WITH(TestObject, Core, QKV_TEST_APPLICATION(QCoreApplication))
#endif
#define QKV_TEST_GUILESS_MAIN(TestObject)                                                                    \
    QKV_TEST_MAIN_WITH(TestObject, Core, QKV_TEST_APPLICATION(QCoreApplication))
#define QKV_TEST_APPLESS_MAIN(TestObject) QKV_TEST_MAIN_WITH(TestObject, None, )
