// SPDX-License-Identifier: GPL-3.0-or-later
// Views that are not on screen do no work: an edit made while a view sits in a hidden tab leaves what it
// shows as it was (heatmaps let go of their matrix instead of keeping an old result alive); shown, or
// exported, the view shows the newest result, the same as a view that followed every edit.

#include "Document.h"
#include "DocumentCommands.h"
#include "Figure.h"
#include "HeadOverview.h"
#include "Heatmap.h"
#include "MathPanel.h"
#include "NormalizerComparisonView.h"
#include "OnScreenRefresh.h"
#include "QueryKeySpaceView.h"
#include "ResultViews.h"
#include "ValueSpaceView.h"
#include "VarianceView.h"

#include "TestMain.h"
#include <QDockWidget>
#include <QImage>
#include <QLabel>
#include <QMainWindow>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtTest>

#include <functional>
#include <memory>

using namespace qkv;
using namespace qkv::ui;

namespace {

QString numbers(const Matrix& m)
{
    QStringList parts;
    for (Index i = 0; i < m.size(); ++i)
        parts << QString::number(m.data()[i], 'g', 12);
    return parts.join(QLatin1Char(' '));
}

QString points(const QList<QPointF>& list)
{
    QStringList parts;
    for (const QPointF& p : list)
        parts << QString::number(p.x(), 'g', 12) + QLatin1Char(',') + QString::number(p.y(), 'g', 12);
    return parts.join(QLatin1Char(' '));
}

/// How to make one kind of view, what it shows (as text), and the figure that exports it.
struct ViewKind {
    std::function<QWidget*(Document*)> make;
    std::function<QString(QWidget*)> shown;
    std::function<const Figure*(QWidget*)> figure;
    bool releasesMatrix = false; ///< a heatmap: hidden and stale, it shows nothing rather than old numbers
};

ViewKind viewKind(const QString& name)
{
    const auto itself = [](QWidget* view) { return dynamic_cast<const Figure*>(view); };
    if (name == QLatin1String("weights heatmap")) {
        const auto weights = [](QWidget* view) {
            return static_cast<ResultViews*>(view)->heatmap(QStringLiteral("weights"));
        };
        return {[](Document* d) {
                    auto* views = new ResultViews(d);
                    // The weights' tab in front (the pipeline canvas is the first tab).
                    views->tabs()->setCurrentWidget(views->heatmap(QStringLiteral("weights")));
                    return views;
                },
                [weights](QWidget* view) { return numbers(weights(view)->values()); },
                [weights](QWidget* view) { return static_cast<const Figure*>(weights(view)); }, true};
    }
    if (name == QLatin1String("heads"))
        return {[](Document* d) { return new HeadOverview(d); },
                [](QWidget* view) { return numbers(static_cast<HeadOverview*>(view)->heatmap(0)->values()); },
                itself, true};
    if (name == QLatin1String("step by step"))
        return {[](Document* d) { return new MathPanel(d); },
                [](QWidget* view) { return static_cast<MathPanel*>(view)->plainText(); }, itself};
    if (name == QLatin1String("normalizers"))
        return {[](Document* d) { return new NormalizerComparisonView(d); },
                [](QWidget* view) {
                    return numbers(static_cast<NormalizerComparisonView*>(view)->shownWeights());
                },
                itself};
    if (name == QLatin1String("Q/K plane"))
        return {[](Document* d) { return new QueryKeySpaceView(d); },
                [](QWidget* view) { return points(static_cast<QueryKeySpaceView*>(view)->queryPoints()); },
                itself};
    return {[](Document* d) { return new ValueSpaceView(d); },
            [](QWidget* view) { return points(static_cast<ValueSpaceView*>(view)->outputPoints()); }, itself};
}

} // namespace

class TestHiddenViews : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void catchesUpWhenShown_data();
    void catchesUpWhenShown();
    void catchesUpWhenExported_data() { catchesUpWhenShown_data(); }
    void catchesUpWhenExported();
    void catchesUpWhenItsDockIsRaised();
    void costlyViewWaitsToBeShown();

private:
    /// The view of `kind` in a tab behind a blank one, in a window on screen.
    QWidget* hiddenView(const ViewKind& kind);
    /// What a view of `kind` that followed every edit shows.
    QString followed(const ViewKind& kind);
    void edit();

    std::unique_ptr<Document> m_document;
    std::unique_ptr<QWidget> m_window;
    QTabWidget* m_pages = nullptr;
};

void TestHiddenViews::init()
{
    m_document = std::make_unique<Document>();
    m_window = std::make_unique<QWidget>();
    m_pages = new QTabWidget(m_window.get());
    auto* layout = new QVBoxLayout(m_window.get());
    layout->addWidget(m_pages);
    m_pages->addTab(new QLabel(QStringLiteral("in front")), QStringLiteral("front"));
    m_window->resize(900, 600);
}

void TestHiddenViews::cleanup()
{
    m_window.reset();
    m_document.reset();
}

QWidget* TestHiddenViews::hiddenView(const ViewKind& kind)
{
    QWidget* view = kind.make(m_document.get());
    m_pages->addTab(view, QStringLiteral("view"));
    m_pages->setCurrentIndex(0);
    m_window->show();
    if (!QTest::qWaitForWindowExposed(m_window.get()))
        return nullptr;
    return view;
}

QString TestHiddenViews::followed(const ViewKind& kind)
{
    // Never on screen: a view of a window that is not shown follows every edit at once.
    const std::unique_ptr<QWidget> view(kind.make(m_document.get()));
    return kind.shown(view.get());
}

void TestHiddenViews::edit()
{
    m_document->push(makeCellCommand(m_document.get(), {MatrixKind::W_Q, 0}, 0, 0,
                                     m_document->session().heads[0].W_Q(0, 0) + 1.5));
    m_document->waitForResult();
}

void TestHiddenViews::catchesUpWhenShown_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name :
         {"weights heatmap", "heads", "step by step", "normalizers", "Q/K plane", "values plane"})
        QTest::newRow(name) << QString::fromLatin1(name);
}

void TestHiddenViews::catchesUpWhenShown()
{
    QFETCH(QString, name);
    const ViewKind kind = viewKind(name);
    QWidget* view = hiddenView(kind);
    QVERIFY(view && !view->isVisible());
    const QString before = kind.shown(view);
    QVERIFY(!before.isEmpty());

    edit();
    const QString newest = followed(kind);
    QVERIFY(newest != before);
    // Hidden: nothing was done.
    QCOMPARE(kind.shown(view), kind.releasesMatrix ? QString() : before);

    m_pages->setCurrentWidget(view);
    QVERIFY(view->isVisible());
    QCOMPARE(kind.shown(view), newest);

    // On screen it follows edits at once.
    edit();
    QCOMPARE(kind.shown(view), followed(kind));
}

void TestHiddenViews::catchesUpWhenExported()
{
    QFETCH(QString, name);
    const ViewKind kind = viewKind(name);
    QWidget* view = hiddenView(kind);
    QVERIFY(view);
    edit();
    const QString newest = followed(kind);

    const Figure* figure = kind.figure(view);
    QVERIFY(figure);
    QImage image(figure->defaultFigureSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    figure->renderFigure(&image, image.size());
    QVERIFY(!view->isVisible());
    QCOMPARE(kind.shown(view), newest);
}

void TestHiddenViews::catchesUpWhenItsDockIsRaised()
{
    // A dock behind another one's tab is not hidden (the main window moves it out of sight): it is off
    // screen all the same, and catches up when its tab is chosen.
    QMainWindow window;
    window.setCentralWidget(new QLabel(QStringLiteral("centre")));
    auto* front = new QDockWidget(QStringLiteral("front"), &window);
    front->setObjectName(QStringLiteral("front"));
    front->setWidget(new QLabel(QStringLiteral("in front")));
    auto* back = new QDockWidget(QStringLiteral("back"), &window);
    back->setObjectName(QStringLiteral("back"));
    auto* math = new MathPanel(m_document.get());
    back->setWidget(math);
    window.addDockWidget(Qt::BottomDockWidgetArea, front);
    window.tabifyDockWidget(front, back);
    front->raise();
    window.resize(900, 600);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_VERIFY(OnScreenRefresh::isOffScreen(math));
    const QString before = math->plainText();

    edit();
    const QString newest = followed(viewKind(QStringLiteral("step by step")));
    QVERIFY(newest != before);
    QCOMPARE(math->plainText(), before);

    back->raise();
    QTRY_VERIFY(!OnScreenRefresh::isOffScreen(math));
    QTRY_COMPARE(math->plainText(), newest);
}

QKV_TEST_MAIN(TestHiddenViews)
void TestHiddenViews::costlyViewWaitsToBeShown()
{
    // The √d_k experiment draws 40 million normals: building the window must not start it while its tab is
    // hidden (it ran at every start of the application, taking a core for seconds).
    auto* variance = new VarianceView(m_document.get());
    auto* refresh = variance->findChild<OnScreenRefresh*>();
    QVERIFY(refresh);
    QVERIFY(refresh->isStale()); // requested, not run, while the window is being built
    QWidget* view = hiddenView({[variance](Document*) { return variance; }, {}, {}});
    QVERIFY(view == variance);
    QCoreApplication::processEvents(); // the deferred request: off screen, so it waits
    QVERIFY(refresh->isStale());

    variance->setSamples(40); // small, so that the run when shown is quick
    m_pages->setCurrentWidget(variance);
    QTRY_VERIFY(!refresh->isStale());
    QVERIFY(!variance->points().empty());
    QVERIFY(variance->errorText().isEmpty());
}

#include "tst_hiddenviews.moc"
