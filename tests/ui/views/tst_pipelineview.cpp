// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline canvas: every stage of the current head in formula order with the document's numbers, the
// selection followed through every stage, every value readable at three tokens, colour only at 1024, and the
// same painting exported to PNG, SVG and PDF.

#include "Document.h"
#include "DocumentCommands.h"
#include "Examples.h"
#include "FigureExport.h"
#include "FigureFileChecks.h"
#include "FuzzyCompare.h"
#include "Heatmap.h"
#include "Initializers.h"
#include "PipelineView.h"
#include "PlotFigure.h"
#include "ResultViews.h"
#include "SessionEdits.h"
#include "TestMain.h"

#include <QFontMetricsF>
#include <QImage>
#include <QSvgRenderer>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace qkv;
using namespace qkv::ui;

namespace {

using Shapes = QList<std::pair<Index, Index>>;

QStringList names(std::initializer_list<const char*> texts)
{
    QStringList list;
    for (const char* text : texts)
        list << QString::fromUtf8(text);
    return list;
}

/// Cross-attention (3 queries, 5 keys), two heads and W_O: every stage the canvas has.
Session crossSession()
{
    Session session = blankSession(3, 4, 2, 3, InitializerSpec{});
    Context context;
    context.tokens = {"le", "chat", "est", "sur", "tapis"};
    context.Z = Matrix::Random(5, 4);
    context.pad.assign(5, false);
    session.context = context;
    Head second = session.heads.front();
    second.W_Q = Matrix::Random(4, 2);
    second.W_K = Matrix::Random(4, 2);
    second.W_V = Matrix::Random(4, 3);
    session.heads.push_back(second);
    session.W_O = Matrix::Random(6, 4);
    return session;
}

std::unique_ptr<Document> openDocument(const QString& which)
{
    auto document = std::make_unique<Document>();
    if (which == QLatin1String("cross")) {
        document->reset(crossSession());
    } else if (which.startsWith(QLatin1String("n="))) {
        document->reset(blankSession(which.mid(2).toInt(), 16, 8, 8, InitializerSpec{}));
    } else {
        QString error;
        if (!document->open(which, &error))
            qWarning() << error;
    }
    document->waitForResult();
    return document;
}

/// Shows `view` at `size` (laid out and painted as on screen).
bool showAt(QWidget& view, const QSize& size)
{
    view.resize(size);
    view.show();
    return QTest::qWaitForWindowExposed(&view);
}

/// The matrix the document holds for a stage of the current head.
const Matrix* documentMatrix(const Document& document, const QString& stage)
{
    const Session& session = document.session();
    const AttentionResult& result = *document.result();
    const auto head = static_cast<std::size_t>(document.currentHead());
    const HeadResult& r = result.heads[head];
    const std::map<QString, const Matrix*> matrices{
        {QStringLiteral("X"), &session.X},
        {QStringLiteral("X+PE"), &result.positionedX},
        {QStringLiteral("Z"), session.context ? &session.context->Z : nullptr},
        {QStringLiteral("Z+PE"), &result.positionedZ},
        {QStringLiteral("W_Q"), &session.heads[head].W_Q},
        {QStringLiteral("W_K"), &session.heads[head].W_K},
        {QStringLiteral("W_V"), &session.heads[head].W_V},
        {QStringLiteral("Q"), &r.Q},
        {QStringLiteral("K"), &r.K},
        {QStringLiteral("V"), &r.V},
        {QStringLiteral("scores"), &r.scores},
        {QStringLiteral("scaled"), &r.scaled},
        {QStringLiteral("masked"), &r.scaled},
        {QStringLiteral("weights"), &r.weights},
        {QStringLiteral("output"), &r.output},
        {QStringLiteral("concat"), &result.concat},
        {QStringLiteral("W_O"), session.W_O ? &*session.W_O : nullptr},
        {QStringLiteral("final"), &result.output}};
    const auto it = matrices.find(stage);
    return it == matrices.end() ? nullptr : it->second;
}

/// "" when no two rectangles overlap, else the first two that do.
QString firstOverlap(const QList<QRectF>& rects)
{
    for (int a = 0; a < rects.size(); ++a)
        for (int b = a + 1; b < rects.size(); ++b)
            if (rects[a].intersects(rects[b]))
                return QStringLiteral("rectangle %1 overlaps rectangle %2").arg(a).arg(b);
    return QString();
}

} // namespace

Q_DECLARE_METATYPE(qkv::ui::FigureFormat)

class TestPipelineView : public QObject {
    Q_OBJECT
private slots:
    void dimensionNamesInCellDescriptions();
    void stagesInFormulaOrder_data();
    void stagesInFormulaOrder();
    void numbersAreTheDocuments_data();
    void numbersAreTheDocuments();
    void valuesAsWritten_data();
    void valuesAsWritten();
    void operatorsOnTheArrows();
    void positionsAndBiasesOnTheCanvas();
    void selectionFollowsTheDocument();
    void clickingACellSelectsIt();
    void everyValueReadableAtThreeTokens_data();
    void everyValueReadableAtThreeTokens();
    void labelsNeverOverlap_data();
    void labelsNeverOverlap();
    void colourOnlyAtLargeSizes();
    void captionTitlesWholeWhenNarrow();
    void longWeightsColouredPerRow();
    void maskedStageGreyExactlyWhereMasked();
    void hiddenCanvasBuildsWhenShown();
    void exportsAValidFigure_data();
    void exportsAValidFigure();
    void firstTabOfTheResults();
    void followsThePlotStyle();
    void keptPaintingFollowsEveryChange();
    void keptImagesOnlyOfUnchangedStages();
    void repaintOfChangedStagesLooksLikeAFullOne_data();
    void repaintOfChangedStagesLooksLikeAFullOne();
};

void TestPipelineView::dimensionNamesInCellDescriptions()
{
    // The d_model axis is named by the session's dimension names: X's columns and the projections' rows.
    const auto document = openDocument(QStringLiteral("example:the-cat-sat"));
    QVERIFY(document->result());
    PipelineView view(document.get());
    QCOMPARE(view.cellDescription(QStringLiteral("X"), 1, 3), QStringLiteral("X [‘cat’, ‘animacy’] = 0.800"));
    QVERIFY2(
        view.cellDescription(QStringLiteral("W_Q"), 1, 0).startsWith(QStringLiteral("W_Q [‘noun’, 0] = ")),
        qPrintable(view.cellDescription(QStringLiteral("W_Q"), 1, 0)));
    QVERIFY(
        view.cellDescription(QStringLiteral("W_V"), 2, 2).startsWith(QStringLiteral("W_V [‘verb’, 2] = ")));
    QVERIFY(view.cellDescription(QStringLiteral("weights"), 0, 1)
                .startsWith(QStringLiteral("weights [‘The’, ‘cat’] = ")));
    QVERIFY(view.cellDescription(QStringLiteral("nothing"), 0, 0).isEmpty());
    QVERIFY(view.cellDescription(QStringLiteral("X"), 3, 0).isEmpty()); // no such row
}

void TestPipelineView::stagesInFormulaOrder_data()
{
    QTest::addColumn<QString>("session");
    QTest::addColumn<QStringList>("stages");
    QTest::addColumn<Shapes>("shapes");
    QTest::newRow("love") << QStringLiteral("example:love")
                          << names({"X", "W_Q", "Q", "W_K", "K", "W_V", "V", "scores", "scaled", "masked",
                                    "weights", "output"})
                          << Shapes{{3, 4}, {4, 3}, {3, 3}, {4, 3}, {3, 3}, {4, 3},
                                    {3, 3}, {3, 3}, {3, 3}, {3, 3}, {3, 3}, {3, 3}};
    QTest::newRow("cross, two heads, W_O")
        << QStringLiteral("cross")
        << names({"X", "Z", "W_Q", "Q", "W_K", "K", "W_V", "V", "scores", "scaled", "masked", "weights",
                  "output", "concat", "W_O", "final"})
        << Shapes{{3, 4}, {5, 4}, {4, 2}, {3, 2}, {4, 2}, {5, 2}, {4, 3}, {5, 3},
                  {3, 5}, {3, 5}, {3, 5}, {3, 5}, {3, 3}, {3, 6}, {6, 4}, {3, 4}};
}

void TestPipelineView::stagesInFormulaOrder()
{
    QFETCH(QString, session);
    QFETCH(QStringList, stages);
    QFETCH(Shapes, shapes);
    const auto document = openDocument(session);
    QVERIFY(document->result());
    PipelineView view(document.get());
    QCOMPARE(view.stageNames(), stages);
    for (int s = 0; s < stages.size(); ++s) {
        QCOMPARE(view.stageShape(stages[s]), shapes[s]);
        const QString shape = QStringLiteral("%1×%2").arg(shapes[s].first).arg(shapes[s].second);
        QVERIFY2(view.stageCaption(stages[s]).endsWith(shape), qPrintable(view.stageCaption(stages[s])));
    }
    QCOMPARE(view.figureName(), QStringLiteral("pipeline"));
}

void TestPipelineView::numbersAreTheDocuments_data()
{
    QTest::addColumn<QString>("session");
    QTest::addColumn<int>("head");
    QTest::newRow("love") << QStringLiteral("example:love") << 0;
    QTest::newRow("cross, head 1") << QStringLiteral("cross") << 0;
    QTest::newRow("cross, head 2") << QStringLiteral("cross") << 1;
}

void TestPipelineView::numbersAreTheDocuments()
{
    QFETCH(QString, session);
    QFETCH(int, head);
    const auto document = openDocument(session);
    document->setCurrentHead(head);
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1600, 900)));
    for (const QString& stage : view.stageNames()) {
        const Matrix* expected = documentMatrix(*document, stage);
        QVERIFY2(expected, qPrintable(stage));
        QKV_COMPARE_NEAR(view.stageValues(stage), *expected, 0.0);
        // What is written in the cells is the document's number as the heatmaps write it.
        for (Index i = 0; i < expected->rows(); ++i)
            for (Index j = 0; j < expected->cols(); ++j) {
                const QString text = view.cellText(stage, i, j);
                if (view.isMasked(stage, i, j))
                    QCOMPARE(text, stage == QLatin1String("masked") ? QStringLiteral("−∞") : QString());
                else
                    QCOMPARE(text, PipelineView::valueText((*expected)(i, j)));
            }
    }
}

void TestPipelineView::valuesAsWritten_data()
{
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("text");
    QTest::newRow("one") << 1.0 << QStringLiteral("1");
    QTest::newRow("zero") << 0.0 << QStringLiteral("0");
    QTest::newRow("minus two") << -2.0 << QStringLiteral("-2");
    QTest::newRow("weight") << 0.70710678 << QStringLiteral("0.707");
    QTest::newRow("negative") << -0.5772 << QStringLiteral("-0.577");
    QTest::newRow("tiny") << 1e-9 << QStringLiteral("0.000");
}

void TestPipelineView::valuesAsWritten()
{
    QFETCH(double, value);
    QFETCH(QString, text);
    QCOMPARE(PipelineView::valueText(value), text);
}

void TestPipelineView::operatorsOnTheArrows()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    PipelineView view(document.get());
    QCOMPARE(view.stageOperator(QStringLiteral("X")), QString());
    QCOMPARE(view.stageOperator(QStringLiteral("Q")), QStringLiteral("X·W_Q"));
    QCOMPARE(view.stageOperator(QStringLiteral("scores")), QStringLiteral("Q·Kᵀ\ndot"));
    QVERIFY(view.stageOperator(QStringLiteral("scaled")).startsWith(QStringLiteral("÷ √d_k\n= 1.732")));
    QVERIFY(view.stageOperator(QStringLiteral("weights")).startsWith(QStringLiteral("softmax\n÷ τ = 1")));
    QCOMPARE(view.stageOperator(QStringLiteral("output")), QStringLiteral("· V"));
    const auto cross = openDocument(QStringLiteral("cross"));
    PipelineView crossView(cross.get());
    QCOMPARE(crossView.stageOperator(QStringLiteral("K")), QStringLiteral("Z·W_K"));
    QCOMPARE(crossView.stageOperator(QStringLiteral("final")), QStringLiteral("· W_O"));
}

// Sinusoidal or learned positions are a stage of their own (X + PE, what the projections read); a bias and
// RoPE's rotation are written under the projection's arrow, ALiBi under the scaling's, b_O under W_O's.
void TestPipelineView::positionsAndBiasesOnTheCanvas()
{
    Session session = loadExample("love");
    session.positions.type = PositionType::Sinusoidal;
    session.heads[0].b_Q = Vector::Constant(session.dK(), 0.5);
    session.W_O = Matrix::Identity(session.dV(), session.dV());
    session.b_O = Vector::Constant(session.dV(), 0.25);
    Document document;
    document.reset(session);
    document.waitForResult();
    PipelineView view(&document);
    const QStringList stages = view.stageNames();
    QCOMPARE(stages.mid(0, 3), names({"X", "X+PE", "W_Q"}));
    QCOMPARE(view.stageValues(QStringLiteral("X+PE")), document.result()->positionedX);
    QVERIFY(!sameMatrix(document.result()->positionedX, session.X));
    QCOMPARE(view.stageOperator(QStringLiteral("X+PE")), QStringLiteral("+ PE\nsinusoidal"));
    QCOMPARE(view.stageOperator(QStringLiteral("Q")), QStringLiteral("(X+PE)·W_Q\n+ b_Q"));
    QCOMPARE(view.stageOperator(QStringLiteral("K")), QStringLiteral("(X+PE)·W_K"));
    QCOMPARE(view.stageOperator(QStringLiteral("final")), QStringLiteral("· W_O\n+ b_O"));
    QVERIFY(view.cellDescription(QStringLiteral("X+PE"), 0, 0).startsWith(QStringLiteral("X+PE [")));

    session.positions.type = PositionType::Rope;
    resizeDK(session, 2, InitializerSpec{}); // RoPE turns pairs of dimensions
    document.reset(session);
    QVERIFY2(document.resultError().isEmpty(), qPrintable(document.resultError()));
    document.waitForResult();
    QVERIFY(!view.stageNames().contains(QStringLiteral("X+PE"))); // RoPE turns Q and K, not X
    QCOMPARE(view.stageOperator(QStringLiteral("Q")), QStringLiteral("X·W_Q\n+ b_Q, RoPE"));
    QCOMPARE(view.stageOperator(QStringLiteral("K")), QStringLiteral("X·W_K\nRoPE"));
    QCOMPARE(view.stageOperator(QStringLiteral("V")), QStringLiteral("X·W_V"));

    session.positions.type = PositionType::Alibi;
    document.reset(session);
    document.waitForResult();
    QVERIFY(view.stageOperator(QStringLiteral("scaled")).endsWith(QStringLiteral(", ALiBi")));
}

void TestPipelineView::selectionFollowsTheDocument()
{
    const auto document = openDocument(QStringLiteral("cross"));
    PipelineView view(document.get());
    document->setSelection(2, 4);
    const std::pair<int, int> none{-1, -1}, query{2, -1}, key{4, -1}, cell{2, 4};
    const std::map<QString, std::pair<int, int>> expected{
        {QStringLiteral("X"), query},      {QStringLiteral("Z"), key},
        {QStringLiteral("W_Q"), none},     {QStringLiteral("Q"), query},
        {QStringLiteral("K"), key},        {QStringLiteral("V"), key},
        {QStringLiteral("scores"), cell},  {QStringLiteral("scaled"), cell},
        {QStringLiteral("masked"), cell},  {QStringLiteral("weights"), cell},
        {QStringLiteral("output"), query}, {QStringLiteral("concat"), query},
        {QStringLiteral("W_O"), none},     {QStringLiteral("final"), query}};
    for (const auto& [stage, highlight] : expected)
        QCOMPARE(view.stageHighlight(stage), highlight);
    document->setSelection(0, 1);
    QCOMPARE(view.stageHighlight(QStringLiteral("weights")), std::make_pair(0, 1));
    QCOMPARE(view.stageHighlight(QStringLiteral("V")), std::make_pair(1, -1));
}

void TestPipelineView::clickingACellSelectsIt()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1280, 720)));
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      view.cellRect(QStringLiteral("weights"), 2, 0).center().toPoint());
    QCOMPARE(document->selectedQuery(), Index(2));
    QCOMPARE(document->selectedKey(), Index(0));
    // A row of V is a key: the query stays.
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      view.cellRect(QStringLiteral("V"), 1, 2).center().toPoint());
    QCOMPARE(document->selectedQuery(), Index(2));
    QCOMPARE(document->selectedKey(), Index(1));
    // A weight matrix has no tokens: nothing changes.
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      view.cellRect(QStringLiteral("W_Q"), 0, 0).center().toPoint());
    QCOMPARE(document->selectedKey(), Index(1));
}

void TestPipelineView::everyValueReadableAtThreeTokens_data()
{
    QTest::addColumn<QString>("session");
    QTest::addColumn<QSize>("size");
    QTest::newRow("love 1280×720") << QStringLiteral("example:love") << QSize(1280, 720);
    QTest::newRow("love 1600×900") << QStringLiteral("example:love") << QSize(1600, 900);
    QTest::newRow("love 900×560") << QStringLiteral("example:love") << QSize(900, 560);
    QTest::newRow("love 450×470 (the window's centre)") << QStringLiteral("example:love") << QSize(450, 470);
    QTest::newRow("cross 1280×720") << QStringLiteral("cross") << QSize(1280, 720);
}

void TestPipelineView::everyValueReadableAtThreeTokens()
{
    QFETCH(QString, session);
    QFETCH(QSize, size);
    const auto document = openDocument(session);
    PipelineView view(document.get());
    QVERIFY(showAt(view, size));
    QVERIFY(view.showsCellValues());
    QVERIFY(view.showsTokenLabels());
    const QFontMetricsF metrics(view.cellFont());
    QVERIFY2(view.cellFont().pixelSize() >= 9, qPrintable(QString::number(view.cellFont().pixelSize())));
    const QRectF canvas(QPointF(0, 0), QSizeF(size));
    QList<QRectF> boxes;
    for (const QString& stage : view.stageNames()) {
        const auto [rows, columns] = view.stageShape(stage);
        QVERIFY2(canvas.contains(view.stageRect(stage)), qPrintable(stage));
        QVERIFY2(canvas.contains(view.captionRect(stage)), qPrintable(stage));
        boxes << view.stageRect(stage) << view.captionRect(stage);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < columns; ++j) {
                const QString text = view.cellText(stage, i, j);
                QVERIFY2(!text.isEmpty(), qPrintable(QStringLiteral("%1 (%2, %3)").arg(stage).arg(i).arg(j)));
                const QRectF cell = view.cellRect(stage, i, j);
                QVERIFY2(metrics.horizontalAdvance(text) <= cell.width() &&
                             metrics.tightBoundingRect(text).height() <= cell.height(),
                         qPrintable(QStringLiteral("%1 (%2, %3): ‘%4’ in %5×%6")
                                        .arg(stage)
                                        .arg(i)
                                        .arg(j)
                                        .arg(text)
                                        .arg(cell.width())
                                        .arg(cell.height())));
            }
    }
    // Stages, captions and labels never overlap one another.
    const QList<QRectF> labels = view.drawnLabelRects();
    QVERIFY(!labels.isEmpty());
    QString overlap = firstOverlap(boxes + labels);
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
}

void TestPipelineView::labelsNeverOverlap_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<QSize>("size");
    for (const int n : {3, 16, 64})
        for (const QSize size : {QSize(1280, 720), QSize(900, 600)})
            QTest::newRow(
                qPrintable(QStringLiteral("n = %1, %2×%3").arg(n).arg(size.width()).arg(size.height())))
                << n << size;
}

void TestPipelineView::labelsNeverOverlap()
{
    QFETCH(int, n);
    QFETCH(QSize, size);
    const auto document = openDocument(QStringLiteral("n=%1").arg(n));
    PipelineView view(document.get());
    QVERIFY(showAt(view, size));
    QVERIFY(view.showsTokenLabels());
    QList<QRectF> boxes;
    const QRectF canvas(QPointF(0, 0), QSizeF(size));
    for (const QString& stage : view.stageNames()) {
        boxes << view.stageRect(stage) << view.captionRect(stage);
        QVERIFY2(canvas.contains(view.stageRect(stage)), qPrintable(stage));
    }
    const QList<QRectF> labels = view.drawnLabelRects();
    for (const QRectF& label : labels)
        QVERIFY(canvas.contains(label));
    const QString overlap = firstOverlap(boxes + labels);
    QVERIFY2(overlap.isEmpty(), qPrintable(overlap));
}

// A narrow canvas (the pipeline tab at a scale factor of 2 is about 640 × 300 logical pixels): a caption
// shrinks, to 70 % at the least, before it elides, so every stage keeps its name.
void TestPipelineView::captionTitlesWholeWhenNarrow()
{
    const auto document = openDocument(QStringLiteral("love"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(520, 300)));
    int largest = 0, smallest = 1 << 20;
    for (const QString& stage : view.stageNames()) {
        const auto [title, font] = view.captionTitle(stage);
        QCOMPARE(title, stage); // whole: no "…"
        QVERIFY(QFontMetricsF(font).horizontalAdvance(title) <= view.captionRect(stage).width());
        largest = std::max(largest, font.pixelSize());
        smallest = std::min(smallest, font.pixelSize());
    }
    QVERIFY2(smallest < largest && smallest * 10 >= largest * 7, // this size needs it ("output")
             qPrintable(QStringLiteral("%1 to %2 px").arg(smallest).arg(largest)));
}

void TestPipelineView::colourOnlyAtLargeSizes()
{
    const auto document = openDocument(QStringLiteral("n=1024"));
    QVERIFY(document->result());
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1280, 720)));
    QCOMPARE(view.stageShape(QStringLiteral("weights")), std::make_pair(Index(1024), Index(1024)));
    QVERIFY(!view.showsCellValues());
    QVERIFY(!view.showsTokenLabels());
    QVERIFY(view.drawnLabelRects().isEmpty());
    QCOMPARE(view.cellText(QStringLiteral("weights"), 0, 0), QString());
    const QImage image = view.grab().toImage();
    QCOMPARE(image.size(), QSize(1280, 720));
    // The weights stage is painted: its pixels are not all one colour.
    const QRect weights = view.stageRect(QStringLiteral("weights")).toAlignedRect().adjusted(2, 2, -2, -2);
    QSet<QRgb> colours;
    for (int y = weights.top(); y < weights.bottom(); y += 3)
        for (int x = weights.left(); x < weights.right(); x += 3)
            colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 3, qPrintable(QString::number(colours.size())));
}

// A causal map of 64 tokens on one scale of 0 to 1 is mostly one dark colour (a late row spreads its weight
// over many keys): past 32 rows each row's largest weight gets the palette's brightest colour. Three rows
// keep the absolute scale.
void TestPipelineView::longWeightsColouredPerRow()
{
    const QColor brightest = QColor::fromRgb(paletteTable(Palette::Viridis).last());
    const auto document = openDocument(QStringLiteral("n=64"));
    Session causal = document->session();
    causal.mask.type = MaskType::Causal;
    document->reset(causal);
    document->waitForResult();
    PipelineView view(document.get());
    const Matrix& weights = document->result()->heads[0].weights;
    int flatRows = 0; // rows whose largest weight an absolute scale would not colour brightest
    for (Index i = 0; i < weights.rows(); ++i) {
        Index top = 0;
        flatRows += weights.row(i).maxCoeff(&top) < 0.5 ? 1 : 0;
        QCOMPARE(view.stageColour(QStringLiteral("weights"), i, top), brightest);
    }
    QVERIFY2(flatRows >= 10, qPrintable(QString::number(flatRows)));
    QVERIFY(view.stageColour(QStringLiteral("weights"), 0, 1) == maskedCellColor()); // a later key

    const auto love = openDocument(QStringLiteral("example:love"));
    PipelineView small(love.get());
    const Matrix& w = love->result()->heads[0].weights;
    const QList<QRgb>& table = paletteTable(Palette::Viridis);
    for (Index i = 0; i < w.rows(); ++i)
        for (Index j = 0; j < w.cols(); ++j)
            QCOMPARE(small.stageColour(QStringLiteral("weights"), i, j),
                     QColor::fromRgb(table[paletteIndex(w(i, j), static_cast<int>(table.size()))]));
}

// The masked stage shares the scaled stage's image when the mask forbids nothing; with a causal mask its
// cells above the diagonal are grey and the scaled stage's are not.
void TestPipelineView::maskedStageGreyExactlyWhereMasked()
{
    const auto document = openDocument(QStringLiteral("n=256"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1280, 720)));
    const auto colourAt = [&view](const QImage& image, const QString& stage, double across, double down) {
        const QRectF rect = view.stageRect(stage).adjusted(2, 2, -2, -2);
        return image.pixel(
            QPointF(rect.left() + across * rect.width(), rect.top() + down * rect.height()).toPoint());
    };
    const QRgb grey = maskedCellColor().rgb();
    const QList<std::pair<double, double>> places = {{0.9, 0.1}, {0.6, 0.3}, {0.1, 0.9}, {0.5, 0.5}};
    QImage image = view.grab().toImage();
    for (const auto& [across, down] : places) {
        QCOMPARE(colourAt(image, QStringLiteral("masked"), across, down),
                 colourAt(image, QStringLiteral("scaled"), across, down));
        QVERIFY(colourAt(image, QStringLiteral("masked"), across, down) != grey);
    }

    Session causal = document->session();
    causal.mask.type = MaskType::Causal;
    document->reset(causal);
    document->waitForResult();
    QCoreApplication::processEvents();
    image = view.grab().toImage();
    for (const auto& [across, down] : places) {
        const bool above = across > down + 0.05; // a key after the query: masked
        QCOMPARE(colourAt(image, QStringLiteral("masked"), across, down) == grey, above);
        QVERIFY(colourAt(image, QStringLiteral("scaled"), across, down) != grey);
    }
}

void TestPipelineView::hiddenCanvasBuildsWhenShown()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(800, 600)));
    QVERIFY(view.isUpToDate());
    view.hide();
    QString error;
    QVERIFY(document->open(QStringLiteral("example:multihead"), &error));
    document->waitForResult();
    QVERIFY(!view.isUpToDate()); // hidden: nothing rebuilt
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(view.isUpToDate());
    QCOMPARE(view.stageShape(QStringLiteral("X")), std::make_pair(Index(4), Index(4)));
    // Shown, an edit rebuilds at once.
    document->setCurrentHead(1);
    QVERIFY(view.isUpToDate());
}

void TestPipelineView::exportsAValidFigure_data()
{
    QTest::addColumn<QString>("session");
    QTest::addColumn<FigureFormat>("format");
    for (const QString& session :
         {QStringLiteral("example:love"), QStringLiteral("cross"), QStringLiteral("n=1024")}) {
        QTest::newRow(qPrintable(session + QStringLiteral(" png"))) << session << FigureFormat::Png;
        QTest::newRow(qPrintable(session + QStringLiteral(" svg"))) << session << FigureFormat::Svg;
        QTest::newRow(qPrintable(session + QStringLiteral(" pdf"))) << session << FigureFormat::Pdf;
    }
}

void TestPipelineView::exportsAValidFigure()
{
    QFETCH(QString, session);
    QFETCH(FigureFormat, format);
    const auto document = openDocument(session);
    PipelineView view(document.get()); // never shown: builds for the export
    QCOMPARE(view.defaultFigureSize(), QSize(1600, 900));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("pipeline.") + figureFormatSuffix(format));
    QString error;
    QVERIFY2(exportFigure(view, format, path, QSize(), 1.0, &error), qPrintable(error));
    QString problem;
    switch (format) {
    case FigureFormat::Png:
        problem = test::checkPng(path, QSize(1600, 900));
        break;
    case FigureFormat::Svg: {
        problem = test::checkSvg(path, {QStringLiteral("Attention pipeline")});
        QSvgRenderer renderer(path);
        QVERIFY(renderer.isValid());
        break;
    }
    case FigureFormat::Pdf:
        problem = test::checkPdf(path);
        break;
    }
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestPipelineView::firstTabOfTheResults()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    ResultViews views(document.get());
    QCOMPARE(views.tabs()->widget(0), views.pipeline());
    QCOMPARE(views.tabs()->tabText(0), QStringLiteral("Pipeline"));
    QCOMPARE(views.tabs()->currentWidget(), views.pipeline());
    QCOMPARE(views.heatmaps().size(), 9); // the single matrices stay
}

void TestPipelineView::followsThePlotStyle()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1280, 720)));
    const int before = view.cellFont().pixelSize();
    PlotStyle dark;
    dark.background = QColor(30, 30, 30);
    dark.foreground = Qt::white;
    dark.fontScale = 1.5; // presentation mode
    view.setPlotStyle(dark);
    const QImage screen = view.grab().toImage();
    QCOMPARE(screen.pixelColor(2, 2), dark.background);
    QVERIFY2(view.cellFont().pixelSize() > before, qPrintable(QString::number(view.cellFont().pixelSize())));
    // Figures stay black on white.
    QImage figure(640, 480, QImage::Format_ARGB32);
    figure.fill(Qt::transparent);
    view.renderFigure(&figure, figure.size());
    QCOMPARE(figure.pixelColor(2, 2), QColor(Qt::white));
}

// The canvas keeps what it painted for repaints that change nothing; a selection, a result and a size each
// paint it anew, and going back paints what was there before.
void TestPipelineView::keptPaintingFollowsEveryChange()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    PipelineView view(document.get());
    QVERIFY(showAt(view, QSize(1280, 720)));
    document->setSelection(0, 0);
    const QImage first = view.grab().toImage();
    QCOMPARE(view.grab().toImage(), first);
    document->setSelection(2, 1);
    const QImage selected = view.grab().toImage();
    QVERIFY(selected != first);
    document->setSelection(0, 0);
    QCOMPARE(view.grab().toImage(), first);

    Session edited = document->session();
    edited.X(0, 0) += 1.0;
    document->reset(edited);
    document->waitForResult();
    QCoreApplication::processEvents();
    document->setSelection(0, 0);
    QVERIFY(view.grab().toImage() != first);

    view.resize(1000, 700);
    QCOMPARE(view.grab().size(), QSize(1000, 700));
}

// An edit keeps the images of the input matrices it did not change: after every kind of edit, each stage of
// the long-lived canvas has the colours of a canvas built afresh.
void TestPipelineView::keptImagesOnlyOfUnchangedStages()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    Session withOutput = document->session();
    setOutputProjection(withOutput, true, {Initializer::XavierNormal, 1.0, 7});
    document->reset(withOutput);
    document->waitForResult();
    PipelineView view(document.get());
    const auto sameAsFresh = [&](const char* after) {
        PipelineView fresh(document.get());
        QCOMPARE(view.stageNames(), fresh.stageNames());
        for (const QString& stage : fresh.stageNames()) {
            const auto [rows, columns] = fresh.stageShape(stage);
            for (Index i = 0; i < rows; ++i)
                for (Index j = 0; j < columns; ++j)
                    QVERIFY2(view.stageColour(stage, i, j) == fresh.stageColour(stage, i, j),
                             qPrintable(QStringLiteral("%1 (%2, %3) after %4")
                                            .arg(stage)
                                            .arg(i)
                                            .arg(j)
                                            .arg(QLatin1String(after))));
        }
    };
    sameAsFresh("opening");
    // What each edit changes, and so colours again (the masked stage shares the scaled one's image while
    // the mask forbids nothing).
    const QStringList afterQuery = names({"W_Q", "Q", "scores", "scaled", "weights", "output", "final"});
    const struct {
        MatrixKind kind;
        double value;
        QStringList recoloured;
    } edits[] = {
        {MatrixKind::W_Q, 3.0, afterQuery},
        {MatrixKind::W_Q, -0.0, afterQuery},
        {MatrixKind::X, -2.0, names({"X", "Q", "K", "V", "scores", "scaled", "weights", "output", "final"})},
        {MatrixKind::W_V, 5.0, names({"W_V", "V", "output", "final"})},
        {MatrixKind::W_O, -4.0, names({"W_O", "final"})},
        {MatrixKind::W_K, 0.5, names({"W_K", "K", "scores", "scaled", "weights", "output", "final"})}};
    for (const auto& edit : edits) {
        document->push(makeCellCommand(document.get(), {edit.kind, 0}, 0, 1, edit.value));
        document->waitForResult();
        QCoreApplication::processEvents();
        QCOMPARE(view.recolouredStages(), edit.recoloured);
        sameAsFresh(qPrintable(matrixName(edit.kind)));
    }
    document->undoStack()->undo();
    document->waitForResult();
    QCoreApplication::processEvents();
    sameAsFresh("undo");

    // A mask changes no score: the masked stage gets its own image, grey where masked.
    pushEdit(document.get(), QStringLiteral("Causal"), Document::Options,
             [](Session& s) { s.mask.type = MaskType::Causal; });
    document->waitForResult();
    QCOMPARE(view.recolouredStages(), names({"masked", "weights", "output", "final"}));
    sameAsFresh("causal mask");
    pushEdit(document.get(), QStringLiteral("Sliding"), Document::Options, [](Session& s) {
        s.mask.type = MaskType::Sliding;
        s.mask.window = 2;
    });
    document->waitForResult();
    QCOMPARE(view.recolouredStages(), names({"masked", "weights", "output", "final"}));
    sameAsFresh("sliding mask");
}

// After an edit only the stages whose colours changed are painted again: the canvas on screen must be, pixel
// for pixel, what a canvas painted afresh shows; and a change of more than colours paints everything.
void TestPipelineView::repaintOfChangedStagesLooksLikeAFullOne_data()
{
    QTest::addColumn<QString>("session"); // no numbers in the cells
    QTest::addColumn<QSize>("size");
    QTest::newRow("64 tokens") << QStringLiteral("n=64") << QSize(1000, 560);
    QTest::newRow("64 tokens, small") << QStringLiteral("n=64") << QSize(640, 400);
    QTest::newRow("300 tokens") << QStringLiteral("n=300") << QSize(900, 520);
}

void TestPipelineView::repaintOfChangedStagesLooksLikeAFullOne()
{
    QFETCH(QString, session);
    QFETCH(QSize, size);
    const auto document = openDocument(session);
    PipelineView view(document.get());
    QVERIFY(showAt(view, size));
    view.grab();
    const QRegion everything(view.rect());
    const auto sameAsFresh = [&](const char* after) {
        const QImage shown = view.grab().toImage();
        PipelineView fresh(document.get());
        QVERIFY(showAt(fresh, view.size()));
        const QImage expected = fresh.grab().toImage();
        QVERIFY2(shown == expected, after);
    };
    const auto edit = [&](MatrixKind kind, double value) {
        document->push(makeCellCommand(document.get(), {kind, 0}, 0, 1, value));
        document->waitForResult();
        QCoreApplication::processEvents();
    };
    edit(MatrixKind::W_Q, 3.0);
    sameAsFresh("W_Q");
    const QRegion afterQuery = view.lastRepaintedRegion();
    QVERIFY(!afterQuery.isEmpty());
    QVERIFY(afterQuery != everything);
    QVERIFY(!afterQuery.intersects(view.stageRect(QStringLiteral("K")).toAlignedRect()));
    QVERIFY(afterQuery.intersects(view.stageRect(QStringLiteral("weights")).toAlignedRect()));
    edit(MatrixKind::W_V, -2.0);
    sameAsFresh("W_V");
    QVERIFY(view.lastRepaintedRegion() != everything);
    edit(MatrixKind::X, 0.5);
    sameAsFresh("X");
    document->setSelection(3, 5); // bands move: everything
    QCoreApplication::processEvents();
    sameAsFresh("selection");
    QCOMPARE(view.lastRepaintedRegion(), everything);
    pushEdit(document.get(), QStringLiteral("Causal"), Document::Options,
             [](Session& s) { s.mask.type = MaskType::Causal; }); // the mask's name on an arrow: everything
    document->waitForResult();
    QCoreApplication::processEvents();
    sameAsFresh("causal mask");
    QCOMPARE(view.lastRepaintedRegion(), everything);
    document->undoStack()->undo();
    document->waitForResult();
    QCoreApplication::processEvents();
    sameAsFresh("undo");
}

QKV_TEST_MAIN(TestPipelineView)
#include "tst_pipelineview.moc"
