// SPDX-License-Identifier: GPL-3.0-or-later
// The training views draw what they are given: the curves' series in the palette's colours with their names,
// points that cannot be drawn left out, a legend only where it leaves the lines room, log-axis ticks that
// never crowd a low plot; the probe's bars split into scored and other positions, bad losses left out. And
// the one palette every plot takes its series colours from.

#include "FuzzyCompare.h"
#include "QueuedReplots.h"
#include "SeriesPalette.h"
#include "TestMain.h"
#include "TrainingCurveView.h"
#include "TrainingProbeView.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace qkv::ui;

class TestTrainingViews : public QObject {
    Q_OBJECT
private slots:
    void paletteRepeatsDistinctColours();
    void seriesTakeThePalette();
    void undrawablePointsAreLeftOut();
    void legendOnlyWithRoom();
    void logAxisTicks_data();
    void logAxisTicks();
    void lowPlotTicksDoNotOverlap_data();
    void lowPlotTicksDoNotOverlap();
    void probeBarsSplitScoredPositions();
};

namespace {

CurveAxes lossAxes()
{
    return {QStringLiteral("Loss"), QStringLiteral("step"), QStringLiteral("loss"), true};
}

CurveAxes scoreAxes()
{
    return {QStringLiteral("Score"), QStringLiteral("step"), QStringLiteral("score"), false, 0.0, 1.0};
}

} // namespace

void TestTrainingViews::paletteRepeatsDistinctColours()
{
    const int count = seriesColorCount();
    QVERIFY(count >= 8);
    for (int i = 0; i < count; ++i) {
        for (int j = 0; j < i; ++j)
            QVERIFY2(seriesColor(i) != seriesColor(j), qPrintable(QStringLiteral("%1 and %2").arg(i).arg(j)));
        QCOMPARE(seriesColor(i + count), seriesColor(i));
    }
    QCOMPARE(seriesColor(-3), seriesColor(0));
    QVERIFY(neutralSeriesColor() != seriesColor(0) && neutralSeriesColor() != seriesColor(1));
}

void TestTrainingViews::seriesTakeThePalette()
{
    TrainingCurveView view(QStringLiteral("scores"), scoreAxes());
    view.setSeries(2, QStringLiteral("L1 H0"));
    QCOMPARE(view.seriesCount(), 3); // the ones before it are made too, unnamed
    QCOMPARE(view.seriesName(2), QStringLiteral("L1 H0"));
    QVERIFY(view.seriesName(0).isEmpty());
    for (int i = 0; i < 3; ++i)
        QCOMPARE(view.seriesColorAt(i), seriesColor(i));
    view.addPoint(4, 1.0, 0.5); // a point for a series not declared yet makes it
    QCOMPARE(view.seriesCount(), 5);
    QCOMPARE(view.pointCount(4), 1);
    QCOMPARE(view.seriesColorAt(4), seriesColor(4));
    view.clear();
    QCOMPARE(view.seriesCount(), 0);
    QCOMPARE(view.pointCount(4), 0);
    QVERIFY(view.seriesName(7).isEmpty());
}

void TestTrainingViews::undrawablePointsAreLeftOut()
{
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    constexpr double inf = std::numeric_limits<double>::infinity();
    TrainingCurveView loss(QStringLiteral("loss"), lossAxes());
    for (double value : {2.0, nan, inf, 0.0, -1.0, 1.5})
        loss.addPoint(0, 1.0, value);
    loss.addPoint(0, nan, 1.0);
    QCOMPARE(loss.pointCount(0), 2); // a log axis draws no 0 and nothing negative
    TrainingCurveView score(QStringLiteral("score"), scoreAxes());
    for (double value : {0.0, nan, -0.5, 1.0})
        score.addPoint(0, 1.0, value);
    QCOMPARE(score.pointCount(0), 3);
    loss.addPoint(-1, 1.0, 1.0); // no such series: nothing happens
    QCOMPARE(loss.seriesCount(), 1);
}

void TestTrainingViews::legendOnlyWithRoom()
{
    TrainingCurveView view(QStringLiteral("scores"), scoreAxes());
    view.resize(640, 420);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSeries(0, QStringLiteral("L0 H0"));
    view.setSeries(1, QStringLiteral("L0 H1"));
    QVERIFY(qkv::test::settleReplots(&view));
    QVERIFY(view.isLegendShown());
    view.resize(200, 110); // the legend would cover the lines
    QTRY_VERIFY(!view.isLegendShown());
    view.resize(640, 420);
    QTRY_VERIFY(view.isLegendShown());
    view.setSeries(2, QStringLiteral("L1 H0"));
    view.setSeries(3, QStringLiteral("L1 H1"));
    view.resize(800, 130); // low and wide, as in a bottom dock: the entries side by side
    QVERIFY(qkv::test::settleReplots(&view));
    QTRY_VERIFY(view.isLegendShown());
    for (int i = 4; i < 12; ++i) // more heads than a legend can name without hiding the plot
        view.setSeries(i, QStringLiteral("L1 H%1").arg(i));
    QTRY_VERIFY(!view.isLegendShown());
}

void TestTrainingViews::logAxisTicks_data()
{
    QTest::addColumn<double>("lower");
    QTest::addColumn<double>("upper");
    QTest::addColumn<int>("maximum");
    QTest::addColumn<QVector<double>>("expected");
    QTest::newRow("within a decade: every digit") << 1.6 << 5.0 << 6 << QVector<double>{2, 3, 4, 5};
    QTest::newRow("decades: 1 and 3") << 0.02 << 5.0 << 6 << QVector<double>{0.03, 0.1, 0.3, 1, 3};
    QTest::newRow("decades, low: powers of ten") << 0.02 << 5.0 << 2 << QVector<double>{0.1, 1};
    QTest::newRow("many decades: every fourth") << 1e-6 << 1e3 << 3 << QVector<double>{1e-4, 1};
    QTest::newRow("between two digits: the middle") << 1.1 << 1.7 << 4 << QVector<double>{1.4};
    QTest::newRow("no range") << 2.0 << 2.0 << 4 << QVector<double>{};
    QTest::newRow("not positive") << 0.0 << 5.0 << 4 << QVector<double>{};
    QTest::newRow("not finite") << 1.0 << std::numeric_limits<double>::infinity() << 4 << QVector<double>{};
}

void TestTrainingViews::logAxisTicks()
{
    QFETCH(double, lower);
    QFETCH(double, upper);
    QFETCH(int, maximum);
    QFETCH(QVector<double>, expected);
    const QVector<double> ticks = qkv::ui::logAxisTicks(lower, upper, maximum);
    QCOMPARE(ticks.size(), expected.size());
    for (int i = 0; i < ticks.size(); ++i)
        QKV_COMPARE_NEAR(ticks[i], expected[i], 1e-12 * expected[i]);
}

void TestTrainingViews::lowPlotTicksDoNotOverlap_data()
{
    QTest::addColumn<bool>("logarithmic");
    QTest::addColumn<int>("height");
    for (int height : {100, 140, 220, 400}) {
        QTest::addRow("log, %d px", height) << true << height;
        QTest::addRow("linear, %d px", height) << false << height;
    }
}

void TestTrainingViews::lowPlotTicksDoNotOverlap()
{
    QFETCH(bool, logarithmic);
    QFETCH(int, height);
    TrainingCurveView view(QStringLiteral("curve"), logarithmic ? lossAxes() : scoreAxes());
    view.resize(500, height);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSeries(0, QStringLiteral("train"));
    view.setLastStep(2000);
    for (int step = 1; step <= 2000; step += 10) // a loss falling from about 5 to 0.02
        view.addPoint(0, step, logarithmic ? 5.0 * std::exp(-step / 360.0) : step / 2000.0);
    QVERIFY(qkv::test::settleReplots(&view));
    const QVector<double> ticks = view.yTickPixels();
    QVERIFY2(ticks.size() >= 2 || height < 120,
             qPrintable(QStringLiteral("%1 ticks, data %2 px high, labels %3 px")
                            .arg(ticks.size())
                            .arg(view.dataArea().height())
                            .arg(view.tickLabelHeight())));
    for (int i = 1; i < ticks.size(); ++i)
        QVERIFY2(std::abs(ticks[i] - ticks[i - 1]) >= view.tickLabelHeight(),
                 qPrintable(QStringLiteral("ticks %1 and %2 px, labels %3 px high")
                                .arg(ticks[i - 1])
                                .arg(ticks[i])
                                .arg(view.tickLabelHeight())));
}

void TestTrainingViews::probeBarsSplitScoredPositions()
{
    TrainingProbeView view;
    view.setLosses({3.0, 2.5, std::numeric_limits<double>::quiet_NaN(), 0.4, -1.0, 0.2}, {0, 0, 0, 1, 1, 1},
                   QStringLiteral("step 10"));
    QCOMPARE(view.barCount(), 4); // the NaN and the negative loss get no bar
    QCOMPARE(view.scoredBarCount(), 2);
    QCOMPARE(view.figureTitle(), QStringLiteral("step 10"));
    view.setLosses({1.0, 1.0, 1.0}, {1}, QStringLiteral("step 20")); // a short mask: the rest are other
    QCOMPARE(view.barCount(), 3);
    QCOMPARE(view.scoredBarCount(), 1);
    view.clear(QStringLiteral("none"));
    QCOMPARE(view.barCount(), 0);
    QCOMPARE(view.figureTitle(), QStringLiteral("none"));
}

QKV_TEST_MAIN(TestTrainingViews)
#include "tst_trainingviews.moc"
