// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The workbench window: it assembles the pages, docks and actions; the work is done by the document,
// the models and the views.

#include "Actions.h"
#include "MatrixCatalog.h"
#include "MatrixRef.h"

#include <QHash>
#include <QMainWindow>

#include <functional>
#include <utility>
#include <vector>

class QLabel;
class QProgressBar;
class QTabWidget;
class QTimer;
class QToolButton;

namespace qkv::ui {

class Autosave;
class Document;
class ElidedLabel;
class Figure;
class LessonPanel;
class LessonPlayer;
class MaskEditor;
class MatrixEditor;
class ResultViews;
class UserGuide;
class ModelLoading;
class Workspaces;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    Document* document() const { return m_document; }
    /// Copies the session to the recovery folder while it is unsaved; idle until startAutosave().
    Autosave* autosave() const { return m_autosave; }

    /// Offers what a crashed or killed instance left in the recovery folder (a dialog, or QKV_RECOVERY);
    /// returns true when a session was restored. Called once at start, before startAutosave().
    bool recoverUnsavedWork();
    /// Starts autosaving at the interval from Preferences (app/main.cpp; tests leave it off).
    void startAutosave();

    /// Opens a session file or "example:NAME" ("" = the default example). On failure shows the engine's
    /// message and keeps the open session.
    bool openSession(const QString& source);

    /// The matrices File ▸ Export Matrix offers: inputs of the current head and every result.
    QStringList exportableMatrices() const;
    /// Writes one of exportableMatrices() to `path` (.npy or CSV by extension).
    bool exportMatrix(const QString& name, const QString& path, QString* error) const;
    /// Replaces the selected editor's matrix with the one in `path` (same shape required), as one undo step.
    bool importMatrix(const QString& path, QString* error);
    /// The editor that import uses: the one that had the focus last.
    MatrixRef selectedMatrix() const;
    /// Every exportable view of the window, heatmaps first.
    QList<const Figure*> figures() const { return m_figures; }
    /// Lessons ▸: the panel (starting lessons) and the player (the step on show).
    LessonPanel* lessonPanel() const { return m_lessonPanel; }
    LessonPlayer* lessonPlayer() const { return m_lessonPlayer; }
    /// File ▸ Open Model… and Edit ▸ Reset to Model.
    ModelLoading* modelLoading() const { return m_modelLoading; }
    /// Head, Model and Training, each with its own docks (the window's central widget).
    Workspaces* workspaces() const { return m_workspaces; }

    /// View ▸ Presentation: full screen, plots' and tables' text ×1.5, the editor docks hidden (the result
    /// views stay); leaving it restores the docks, the text and the window as they were.
    void setPresentation(bool on);
    bool isPresentation() const { return m_presentation; }
    /// Colours of the window and its plots for Preferences::theme().
    void applyTheme();
    /// How long a computation runs before the progress bar and Stop show (in milliseconds, 200 by default;
    /// tests set 0).
    void setBusyDelay(int milliseconds);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    /// The matrices Export Matrix offers, by name, each produced when it is exported.
    /// Makes the registered view `id` (ViewRegistry) as a child of the window.
    QWidget* createView(const QString& id);
    /// The dock or tab title of a view createView() made.
    QString viewTitle(QWidget* view) const;
    void createDocks();
    void connectActions();
    void createLessons();
    bool maybeSave();
    bool save();
    bool saveAs();
    void openFileDialog();
    void importMatrixDialog();
    void exportMatrixDialog();
    void exportFigureDialog(bool all);
    void rememberFile(const QString& path);
    void rebuildRecentMenu();
    void updateTitle();
    void updateStatus();
    void updateWeightTabs();
    void showError(const QString& title, const QString& message);
    void sizeDocks();
    void placeOnScreen();
    void applyPlotStyle();

    Document* m_document;
    Autosave* m_autosave;
    Actions m_actions;
    ModelLoading* m_modelLoading;
    Workspaces* m_workspaces = nullptr;
    QByteArray m_defaultState;
    QTabWidget* m_weightTabs = nullptr;
    QList<MatrixEditor*> m_editors;
    ResultViews* m_results = nullptr;
    MaskEditor* m_maskEditor = nullptr;
    UserGuide* m_userGuide = nullptr; // created when first asked for
    QList<const Figure*> m_figures;
    QHash<QString, QWidget*> m_views; ///< the registered views, by id
    MatrixCatalog m_matrices;
    MatrixEditor* m_selectedEditor = nullptr;
    QDockWidget* m_contextDock = nullptr;
    LessonPlayer* m_lessonPlayer = nullptr;
    LessonPanel* m_lessonPanel = nullptr;
    QDockWidget* m_lessonDock = nullptr;
    ElidedLabel* m_shapeLabel = nullptr;
    QLabel* m_timeLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_stopButton = nullptr;
    QTimer* m_busyDelay = nullptr; ///< the busy widgets show when a computation outlasts it
    bool m_presentation = false;
    bool m_bottomTabsFitted = false;               ///< showEvent() chose where Step by Step goes
    QByteArray m_statesBeforePresentation;         ///< toolbars and the lesson's dock
    QList<QByteArray> m_layoutsBeforePresentation; ///< the workspaces' docks
    Qt::WindowStates m_windowStateBeforePresentation;
};

} // namespace qkv::ui
