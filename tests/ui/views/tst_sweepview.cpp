// SPDX-License-Identifier: GPL-3.0-or-later
// The sweep view: curves from the engine's normalizers for the selected row, the session's τ marked, and a
// click that sets τ (or α) as one undo step.

#include "Document.h"
#include "SweepView.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QImage>
#include <QUndoStack>
#include <QtTest>

#include <cmath>

using namespace qkv;
using namespace qkv::ui;

namespace {

void showAndSettle(QWidget* view)
{
    view->resize(1100, 700);
    view->show();
    QVERIFY(QTest::qWaitForWindowExposed(view));
    QCoreApplication::processEvents(); // the queued replot
    QCoreApplication::processEvents();
}

} // namespace

class TestSweepView : public QObject {
    Q_OBJECT
private slots:
    void curvesForTheSelectedRow();
    void followsTheSelectionAndTemperature();
    void clickSetsTemperatureAsOneUndoStep_data();
    void clickSetsTemperatureAsOneUndoStep();
    void clickInAnAlphaPanelSetsEntmax();
    void rendersAsAFigure();
};

void TestSweepView::curvesForTheSelectedRow()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    document.setSelection(1, 0);
    SweepView view(&document);
    view.waitForSweep();
    QVERIFY(view.message().isEmpty());
    const SweepResult& tau = view.temperatureSweep();
    QCOMPARE(tau.parameter.size(), std::size_t(61));
    QCOMPARE(tau.row.size(), std::size_t(5));
    QCOMPARE(view.alphaSweep().parameter.size(), std::size_t(31));
    // The sweep's point at τ = 1 under softmax is the engine's row 1.
    const RowStats& stats = document.result()->heads[0].rowStats[1];
    QKV_COMPARE_NEAR(tau.row[0].entropy[30], stats.entropy, 1e-12);
    QKV_COMPARE_NEAR(tau.row[0].topWeight[30], stats.max, 1e-12);
    // Hot softmax over the three keys of "I love AI": ln 3.
    QKV_COMPARE_NEAR(tau.row[0].entropy.back(), std::log(3.0), 1e-3);
    QCOMPARE(view.markedTemperature(), document.session().temperature);
    QVERIFY(view.title().contains(QStringLiteral("love")));
}

void TestSweepView::followsTheSelectionAndTemperature()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    SweepView view(&document);
    view.waitForSweep();
    const double first = view.temperatureSweep().row[0].entropy[30];
    document.setSelection(2, 0);
    view.waitForSweep();
    QCOMPARE(view.temperatureSweep().row[0].entropy[30], document.result()->heads[0].rowStats[2].entropy);
    QVERIFY(view.temperatureSweep().row[0].entropy[30] != first);
}

void TestSweepView::clickSetsTemperatureAsOneUndoStep_data()
{
    QTest::addColumn<int>("panel");
    QTest::addColumn<double>("temperature");
    QTest::newRow("entropy panel, τ = 10") << int(SweepView::TauEntropy) << 10.0;
    QTest::newRow("support panel, τ = 0.01") << int(SweepView::TauSupport) << 0.01;
    QTest::newRow("top weight panel, τ = 100") << int(SweepView::TauTop) << 100.0;
}

void TestSweepView::clickSetsTemperatureAsOneUndoStep()
{
    QFETCH(int, panel);
    QFETCH(double, temperature);
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    const double before = document.session().temperature;
    SweepView view(&document);
    showAndSettle(&view);
    view.waitForSweep();
    QCoreApplication::processEvents();
    const int steps = document.undoStack()->count();
    // A little off the grid point: the click snaps to the nearest swept τ.
    const QPoint at = view.positionOf(static_cast<SweepView::Panel>(panel), temperature * 1.02, 0.5);
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::KeyboardModifiers(), at);
    QKV_COMPARE_NEAR(document.session().temperature, temperature, 1e-9 * temperature);
    QCOMPARE(document.undoStack()->count(), steps + 1);
    view.waitForSweep();
    QKV_COMPARE_NEAR(view.markedTemperature(), temperature, 1e-9 * temperature);
    document.undoStack()->undo();
    QCOMPARE(document.session().temperature, before);
}

void TestSweepView::clickInAnAlphaPanelSetsEntmax()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    const NormalizerSpec before = document.session().normalizer;
    QCOMPARE(before.type, NormalizerType::Softmax);
    SweepView view(&document);
    showAndSettle(&view);
    view.waitForSweep();
    QCoreApplication::processEvents();
    QVERIFY(std::isnan(view.markedAlpha())); // softmax: no α to mark
    const int steps = document.undoStack()->count();
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::KeyboardModifiers(),
                      view.positionOf(SweepView::AlphaSupport, 2.49, 0.5));
    QCOMPARE(document.session().normalizer.type, NormalizerType::Entmax);
    QKV_COMPARE_NEAR(document.session().normalizer.alpha, 2.5, 1e-12);
    QCOMPARE(document.undoStack()->count(), steps + 1);
    view.waitForSweep();
    QKV_COMPARE_NEAR(view.markedAlpha(), 2.5, 1e-12);
    document.undoStack()->undo();
    QVERIFY(document.session().normalizer == before);
}

void TestSweepView::rendersAsAFigure()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:multihead"), &error), qPrintable(error));
    SweepView view(&document);
    QCOMPARE(view.figureName(), QStringLiteral("sweep"));
    QVERIFY(!view.figureTitle().isEmpty());
    QImage image(view.defaultFigureSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    view.renderFigure(&image, image.size());
    int coloured = 0;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3) {
            const QColor c = image.pixelColor(x, y);
            coloured += c.saturation() > 80 ? 1 : 0;
        }
    QVERIFY2(coloured > 200, qPrintable(QString::number(coloured))); // the curves were drawn
}

QKV_TEST_MAIN(TestSweepView)
#include "tst_sweepview.moc"
