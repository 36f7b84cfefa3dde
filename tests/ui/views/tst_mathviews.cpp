// SPDX-License-Identifier: GPL-3.0-or-later
// The views that explain and compare: the step-by-step math panel (with its float32 comparison), the
// multi-head overview and the normalizer comparison. Each follows the document and draws itself as a figure.

#include "Document.h"
#include "DocumentCommands.h"
#include "HeadOverview.h"
#include "Heatmap.h"
#include "MathPanel.h"
#include "NormalizerComparisonView.h"
#include "SessionEdits.h"
#include "ViewData.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include <QClipboard>
#include <QGuiApplication>
#include <QImage>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QUndoStack>

#include <QtTest>

#include <cmath>
#include <functional>
#include <memory>
#include <set>

using namespace qkv;
using namespace qkv::ui;

namespace {

constexpr double tolerance = 1e-12;

std::unique_ptr<Document> openDocument(const QString& source)
{
    auto document = std::make_unique<Document>();
    QString error;
    if (!document->open(source, &error))
        qWarning("cannot open %s: %s", qPrintable(source), qPrintable(error));
    document->waitForResult();
    return document;
}

/// How many pixels differ from white, and how many distinct colours the image has.
std::pair<int, int> inkOf(const QImage& image)
{
    int ink = 0;
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QRgb pixel = image.pixel(x, y);
            colours.insert(pixel);
            if (qGray(pixel) < 245)
                ++ink;
        }
    return {ink, static_cast<int>(colours.size())};
}

QString summaryTitle(int head, const HeadSummary& summary)
{
    return QStringLiteral("Head %1 — H̄ = %2 nats, support %3")
        .arg(head + 1)
        .arg(summary.meanEntropy, 0, 'f', 2)
        .arg(summary.meanSupport, 0, 'f', 1);
}

} // namespace

class TestMathViews : public QObject {
    Q_OBJECT
private slots:
    void mathPanelShowsTheWorkedExample_data();
    void mathPanelShowsTheWorkedExample();
    void mathPanelFollowsSelectionAndHead();
    void mathPanelShowsTheEnginesRefusal();
    void copyButtons();
    void mathPanelComparesFloat32WithFloat64();
    void mathPanelComparesLargeRowsInTheBackground();

    void headOverviewHasOneHeatmapPerHead_data();
    void headOverviewHasOneHeatmapPerHead();
    void clickingAHeadSelectsIt();

    void normalizerComparisonShowsTheEnginesRow();
    void normalizerComparisonFollowsRowHeadAndTemperature();
    void normalizerComparisonMarksMaskedKeys();

    void figuresAreNotBlank_data();
    void figuresAreNotBlank();
};

void TestMathViews::mathPanelShowsTheWorkedExample_data()
{
    QTest::addColumn<QString>("part");
    QTest::newRow("products") << QStringLiteral("2*2 + 0*1 + 1*1 = 5");
    QTest::newRow("scale") << QStringLiteral("5 / √3 = 2.887");
    QTest::newRow("weight") << QStringLiteral("0.707");
    QTest::newRow("output") << QStringLiteral("o_i = Σ_j a_ij v_j");
}

void TestMathViews::mathPanelShowsTheWorkedExample()
{
    QFETCH(QString, part);
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(0, 1);
    MathPanel panel(document.get());
    QCOMPARE(panel.objectName(), QStringLiteral("mathPanel"));
    QCOMPARE(panel.figureName(), QStringLiteral("math"));
    auto* text = panel.findChild<QPlainTextEdit*>(QStringLiteral("mathText"));
    QVERIFY(text);
    QVERIFY(text->isReadOnly());
    QVERIFY(text->textInteractionFlags() & Qt::TextSelectableByMouse);
    QVERIFY2(text->toPlainText().contains(part), qPrintable(text->toPlainText()));
    QCOMPARE(panel.plainText(), text->toPlainText());
    QVERIFY(panel.header().contains(QStringLiteral("‘I’")));
    QVERIFY(panel.header().contains(QStringLiteral("‘love’")));
}

void TestMathViews::mathPanelFollowsSelectionAndHead()
{
    const auto document = openDocument(QStringLiteral("example:multihead"));
    MathPanel panel(document.get());
    auto* text = panel.findChild<QPlainTextEdit*>(QStringLiteral("mathText"));
    QVERIFY(text);
    document->setSelection(2, 3);
    QVERIFY2(text->toPlainText().contains(QStringLiteral("key j = 3 \"jumps\"")),
             qPrintable(text->toPlainText()));
    QVERIFY(text->toPlainText().contains(QStringLiteral("query i = 2 \"fox\"")));
    QVERIFY(panel.header().contains(QStringLiteral("head 1 of 2")));
    const QString head0 = panel.plainText();
    document->setCurrentHead(1);
    QVERIFY(panel.header().contains(QStringLiteral("head 2 of 2")));
    QVERIFY(panel.plainText() != head0);
    // The weight shown is the engine's for head 1.
    const double weight = document->result()->heads[1].weights(2, 3);
    QVERIFY(panel.plainText().contains(QStringLiteral("a_ij = %1").arg(weight, 0, 'f', 3)));
}

void TestMathViews::mathPanelShowsTheEnginesRefusal()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    MathPanel panel(document.get());
    pushEdit(document.get(), QStringLiteral("Bad temperature"), Document::Options,
             [](Session& s) { s.temperature = -1; });
    document->waitForResult();
    QVERIFY(!document->result());
    QVERIFY(!document->resultError().isEmpty());
    QVERIFY2(panel.plainText().contains(document->resultError()), qPrintable(panel.plainText()));
    QVERIFY(panel.latexText().isEmpty());
    auto* copyLatex = panel.findChild<QPushButton*>(QStringLiteral("copyLatex"));
    QVERIFY(copyLatex && !copyLatex->isEnabled());
    document->undoStack()->undo();
    QVERIFY(panel.plainText().contains(QStringLiteral("Score (dot product)")));
    QVERIFY(!panel.latexText().isEmpty());
    QVERIFY(copyLatex->isEnabled());
}

void TestMathViews::copyButtons()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(0, 1);
    MathPanel panel(document.get());
    auto* copyPlain = panel.findChild<QPushButton*>(QStringLiteral("copyPlainText"));
    auto* copyLatex = panel.findChild<QPushButton*>(QStringLiteral("copyLatex"));
    QVERIFY(copyPlain && copyLatex);
    QCOMPARE(copyPlain->text(), QStringLiteral("Copy text"));
    QCOMPARE(copyLatex->text(), QStringLiteral("Copy LaTeX"));

    QGuiApplication::clipboard()->clear();
    QTest::mouseClick(copyPlain, Qt::LeftButton);
    QCOMPARE(QGuiApplication::clipboard()->text(), panel.plainText());
    QVERIFY(QGuiApplication::clipboard()->text().contains(QStringLiteral("2*2 + 0*1 + 1*1 = 5")));

    QTest::mouseClick(copyLatex, Qt::LeftButton);
    const QString latex = QGuiApplication::clipboard()->text();
    QCOMPARE(latex, panel.latexText());
    QVERIFY2(latex.contains(QStringLiteral("\\sqrt{3}")), qPrintable(latex));
    QVERIFY(latex.startsWith(QStringLiteral("\\begin{align*}")));
}

void TestMathViews::mathPanelComparesFloat32WithFloat64()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(0, 1);
    const double float64Weight = document->result()->heads[0].weights(0, 1);
    MathPanel panel(document.get());
    const QString float64Text = panel.plainText();
    QVERIFY(!float64Text.contains(QStringLiteral("Precision:")));
    QVERIFY(!panel.header().contains(QStringLiteral("float32")));

    pushEdit(document.get(), QStringLiteral("float32"), Document::Options,
             [](Session& s) { s.precision = Precision::Float32; });
    document->waitForResult();
    QCOMPARE(document->result()->precision, Precision::Float32);
    QVERIFY(panel.header().endsWith(QStringLiteral(" · float32")));
    const QString text = panel.plainText();
    QVERIFY2(text.startsWith(QStringLiteral("Head 1, query")), qPrintable(text)); // the cell's steps first
    QVERIFY2(
        text.contains(QStringLiteral("Precision: row i = 0 \"I\" as computed in float32, beside the same row "
                                     "in float64:")),
        qPrintable(text));
    // The float64 weight, recomputed from the session, to nine digits.
    QVERIFY2(
        text.contains(QStringLiteral("j = 1 \"love\": float64 %1, float32 ").arg(float64Weight, 0, 'g', 9)),
        qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("largest difference ")));
    QVERIFY(text.contains(QStringLiteral("row sum - 1: float64 ")));
    QCOMPARE(panel.latexText().count(QStringLiteral("\\begin{align*}")), 2);

    document->undoStack()->undo();
    QCOMPARE(panel.plainText(), float64Text);
    QVERIFY(!panel.header().contains(QStringLiteral("float32")));
    QCOMPARE(panel.latexText().count(QStringLiteral("\\begin{align*}")), 1);
}

void TestMathViews::mathPanelComparesLargeRowsInTheBackground()
{
    // K = Z W_K for the float64 row is 64 · 256 · 256 multiply-adds: over the limit for the GUI thread, while
    // the session itself is computed at once.
    Session session = blankSession(64, 256, 256, 4, InitializerSpec{});
    session.precision = Precision::Float32;
    QVERIFY(precisionComparisonWork(session) >= Document::synchronousWorkLimit);
    Document document;
    document.reset(session);
    document.waitForResult();
    QVERIFY(document.result());
    document.setSelection(0, 0);
    MathPanel panel(&document);
    QVERIFY2(panel.plainText().contains(QStringLiteral("Precision: computing row 0 again in float64…")) ||
                 panel.plainText().contains(QStringLiteral("Precision: row i = 0")),
             qPrintable(panel.plainText()));

    // A new row while the job runs: only the newest row is shown.
    document.setSelection(3, 5);
    panel.finishComparison();
    QVERIFY2(panel.plainText().contains(QStringLiteral("Precision: row i = 3 \"tok3\"")),
             qPrintable(panel.plainText()));
    QVERIFY(!panel.plainText().contains(QStringLiteral("row i = 0")));
    QVERIFY(panel.plainText().contains(
        QStringLiteral("... the 8 of 64 allowed keys with the largest differences")));
    QVERIFY(panel.plainText().contains(QStringLiteral("j = 5 \"tok5\""))); // the selected key stays listed
}

void TestMathViews::headOverviewHasOneHeatmapPerHead_data()
{
    QTest::addColumn<QString>("source");
    QTest::newRow("love") << QStringLiteral("example:love");
    QTest::newRow("multihead") << QStringLiteral("example:multihead");
}

void TestMathViews::headOverviewHasOneHeatmapPerHead()
{
    QFETCH(QString, source);
    const auto document = openDocument(source);
    HeadOverview overview(document.get());
    QCOMPARE(overview.objectName(), QStringLiteral("headOverview"));
    QCOMPARE(overview.figureName(), QStringLiteral("heads"));
    const auto& heads = document->result()->heads;
    QCOMPARE(overview.headCount(), static_cast<int>(heads.size()));
    QCOMPARE(overview.findChildren<Heatmap*>().size(), static_cast<qsizetype>(heads.size()));
    for (int h = 0; h < overview.headCount(); ++h) {
        Heatmap* map = overview.findChild<Heatmap*>(QStringLiteral("headHeatmap_%1").arg(h));
        QVERIFY(map);
        QCOMPARE(map, overview.heatmap(h));
        QCOMPARE(map->title(), summaryTitle(h, summarizeHead(heads[static_cast<std::size_t>(h)])));
        QCOMPARE(map->values(), heads[static_cast<std::size_t>(h)].weights);
        QCOMPARE(map->colorRange(), std::make_pair(0.0, 1.0));
    }
    QCOMPARE(overview.highlightedHead(), 0);
}

void TestMathViews::clickingAHeadSelectsIt()
{
    const auto document = openDocument(QStringLiteral("example:multihead"));
    HeadOverview overview(document.get());
    overview.resize(900, 450);
    overview.show();
    QVERIFY(QTest::qWaitForWindowExposed(&overview));
    Heatmap* second = overview.heatmap(1);
    QVERIFY(second);
    QTRY_VERIFY(second->cellCentre(2, 3) != second->cellCentre(0, 0)); // laid out by the queued replot

    QSignalSpy heads(document.get(), &Document::currentHeadChanged);
    const QPoint centre = second->cellCentre(2, 3);
    QWidget* plot = second->childAt(centre);
    QVERIFY(plot);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::KeyboardModifiers(), plot->mapFrom(second, centre));
    QCOMPARE(document->currentHead(), 1);
    QCOMPARE(heads.count(), 1);
    QCOMPARE(overview.highlightedHead(), 1);
    QCOMPARE(document->selectedQuery(), Index(2));
    QCOMPARE(document->selectedKey(), Index(3));

    // Back to the first head by a click on it; the current head also follows the document.
    Heatmap* first = overview.heatmap(0);
    QWidget* firstPlot = first->childAt(first->cellCentre(0, 0));
    QVERIFY(firstPlot);
    QTest::mouseClick(firstPlot, Qt::LeftButton, Qt::KeyboardModifiers(),
                      firstPlot->mapFrom(first, first->cellCentre(0, 0)));
    QCOMPARE(document->currentHead(), 0);
    document->setCurrentHead(1);
    QCOMPARE(overview.highlightedHead(), 1);
}

void TestMathViews::normalizerComparisonShowsTheEnginesRow()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(0, 1);
    NormalizerComparisonView view(document.get());
    QCOMPARE(view.objectName(), QStringLiteral("normalizerComparison"));
    QCOMPARE(view.figureName(), QStringLiteral("normalizers"));
    QCOMPARE(view.seriesCount(), 5);
    QCOMPARE(view.seriesNames(), (QStringList{QStringLiteral("softmax"), QStringLiteral("sparsemax"),
                                              QStringLiteral("1.5-entmax"), QStringLiteral("sigmoid"),
                                              QStringLiteral("hardmax")}));
    QCOMPARE(view.keyLabels(),
             (QStringList{QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")}));
    QCOMPARE(view.title(), QStringLiteral("Row ‘I’ at τ = 1 under five normalizers"));

    const HeadResult& head = document->result()->heads[0];
    const Matrix shown = view.shownWeights();
    QCOMPARE(shown.rows(), Index(5));
    QCOMPARE(shown.cols(), Index(3));
    for (Index j = 0; j < 3; ++j)
        QKV_COMPARE_NEAR(shown(0, j), head.weights(0, j), tolerance); // softmax is the engine's row
    QKV_COMPARE_NEAR(shown(0, 1), 0.707, 5e-4);
    QCOMPARE(shown, compareNormalizers(head, 0, 1.0).weights);
    for (Index k = 0; k < shown.rows(); ++k)
        for (Index j = 0; j < shown.cols(); ++j)
            QVERIFY(shown(k, j) >= 0.0 && shown(k, j) <= 1.0);
}

void TestMathViews::normalizerComparisonFollowsRowHeadAndTemperature()
{
    const auto document = openDocument(QStringLiteral("example:multihead"));
    NormalizerComparisonView view(document.get());
    const auto softmaxRow = [&](int head, Index row) {
        return Matrix(document->result()->heads[static_cast<std::size_t>(head)].weights.row(row));
    };
    const auto shownSoftmax = [&] { return Matrix(view.shownWeights().row(0)); };

    document->setSelection(2, 0);
    QVERIFY(shownSoftmax().isApprox(softmaxRow(0, 2), tolerance));
    QVERIFY(view.title().startsWith(QStringLiteral("Row ‘fox’")));
    document->setCurrentHead(1);
    QVERIFY(shownSoftmax().isApprox(softmaxRow(1, 2), tolerance));
    QVERIFY(view.title().contains(QStringLiteral("head 2 of 2")));
    pushEdit(document.get(), QStringLiteral("Temperature"), Document::Options,
             [](Session& s) { s.temperature = 0.5; });
    document->waitForResult();
    QVERIFY(view.title().contains(QStringLiteral("τ = 0.5")));
    QVERIFY(shownSoftmax().isApprox(softmaxRow(1, 2), tolerance)); // the engine now also works at τ = 0.5
    QCOMPARE(view.shownWeights(), compareNormalizers(document->result()->heads[1], 2, 0.5).weights);
}

void TestMathViews::normalizerComparisonMarksMaskedKeys()
{
    const auto document = openDocument(QStringLiteral("example:causal"));
    document->setSelection(0, 0);
    NormalizerComparisonView view(document.get());
    const HeadResult& head = document->result()->heads[0];
    QVERIFY(head.allowed(0, 1) == 0);
    const QStringList labels = view.keyLabels();
    for (Index j = 0; j < head.allowed.cols(); ++j) {
        QCOMPARE(labels.at(static_cast<int>(j)).endsWith(QStringLiteral("(masked)")),
                 head.allowed(0, j) == 0);
        if (head.allowed(0, j) == 0)
            for (Index k = 0; k < view.shownWeights().rows(); ++k)
                QCOMPARE(view.shownWeights()(k, j), 0.0);
    }
}

void TestMathViews::figuresAreNotBlank_data()
{
    QTest::addColumn<QString>("view");
    QTest::addColumn<QString>("source");
    for (const char* view : {"math", "heads", "normalizers"})
        for (const char* source : {"example:love", "example:multihead"})
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(view), QLatin1String(source))))
                << QString::fromLatin1(view) << QString::fromLatin1(source);
}

void TestMathViews::figuresAreNotBlank()
{
    QFETCH(QString, view);
    QFETCH(QString, source);
    const auto document = openDocument(source);
    document->setSelection(1, 2);
    // Never shown, as the export catalog keeps them.
    MathPanel math(document.get());
    HeadOverview heads(document.get());
    NormalizerComparisonView normalizers(document.get());
    const Figure* figure = view == QLatin1String("math")    ? static_cast<const Figure*>(&math)
                           : view == QLatin1String("heads") ? static_cast<const Figure*>(&heads)
                                                            : static_cast<const Figure*>(&normalizers);
    QCOMPARE(figure->figureName(), view);
    QVERIFY(!figure->figureTitle().isEmpty());
    const QSize size = figure->defaultFigureSize();
    QVERIFY(size.width() >= 320 && size.height() >= 200);
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    figure->renderFigure(&image, size);
    const auto [ink, colours] = inkOf(image);
    QVERIFY2(ink > 500, qPrintable(QStringLiteral("%1 dark pixels").arg(ink)));
    QVERIFY2(colours > 8, qPrintable(QStringLiteral("%1 colours").arg(colours)));
}

QKV_TEST_MAIN(TestMathViews)
#include "tst_mathviews.moc"
