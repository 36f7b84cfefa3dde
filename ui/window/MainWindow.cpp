// SPDX-License-Identifier: GPL-3.0-or-later
#include "MainWindow.h"

#include "AboutText.h"
#include "Autosave.h"
#include "ControlsPanel.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "ElidedLabel.h"
#include "Error.h"
#include "Examples.h"
#include "ExportDialog.h"
#include "FigureNavigator.h"
#include "LessonPanel.h"
#include "LessonPlayer.h"
#include "MaskEditor.h"
#include "MaskModel.h"
#include "MatrixEditor.h"
#include "MatrixFile.h"
#include "ModelLoading.h"
#include "ModelOverview.h"
#include "ModelPages.h"
#include "ModelView.h"
#include "PatchingPanel.h"
#include "PlotFigure.h"
#include "Preferences.h"
#include "RecoveryPrompt.h"
#include "ResultViews.h"
#include "SessionEdits.h"
#include "SettingsDialog.h"
#include "ShapePanel.h"
#include "ShortcutsDialog.h"
#include "SnapshotPrompt.h"
#include "ThemePalette.h"
#include "TrainingPanel.h"
#include "UserGuide.h"
#include "ViewHelp.h"
#include "ViewRegistry.h"
#include "WindowGeometry.h"
#include "Workspaces.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextEdit>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>

#include <functional>
#include <tuple>
#include <utility>
#include <vector>

namespace qkv::ui {

namespace {

/// How long a computation runs before the busy widgets (progress, Stop) show.
constexpr int busyDelayMilliseconds = 200;

const QString sessionFilter = QObject::tr("QKV Lab sessions (*.qkv.json *.json);;All files (*)");
const QString matrixFilter = QObject::tr("CSV (*.csv *.txt);;NumPy arrays (*.npy);;All files (*)");

bool isSessionFile(const QString& path)
{
    return path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
}

constexpr double presentationFontScale = 1.5;
const char* const fontBeforePresentation = "qkvFontBeforePresentation";

// A panel in a dock scrolls instead of forcing its own minimum size onto the window (1920×1080 at scale 2
// leaves 960×540).
QScrollArea* scrollable(QWidget* panel)
{
    auto* area = new QScrollArea;
    area->setObjectName(panel->objectName() + QStringLiteral("Scroll"));
    area->setWidget(panel);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_document(new Document(this)), m_autosave(new Autosave(m_document, this)),
      m_actions(Actions::create(this, m_document->undoStack())),
      m_modelLoading(new ModelLoading(m_document, this, [this] { return maybeSave(); })),
      m_matrices(m_document)
{
    setObjectName(QStringLiteral("mainWindow"));
    setAcceptDrops(true);
    setDockNestingEnabled(true);
    m_workspaces = new Workspaces(this);
    setCentralWidget(m_workspaces);
    addToolBar(Qt::LeftToolBarArea, m_workspaces->createModeBar(this));
    m_results = qobject_cast<ResultViews*>(createView(QStringLiteral("results")));
    m_workspaces->page(Workspace::Head)->setCentralWidget(m_results);
    createDocks();
    addWhatsThis(this);

    m_actions.fillMenuBar(menuBar(), m_workspaces->menuActions());
    createLessons();
    QToolBar* toolBar = addToolBar(tr("File"));
    toolBar->setObjectName(QStringLiteral("fileToolBar"));
    m_actions.fillToolBar(toolBar);

    m_shapeLabel = new ElidedLabel(this);
    m_shapeLabel->setObjectName(QStringLiteral("shapeLabel"));
    m_timeLabel = new QLabel(this);
    m_timeLabel->setObjectName(QStringLiteral("computeTimeLabel"));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("computeProgress"));
    m_progress->setRange(0, 0); // busy: the engine does not report a fraction
    m_progress->setMaximumWidth(120);
    m_progress->setToolTip(
        tr("Computing in the background; the window stays usable and the newest edit wins"));
    m_stopButton = new QToolButton(this);
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    m_stopButton->setDefaultAction(m_actions.stopComputation);
    m_stopButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
    // The status bar's size stays the same on an edit: a label of changing width, or a widget shown for each
    // background computation, laid out the whole window again (every dock, each with an animation object
    // of its own) on every edit. So the time label is as wide as its widest text, and the busy widgets sit
    // in a box of fixed size: showing or hiding them lays out that box alone (Qt stops a relayout at a
    // widget of fixed size; the status bar is not one).
    m_timeLabel->setFixedSize(m_timeLabel->fontMetrics().horizontalAdvance(
                                  tr("computed in float32 in %1 ms").arg(99999.99, 0, 'f', 2)) +
                                  m_timeLabel->fontMetrics().averageCharWidth(),
                              m_timeLabel->sizeHint().height());
    auto* busyBox = new QWidget(this);
    busyBox->setObjectName(QStringLiteral("busyBox"));
    auto* busyLayout = new QHBoxLayout(busyBox);
    busyLayout->setContentsMargins(0, 0, 0, 0);
    for (QWidget* busy : {static_cast<QWidget*>(m_progress), static_cast<QWidget*>(m_stopButton)}) {
        busy->setFixedSize(busy->sizeHint().boundedTo(busy->maximumSize())); // its text is set on each enable
        QSizePolicy policy = busy->sizePolicy();
        policy.setRetainSizeWhenHidden(true);
        busy->setSizePolicy(policy);
        busyLayout->addWidget(busy);
    }
    busyBox->setFixedSize(busyLayout->sizeHint());
    // Shown only for a computation that takes more than a moment: shown and hidden on every edit of a
    // millisecond, they flickered (and a busy progress bar animates, repainting, while shown).
    m_busyDelay = new QTimer(this);
    m_busyDelay->setSingleShot(true);
    m_busyDelay->setInterval(busyDelayMilliseconds);
    connect(m_busyDelay, &QTimer::timeout, this, [this] {
        m_progress->setVisible(m_document->isComputing());
        m_stopButton->setVisible(m_document->isComputing());
    });
    statusBar()->addPermanentWidget(m_shapeLabel);
    statusBar()->addPermanentWidget(busyBox);
    statusBar()->addPermanentWidget(m_timeLabel);
    m_document->setMemoryLimit(Preferences::memoryLimitBytes());

    connectActions();
    rebuildRecentMenu();
    placeOnScreen();
    sizeDocks();
    m_defaultState = saveState();
    m_workspaces->finishSetUp();
    restoreState(Preferences::windowState());
    m_lessonDock->hide(); // a lesson is not restored, so neither is its panel
    applyTheme();
    updateTitle();
    updateStatus();
    updateWeightTabs();
}

QWidget* MainWindow::createView(const QString& id)
{
    QWidget* view = ViewRegistry::view(id).create(m_document, this);
    m_views.insert(id, view);
    return view;
}

QString MainWindow::viewTitle(QWidget* view) const
{
    return ViewRegistry::view(m_views.key(view)).title;
}

void MainWindow::createDocks()
{
    // The head's workbench: the editors and controls around the heatmaps, the head's views below them.
    QMainWindow* head = m_workspaces->page(Workspace::Head);
    const auto addDock = [this](const QString& title, const QString& name, QWidget* widget,
                                Qt::DockWidgetArea area, Workspace workspace = Workspace::Head) {
        return m_workspaces->addDock(workspace, title, name, scrollable(widget), area);
    };
    const auto addEditor = [this](const MatrixRef& ref) {
        auto* editor = new MatrixEditor(m_document, ref, this);
        connect(editor, &MatrixEditor::activated, this, [this, editor] { m_selectedEditor = editor; });
        connect(editor, &MatrixEditor::message, this,
                [this](const QString& text) { statusBar()->showMessage(text, 8000); });
        m_editors << editor;
        return editor;
    };

    m_selectedEditor = addEditor({MatrixKind::X, 0});
    QDockWidget* embeddings = addDock(tr("Embeddings X"), QStringLiteral("dockEmbeddings"), m_selectedEditor,
                                      Qt::LeftDockWidgetArea);
    m_contextDock = addDock(tr("Context Z"), QStringLiteral("dockContext"), addEditor({MatrixKind::Z, 0}),
                            Qt::LeftDockWidgetArea);

    m_weightTabs = new QTabWidget(this);
    m_weightTabs->setObjectName(QStringLiteral("weightTabs"));
    for (MatrixKind kind : {MatrixKind::W_Q, MatrixKind::W_K, MatrixKind::W_V, MatrixKind::W_O,
                            MatrixKind::b_Q, MatrixKind::b_K, MatrixKind::b_V, MatrixKind::b_O,
                            MatrixKind::W_S, MatrixKind::W_a, MatrixKind::U_a, MatrixKind::v_a}) {
        const MatrixRef ref{kind, 0};
        m_weightTabs->addTab(addEditor(ref), matrixName(kind));
    }
    QDockWidget* weights =
        addDock(tr("Weights"), QStringLiteral("dockWeights"), m_weightTabs, Qt::LeftDockWidgetArea);
    head->splitDockWidget(embeddings, weights, Qt::Vertical);
    head->tabifyDockWidget(embeddings, m_contextDock);
    embeddings->raise();

    QDockWidget* controls = addDock(tr("Attention"), QStringLiteral("dockControls"),
                                    new ControlsPanel(m_document, this), Qt::RightDockWidgetArea);
    QDockWidget* shape = addDock(tr("Dimensions"), QStringLiteral("dockShape"),
                                 new ShapePanel(m_document, this), Qt::RightDockWidgetArea);
    head->splitDockWidget(controls, shape, Qt::Vertical);

    m_maskEditor = new MaskEditor(m_document, this);
    m_maskEditor->horizontalHeader()->setDefaultSectionSize(44);
    connect(m_maskEditor, &MaskEditor::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 8000); });
    auto* maskView = m_maskEditor;
    // Painting on the Mask tab goes through the same model as the mask editor: one rule, one undo step.
    connect(m_results, &ResultViews::maskPainted, this,
            [this](int anchorRow, int anchorColumn, int row, int column) {
                MaskModel* model = m_maskEditor->maskModel();
                model->paintRectangle(model->index(anchorRow, anchorColumn), model->index(row, column));
            });
    QDockWidget* mask = addDock(tr("Mask"), QStringLiteral("dockMask"), maskView, Qt::RightDockWidgetArea);
    head->tabifyDockWidget(shape, mask);
    shape->raise();

    // The views below the heatmaps, one tab each, made from the list the export draws too (ViewRegistry).
    QWidget* math = createView(QStringLiteral("math"));
    QWidget* queryKey = createView(QStringLiteral("qk_space"));
    QWidget* values = createView(QStringLiteral("v_space"));
    QWidget* heads = createView(QStringLiteral("heads"));
    QWidget* normalizers = createView(QStringLiteral("normalizers"));
    QWidget* sweeps = createView(QStringLiteral("sweep"));
    QWidget* spaces = createView(QStringLiteral("spaces"));
    QWidget* variance = createView(QStringLiteral("variance"));
    QWidget* saturation = createView(QStringLiteral("saturation"));
    QWidget* scaling = createView(QStringLiteral("scaling"));
    QWidget* snapshots = createView(QStringLiteral("diff"));
    auto* model = new ModelPages(m_modelLoading, m_document, this);
    connect(model, &ModelPages::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 10000); });
    const QList<RegisteredView> registered = ViewRegistry::views();
    Q_ASSERT(m_views.size() == registered.size()); // every registered view has its place in the window
    for (const RegisteredView& view : registered)
        m_figures << view.figures(m_views.value(view.id));
    m_figures << model->figures();
    // The articles' experiments share one dock of their own tabs, so the bottom tab bar stays readable at
    // 1280 px and at a scale factor of 2.
    auto* experiments = new QTabWidget(this);
    experiments->setObjectName(QStringLiteral("experimentTabs"));
    experiments->setDocumentMode(true);
    for (QWidget* experiment : {sweeps, variance, saturation, scaling, snapshots})
        experiments->addTab(experiment, viewTitle(experiment));
    QDockWidget* mathDock =
        addDock(viewTitle(math), QStringLiteral("dockMath"), math, Qt::BottomDockWidgetArea);
    QDockWidget* previous = mathDock;
    for (auto [title, name, widget] :
         {std::tuple{viewTitle(queryKey), "dockQueryKeySpace", queryKey},
          std::tuple{viewTitle(spaces), "dockThreeSpaces", spaces},
          std::tuple{viewTitle(values), "dockValueSpace", values},
          std::tuple{viewTitle(heads), "dockHeads", heads},
          std::tuple{viewTitle(normalizers), "dockNormalizers", normalizers},
          std::tuple{tr("Experiments"), "dockExperiments", static_cast<QWidget*>(experiments)}}) {
        QDockWidget* dock = addDock(title, QLatin1String(name), widget, Qt::BottomDockWidgetArea);
        if (previous == mathDock)
            head->splitDockWidget(mathDock, dock, Qt::Horizontal);
        else
            head->tabifyDockWidget(previous, dock);
        previous = dock;
    }
    findChild<QDockWidget*>(QStringLiteral("dockQueryKeySpace"))->raise();

    QDockWidget* modelDock = model->addDocks(m_workspaces, scrollable);
    addDock(tr("Training"), QStringLiteral("dockTraining"), new TrainingPanel(m_modelLoading, this),
            Qt::LeftDockWidgetArea, Workspace::Training);
    // A model just opened: its layers and heads come forward while they are computed.
    connect(model->overview(), &ModelOverview::modelChanged, this,
            [this, modelDock] { m_workspaces->reveal(modelDock); });
}

// Lessons ▸ and the panel they play in (the window's right edge; hidden until a lesson starts). Built
// after the docks: a step may show any view of the window.
void MainWindow::createLessons()
{
    m_lessonPlayer = new LessonPlayer(m_document, FigureNavigator(m_figures), this);
    m_lessonPlayer->setTraining(findChild<TrainingPanel*>(),
                                findChild<QDockWidget*>(QStringLiteral("dockTraining")),
                                [this] { return maybeSave(); });
    m_lessonPlayer->setPatching(findChild<PatchingPanel*>(),
                                findChild<QDockWidget*>(QStringLiteral("dockPatching")));
    m_lessonPlayer->setModelLoading(m_modelLoading);
    m_lessonPlayer->setScoreTermsDock(findChild<QDockWidget*>(QStringLiteral("dockScoreTerms")));
    m_lessonDock = new QDockWidget(tr("Lesson"), this);
    m_lessonDock->setObjectName(QStringLiteral("dockLesson"));
    m_lessonPanel = new LessonPanel(m_lessonPlayer, m_lessonDock, m_lessonDock);
    m_lessonDock->setWidget(m_lessonPanel);
    addDockWidget(Qt::RightDockWidgetArea, m_lessonDock);
    m_lessonDock->hide();
    // The lesson is the window's, not a workspace's: it stays beside every workspace a step switches to. Its
    // text is what the person reads: a column as wide as the controls' when it opens, not what is left over.
    connect(m_lessonDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible && !m_lessonDock->isFloating())
            resizeDocks({m_lessonDock}, {width() * 20 / 100}, Qt::Horizontal);
    });
    QList<QAction*> menus = menuBar()->actions();
    menuBar()->insertMenu(menus.isEmpty() ? nullptr : menus.back(), m_lessonPanel->menu()); // before Help
}

// The first arrangement leaves the central views at least half of the window, whatever its size.
void MainWindow::sizeDocks()
{
    const auto dock = [this](const char* name) { return findChild<QDockWidget*>(QLatin1String(name)); };
    QMainWindow* head = m_workspaces->page(Workspace::Head);
    // Narrower than the window without workspaces had them: the mode bar takes its share of the width, and
    // the heatmaps' tab names need theirs.
    head->resizeDocks({dock("dockEmbeddings"), dock("dockControls")},
                      {width() * 24 / 100, width() * 21 / 100}, Qt::Horizontal);
    head->resizeDocks({dock("dockMath")}, {height() * 36 / 100}, Qt::Vertical);
}

// Step by Step beside the other views' tabs when their names fit in half the width; else one more tab among
// them (1920 × 1080 at a scale factor of 2). Done at the first show, at the window's real size, unless the
// Head workspace's layout was remembered.
void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    if (std::exchange(m_bottomTabsFitted, true) ||
        !Preferences::workspaceLayout(Workspaces::id(Workspace::Head)).isEmpty())
        return;
    const auto dock = [this](const char* name) { return findChild<QDockWidget*>(QLatin1String(name)); };
    QMainWindow* head = m_workspaces->page(Workspace::Head);
    QDockWidget* math = dock("dockMath");
    QList<QDockWidget*> tabbed = head->tabifiedDockWidgets(dock("dockQueryKeySpace"));
    tabbed << dock("dockQueryKeySpace");
    int tabNames = 0;
    for (const QDockWidget* view : std::as_const(tabbed))
        tabNames +=
            fontMetrics().horizontalAdvance(view->windowTitle()) + 4 * fontMetrics().averageCharWidth();
    if (tabNames > width() / 2) {
        head->tabifyDockWidget(dock("dockQueryKeySpace"), math);
        math->raise();
    } else { // the tabs get the larger share: a lesson's panel beside the workspace narrows them
        head->resizeDocks({math, tabbed.back()}, {width() * 40 / 100, width() * 60 / 100}, Qt::Horizontal);
    }
}

void MainWindow::connectActions()
{
    connect(m_actions.newEmpty, &QAction::triggered, this, [this] {
        if (maybeSave())
            m_document->reset(blankSession(3, 4, 4, 4, m_document->initializer()));
    });
    connect(m_actions.newFromExample, &QMenu::triggered, this, [this](QAction* action) {
        if (maybeSave())
            openSession(QString::fromLatin1(examplePrefix) + action->data().toString());
    });
    connect(m_actions.open, &QAction::triggered, this, &MainWindow::openFileDialog);
    connect(m_actions.openModel, &QAction::triggered, m_modelLoading, &ModelLoading::openDialog);
    connect(m_actions.resetToModel, &QAction::triggered, m_modelLoading, &ModelLoading::resetToModel);
    connect(m_modelLoading, &ModelLoading::modelSessionChanged, m_actions.resetToModel, &QAction::setEnabled);
    connect(m_actions.recentFiles, &QMenu::triggered, this, [this](QAction* action) {
        if (maybeSave())
            openSession(action->data().toString());
    });
    connect(m_actions.save, &QAction::triggered, this, &MainWindow::save);
    connect(m_actions.saveAs, &QAction::triggered, this, &MainWindow::saveAs);
    connect(m_actions.importMatrix, &QAction::triggered, this, &MainWindow::importMatrixDialog);
    connect(m_actions.exportMatrix, &QAction::triggered, this, &MainWindow::exportMatrixDialog);
    connect(m_actions.exportFigure, &QAction::triggered, this, [this] { exportFigureDialog(false); });
    connect(m_actions.exportAllFigures, &QAction::triggered, this, [this] { exportFigureDialog(true); });
    connect(m_actions.quit, &QAction::triggered, this, &QWidget::close);
    connect(m_actions.resetLayout, &QAction::triggered, this, [this] {
        m_workspaces->restoreDefaultLayouts();
        restoreState(m_defaultState);
    });
    connect(m_actions.presentation, &QAction::toggled, this, &MainWindow::setPresentation);
    connect(m_actions.lockColorRanges, &QAction::toggled, m_results, &ResultViews::setColorRangesLocked);
    connect(m_actions.keyboardShortcuts, &QAction::triggered, this, [this] {
        ShortcutsDialog dialog(menuBar(), this);
        dialog.exec();
    });
    connect(m_actions.userGuide, &QAction::triggered, this, [this] {
        if (!m_userGuide)
            m_userGuide = new UserGuide(this);
        m_userGuide->show();
        m_userGuide->raise();
        m_userGuide->activateWindow();
    });
    connect(m_actions.about, &QAction::triggered, this,
            [this] { QMessageBox::about(this, tr("About QKV Lab"), aboutText()); });
    connect(m_autosave, &Autosave::failed, this,
            [this](const QString& message) { statusBar()->showMessage(message, 10000); });
    connect(m_document, &Document::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_document, &Document::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_document, &Document::sessionChanged, this, [this] {
        updateTitle();
        updateStatus();
        updateWeightTabs();
    });
    connect(m_document, &Document::resultChanged, this, &MainWindow::updateStatus);
    connect(m_document, &Document::computingChanged, this, &MainWindow::updateStatus);
    connect(m_actions.stopComputation, &QAction::triggered, m_document, &Document::cancelComputation);
    connect(m_actions.takeSnapshot, &QAction::triggered, this,
            [this] { promptForSnapshot(this, m_document); });
    connect(m_actions.settings, &QAction::triggered, this, [this] {
        SettingsDialog dialog(this);
        if (dialog.exec() != QDialog::Accepted)
            return;
        dialog.store();
        m_document->setMemoryLimit(dialog.memoryLimitBytes());
        m_autosave->setIntervalSeconds(dialog.autosaveIntervalSeconds());
        applyTheme();
    });
}

void MainWindow::placeOnScreen()
{
    const QRect available = screen()->availableGeometry();
    const QRect initial = defaultWindowGeometry(available);
    resize(initial.size());
    move(initial.topLeft());
    const QByteArray saved = Preferences::windowGeometry();
    if (savedGeometryFits(saved, available))
        restoreGeometry(saved);
}

void MainWindow::applyTheme()
{
    QApplication::setPalette(themePalette(Preferences::theme()));
    applyPlotStyle();
}

void MainWindow::applyPlotStyle()
{
    qkv::ui::applyPlotStyle(
        this, PlotStyle::fromPalette(QApplication::palette(), m_presentation ? presentationFontScale : 1.0));
}

void MainWindow::setPresentation(bool on)
{
    if (on == m_presentation)
        return;
    m_presentation = on;
    m_actions.presentation->setChecked(on);
    QList<QWidget*> texts;
    for (QWidget* widget : findChildren<QWidget*>())
        if (qobject_cast<QAbstractItemView*>(widget) || qobject_cast<QTextEdit*>(widget) ||
            qobject_cast<QPlainTextEdit*>(widget))
            texts << widget;
    if (on) {
        m_statesBeforePresentation = saveState();
        m_layoutsBeforePresentation = m_workspaces->saveLayouts();
        m_windowStateBeforePresentation = windowState();
        QMainWindow* head = m_workspaces->page(Workspace::Head);
        for (QDockWidget* dock : m_workspaces->docks(Workspace::Head))
            if (head->dockWidgetArea(dock) != Qt::BottomDockWidgetArea) // the editors; the result views stay
                dock->hide();
        for (QWidget* widget : texts) {
            widget->setProperty(fontBeforePresentation, widget->testAttribute(Qt::WA_SetFont)
                                                            ? QVariant(widget->font())
                                                            : QVariant());
            QFont font = widget->font();
            if (font.pointSizeF() > 0)
                font.setPointSizeF(font.pointSizeF() * presentationFontScale);
            else
                font.setPixelSize(qRound(font.pixelSize() * presentationFontScale));
            widget->setFont(font);
        }
        applyPlotStyle();
        showFullScreen();
    } else {
        for (QWidget* widget : texts) {
            const QVariant before = widget->property(fontBeforePresentation);
            widget->setFont(before.isValid() ? before.value<QFont>() : QFont());
            widget->setProperty(fontBeforePresentation, QVariant());
        }
        applyPlotStyle();
        setWindowState(m_windowStateBeforePresentation);
        restoreState(m_statesBeforePresentation);
        m_workspaces->restoreLayouts(m_layoutsBeforePresentation);
    }
}

bool MainWindow::openSession(const QString& source)
{
    const QString name = source.isEmpty() ? QStringLiteral("example:love") : source;
    QString error;
    if (!m_document->open(name, &error)) {
        showError(tr("Cannot open %1").arg(name), error);
        return false;
    }
    if (!name.startsWith(QLatin1String(examplePrefix)))
        rememberFile(m_document->filePath());
    return true;
}

bool MainWindow::recoverUnsavedWork()
{
    const bool restored =
        m_autosave->recover([this](const RecoveryInfo& info) { return askToRecover(info, this); });
    if (restored)
        statusBar()->showMessage(tr("Restored the unsaved session %1").arg(m_document->displayName()), 8000);
    return restored;
}

void MainWindow::startAutosave()
{
    m_autosave->setIntervalSeconds(Preferences::autosaveIntervalSeconds());
    m_autosave->start();
}

void MainWindow::openFileDialog()
{
    if (!maybeSave())
        return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Session"), QString(), sessionFilter);
    if (!path.isEmpty())
        openSession(path);
}

bool MainWindow::save()
{
    if (m_document->filePath().isEmpty())
        return saveAs();
    QString error;
    if (!m_document->saveAs(m_document->filePath(), &error)) {
        showError(tr("Cannot save"), error);
        return false;
    }
    statusBar()->showMessage(tr("Saved %1").arg(m_document->filePath()), 4000);
    return true;
}

bool MainWindow::saveAs()
{
    QString path =
        QFileDialog::getSaveFileName(this, tr("Save Session As"), m_document->filePath(), sessionFilter);
    if (path.isEmpty())
        return false;
    if (!isSessionFile(path))
        path += QStringLiteral(".qkv.json");
    QString error;
    if (!m_document->saveAs(path, &error)) {
        showError(tr("Cannot save"), error);
        return false;
    }
    rememberFile(m_document->filePath());
    return true;
}

bool MainWindow::maybeSave()
{
    if (!m_document->isModified())
        return true;
    const auto answer = QMessageBox::warning(
        this, tr("Unsaved changes"),
        tr("%1 has unsaved changes. Save them first?").arg(m_document->displayName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    auto* training = findChild<TrainingPanel*>();
    if (!maybeSave() || (training && !training->confirmClose())) { // a run asks first; stopping saves it
        event->ignore();
        return;
    }
    m_autosave->discard(); // saved, or the user chose to discard the changes
    if (m_presentation)
        setPresentation(false); // remember the window, not the projector's full screen
    Preferences::setWindowGeometry(saveGeometry());
    Preferences::setWindowState(saveState());
    m_workspaces->rememberLayouts();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() && isSessionFile(urls.front().toLocalFile()))
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QString path = event->mimeData()->urls().front().toLocalFile();
    event->acceptProposedAction();
    if (maybeSave())
        openSession(path);
}

MatrixRef MainWindow::selectedMatrix() const
{
    return m_selectedEditor->matrixRef();
}

bool MainWindow::importMatrix(const QString& path, QString* error)
{
    return m_matrices.importMatrix(selectedMatrix(), path, error);
}

void MainWindow::importMatrixDialog()
{
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Import into %1").arg(displayName(selectedMatrix())), QString(), matrixFilter);
    QString error;
    if (!path.isEmpty() && !importMatrix(path, &error))
        showError(tr("Cannot import"), error);
}

QStringList MainWindow::exportableMatrices() const
{
    return m_matrices.names();
}

bool MainWindow::exportMatrix(const QString& name, const QString& path, QString* error) const
{
    return m_matrices.exportMatrix(name, path, error);
}

void MainWindow::exportMatrixDialog()
{
    bool ok = false;
    const QStringList names = exportableMatrices();
    const QString name =
        QInputDialog::getItem(this, tr("Export Matrix"), tr("Matrix:"), names,
                              static_cast<int>(names.indexOf(displayName(selectedMatrix()))), false, &ok);
    if (!ok)
        return;
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export %1").arg(name), QString(), matrixFilter);
    QString error;
    if (!path.isEmpty() && !exportMatrix(name, path, &error))
        showError(tr("Cannot export"), error);
    else if (!path.isEmpty())
        statusBar()->showMessage(tr("Exported %1 to %2").arg(name, path), 4000);
}

void MainWindow::exportFigureDialog(bool all)
{
    // The tab on show (the pipeline, a heatmap) is the natural default.
    const auto* shown = dynamic_cast<const Figure*>(m_results->tabs()->currentWidget());
    ExportDialog dialog(m_figures, static_cast<int>(m_figures.indexOf(shown)), all, this);
    connect(&dialog, &ExportDialog::copyRequested, this, [this, &dialog] {
        copyFigureToClipboard(*dialog.figure(), dialog.figureSize(), dialog.scale());
        statusBar()->showMessage(tr("Copied %1 to the clipboard").arg(dialog.figure()->figureName()), 4000);
        dialog.reject();
    });
    if (dialog.exec() != QDialog::Accepted)
        return;
    const QString suffix = figureFormatSuffix(dialog.format());
    QString error;
    if (all) {
        const QString folder = QFileDialog::getExistingDirectory(this, tr("Export All Views To"));
        QStringList written;
        if (folder.isEmpty())
            return;
        if (!exportAllFigures(m_figures, dialog.format(), folder, dialog.figureSize(), dialog.scale(),
                              &written, &error))
            showError(tr("Cannot export"), error);
        else
            statusBar()->showMessage(tr("Wrote %1 files to %2").arg(written.size()).arg(folder), 6000);
        return;
    }
    QString path =
        QFileDialog::getSaveFileName(this, tr("Export %1").arg(dialog.figure()->figureName()),
                                     dialog.figure()->figureName() + QLatin1Char('.') + suffix,
                                     suffix.toUpper() + QStringLiteral(" (*.") + suffix + QLatin1Char(')'));
    if (path.isEmpty())
        return;
    if (!figureFormatFromSuffix(path))
        path += QLatin1Char('.') + suffix;
    if (!exportFigure(*dialog.figure(), dialog.format(), path, dialog.figureSize(), dialog.scale(), &error))
        showError(tr("Cannot export"), error);
    else
        statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
}

void MainWindow::rememberFile(const QString& path)
{
    Preferences::addRecentFile(path);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    m_actions.recentFiles->clear();
    const QStringList files = Preferences::recentFiles();
    for (const QString& path : files) {
        QAction* action = m_actions.recentFiles->addAction(QFileInfo(path).fileName());
        action->setData(path);
        action->setStatusTip(path);
    }
    m_actions.recentFiles->setEnabled(!files.isEmpty());
}

void MainWindow::updateTitle()
{
    setWindowTitle(tr("%1[*] — QKV Lab").arg(m_document->displayName()));
    setWindowModified(m_document->isModified());
}

void MainWindow::setBusyDelay(int milliseconds)
{
    m_busyDelay->setInterval(milliseconds);
}

void MainWindow::updateStatus()
{
    const Session& s = m_document->session();
    m_shapeLabel->setFullText(tr("n = %1   m = %2   d_model = %3   d_k = %4   d_v = %5   heads = %6")
                                  .arg(s.n())
                                  .arg(s.m())
                                  .arg(s.dModel())
                                  .arg(s.dK())
                                  .arg(s.dV())
                                  .arg(s.headCount()));
    const bool computing = m_document->isComputing();
    const std::shared_ptr<const AttentionResult> result = m_document->result();
    const bool float32 = result && result->precision == Precision::Float32;
    const QString milliseconds = QString::number(m_document->lastComputeMilliseconds(), 'f', 2);
    m_timeLabel->setText(computing ? tr("computing…")
                         : float32 ? tr("computed in float32 in %1 ms").arg(milliseconds)
                                   : tr("computed in %1 ms").arg(milliseconds));
    m_timeLabel->setToolTip(float32 && !computing
                                ? tr("The result was computed in single precision (float32), as models run; "
                                     "Precision in the Attention panel switches back to float64")
                                : QString());
    if (!computing) {
        m_busyDelay->stop();
        m_progress->hide();
        m_stopButton->hide();
    } else if (m_progress->isHidden() && !m_busyDelay->isActive()) {
        m_busyDelay->start();
    }
    m_actions.stopComputation->setEnabled(computing); // Escape stops at once, shown or not
}

void MainWindow::updateWeightTabs()
{
    const Session& session = m_document->session();
    for (int tab = 0; tab < m_weightTabs->count(); ++tab) {
        auto* editor = static_cast<MatrixEditor*>(m_weightTabs->widget(tab));
        const bool shown = exists(session, {editor->matrixRef().kind, m_document->currentHead()});
        if (m_weightTabs->isTabVisible(tab) != shown) // setting it lays the tabs out again, changed or not
            m_weightTabs->setTabVisible(tab, shown);
    }
    m_contextDock->setEnabled(session.context.has_value());
}

void MainWindow::showError(const QString& title, const QString& message)
{
    statusBar()->showMessage(message, 10000);
    QMessageBox::warning(this, title, message);
}

} // namespace qkv::ui
