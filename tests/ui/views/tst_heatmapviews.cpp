// The heatmap at every scale: tick labels chosen by level of detail never overlap, from 3 tokens to 4096, in
// the plan alone and as a shown heatmap draws them.

#include "Heatmap.h"
#include "HeatmapTicks.h"
#include "Initializers.h"
#include "SessionEdits.h"

#include <QFontMetrics>
#include <QImage>
#include <QSignalSpy>
#include <QtTest>

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

} // namespace

class TestHeatmapViews : public QObject {
    Q_OBJECT
private slots:
    void plannedLabelsNeverOverlap_data();
    void plannedLabelsNeverOverlap();
    void drawnLabelsNeverOverlap_data();
    void drawnLabelsNeverOverlap();
    void keysMoveTheSelection();
    void selectionIsBandsAndOutline();
    void zoomShowsMoreLabels();
    void colourMapsAndTwoColourMask();
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
    QTRY_VERIFY(!map.drawnTickLabelRects().isEmpty());
    QTest::qWait(30);
    QCoreApplication::processEvents();
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
    QTest::qWait(30); // the queued replots
    QCoreApplication::processEvents();
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
    QTest::qWait(30);
    QCoreApplication::processEvents();
    const int strideWhole = map.tickPlan().rowStride;
    QVERIFY(strideWhole > 1);
    map.setHighlight(500, 500);
    map.setFocus();
    for (int i = 0; i < 6; ++i)
        QTest::keyClick(&map, Qt::Key_Plus, Qt::ControlModifier);
    QTest::qWait(30);
    QCoreApplication::processEvents();
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
        QTest::qWait(20);
        QCoreApplication::processEvents();
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
}

QTEST_MAIN(TestHeatmapViews)
#include "tst_heatmapviews.moc"
