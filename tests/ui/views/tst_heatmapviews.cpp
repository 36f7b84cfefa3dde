// SPDX-License-Identifier: GPL-3.0-or-later
// The heatmap at every scale: tick labels chosen by level of detail never overlap, from 3 tokens to 4096, in
// the plan alone and as a shown heatmap draws them.

#include "Heatmap.h"
#include "HeatmapTicks.h"
#include "Initializers.h"
#include "RasterFills.h"
#include "SessionEdits.h"

#include "QueuedReplots.h"
#include "TestMain.h"
#include <QAction>
#include <QFontMetrics>
#include <QImage>
#include <QMenu>
#include <QNativeGestureEvent>
#include <QPainter>
#include <QPointingDevice>
#include <QScrollBar>
#include <QSignalSpy>
#include <QThreadPool>
#include <QtTest>

#include <atomic>

using namespace qkv;
using namespace qkv::ui;

namespace {

QStringList sessionTokens(Index n)
{
    const Session session = blankSession(n, 4, 2, 2, InitializerSpec{});
    QStringList tokens;
    for (const std::string& token : session.tokens)
        tokens.append(QString::fromStdString(token));
    return tokens;
}

/// "" when no two rectangles overlap, else the first two that do.
QString firstOverlap(const QList<QRectF>& rects)
{
    for (int a = 0; a < rects.size(); ++a)
        for (int b = a + 1; b < rects.size(); ++b)
            if (rects[a].intersects(rects[b]))
                return QStringLiteral("label %1 (%2,%3 %4×%5) overlaps label %6 (%7,%8 %9×%10)")
                    .arg(a)
                    .arg(rects[a].x())
                    .arg(rects[a].y())
                    .arg(rects[a].width())
                    .arg(rects[a].height())
                    .arg(b)
                    .arg(rects[b].x())
                    .arg(rects[b].y())
                    .arg(rects[b].width())
                    .arg(rects[b].height());
    return QString();
}

/// With QKV_SCREENSHOT_DIR set, writes the widget as NAME.png there (to look at; run under xvfb-run).
void saveShot(QWidget* widget, const QString& name)
{
    const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR");
    if (folder.isEmpty())
        return;
    QCoreApplication::processEvents(); // the queued replot
    widget->grab().save(folder + QLatin1Char('/') + name + QStringLiteral(".png"));
}

} // namespace

class TestHeatmapViews : public QObject {
    Q_OBJECT
private slots:
    void largeMatrixColoursTheCellsShown();
    void plannedLabelsNeverOverlap_data();
    void plannedLabelsNeverOverlap();
    void drawnLabelsNeverOverlap_data();
    void drawnLabelsNeverOverlap();
    void keysMoveTheSelection();
    void selectionIsBandsAndOutline();
    void zoomShowsMoreLabels();
    void colourMapsAndTwoColourMask();
    void colourScalesFromTheMenu();
    void cellValuesWhenZoomedIn();
    void dragPaintsOnAPaintableHeatmap();
    void rasterFillsStayOnThePaintingThread();
};

void TestHeatmapViews::plannedLabelsNeverOverlap_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<QSize>("axisRect");
    for (const int n : {3, 64, 256, 1024, 4096})
        for (const QSize size : {QSize(180, 120), QSize(600, 420), QSize(1800, 1000)})
            QTest::addRow("n=%d %dx%d", n, size.width(), size.height()) << n << size;
}

void TestHeatmapViews::plannedLabelsNeverOverlap()
{
    QFETCH(int, n);
    QFETCH(QSize, axisRect);
    const QStringList tokens = sessionTokens(n);
    QStringList longTokens;
    for (const QString& token : tokens)
        longTokens.append(QStringLiteral("a much longer ") + token);
    const QFontMetrics metrics(QApplication::font());
    for (const QStringList& labels : {tokens, longTokens}) {
        const TickPlan plan = planTicks(axisRect, metrics, labels, labels);
        const QList<QRectF> rects =
            tickLabelRects(plan, QRectF(QPointF(100, 40), QSizeF(axisRect)), metrics, labels, labels);
        QVERIFY(!rects.isEmpty());
        const QString overlap = firstOverlap(rects);
        QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
        if (n == 3 && axisRect.width() >= 600)
            QCOMPARE(rects.size(), 6); // all of them when they fit
    }
}

void TestHeatmapViews::drawnLabelsNeverOverlap_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("columns");
    QTest::addColumn<QSize>("widget");
    for (const QSize size : {QSize(420, 320), QSize(900, 700)}) {
        for (const int n : {3, 64, 256, 1024})
            QTest::addRow("%dx%d in %dx%d", n, n, size.width(), size.height()) << n << n << size;
        // 4096 × 4096 would hold 128 MiB twice: each axis is tried with a narrow matrix instead.
        QTest::addRow("4096x4 in %dx%d", size.width(), size.height()) << 4096 << 4 << size;
        QTest::addRow("4x4096 in %dx%d", size.width(), size.height()) << 4 << 4096 << size;
    }
}

void TestHeatmapViews::drawnLabelsNeverOverlap()
{
    QFETCH(int, rows);
    QFETCH(int, columns);
    QFETCH(QSize, widget);
    Heatmap map;
    map.setAxisTitles(QStringLiteral("query"), QStringLiteral("key"));
    map.resize(widget);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    QStringList rowStats;
    for (int i = 0; i < rows; ++i)
        rowStats.append(QStringLiteral("H %1 · %2").arg(0.69, 0, 'f', 2).arg(i));
    map.setRowAnnotations(rowStats, QStringLiteral("entropy (nats) · support"));
    map.setMatrix(Matrix::Constant(rows, columns, 0.25), sessionTokens(rows), sessionTokens(columns));
    // Settled: the plan no longer changes the layout.
    QTRY_VERIFY_WITH_TIMEOUT(!map.drawnTickLabelRects().isEmpty(), 5000);
    QVERIFY(test::settleReplots(&map));
    const QList<QRectF> rects = map.drawnTickLabelRects();
    const QString overlap = firstOverlap(rects);
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
    // Never more labels than there are tokens, and at least the first of each axis.
    QVERIFY(rects.size() <= 2 * rows + columns);
    QVERIFY(rects.size() >= 3);
}

void TestHeatmapViews::keysMoveTheSelection()
{
    Heatmap map;
    map.resize(500, 400);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix(Matrix::Constant(64, 32, 0.5), sessionTokens(64), sessionTokens(32));
    // As the window does: a chosen cell comes back as the selection.
    connect(&map, &Heatmap::cellClicked, &map, &Heatmap::setHighlight);
    QSignalSpy chosen(&map, &Heatmap::cellClicked);
    map.setHighlight(0, 0);
    map.setFocus();
    QTest::keyClick(&map, Qt::Key_Down);
    QCOMPARE(map.highlight(), std::make_pair(1, 0));
    QTest::keyClick(&map, Qt::Key_Right);
    QTest::keyClick(&map, Qt::Key_Right);
    QCOMPARE(map.highlight(), std::make_pair(1, 2));
    QTest::keyClick(&map, Qt::Key_Up);
    QTest::keyClick(&map, Qt::Key_Up); // stops at the edge
    QCOMPARE(map.highlight(), std::make_pair(0, 2));
    QTest::keyClick(&map, Qt::Key_End);
    QCOMPARE(map.highlight(), std::make_pair(0, 31));
    QTest::keyClick(&map, Qt::Key_Home);
    QCOMPARE(map.highlight(), std::make_pair(0, 0));
    QTest::keyClick(&map, Qt::Key_End, Qt::ControlModifier);
    QCOMPARE(map.highlight(), std::make_pair(63, 0));
    QTest::keyClick(&map, Qt::Key_PageUp);
    QVERIFY(map.highlight().first < 62);
    QTest::keyClick(&map, Qt::Key_PageDown);
    QCOMPARE(map.highlight().first, 63);
    QCOMPARE(chosen.count(), 10);
}

void TestHeatmapViews::selectionIsBandsAndOutline()
{
    Heatmap map;
    map.resize(500, 400);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix(Matrix::Constant(256, 256, 0.5), sessionTokens(256), sessionTokens(256));
    map.setRowAnnotations(QStringList(256, QStringLiteral("H 0.00 · 1")),
                          QStringLiteral("entropy · support"));
    QCOMPARE(map.rowAnnotationTitle(), QStringLiteral("entropy · support"));
    map.setHighlight(100, 30);
    QVERIFY(map.showsSelectionBands());
    QVERIFY(test::settleReplots(&map)); // the queued replots
    // 256 rows in a few hundred pixels: a cell is about one pixel, the marker is still many.
    QImage shot = map.grab().toImage();
    const QPoint centre = map.cellCentre(100, 30) * shot.devicePixelRatio();
    int orange = 0;
    for (int dx = -20; dx <= 20; ++dx)
        for (int dy = -20; dy <= 20; ++dy) {
            const QColor c = shot.pixelColor(centre + QPoint(dx, dy));
            orange += c.red() > 200 && c.green() > 100 && c.green() < 200 && c.blue() < 100;
        }
    QVERIFY2(orange >= 30, qPrintable(QString::number(orange)));
    map.setHighlight(100, -1); // a whole row: its outline alone
    QVERIFY(!map.showsSelectionBands());
    map.setHighlight(-1, -1);
    QVERIFY(!map.showsSelectionBands());
}

void TestHeatmapViews::zoomShowsMoreLabels()
{
    Heatmap map;
    map.resize(600, 500);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix(Matrix::Constant(1024, 1024, 0.5), sessionTokens(1024), sessionTokens(1024));
    QVERIFY(test::settleReplots(&map));
    const int strideWhole = map.tickPlan().rowStride;
    QVERIFY(strideWhole > 1);
    map.setHighlight(500, 500);
    map.setFocus();
    for (int i = 0; i < 6; ++i)
        QTest::keyClick(&map, Qt::Key_Plus, Qt::ControlModifier);
    QVERIFY(test::settleReplots(&map));
    const auto [top, bottom] = map.visibleRows();
    QVERIFY2(bottom - top < 20, qPrintable(QStringLiteral("%1 to %2").arg(top).arg(bottom)));
    QVERIFY(top <= 500 && 500 <= bottom);  // about the selected cell
    QCOMPARE(map.tickPlan().rowStride, 1); // every token named when zoomed in
    const QString overlap = firstOverlap(map.drawnTickLabelRects());
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
    // An edit keeps the zoom; Ctrl+0 shows the whole matrix again, never more than it.
    map.setMatrix(Matrix::Constant(1024, 1024, 0.25), sessionTokens(1024), sessionTokens(1024));
    QCOMPARE(map.visibleRows().first, top);
    QTest::keyClick(&map, Qt::Key_0, Qt::ControlModifier);
    QCOMPARE(map.visibleRows(), std::make_pair(-0.5, 1023.5));
    map.zoomBy(4.0);
    QCOMPARE(map.visibleColumns(), std::make_pair(-0.5, 1023.5));
}

void TestHeatmapViews::colourMapsAndTwoColourMask()
{
    Heatmap map;
    map.resize(400, 300);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setFixedRange(0.0, 1.0);
    map.setMatrix((Matrix(2, 2) << 0.0, 1.0, 1.0, 0.0).finished(), {}, {});
    const auto colourAt = [&map](int row, int column) {
        if (!test::settleReplots(&map))
            return QColor(); // still replotting: no colour to read, and the comparison fails
        const QImage shot = map.grab().toImage();
        return shot.pixelColor(map.cellCentre(row, column) * shot.devicePixelRatio() + QPoint(12, 12));
    };
    map.setColorMap(Heatmap::ColorMap::Greyscale);
    QCOMPARE(map.colorMap(), Heatmap::ColorMap::Greyscale);
    const QColor dark = colourAt(0, 0), light = colourAt(0, 1);
    QVERIFY(dark.red() == dark.green() && dark.green() == dark.blue() && dark.red() < 60);
    QVERIFY(light.red() == light.green() && light.green() == light.blue() && light.red() > 200);
    map.setColorMap(Heatmap::ColorMap::Cividis);
    QVERIFY(colourAt(0, 0).blue() > colourAt(0, 0).red()); // cividis starts dark blue
    // Logarithmic: 1e-4 and 1e-2 are far apart in colour, as 1e-2 and 1.
    map.setColorMap(Heatmap::ColorMap::Greyscale);
    map.clearFixedRange();
    map.setLogarithmic(true);
    map.setMatrix((Matrix(2, 2) << 1e-4, 1e-2, 1.0, 1e-2).finished(), {}, {});
    QCOMPARE(map.colorRange(), std::make_pair(1e-4, 1.0));
    const int low = colourAt(0, 0).red(), middle = colourAt(0, 1).red(), high = colourAt(1, 0).red();
    QVERIFY2(middle - low > 60 && high - middle > 60,
             qPrintable(QStringLiteral("%1 %2 %3").arg(low).arg(middle).arg(high)));
    map.setLogarithmic(false);
    // A mask: two colours, nothing between.
    map.setColorMode(Heatmap::ColorMode::Binary);
    map.setMatrix((Matrix(2, 2) << 0.0, 1.0, 1.0, 1.0).finished(), {}, {});
    QCOMPARE(colourAt(0, 1), colourAt(1, 1));
    QVERIFY(colourAt(0, 0) != colourAt(0, 1));
    QTRY_VERIFY(map.showsCellValues());
    QCOMPARE(map.cellText(0, 0), QStringLiteral("0")); // a mask's cells read 0 and 1, not 0.000
    QCOMPARE(map.cellText(0, 1), QStringLiteral("1"));
}

// Linear, logarithmic, per-row and diverging, chosen from the context menu's checked actions.
void TestHeatmapViews::colourScalesFromTheMenu()
{
    Heatmap map;
    map.resize(400, 300);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    const auto action = [&map](const char* name) {
        auto* found = map.contextMenu()->findChild<QAction*>(QLatin1String(name));
        return found;
    };
    const auto colourAt = [&map](int row, int column) {
        if (!test::settleReplots(&map))
            return QColor(); // still replotting: no colour to read, and the comparison fails
        const QImage shot = map.grab().toImage();
        return shot.pixelColor(map.cellCentre(row, column) * shot.devicePixelRatio() + QPoint(12, 12));
    };
    for (const char* name :
         {"colorScale_linear", "colorScale_logarithmic", "colorScale_perRow", "colorScale_diverging",
          "colorMap_viridis", "colorMap_cividis", "colorMap_greyscale", "zoomIn", "zoomOut", "zoomFit"})
        QVERIFY2(action(name), name);

    // Weights: a spread row (largest 0.02) and a peaked one. Linear: the spread row is all dark.
    map.setColorMap(Heatmap::ColorMap::Greyscale);
    map.setFixedRange(0.0, 1.0);
    map.setMatrix((Matrix(2, 2) << 0.02, 0.01, 0.9, 0.1).finished(), {}, {});
    QCOMPARE(map.colorScale(), Heatmap::ColorScale::Linear);
    QVERIFY(action("colorScale_linear")->isChecked());
    QVERIFY(action("colorScale_logarithmic")->isEnabled());
    QVERIFY(colourAt(0, 0).red() < 40);
    QVERIFY(colourAt(1, 0).red() > 200);

    // Per row: each row's largest is the top of the scale, so the spread row's largest is as bright as the
    // peaked row's.
    action("colorScale_perRow")->trigger();
    QCOMPARE(map.colorScale(), Heatmap::ColorScale::PerRow);
    QVERIFY(action("colorScale_perRow")->isChecked());
    QVERIFY(!action("colorScale_linear")->isChecked());
    QCOMPARE(map.colorRange(), std::make_pair(0.0, 1.0));
    QCOMPARE(colourAt(0, 0), colourAt(1, 0));
    saveShot(&map, QStringLiteral("heatmap-per-row"));
    const int half = colourAt(0, 1).red(); // 0.01 of 0.02: the middle of the scale
    QVERIFY2(half > 90 && half < 170, qPrintable(QString::number(half)));

    // Logarithmic from the menu.
    action("colorScale_logarithmic")->trigger();
    QVERIFY(map.isLogarithmic());
    QCOMPARE(map.colorRange(), std::make_pair(0.01, 1.0));

    // Diverging: white at 0, the same extent both ways; the colour map does not apply to it.
    map.clearFixedRange();
    action("colorScale_diverging")->trigger();
    QCOMPARE(map.colorScale(), Heatmap::ColorScale::Diverging);
    map.setMatrix((Matrix(2, 2) << -2.0, 1.0, 0.0, 0.5).finished(), {}, {});
    QCOMPARE(map.colorRange(), std::make_pair(-2.0, 2.0));
    const QColor zero = colourAt(1, 0); // white, within the gradient's 256 levels
    QVERIFY2(std::min({zero.red(), zero.green(), zero.blue()}) >= 250, qPrintable(zero.name()));
    const QColor negative = colourAt(0, 0), positive = colourAt(0, 1);
    QVERIFY(negative.blue() > negative.red());
    QVERIFY(positive.red() > positive.blue());
    QVERIFY(!action("colorMap_viridis")->isEnabled());
    action("colorScale_linear")->trigger();
    QCOMPARE(map.colorRange(), std::make_pair(-2.0, 1.0));

    // A signed map starts diverging and offers no logarithmic scale; a mask offers no scale at all.
    map.setColorMode(Heatmap::ColorMode::Diverging);
    QVERIFY(action("colorScale_diverging")->isChecked());
    QVERIFY(!action("colorScale_logarithmic")->isEnabled());
    map.setColorMode(Heatmap::ColorMode::Binary);
    for (const char* name :
         {"colorScale_linear", "colorScale_logarithmic", "colorScale_perRow", "colorScale_diverging"})
        QVERIFY2(!action(name)->isEnabled(), name);
}

// Values are written in the cells when the cells on screen are large enough, at any matrix size.
void TestHeatmapViews::cellValuesWhenZoomedIn()
{
    Heatmap map;
    map.resize(600, 500);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    Matrix values(256, 256);
    for (Index i = 0; i < values.rows(); ++i)
        for (Index j = 0; j < values.cols(); ++j)
            values(i, j) = static_cast<double>(i) + static_cast<double>(j) / 1000.0;
    map.setMatrix(values, sessionTokens(256), sessionTokens(256));
    QTRY_VERIFY(map.cellCentre(0, 0) != map.cellCentre(1, 1));
    QVERIFY(!map.showsCellValues());
    QCOMPARE(map.cellText(200, 100), QString());

    map.setHighlight(200, 100);
    for (int i = 0; i < 5; ++i)
        map.zoomBy(0.5); // 8 cells across
    QTRY_VERIFY(map.showsCellValues());
    const auto [top, bottom] = map.visibleRows();
    QVERIFY(top <= 200 && 200 <= bottom);
    QCOMPARE(map.cellText(200, 100), Heatmap::formatValue(values(200, 100)));
    QCOMPARE(map.cellText(0, 0), QString()); // out of view: not written
    saveShot(&map, QStringLiteral("heatmap-zoomed-values"));
    const QImage shot = map.grab().toImage();
    QVERIFY(!shot.isNull());

    // Scroll bars pan too: the horizontal one at its end shows the last column.
    auto* horizontal = map.findChild<QScrollBar*>(QStringLiteral("heatmapHorizontalScroll"));
    auto* vertical = map.findChild<QScrollBar*>(QStringLiteral("heatmapVerticalScroll"));
    QVERIFY(horizontal && vertical);
    QVERIFY(horizontal->isVisible() && vertical->isVisible());
    horizontal->setValue(horizontal->maximum());
    QCOMPARE(map.visibleColumns().second, 255.5);
    QCOMPARE(map.visibleRows().first, top); // the rows stay
    QTRY_COMPARE(map.cellText(200, 254), Heatmap::formatValue(values(200, 254)));

    map.fitToView();
    QTRY_VERIFY(!map.showsCellValues());
    QVERIFY(!horizontal->isVisible() && !vertical->isVisible());

    // A touchpad pinch zooms about its centre.
    QWidget* plot = map.childAt(map.cellCentre(128, 128));
    QVERIFY(plot);
    const QPointF at = plot->mapFrom(&map, map.cellCentre(128, 128));
    QNativeGestureEvent pinch(Qt::ZoomNativeGesture, QPointingDevice::primaryPointingDevice(), 2, at, at,
                              plot->mapToGlobal(at), 0.5, QPointF(), 1);
    QCoreApplication::sendEvent(plot, &pinch);
    const auto [pinchTop, pinchBottom] = map.visibleRows();
    QVERIFY2(pinchBottom - pinchTop < 140,
             qPrintable(QStringLiteral("%1 to %2").arg(pinchTop).arg(pinchBottom)));
    QVERIFY(pinchTop < 128 && 128 < pinchBottom);
    map.fitToView();
    // A small matrix shows its values at once, as before.
    map.setMatrix((Matrix(2, 2) << 0.25, 0.5, 0.75, 1.0).finished(), {}, {});
    QTRY_VERIFY(map.showsCellValues());
    QCOMPARE(map.cellText(1, 0), QStringLiteral("0.750"));
}

// A paintable heatmap turns a drag into rectanglePainted (on release, once), a click only selects, Space
// paints the selected cell, and Shift+drag pans instead of painting.
void TestHeatmapViews::dragPaintsOnAPaintableHeatmap()
{
    Heatmap map;
    map.resize(500, 400);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix(Matrix::Constant(6, 6, 1.0), sessionTokens(6), sessionTokens(6));
    QTRY_VERIFY(map.cellCentre(0, 0) != map.cellCentre(1, 1));
    connect(&map, &Heatmap::cellClicked, &map, &Heatmap::setHighlight);
    QSignalSpy painted(&map, &Heatmap::rectanglePainted);
    QSignalSpy chosen(&map, &Heatmap::cellClicked);
    QWidget* plot = map.childAt(map.cellCentre(0, 0));
    QVERIFY(plot);
    const auto at = [&](int row, int column) { return plot->mapFrom(&map, map.cellCentre(row, column)); };

    // Not paintable: nothing painted.
    QTest::mousePress(plot, Qt::LeftButton, {}, at(1, 1));
    QTest::mouseMove(plot, at(3, 2));
    QTest::mouseRelease(plot, Qt::LeftButton, {}, at(3, 2));
    QCOMPARE(painted.count(), 0);
    map.fitToView();

    map.setPaintable(true);
    const auto columnsBefore = map.visibleColumns();
    QTest::mousePress(plot, Qt::LeftButton, {}, at(1, 1));
    QTest::mouseMove(plot, at(2, 2));
    QTest::mouseMove(plot, at(2, 3));
    QCOMPARE(painted.count(), 0); // on release
    saveShot(&map, QStringLiteral("heatmap-painting"));
    QTest::mouseRelease(plot, Qt::LeftButton, {}, at(2, 3));
    QCOMPARE(painted.count(), 1);
    QCOMPARE(painted.at(0), (QVariantList{1, 1, 2, 3}));
    QCOMPARE(map.visibleColumns(), columnsBefore); // the drag painted, it did not pan
    QCOMPARE(map.highlight(), std::make_pair(1, 1));

    QTest::mouseClick(plot, Qt::LeftButton, {}, at(4, 4)); // a click selects only
    QCOMPARE(painted.count(), 1);
    QCOMPARE(map.highlight(), std::make_pair(4, 4));
    map.setFocus();
    QTest::keyClick(&map, Qt::Key_Space);
    QCOMPARE(painted.count(), 2);
    QCOMPARE(painted.at(1), (QVariantList{4, 4, 4, 4}));
    QVERIFY(chosen.count() >= 2);
}

void TestHeatmapViews::largeMatrixColoursTheCellsShown()
{
    // 2000 × 2000 cells on a few hundred pixels: the colour map samples about one cell per pixel, and
    // zoomed in it holds the cells shown, each its own colour (a checkerboard stays one).
    Heatmap map;
    map.resize(600, 500);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    Matrix values(2000, 2000);
    for (Index i = 0; i < values.rows(); ++i)
        for (Index j = 0; j < values.cols(); ++j)
            values(i, j) = static_cast<double>((i + j) % 2);
    map.setMatrix(values, {}, {});
    QTRY_VERIFY(map.cellCentre(0, 0) != map.cellCentre(1999, 1999));
    QVERIFY(!map.grab().toImage().isNull());
    map.setHighlight(-1, -1);
    for (int i = 0; i < 8; ++i)
        map.zoomBy(0.5);
    const auto [top, bottom] = map.visibleRows();
    const auto [left, right] = map.visibleColumns();
    QVERIFY(bottom - top < 20 && right - left < 20);
    const auto row = static_cast<Index>(std::ceil(top + 1)), column = static_cast<Index>(std::ceil(left + 1));
    const auto checkerboard = [&] { // after the queued replot; above the value written in the cell
        const QImage shot = map.grab().toImage();
        const int above = (map.cellCentre(row + 1, column).y() - map.cellCentre(row, column).y()) / 3;
        const auto colour = [&](Index i, Index j) {
            return shot.pixel(map.cellCentre(i, j) - QPoint(0, above));
        };
        const QRgb here = colour(row, column);
        return here != colour(row, column + 1) && here != colour(row + 1, column) &&
               here == colour(row + 1, column + 1);
    };
    QTRY_VERIFY(checkerboard());
}

// Qt asks QKV Lab's QThreadPool::contains, not its own, whether to split a long fill over its thread pool,
// and the painting thread fills it itself.
void TestHeatmapViews::rasterFillsStayOnThePaintingThread()
{
    qkv::ui::RasterFills::keepOnPaintingThread();
    const std::uint64_t before = qkv::ui::RasterFills::splitsDeclined();
    QImage image(64, 1024, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(Qt::NoPen);
    painter.setBrush(QColor(0, 0, 0, 128)); // blended: Qt copies opaque spans without the pool
    // A span per row: far more than the 96 spans from which Qt splits a fill.
    const QPointF triangle[] = {{0.5, 0.5}, {63.5, 512}, {0.5, 1023.5}};
    painter.drawPolygon(triangle, 3);
    painter.end();
    QVERIFY(qkv::ui::RasterFills::splitsDeclined() > before);
    QCOMPARE(image.pixel(8, 512), qRgb(127, 127, 127)); // and the triangle was filled

    // Any other pool gets Qt's own answer.
    QThreadPool pool;
    QVERIFY(!pool.contains(QThread::currentThread()));
    std::atomic<bool> insideOwnPool{false};
    pool.start([&] { insideOwnPool = pool.contains(QThread::currentThread()); });
    QVERIFY(pool.waitForDone(10000));
    QVERIFY(insideOwnPool);
}

QKV_TEST_MAIN(TestHeatmapViews)
#include "tst_heatmapviews.moc"
