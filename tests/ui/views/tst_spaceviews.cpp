// SPDX-License-Identifier: GPL-3.0-or-later
// The Q/K/V space views: lines from the selected query weighted by attention, linked selection by clicking,
// sparsemax zeros, the plane controls, cross-attention and rendering as a figure.

#include "AttentionEngine.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "Examples.h"
#include "Initializers.h"
#include "QueryKeySpaceView.h"
#include "SessionEdits.h"
#include "StampedScatter.h"
#include "ValueSpaceView.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QApplication>
#include <QComboBox>
#include <QFontMetricsF>
#include <QImage>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThreadPool>
#include <qcustomplot.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace qkv;
using namespace qkv::ui;

namespace {

int indexOfLargest(const QList<double>& values)
{
    return static_cast<int>(std::max_element(values.begin(), values.end()) - values.begin());
}

/// Lines are drawn exactly for the keys with a positive weight, wider for a larger weight (equal widths for
/// equal weights).
bool widthsFollowWeights(const QList<double>& widths, const RowVector& weights)
{
    if (widths.size() != weights.size())
        return false;
    for (int a = 0; a < widths.size(); ++a) {
        if ((widths[a] > 0) != (weights(a) > 0))
            return false;
        for (int b = 0; b < widths.size(); ++b)
            if (weights(a) > weights(b) && weights(b) > 0 && !(widths[a] > widths[b]))
                return false;
    }
    return true;
}

/// Shows the view at a fixed size and waits until its plot has been laid out and drawn.
void showAndSettle(QWidget* view)
{
    view->resize(700, 560);
    view->show();
    QVERIFY(QTest::qWaitForWindowExposed(view));
    QCoreApplication::processEvents(); // the queued replot
    QCoreApplication::processEvents();
}

/// Clicks the view's plot at `position` (in the view's coordinates).
void clickAt(QWidget* view, const QPoint& position)
{
    auto* plot = view->findChild<QWidget*>(QStringLiteral("plot"));
    QVERIFY(plot);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::KeyboardModifiers(), plot->mapFrom(view, position));
}

/// Pixels of `image` that differ from white.
int inkedPixels(const QImage& image)
{
    int count = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            if ((image.pixel(x, y) & 0xffffff) != 0xffffff)
                ++count;
    return count;
}

bool hasColor(const QImage& image, QRgb color, int tolerance)
{
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QRgb p = image.pixel(x, y);
            if (std::abs(qRed(p) - qRed(color)) <= tolerance &&
                std::abs(qGreen(p) - qGreen(color)) <= tolerance &&
                std::abs(qBlue(p) - qBlue(color)) <= tolerance)
                return true;
        }
    return false;
}

} // namespace

class TestSpaceViews : public QObject {
    Q_OBJECT
private slots:
    void lineFromIThickestToLove();
    void selectionThroughTheDocumentUpdatesTheLines();
    void clickingAPointSelectsIt();
    void sparsemaxZerosDrawNoLine();
    void valuePlaneShowsHullAndOutputs();
    void planeModeControlsPickDimensions();
    void ropePairPlaneShowsTheTurn();
    void crossAttention();
    void followsTheCurrentHead();
    void renderFigure_data();
    void renderFigure();
    void largeProjectionsRunInTheBackground();
    void quickProjectionReplacesThePlaneWithoutAMessage();
    void shortPlotKeepsTickLabelsApart();
    void stampedSymbolsWhereShapesAreDrawn();
    void shortWidePlotHasItsLegendBeside();
    void unlabelledCloudKeepsNoRoomForLabels();
};

void TestSpaceViews::lineFromIThickestToLove()
{
    Document document; // "I love AI"
    document.setSelection(0, 0);
    QueryKeySpaceView view(&document);
    QCOMPARE(view.figureName(), QStringLiteral("qk_space"));
    QCOMPARE(view.title(), QStringLiteral("Queries and keys, head 1"));
    QCOMPARE(view.queryLabels(),
             (QStringList{QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")}));
    QCOMPARE(view.keyLabels(), view.queryLabels());
    QCOMPARE(view.queryPoints().size(), 3);
    QCOMPARE(view.keyPoints().size(), 3);
    QVERIFY(view.xAxisLabel().startsWith(QStringLiteral("PC1 ("))); // d_k = 3: PCA
    QVERIFY(view.xAxisLabel().contains(QStringLiteral("% of variance")));
    QVERIFY(view.yAxisLabel().startsWith(QStringLiteral("PC2 (")));

    const QList<double> widths = view.lineWidths();
    QCOMPARE(widths.size(), 3);
    QCOMPARE(indexOfLargest(widths), 1); // "love"
    QVERIFY(widthsFollowWeights(widths, document.result()->heads[0].weights.row(0)));
    QCOMPARE(view.emphasisedQuery(), Index(0));
    QCOMPARE(view.emphasisedKey(), Index(0));
}

void TestSpaceViews::selectionThroughTheDocumentUpdatesTheLines()
{
    Document document;
    document.setSelection(0, 0);
    QueryKeySpaceView view(&document);
    ValueSpaceView values(&document);
    const QList<double> before = view.lineWidths();
    document.setSelection(2, 1);
    QCOMPARE(view.emphasisedQuery(), Index(2));
    QCOMPARE(view.emphasisedKey(), Index(1));
    QCOMPARE(values.emphasisedOutput(), Index(2));
    QCOMPARE(values.emphasisedValue(), Index(1));
    QVERIFY(view.lineWidths() != before);
    QVERIFY(widthsFollowWeights(view.lineWidths(), document.result()->heads[0].weights.row(2)));
}

void TestSpaceViews::clickingAPointSelectsIt()
{
    Document document;
    document.setSelection(0, 0);
    QueryKeySpaceView view(&document);
    showAndSettle(&view);
    QSignalSpy selection(&document, &Document::selectionChanged);

    clickAt(&view, view.keyPosition(2));
    QCOMPARE(document.selectedQuery(), Index(0));
    QCOMPARE(document.selectedKey(), Index(2));
    clickAt(&view, view.queryPosition(1));
    QCOMPARE(document.selectedQuery(), Index(1));
    QCOMPARE(document.selectedKey(), Index(2));
    QCOMPARE(selection.count(), 2);
    QCOMPARE(view.emphasisedQuery(), Index(1));

    // Far from every point: nothing changes.
    auto* plot = view.findChild<QWidget*>(QStringLiteral("plot"));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::KeyboardModifiers(), QPoint(3, 3));
    QCOMPARE(selection.count(), 2);

    ValueSpaceView values(&document);
    showAndSettle(&values);
    clickAt(&values, values.outputPosition(2));
    QCOMPARE(document.selectedQuery(), Index(2));
    QCOMPARE(document.selectedKey(), Index(2));
    clickAt(&values, values.valuePosition(0));
    QCOMPARE(document.selectedQuery(), Index(2));
    QCOMPARE(document.selectedKey(), Index(0));
    QCOMPARE(view.emphasisedQuery(), Index(2)); // linked: the other view follows
    QCOMPARE(view.emphasisedKey(), Index(0));
}

void TestSpaceViews::sparsemaxZerosDrawNoLine()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:sparsemax"), &error), qPrintable(error));
    QueryKeySpaceView view(&document);
    const Matrix& weights = document.result()->heads[0].weights;
    int zeros = 0;
    for (Index i = 0; i < weights.rows(); ++i) {
        document.setSelection(i, 0);
        const QList<double> widths = view.lineWidths();
        QCOMPARE(widths.size(), int(weights.cols()));
        for (Index j = 0; j < weights.cols(); ++j) {
            if (weights(i, j) == 0.0) {
                QCOMPARE(widths[int(j)], 0.0);
                ++zeros;
            } else {
                QVERIFY(widths[int(j)] > 0.5);
            }
        }
    }
    QVERIFY(zeros > 0); // the example is there to show exact zeros
}

void TestSpaceViews::valuePlaneShowsHullAndOutputs()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:sparsemax"), &error), qPrintable(error));
    ValueSpaceView view(&document);
    QCOMPARE(view.figureName(), QStringLiteral("v_space"));
    QCOMPARE(view.title(), QStringLiteral("Values and outputs, head 1"));
    const Matrix& V = document.result()->heads[0].V; // d_v = 2: raw coordinates
    QCOMPARE(view.xAxisLabel(), QStringLiteral("v dimension 0"));
    QCOMPARE(view.yAxisLabel(), QStringLiteral("v dimension 1"));
    QCOMPARE(view.valuePoints().size(), int(V.rows()));
    for (Index j = 0; j < V.rows(); ++j)
        QCOMPARE(view.valuePoints()[int(j)], QPointF(V(j, 0), V(j, 1)));
    QVERIFY(view.hullPoints().size() >= 3);
    QCOMPARE(view.outputLabels().first(), QStringLiteral("o(a)"));
    QCOMPARE(view.valueLabels().first(), QStringLiteral("a"));
    QCOMPARE(view.outputPoints().size(), 5);
}

void TestSpaceViews::planeModeControlsPickDimensions()
{
    Document document;
    QueryKeySpaceView view(&document);
    auto* mode = view.findChild<QComboBox*>(QStringLiteral("planeMode"));
    auto* first = view.findChild<QSpinBox*>(QStringLiteral("firstDimension"));
    auto* second = view.findChild<QSpinBox*>(QStringLiteral("secondDimension"));
    QVERIFY(mode && first && second);
    QVERIFY(!first->isEnabled() && !second->isEnabled());
    QCOMPARE(first->maximum(), 2); // d_k = 3

    mode->setCurrentIndex(mode->findData(static_cast<int>(PlaneMode::PickedDimensions)));
    QVERIFY(first->isEnabled() && second->isEnabled());
    QCOMPARE(view.planeOptions().mode, PlaneMode::PickedDimensions);
    first->setValue(2);
    second->setValue(0);
    QCOMPARE(view.xAxisLabel(), QStringLiteral("q/k dimension 2"));
    QCOMPARE(view.yAxisLabel(), QStringLiteral("q/k dimension 0"));
    const Matrix& Q = document.result()->heads[0].Q;
    const Matrix& K = document.result()->heads[0].K;
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(view.queryPoints()[i], QPointF(Q(i, 2), Q(i, 0)));
        QCOMPARE(view.keyPoints()[i], QPointF(K(i, 2), K(i, 0)));
    }

    mode->setCurrentIndex(mode->findData(static_cast<int>(PlaneMode::Pca)));
    QVERIFY(!first->isEnabled());
    QVERIFY(view.xAxisLabel().startsWith(QStringLiteral("PC1 (")));
}

// With RoPE positions the Q/K plane offers one pair's two coordinates: the turned queries and keys, and the
// selected query and key before their turn; a session without RoPE does not offer it and falls back.
void TestSpaceViews::ropePairPlaneShowsTheTurn()
{
    Document document;
    QueryKeySpaceView view(&document);
    auto* mode = view.findChild<QComboBox*>(QStringLiteral("planeMode"));
    auto* first = view.findChild<QSpinBox*>(QStringLiteral("firstDimension"));
    QVERIFY(mode && first);
    const int ropeIndex = mode->findData(static_cast<int>(PlaneMode::RopePair));
    QVERIFY(ropeIndex >= 0);
    const auto offered = [mode, ropeIndex] {
        return qobject_cast<QStandardItemModel*>(mode->model())->item(ropeIndex)->isEnabled();
    };
    QVERIFY(!view.showsRope() && !offered()); // the love example has no positions

    Session session = blankSession(6, 8, 4, 4, InitializerSpec{});
    session.positions.type = PositionType::Rope;
    session.positions.base = 100.0;
    document.reset(session);
    document.waitForResult();
    document.setSelection(4, 2);
    QCoreApplication::processEvents();
    QVERIFY(view.showsRope() && offered());
    mode->setCurrentIndex(ropeIndex);
    QVERIFY(first->isEnabled());
    QCOMPARE(first->maximum(), 1); // d_k = 4: two pairs
    first->setValue(1);
    QCOMPARE(view.planeOptions().mode, PlaneMode::RopePair);
    QVERIFY2(view.xAxisLabel().startsWith(QStringLiteral("q/k dimension 1 (RoPE pair 1")),
             qPrintable(view.xAxisLabel()));
    QCOMPARE(view.yAxisLabel(), QStringLiteral("q/k dimension 3"));
    const Matrix& Q = document.result()->heads[0].Q;
    QCOMPARE(view.queryPoints()[4], QPointF(Q(4, 1), Q(4, 3)));
    // The selected query and key before RoPE: the same session computed without positions.
    Session plain = session;
    plain.positions = PositionSpec{};
    const AttentionResult unturned = computeAttention(plain);
    const QList<QPointF> before = view.unrotatedPoints();
    QCOMPARE(before.size(), 2);
    QVERIFY(std::abs(before[0].x() - unturned.heads[0].Q(4, 1)) < 1e-12);
    QVERIFY(std::abs(before[0].y() - unturned.heads[0].Q(4, 3)) < 1e-12);
    QVERIFY(std::abs(before[1].x() - unturned.heads[0].K(2, 1)) < 1e-12);
    QVERIFY(std::abs(before[1].y() - unturned.heads[0].K(2, 3)) < 1e-12);

    // Positions off: the pair plane is no longer offered, and the view is back on Automatic.
    document.reset(plain);
    document.waitForResult();
    QCoreApplication::processEvents();
    QVERIFY(!offered());
    QCOMPARE(view.planeOptions().mode, PlaneMode::Automatic);
    QVERIFY(view.unrotatedPoints().isEmpty());
}

void TestSpaceViews::crossAttention()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:translation"), &error), qPrintable(error));
    document.setSelection(1, 1);
    QueryKeySpaceView view(&document);
    ValueSpaceView values(&document);
    QCOMPARE(view.queryPoints().size(), 3);
    QCOMPARE(view.keyPoints().size(), 4);
    QCOMPARE(view.queryLabels(),
             (QStringList{QStringLiteral("le"), QStringLiteral("chat"), QStringLiteral("dort")}));
    QCOMPARE(view.keyLabels().at(1), QStringLiteral("cat"));
    QCOMPARE(view.lineWidths().size(), 4);
    QCOMPARE(indexOfLargest(view.lineWidths()), 1); // "chat" looks at "cat"
    QCOMPARE(values.valuePoints().size(), 4);
    QCOMPARE(values.outputPoints().size(), 3);
    QCOMPARE(values.valueLabels().at(3), QStringLiteral("sleeping"));
    QCOMPARE(values.outputLabels().at(2), QStringLiteral("o(dort)"));
    QVERIFY(values.message().isEmpty());
}

void TestSpaceViews::followsTheCurrentHead()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:multihead"), &error), qPrintable(error));
    QVERIFY2(document.session().headCount() >= 2, "the multihead example must have two heads");
    QueryKeySpaceView view(&document);
    ValueSpaceView values(&document);
    const QList<QPointF> before = view.queryPoints();
    document.setCurrentHead(1);
    QCOMPARE(view.title(), QStringLiteral("Queries and keys, head 2"));
    QCOMPARE(values.title(), QStringLiteral("Values and outputs, head 2"));
    QVERIFY(view.queryPoints() != before);
}

void TestSpaceViews::renderFigure_data()
{
    QTest::addColumn<QString>("source");
    QTest::addColumn<bool>("values");
    QTest::newRow("love, Q/K") << "example:love" << false;
    QTest::newRow("love, V") << "example:love" << true;
    QTest::newRow("sparsemax, Q/K") << "example:sparsemax" << false;
    QTest::newRow("translation, V") << "example:translation" << true;
}

void TestSpaceViews::renderFigure()
{
    QFETCH(QString, source);
    QFETCH(bool, values);
    Document document;
    QString error;
    QVERIFY2(document.open(source, &error), qPrintable(error));
    document.setSelection(0, 1);
    std::unique_ptr<SpaceView> view;
    if (values)
        view = std::make_unique<ValueSpaceView>(&document);
    else
        view = std::make_unique<QueryKeySpaceView>(&document);
    const QSize size = view->defaultFigureSize();
    QImage image(size, QImage::Format_ARGB32);
    image.fill(Qt::white);
    view->renderFigure(&image, size);
    QVERIFY(inkedPixels(image) > size.width() * size.height() / 200);
    // The points themselves are drawn, in their colours.
    if (values)
        QVERIFY(hasColor(image, qRgb(0x2c, 0xa0, 0x2c), 12));
    else
        QVERIFY(hasColor(image, qRgb(0x1f, 0x77, 0xb4), 12) && hasColor(image, qRgb(0xd6, 0x27, 0x28), 12));
    // Rendering leaves the widget's own positions alone.
    const QPoint position = values ? static_cast<ValueSpaceView*>(view.get())->valuePosition(0)
                                   : static_cast<QueryKeySpaceView*>(view.get())->queryPosition(0);
    QImage again(size, QImage::Format_ARGB32);
    again.fill(Qt::white);
    view->renderFigure(&again, size);
    QCOMPARE(again, image);
    QCOMPARE(values ? static_cast<ValueSpaceView*>(view.get())->valuePosition(0)
                    : static_cast<QueryKeySpaceView*>(view.get())->queryPosition(0),
             position);
}

namespace {

/// 400 tokens, d_k = d_v = 300: planes projected in the background (isLargePcaProblem).
Session heavyPlaneSession()
{
    Session big = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 3};
    for (Index i = 0; i < 397; ++i)
        insertToken(big, Side::Query, 0, "t", init);
    resizeDModel(big, 300, init);
    resizeDK(big, 300, init);
    resizeDV(big, 300, init);
    return big;
}

} // namespace

void TestSpaceViews::largeProjectionsRunInTheBackground()
{
    // d_k = d_v = 300 at n = 400: a PCA that takes tens of milliseconds (isLargePcaProblem) is computed off
    // the GUI thread, the view says so meanwhile, and a figure drawn in between waits for it.
    const Session big = heavyPlaneSession();
    Document document;
    QueryKeySpaceView view(&document);
    ValueSpaceView values(&document);
    view.setProgressDelay(0); // the message at once (it waits 150 ms for a plane that comes sooner)
    values.setProgressDelay(0);
    document.reset(big);
    document.waitForResult();
    QVERIFY2(view.message().startsWith(QStringLiteral("Projecting 800 points")), qPrintable(view.message()));
    QVERIFY2(values.message().startsWith(QStringLiteral("Projecting 400 points")),
             qPrintable(values.message()));
    QImage image(320, 240, QImage::Format_ARGB32);
    image.fill(Qt::white);
    view.renderFigure(&image, image.size()); // waits for the plane
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.queryPoints().size(), 400);
    QTRY_VERIFY_WITH_TIMEOUT(values.message().isEmpty(), 60000);
    QCOMPARE(values.outputPoints().size(), 400);
    QVERIFY(view.xAxisLabel().startsWith(QStringLiteral("PC1")));
}

void TestSpaceViews::quickProjectionReplacesThePlaneWithoutAMessage()
{
    // Every edit of a large session projects again: the previous plane stays until the new one comes, and
    // "Projecting…" replaces it only when the projection takes longer than the progress delay.
    Document document;
    QueryKeySpaceView view(&document);
    view.setProgressDelay(1);
    // Every thread of the pool busy: the projection waits (the engine's own job runs in the waiting thread).
    QThreadPool* pool = QThreadPool::globalInstance();
    QSemaphore started, release;
    for (int i = 0; i < pool->maxThreadCount(); ++i)
        pool->start([&] {
            started.release();
            release.acquire();
        });
    started.acquire(pool->maxThreadCount());
    auto unblock = qScopeGuard([&] { release.release(pool->maxThreadCount()); }); // also when a check fails
    document.reset(heavyPlaneSession());
    document.waitForResult();
    QVERIFY(view.isProjecting());
    QVERIFY2(!view.message().startsWith(QStringLiteral("Projecting")), qPrintable(view.message()));
    QTRY_VERIFY2(view.message().startsWith(QStringLiteral("Projecting 800 points")),
                 qPrintable(view.message()));
    unblock.dismiss();
    release.release(pool->maxThreadCount());
    QTRY_VERIFY_WITH_TIMEOUT(!view.isProjecting(), 60000);
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.queryPoints().size(), 400);

    // A plane that comes within the delay (a long one here, so that it always does) replaces the last one
    // with nothing in between: no replot said "Projecting…".
    view.setProgressDelay(60000);
    QStringList messages;
    auto* plot = view.findChild<QCustomPlot*>();
    connect(plot, &QCustomPlot::beforeReplot, &view, [&] { messages << view.message(); });
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 2.5));
    document.waitForResult();
    QVERIFY(view.isProjecting());
    QTRY_VERIFY_WITH_TIMEOUT(!view.isProjecting(), 60000);
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.queryPoints().size(), 400);
    QVERIFY(!messages.join(QString()).contains(QStringLiteral("Projecting")));
}

// On screen the planes stamp one pixmap of the symbol at each point; figures draw every shape. At pixel
// ratios 1 and 2 each symbol must be as dark and in the same place (within a device pixel) either way.
void TestSpaceViews::stampedSymbolsWhereShapesAreDrawn()
{
    QCustomPlot plot;
    plot.resize(400, 300);
    plot.xAxis->setRange(0, 10);
    plot.yAxis->setRange(0, 10);
    QCPGraph* discs = addStampedScatterGraph(&plot);
    discs->setLineStyle(QCPGraph::lsNone);
    discs->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(20, 60, 160), QColor(40, 110, 220), 9));
    QCPGraph* squares = addStampedScatterGraph(&plot);
    squares->setLineStyle(QCPGraph::lsNone);
    squares->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(150, 20, 20), QColor(220, 40, 40), 8));
    QVector<double> x, y;
    for (int i = 0; i < 8; ++i) {
        x << 1.0 + i * 1.13;
        y << 2.0 + std::fmod(i * 2.71, 6.5);
    }
    discs->setData(x, y);
    QVector<double> y2 = y;
    for (double& v : y2)
        v = 10.0 - v;
    squares->setData(x, y2);
    plot.replot();

    for (const double ratio : {1.0, 2.0}) {
        const auto render = [&](bool figure) {
            QPixmap pixmap(plot.size() * ratio);
            pixmap.setDevicePixelRatio(ratio);
            pixmap.fill(Qt::white);
            if (figure) { // as renderPlot draws a figure
                QCPPainter painter(&pixmap);
                painter.setMode(QCPPainter::pmNoCaching);
                plot.toPainter(&painter, plot.width(), plot.height());
            } else { // the widget, from the buffers a replot painted
                plot.setBufferDevicePixelRatio(ratio);
                plot.replot();
                plot.render(&pixmap);
            }
            return pixmap.toImage();
        };
        const QImage stamped = render(false), drawn = render(true);
        QVERIFY(stamped != drawn); // the stamps were used
        const auto ink = [](const QImage& image, const QPoint& centre, int radius) {
            double sum = 0, sx = 0, sy = 0;
            for (int py = centre.y() - radius; py <= centre.y() + radius; ++py)
                for (int px = centre.x() - radius; px <= centre.x() + radius; ++px) {
                    const double dark = 255.0 - qGray(image.pixel(px, py));
                    sum += dark;
                    sx += dark * px;
                    sy += dark * py;
                }
            return std::array<double, 3>{sum, sx / sum, sy / sum};
        };
        for (QCPGraph* graph : {discs, squares})
            for (const QCPGraphData& point : *graph->data()) {
                const QPoint centre(qRound(plot.xAxis->coordToPixel(point.key) * ratio),
                                    qRound(plot.yAxis->coordToPixel(point.value) * ratio));
                const int radius = qRound(9 * ratio);
                const auto [inkStamped, xStamped, yStamped] = ink(stamped, centre, radius);
                const auto [inkDrawn, xDrawn, yDrawn] = ink(drawn, centre, radius);
                const QString where =
                    QStringLiteral("ratio %1 at (%2, %3): ink %4 / %5, centre (%6, %7) / (%8, %9)")
                        .arg(ratio)
                        .arg(centre.x())
                        .arg(centre.y())
                        .arg(inkStamped)
                        .arg(inkDrawn)
                        .arg(xStamped)
                        .arg(yStamped)
                        .arg(xDrawn)
                        .arg(yDrawn);
                QVERIFY2(std::abs(inkStamped - inkDrawn) < 0.1 * inkDrawn, qPrintable(where));
                QVERIFY2(std::abs(xStamped - xDrawn) < 1.0 && std::abs(yStamped - yDrawn) < 1.0,
                         qPrintable(where));
            }
    }
}

// A plot squeezed to a strip (the Q/K plane at a scale factor of 2 on 1920 × 1080) draws fewer ticks, never
// two tick labels on top of each other; a tall one keeps QCustomPlot's five.
void TestSpaceViews::shortPlotKeepsTickLabelsApart()
{
    Document document;
    QueryKeySpaceView view(&document);
    auto* plot = view.findChild<QCustomPlot*>();
    QVERIFY(plot);
    const auto labelsApart = [plot](QCPAxis* axis) {
        QVector<double> pixels;
        for (double tick : axis->tickVector())
            if (axis->range().contains(tick))
                pixels << axis->coordToPixel(tick);
        std::sort(pixels.begin(), pixels.end());
        const double height = QFontMetricsF(axis->tickLabelFont()).height();
        for (int k = 1; k < pixels.size(); ++k)
            if (pixels[k] - pixels[k - 1] < height)
                return false;
        return true;
    };
    for (const int height : {150, 600}) {
        view.resize(700, height);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        plot->replot();
        QApplication::processEvents(); // the queued replot with the new tick count
        QVERIFY2(labelsApart(plot->yAxis), qPrintable(QString::number(height)));
        if (height == 600)
            QCOMPARE(plot->yAxis->ticker()->tickCount(), 5);
    }
}

void TestSpaceViews::shortWidePlotHasItsLegendBeside()
{
    Document document;
    QueryKeySpaceView view(&document);
    auto* plot = view.findChild<QCustomPlot*>();
    QVERIFY(plot);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    for (const bool shortAndWide : {true, false, true}) { // and back again
        view.resize(shortAndWide ? QSize(900, 190) : QSize(600, 500));
        plot->replot();
        const QRect legend = plot->legend->outerRect();
        const QRect points = plot->axisRect()->outerRect();
        QVERIFY(legend.isValid() && points.isValid());
        QVERIFY2(!legend.intersects(points), qPrintable(QString::number(shortAndWide)));
        // Whole and unframed: the plot style used to frame it, and a cosmetic pen draws a rectangle's
        // right and bottom edges a pixel beyond QRect::right() and bottom(), cut at the widget's edge
        // (1280 × 720, 2026-11-27).
        QCOMPARE(plot->legend->borderPen().style(), Qt::NoPen);
        QVERIFY2(plot->rect().contains(legend.adjusted(0, 0, 1, 1)),
                 qPrintable(QStringLiteral("legend %1,%2 %3×%4 in a plot %5×%6")
                                .arg(legend.x())
                                .arg(legend.y())
                                .arg(legend.width())
                                .arg(legend.height())
                                .arg(plot->width())
                                .arg(plot->height())));
        // The y label fits its axis (shortened), and the view still gives it in full.
        const QString drawn = plot->yAxis->label();
        QVERIFY2(QFontMetrics(plot->yAxis->labelFont()).horizontalAdvance(drawn) <=
                     plot->axisRect()->height(),
                 qPrintable(drawn));
        QVERIFY2(view.yAxisLabel().startsWith(QStringLiteral("PC2 (")) &&
                     view.yAxisLabel().endsWith(QStringLiteral("% of variance)")),
                 qPrintable(view.yAxisLabel()));
        const auto* titleElement = plot->findChild<QCPTextElement*>(); // the plot's one text element
        QVERIFY(titleElement && titleElement->text().startsWith(QStringLiteral("Queries and keys")));
        const QRect title = titleElement->outerRect();
        QVERIFY(!title.intersects(points));
        if (shortAndWide) {
            QVERIFY(title.left() >= points.right() && title.bottom() <= legend.top()); // over the legend
            QVERIFY(legend.left() >= points.right()); // beside, and the points keep the height
            QVERIFY2(points.height() > plot->height() * 2 / 3, qPrintable(QString::number(points.height())));
            QVERIFY2(drawn != view.yAxisLabel(), qPrintable(drawn)); // too long for 190 px
        } else {
            QVERIFY(title.bottom() <= points.top());
            QVERIFY(legend.top() >= points.bottom()); // below, in one row
            QCOMPARE(plot->plotLayout()->columnCount(), 1);
        }
    }
}

// Past labelsFit the points carry no labels, and the plot keeps no room for them: in a strip (the Q/K plane
// at a scale factor of 2) that room took two thirds of the height, and the cloud was a blot in the middle.
void TestSpaceViews::unlabelledCloudKeepsNoRoomForLabels()
{
    const auto roomAbove = [](int tokens) {
        Session session = loadExample("love");
        const InitializerSpec init{Initializer::XavierNormal, 1.0, 5};
        for (int i = 0; i < tokens - 3; ++i)
            insertToken(session, Side::Query, 0, "t", init);
        Document document;
        document.reset(session);
        document.waitForResult();
        QueryKeySpaceView view(&document);
        auto* plot = view.findChild<QCustomPlot*>();
        view.resize(900, 190);
        view.show();
        if (!QTest::qWaitForWindowExposed(&view))
            return -1.0;
        plot->replot();
        double top = std::numeric_limits<double>::infinity();
        for (const QPointF& p : view.queryPoints() + view.keyPoints())
            top = std::min(top, plot->yAxis->coordToPixel(p.y()));
        return top - plot->axisRect()->top(); // from the top of the points' rectangle to the highest point
    };
    const double labelHeight = QFontMetrics(QApplication::font()).height();
    const double unlabelled = roomAbove(200); // 400 points
    const double labelled = roomAbove(3);
    QVERIFY2(unlabelled >= 14.0 && unlabelled < 16.0 + 0.5 * labelHeight,
             qPrintable(QString::number(unlabelled)));
    QVERIFY2(labelled >= unlabelled + 0.6 * labelHeight, qPrintable(QString::number(labelled)));
}

QKV_TEST_MAIN(TestSpaceViews)
#include "tst_spaceviews.moc"
