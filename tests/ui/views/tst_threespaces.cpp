// SPDX-License-Identifier: GPL-3.0-or-later
// Q, K and V as three spaces: raw rows when the width is 2, each matrix's own PCA otherwise, selection rings,
// clicks that select, and the three plots exported as one figure.

#include "Document.h"
#include "Examples.h"
#include "Initializers.h"
#include "Projection.h"
#include "RowSpaceView.h"
#include "SessionEdits.h"
#include "ThreeSpacesView.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QImage>
#include <QtTest>

using namespace qkv;
using namespace qkv::ui;

namespace {

QList<QPointF> pointsOf(const Matrix& rows)
{
    QList<QPointF> points;
    for (Index r = 0; r < rows.rows(); ++r)
        points.append(QPointF(rows(r, 0), rows(r, 1)));
    return points;
}

bool samePoints(const QList<QPointF>& a, const QList<QPointF>& b, double tolerance)
{
    if (a.size() != b.size())
        return false;
    for (int k = 0; k < a.size(); ++k)
        if (std::abs(a[k].x() - b[k].x()) > tolerance || std::abs(a[k].y() - b[k].y()) > tolerance)
            return false;
    return true;
}

Session twoDimensional()
{
    Session session = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 7};
    resizeDK(session, 2, init);
    resizeDV(session, 2, init);
    return session;
}

} // namespace

class TestThreeSpaces : public QObject {
    Q_OBJECT
private slots:
    void twoDimensionsAreTheRawRows();
    void widerRowsArePcaOfEachMatrix();
    void selectionIsRingedAndClicksSelect();
    void rendersAsOneFigure();
};

void TestThreeSpaces::twoDimensionsAreTheRawRows()
{
    Document document;
    document.reset(twoDimensional());
    document.waitForResult();
    ThreeSpacesView view(&document);
    const HeadResult& head = document.result()->heads[0];
    QCOMPARE(head.Q.cols(), Index(2));
    QVERIFY(samePoints(view.queries()->points(), pointsOf(head.Q), 0.0));
    QVERIFY(samePoints(view.keys()->points(), pointsOf(head.K), 0.0));
    QVERIFY(samePoints(view.values()->points(), pointsOf(head.V), 0.0));
    QCOMPARE(view.queries()->xAxisLabel(), QStringLiteral("q dimension 0"));
    QCOMPARE(view.values()->yAxisLabel(), QStringLiteral("v dimension 1"));
    QCOMPARE(view.keys()->labels(),
             (QStringList{QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")}));
}

void TestThreeSpaces::widerRowsArePcaOfEachMatrix()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:love"), &error), qPrintable(error));
    ThreeSpacesView view(&document);
    const HeadResult& head = document.result()->heads[0];
    QVERIFY(samePoints(view.values()->points(), pointsOf(pcaProjection(head.V).points), 1e-12));
    QVERIFY(samePoints(view.keys()->points(), pointsOf(pcaProjection(head.K).points), 1e-12));
    QVERIFY(view.queries()->xAxisLabel().startsWith(QStringLiteral("PC1 (")));
    // The plane controls are each plot's own: picking dimensions for V leaves Q on PCA.
    view.values()->setPlaneOptions({PlaneMode::PickedDimensions, 2, 1});
    QVERIFY(samePoints(view.values()->points(), pointsOf(head.V(Eigen::all, std::vector<Index>{2, 1})), 0.0));
    QVERIFY(view.queries()->xAxisLabel().startsWith(QStringLiteral("PC1 (")));
}

void TestThreeSpaces::selectionIsRingedAndClicksSelect()
{
    Document document;
    document.reset(twoDimensional());
    document.waitForResult();
    document.setSelection(1, 2);
    ThreeSpacesView view(&document);
    view.resize(1500, 560);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
    QCOMPARE(view.queries()->emphasised(), Index(1));
    QCOMPARE(view.keys()->emphasised(), Index(2));
    QCOMPARE(view.values()->emphasised(), Index(2));
    RowSpaceView* keys = view.keys();
    QWidget* plot = keys->findChild<QWidget*>(QStringLiteral("plot"));
    QVERIFY(plot);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::KeyboardModifiers(),
                      plot->mapFrom(keys, keys->pointPosition(0)));
    QCOMPARE(document.selectedKey(), Index(0));
    QCOMPARE(document.selectedQuery(), Index(1));
    QCOMPARE(view.values()->emphasised(), Index(0));
}

void TestThreeSpaces::rendersAsOneFigure()
{
    Document document;
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:multihead"), &error), qPrintable(error));
    ThreeSpacesView view(&document);
    QCOMPARE(view.figureName(), QStringLiteral("spaces"));
    QVERIFY(view.figureTitle().contains(QStringLiteral("three spaces")));
    QImage image(view.defaultFigureSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    view.renderFigure(&image, image.size());
    // Each third of the figure has coloured points of its own.
    for (int third = 0; third < 3; ++third) {
        int coloured = 0;
        for (int y = 0; y < image.height(); y += 2)
            for (int x = image.width() * third / 3; x < image.width() * (third + 1) / 3; x += 2)
                coloured += image.pixelColor(x, y).saturation() > 80 ? 1 : 0;
        QVERIFY2(coloured > 20, qPrintable(QStringLiteral("third %1: %2").arg(third).arg(coloured)));
    }
}

QKV_TEST_MAIN(TestThreeSpaces)
#include "tst_threespaces.moc"
