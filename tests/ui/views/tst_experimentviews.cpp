// SPDX-License-Identifier: GPL-3.0-or-later
// The experiment views (√d_k variance, saturation, scaled vs unscaled): each shows the engine's
// numbers for the session, follows its settings, never shows NaN at extreme scores, and exports as a figure
// in PNG, SVG and PDF through the figure catalog (`qkvlab export --view variance|saturation|scaling`).

#include "AttentionEngine.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "FigureCatalog.h"
#include "FigureExport.h"
#include "NormalizerJacobian.h"
#include "Normalizers.h"
#include "SaturationView.h"
#include "ScalingView.h"
#include "VarianceExperiment.h"
#include "VarianceView.h"

#include "FigureFileChecks.h"
#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QSlider>
#include <QTemporaryDir>
#include <QUndoStack>

#include <QtTest>

#include <cmath>
#include <memory>

using namespace qkv;
using namespace qkv::ui;

namespace {

std::unique_ptr<Document> openDocument(const QString& source)
{
    auto document = std::make_unique<Document>();
    QString error;
    if (!document->open(source, &error))
        qWarning("cannot open %s: %s", qPrintable(source), qPrintable(error));
    document->waitForResult();
    return document;
}

std::vector<double> rowOf(const Matrix& matrix, Index row)
{
    std::vector<double> values(static_cast<std::size_t>(matrix.cols()));
    for (Index j = 0; j < matrix.cols(); ++j)
        values[static_cast<std::size_t>(j)] = matrix(row, j);
    return values;
}

bool allFinite(const std::vector<double>& values)
{
    return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

} // namespace

class TestExperimentViews : public QObject {
    Q_OBJECT
private slots:
    void saturationShowsTheEnginesRow_data();
    void saturationShowsTheEnginesRow();
    void saturationFollowsFactorsAndNormalizer();
    void saturationAtExtremeScores();
    void scalingShowsTheEngine();
    void scalingFollowsItsSettings();
    void varianceShowsTheExperimentAndTheSession();
    void settingsAreNotSessionEdits();
    void plotsKeepRoomAtDockSize();
    void exportsInEveryFormat_data();
    void exportsInEveryFormat();
};

void TestExperimentViews::saturationShowsTheEnginesRow_data()
{
    QTest::addColumn<int>("row");
    QTest::newRow("row 0 (I)") << 0;
    QTest::newRow("row 1 (love)") << 1;
    QTest::newRow("row 2 (AI)") << 2;
}

// At c = 1 the panel is the engine's row: the weights the session shows, and the gradient of row k of ∂p/∂z.
void TestExperimentViews::saturationShowsTheEnginesRow()
{
    QFETCH(int, row);
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(row, 0);
    SaturationView view(document.get());
    view.setSliderFactor(1.0);
    QCOMPARE(view.sliderFactor(), 1.0);
    const std::vector<SaturationPanel> panels = view.panels();
    QCOMPARE(panels.size(), std::size_t(4));
    const HeadResult& r = document->result()->heads.front();
    const std::vector<double> weights = rowOf(r.weights, row);
    QKV_COMPARE_NEAR(panels[0].weights, weights, 1e-15);
    QKV_COMPARE_NEAR(panels[1].weights, weights, 1e-15); // the first fixed panel is c = 1 too
    QCOMPARE(panels[2].factor, 5.0);
    QCOMPARE(panels[3].factor, 20.0);
    // Softmax, upstream e_top: ∂L/∂z_j = p_top (δ_top,j − p_j).
    const Index top = panels[0].topKey;
    std::vector<double> gradient(weights.size());
    for (std::size_t j = 0; j < weights.size(); ++j)
        gradient[j] = weights[static_cast<std::size_t>(top)] *
                      ((static_cast<Index>(j) == top ? 1.0 : 0.0) - weights[j]);
    QKV_COMPARE_NEAR(panels[0].gradient, gradient, 1e-15);
    QVERIFY2(view.title().contains(QStringLiteral("softmax")), qPrintable(view.title()));
    // Larger factors: the top weight grows and the gradient shrinks.
    QVERIFY(panels[3].topWeight >= panels[2].topWeight && panels[2].topWeight >= panels[1].topWeight);
    const bool uniform =
        std::all_of(weights.begin(), weights.end(), [&](double w) { return w == weights[0]; });
    if (!uniform) { // 'love' attends equally to every key (equal scores): no factor changes that
        QVERIFY2(panels[3].topWeight > 0.99, qPrintable(QString::number(panels[3].topWeight)));
        QVERIFY(panels[3].gradientNorm < panels[1].gradientNorm);
    }
}

void TestExperimentViews::saturationFollowsFactorsAndNormalizer()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    SaturationView view(document.get());
    view.setPanelFactors({1.0, 5.0, 25.0});
    QCOMPARE(view.panels()[3].factor, 25.0);
    auto* slider = view.findChild<QSlider*>(QStringLiteral("saturationFactor"));
    QVERIFY(slider);
    slider->setValue(slider->maximum());
    QKV_COMPARE_NEAR(view.panels()[0].factor, 100.0, 1e-12);
    slider->setValue(slider->minimum());
    QKV_COMPARE_NEAR(view.panels()[0].factor, 0.1, 1e-12);

    view.setNormalizerChoice(SaturationView::NormalizerChoice::Sparsemax);
    QCOMPARE(view.shownNormalizer().type, NormalizerType::Sparsemax);
    const SaturationPanel saturated = view.panels()[3]; // panels() returns a copy
    QCOMPARE(saturated.support, Index(1));              // c = 25: one key holds all the weight
    QCOMPARE(saturated.gradientNorm, 0.0);
    for (const SaturationPanel& panel : view.panels())
        for (std::size_t j = 0; j < panel.weights.size(); ++j)
            if (panel.weights[j] == 0.0)
                QCOMPARE(panel.gradient[j], 0.0);

    // The selected key as the upstream signal.
    document->setSelection(0, 2);
    view.setUpstream(SaturationView::Upstream::SelectedKey);
    QCOMPARE(view.panels()[0].upstreamKey, Index(2));
}

// Scores of 1e150 (inputs × 1e75): nothing NaN or infinite in any panel, under every normalizer.
void TestExperimentViews::saturationAtExtremeScores()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    pushEdit(document.get(), QStringLiteral("Huge inputs"), Document::Values,
             [](Session& s) { s.X *= 1e75; });
    document->waitForResult();
    QVERIFY2(document->result(), qPrintable(document->resultError()));
    SaturationView view(document.get());
    view.setSliderFactor(100.0);
    for (auto choice :
         {SaturationView::NormalizerChoice::Softmax, SaturationView::NormalizerChoice::Sparsemax,
          SaturationView::NormalizerChoice::Entmax}) {
        view.setNormalizerChoice(choice);
        QCOMPARE(view.panels().size(), std::size_t(4));
        for (const SaturationPanel& panel : view.panels()) {
            QVERIFY(allFinite(panel.weights) && allFinite(panel.gradient) && allFinite(panel.scores));
            QVERIFY(std::isfinite(panel.gradientNorm) && std::isfinite(panel.topWeight));
        }
        QVERIFY2(!view.title().contains(QStringLiteral("nan"), Qt::CaseInsensitive),
                 qPrintable(view.title()));
    }
}

// Side A (÷√d_k, the session's own setting) is the session's result; side B the engine without scaling.
void TestExperimentViews::scalingShowsTheEngine()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    document->setSelection(1, 0);
    ScalingView view(document.get());
    const std::optional<ScalingComparison> c = view.comparison();
    QVERIFY2(c, qPrintable(view.errorText()));
    const HeadResult& r = document->result()->heads.front();
    QKV_COMPARE_NEAR(c->first.weights, r.weights, 0.0);
    for (std::size_t i = 0; i < r.rowStats.size(); ++i)
        QKV_COMPARE_NEAR(c->first.entropy[i], r.rowStats[i].entropy, 0.0);
    Session unscaled = document->session();
    unscaled.scale.kind = Scale::Kind::None;
    const AttentionResult plain = computeAttention(unscaled);
    QKV_COMPARE_NEAR(c->second.weights, plain.heads.front().weights, 0.0);
    QVERIFY2(view.title().contains(QStringLiteral("love")), qPrintable(view.title()));
}

void TestExperimentViews::scalingFollowsItsSettings()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    ScalingView view(document.get());
    view.setSetting(1, Scale{Scale::Kind::Constant, 4.0}, 0.5);
    const std::optional<ScalingComparison> c = view.comparison();
    QVERIFY(c);
    QCOMPARE(c->second.divisor, 4.0);
    QCOMPARE(c->second.setting.temperature, 0.5);
    Session other = document->session();
    other.scale = Scale{Scale::Kind::Constant, 4.0};
    other.temperature = 0.5;
    QKV_COMPARE_NEAR(c->second.weights, computeAttention(other).heads.front().weights, 0.0);
    // A follows the session's τ ("session's τ"): an edit of τ shows up on side A.
    pushEdit(document.get(), QStringLiteral("τ"), Document::Options, [](Session& s) { s.temperature = 3.0; });
    document->waitForResult();
    QCOMPARE(view.comparison()->first.setting.temperature, 3.0);
}

void TestExperimentViews::varianceShowsTheExperimentAndTheSession()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    VarianceView view(document.get());
    view.setSamples(2000);
    view.setSeed(7);
    const std::vector<VariancePoint> points = view.points();
    VarianceSettings settings;
    settings.dimensions = defaultVarianceDimensions();
    settings.samples = 2000;
    settings.seed = 7;
    const std::vector<VariancePoint> expected = measureDotProductVariance(settings);
    QCOMPARE(points.size(), expected.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        QCOMPARE(points[i].dK, expected[i].dK);
        QCOMPARE(points[i].unscaled, expected[i].unscaled);
        QCOMPARE(points[i].scaled, expected[i].scaled);
    }
    QVERIFY2(view.title().contains(QStringLiteral("seed 7")), qPrintable(view.title()));
    view.setSeed(4294967295u); // np.random.seed's largest
    view.setSamples(50);
    QVERIFY2(view.title().contains(QStringLiteral("seed 4294967295")), qPrintable(view.title()));
    QCOMPARE(view.points().size(), expected.size());
    view.setSeed(7);
    view.setSamples(2000);
    const auto session = view.sessionPoint();
    QVERIFY(session);
    QCOMPARE(session->first, document->session().dK());
    QCOMPARE(session->second, scoreVariance(document->result()->heads.front().scores));
}

// Dragging the experiments' controls pushes nothing onto the undo stack.
void TestExperimentViews::settingsAreNotSessionEdits()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    const int before = document->undoStack()->count();
    SaturationView saturation(document.get());
    saturation.setSliderFactor(30.0);
    saturation.setPanelFactors({2.0, 3.0, 4.0});
    ScalingView scaling(document.get());
    scaling.setSetting(0, Scale{Scale::Kind::Constant, 2.0}, 2.0);
    VarianceView variance(document.get());
    variance.setSamples(100);
    variance.waitForResult();
    scaling.waitForResult();
    QCOMPARE(document->undoStack()->count(), before);
    QVERIFY(!document->isModified());
}

// At the size of a bottom dock tab in a 1280 × 720 window the controls leave the plot most of the height and
// the whole width. QKV_SCREENSHOT_DIR: the views are written there to look at.
void TestExperimentViews::plotsKeepRoomAtDockSize()
{
    const auto document = openDocument(QStringLiteral("example:love"));
    SaturationView saturation(document.get());
    ScalingView scaling(document.get());
    VarianceView variance(document.get());
    const QString folder = qEnvironmentVariable("QKV_SCREENSHOT_DIR");
    for (QWidget* view : {static_cast<QWidget*>(&saturation), static_cast<QWidget*>(&scaling),
                          static_cast<QWidget*>(&variance)}) {
        view->resize(640, 260);
        view->show();
        QVERIFY(QTest::qWaitForWindowExposed(view));
        auto* plot = view->findChild<QWidget*>(
            view->objectName().replace(QStringLiteral("View"), QStringLiteral("Plot")));
        QVERIFY2(plot, qPrintable(view->objectName()));
        QVERIFY2(plot->height() >= 170 && plot->width() == view->width() && view->width() == 640,
                 qPrintable(QStringLiteral("%1: plot %2 × %3 in %4 × %5")
                                .arg(view->objectName())
                                .arg(plot->width())
                                .arg(plot->height())
                                .arg(view->width())
                                .arg(view->height())));
        scaling.waitForResult();
        variance.waitForResult();
        if (!folder.isEmpty())
            view->grab().save(folder + QLatin1Char('/') + view->objectName() + QStringLiteral(".png"));
        view->hide();
    }
}

void TestExperimentViews::exportsInEveryFormat_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("titleWord");
    QTest::newRow("variance") << QStringLiteral("variance") << QStringLiteral("theory: d_k");
    QTest::newRow("saturation") << QStringLiteral("saturation") << QStringLiteral("weight");
    QTest::newRow("scaling") << QStringLiteral("scaling") << QStringLiteral("ln m (uniform)");
}

void TestExperimentViews::exportsInEveryFormat()
{
    QFETCH(QString, name);
    QFETCH(QString, titleWord);
    const auto document = openDocument(QStringLiteral("example:love"));
    FigureCatalog catalog(document.get());
    const Figure* figure = catalog.figure(name);
    QVERIFY2(figure, qPrintable(catalog.names().join(QLatin1Char(' '))));
    QVERIFY(!figure->figureTitle().isEmpty());
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    QString error;
    const QString png = folder.filePath(name + QStringLiteral(".png"));
    QVERIFY2(exportFigure(*figure, FigureFormat::Png, png, QSize(900, 500), 1.0, &error), qPrintable(error));
    QCOMPARE(test::checkPng(png, QSize(900, 500)), QString());
    const QString svg = folder.filePath(name + QStringLiteral(".svg"));
    QVERIFY2(exportFigure(*figure, FigureFormat::Svg, svg, QSize(), 1.0, &error), qPrintable(error));
    QCOMPARE(test::checkSvg(svg, {titleWord}), QString());
    const QString pdf = folder.filePath(name + QStringLiteral(".pdf"));
    QVERIFY2(exportFigure(*figure, FigureFormat::Pdf, pdf, QSize(), 1.0, &error), qPrintable(error));
    QCOMPARE(test::checkPdf(pdf), QString());
}

QKV_TEST_MAIN(TestExperimentViews)
#include "tst_experimentviews.moc"
