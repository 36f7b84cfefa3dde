// SPDX-License-Identifier: GPL-3.0-or-later
#include "Actions.h"

#include "Examples.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QToolBar>
#include <QUndoStack>
#include <QWhatsThis>

namespace qkv::ui {

namespace {

QAction* makeAction(QObject* parent, const QString& text, const QKeySequence& shortcut, const QString& tip,
                    const QString& iconName = QString())
{
    auto* action = new QAction(text, parent);
    action->setShortcut(shortcut);
    action->setToolTip(shortcut.isEmpty()
                           ? tip
                           : QStringLiteral("%1 (%2)").arg(tip, shortcut.toString(QKeySequence::NativeText)));
    action->setStatusTip(tip);
    if (!iconName.isEmpty())
        action->setIcon(QIcon::fromTheme(iconName));
    return action;
}

} // namespace

Actions Actions::create(QWidget* parent, QUndoStack* undoStack)
{
    Actions a{};
    a.newEmpty =
        makeAction(parent, QObject::tr("&New Blank Session"), QKeySequence::New,
                   QObject::tr("Start a blank session of three tokens"), QStringLiteral("document-new"));
    a.newFromExample = new QMenu(QObject::tr("New from &Example"), parent);
    for (const ExampleInfo& example : builtinExamples()) {
        QAction* action = a.newFromExample->addAction(QString::fromStdString(example.title));
        action->setData(QString::fromStdString(example.name));
        action->setStatusTip(
            QObject::tr("Open the built-in example \"%1\"").arg(QString::fromStdString(example.name)));
    }
    a.open = makeAction(parent, QObject::tr("&Open…"), QKeySequence::Open, QObject::tr("Open a session file"),
                        QStringLiteral("document-open"));
    a.openModel =
        makeAction(parent, QObject::tr("Open &Model…"), QKeySequence(QObject::tr("Ctrl+Shift+O")),
                   QObject::tr("Open a head of a GPT-2 or LLaMA-family model (a Hugging Face folder) "
                               "on a text of yours"));
    a.openModel->setObjectName(QStringLiteral("openModel"));
    a.resetToModel = makeAction(parent, QObject::tr("Reset to &Model"), QKeySequence(),
                                QObject::tr("Put the model's head back as it was loaded (one undo step)"));
    a.resetToModel->setObjectName(QStringLiteral("resetToModel"));
    a.resetToModel->setEnabled(false);
    a.recentFiles = new QMenu(QObject::tr("Open &Recent"), parent);
    a.save = makeAction(parent, QObject::tr("&Save"), QKeySequence::Save, QObject::tr("Save the session"),
                        QStringLiteral("document-save"));
    a.saveAs =
        makeAction(parent, QObject::tr("Save &As…"), QKeySequence::SaveAs,
                   QObject::tr("Save the session under a new name"), QStringLiteral("document-save-as"));
    a.importMatrix =
        makeAction(parent, QObject::tr("&Import Matrix…"), QKeySequence(QObject::tr("Ctrl+I")),
                   QObject::tr("Replace the selected editor's matrix with one from a CSV or .npy file"));
    a.exportMatrix = makeAction(parent, QObject::tr("&Export Matrix…"), QKeySequence(QObject::tr("Ctrl+E")),
                                QObject::tr("Write any input or result matrix to a CSV or .npy file"));
    a.exportFigure =
        makeAction(parent, QObject::tr("Export &Figure…"), QKeySequence(QObject::tr("Ctrl+Shift+E")),
                   QObject::tr("Write one view as PNG, SVG or PDF, or copy it to the clipboard"));
    a.exportAllFigures = makeAction(parent, QObject::tr("Export A&ll Views…"), QKeySequence(),
                                    QObject::tr("Write every view to a folder, one file each"));
    a.quit = makeAction(parent, QObject::tr("&Quit"), QKeySequence::Quit, QObject::tr("Quit QKV Lab"),
                        QStringLiteral("application-exit"));
    a.undo = undoStack->createUndoAction(parent, QObject::tr("&Undo"));
    a.undo->setShortcut(QKeySequence::Undo);
    a.undo->setIcon(QIcon::fromTheme(QStringLiteral("edit-undo")));
    a.redo = undoStack->createRedoAction(parent, QObject::tr("&Redo"));
    a.redo->setShortcut(QKeySequence::Redo);
    a.redo->setIcon(QIcon::fromTheme(QStringLiteral("edit-redo")));
    a.stopComputation = makeAction(parent, QObject::tr("&Stop Computing"), QKeySequence(Qt::Key_Escape),
                                   QObject::tr("Stop the computation running in the background"),
                                   QStringLiteral("process-stop"));
    a.stopComputation->setEnabled(false);
    a.takeSnapshot = makeAction(parent, QObject::tr("Take &Snapshot…"), QKeySequence(Qt::CTRL | Qt::Key_K),
                                QObject::tr("Keep the current inputs under a name, to compare later results "
                                            "with (the Snapshots view)"));
    a.takeSnapshot->setObjectName(QStringLiteral("takeSnapshot"));
    a.settings =
        makeAction(parent, QObject::tr("S&ettings…"), QKeySequence::Preferences,
                   QObject::tr("Memory limit and autosave interval"), QStringLiteral("preferences-system"));
    a.resetLayout = makeAction(parent, QObject::tr("&Restore Default Layout"), QKeySequence(),
                               QObject::tr("Show every panel in its original place"));
    a.presentation = makeAction(parent, QObject::tr("&Presentation"), QKeySequence(Qt::Key_F11),
                                QObject::tr("Full screen with larger text and only the result views, for a "
                                            "projector; again to go back"),
                                QStringLiteral("view-fullscreen"));
    a.presentation->setCheckable(true);
    a.lockColorRanges = makeAction(parent, QObject::tr("&Lock Colour Ranges"), QKeySequence(),
                                   QObject::tr("Keep every heatmap's colour scale as it is now, so that two "
                                               "states of the session can be compared by colour"));
    a.lockColorRanges->setCheckable(true);
    a.keyboardShortcuts = makeAction(parent, QObject::tr("&Keyboard Shortcuts"), QKeySequence(),
                                     QObject::tr("Every shortcut of the menus, by menu"));
    a.userGuide =
        makeAction(parent, QObject::tr("&User Guide"), QKeySequence::HelpContents,
                   QObject::tr("The views, editing, masks, normalizers, export, shortcuts and sessions"),
                   QStringLiteral("help-contents"));
    a.userGuide->setObjectName(QStringLiteral("userGuideAction"));
    a.whatsThis = QWhatsThis::createAction(parent);
    a.whatsThis->setObjectName(QStringLiteral("whatsThis"));
    a.whatsThis->setStatusTip(QObject::tr("Click a view to learn what it shows and how to read it"));
    a.about =
        makeAction(parent, QObject::tr("&About QKV Lab"), QKeySequence(), QObject::tr("Version and licence"));
    return a;
}

void Actions::fillMenuBar(QMenuBar* menuBar, const QList<QAction*>& dockToggles) const
{
    QMenu* file = menuBar->addMenu(QObject::tr("&File"));
    file->addAction(newEmpty);
    file->addMenu(newFromExample);
    file->addAction(open);
    file->addAction(openModel);
    file->addMenu(recentFiles);
    file->addSeparator();
    file->addAction(save);
    file->addAction(saveAs);
    file->addSeparator();
    file->addAction(importMatrix);
    file->addAction(exportMatrix);
    file->addAction(exportFigure);
    file->addAction(exportAllFigures);
    file->addSeparator();
    file->addAction(quit);
    QMenu* edit = menuBar->addMenu(QObject::tr("&Edit"));
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    edit->addAction(stopComputation);
    edit->addAction(takeSnapshot);
    edit->addAction(resetToModel);
    edit->addSeparator();
    edit->addAction(settings);
    QMenu* view = menuBar->addMenu(QObject::tr("&View"));
    view->addActions(dockToggles);
    view->addSeparator();
    view->addAction(resetLayout);
    view->addSeparator();
    view->addAction(lockColorRanges);
    view->addAction(presentation);
    QMenu* help = menuBar->addMenu(QObject::tr("&Help"));
    help->addAction(userGuide);
    help->addAction(keyboardShortcuts);
    help->addAction(whatsThis);
    help->addSeparator();
    help->addAction(about);
}

void Actions::fillToolBar(QToolBar* toolBar) const
{
    toolBar->addAction(open);
    toolBar->addAction(save);
    toolBar->addSeparator();
    toolBar->addAction(undo);
    toolBar->addAction(redo);
    toolBar->addSeparator();
    toolBar->addAction(whatsThis); // the "?" that explains the view clicked next
}

} // namespace qkv::ui
