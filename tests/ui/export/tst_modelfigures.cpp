// SPDX-License-Identifier: GPL-3.0-or-later
// The model's figures (ModelFigures): one list whose every figure is computed from a run of a tiny model,
// drawn and exported by its name, the grids also as CSV; and a CSV export that fails leaves the file it
// would have replaced as it was.

#include "FigureExport.h"
#include "FigureFileChecks.h"
#include "FullDisk.h"
#include "FuzzyCompare.h"
#include "HeadGridCsv.h"
#include "Heatmap.h"
#include "LensView.h"
#include "ModelFigures.h"
#include "ModelRun.h"
#include "PatchingFigures.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QWidget>
#include <QtTest>

#include <cmath>
#include <memory>
#include <set>

using namespace qkv;
using namespace qkv::ui;
using namespace qkv::test;

class TestModelFigures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void namesAreUniqueAndFound();
    void everyModelFigureIsExportableByName_data();
    void everyModelFigureIsExportableByName();
    void predictionShowsTheInterventionsEffect();
    void lensIsTheCoresLens();
    void patchGridIsTheCoresGrid_data();
    void patchGridIsTheCoresGrid();
    void failedCsvExportLeavesTheOldFile();
    void csvExportToAFolderIsRefused();

private:
    ModelFigureInput input() const;

    QTemporaryDir m_folder;
    std::shared_ptr<const ModelRun> m_run;
};

void TestModelFigures::initTestCase()
{
    QVERIFY(m_folder.isValid());
    const QString model = m_folder.filePath(QStringLiteral("model"));
    QVERIFY(QDir().mkpath(model));
    writeModel(Tiny{}, model, 5); // 3 layers, 2 heads, vocabulary 40
    m_run = std::make_shared<const ModelRun>(std::make_shared<const Model>(Model::open(model.toStdString())),
                                             std::vector<std::int64_t>{4, 8, 15, 16, 4, 8, 15},
                                             Precision::Float64);
}

ModelFigureInput TestModelFigures::input() const
{
    ModelFigureInput in = ModelFigureInput::forRun(m_run, QStringLiteral("tiny — 7 tokens"));
    in.modified = std::shared_ptr<const Prediction>(m_run, &m_run->clean());
    in.position = 3;
    in.tokenA = 5;
    in.tokenB = 9;
    in.answer = 5;
    PatchExperiment experiment;
    experiment.clean = m_run->ids();
    experiment.corrupt = {4, 8, 15, 16, 4, 9, 15};
    experiment.answer = 5;
    experiment.wrong = 9;
    in.patching = experiment;
    return in;
}

void TestModelFigures::namesAreUniqueAndFound()
{
    const QStringList names = ModelFigures::names();
    QVERIFY(names.contains(QStringLiteral("prediction")));
    QVERIFY(names.contains(QStringLiteral("scores")));
    QCOMPARE(std::set<QString>(names.begin(), names.end()).size(), std::size_t(names.size()));
    for (const QString& name : names)
        QCOMPARE(ModelFigures::find(name)->name, name);
    QVERIFY(!ModelFigures::find(QStringLiteral("weights"))); // a session's view, not a model's
}

void TestModelFigures::everyModelFigureIsExportableByName_data()
{
    QTest::addColumn<QString>("name");
    for (const QString& name : ModelFigures::names())
        QTest::newRow(qPrintable(name)) << name;
}

void TestModelFigures::everyModelFigureIsExportableByName()
{
    QFETCH(QString, name);
    const std::optional<RegisteredModelFigure> registered = ModelFigures::find(name);
    QVERIFY(registered);
    QVERIFY(!registered->description.isEmpty());
    const std::unique_ptr<QWidget> view(registered->create(nullptr));
    view->setAttribute(Qt::WA_DontShowOnScreen);
    const ModelFigureContent content = registered->compute(input());
    registered->show(view.get(), content);
    const Figure* figure = registered->figure(view.get());
    QCOMPARE(figure->figureName(), name);
    QVERIFY(!figure->figureTitle().isEmpty());
    QTemporaryDir out;
    const QString png = out.filePath(name + QStringLiteral(".png"));
    QString error;
    QVERIFY2(exportFigure(*figure, FigureFormat::Png, png, QSize(640, 480), 1.0, &error), qPrintable(error));
    const QString problem = checkPng(png, QSize(640, 480));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    if (!registered->grid)
        return;
    const auto* grid = std::get_if<HeadGridDisplay>(&content);
    QVERIFY(grid);
    QCOMPARE(grid->values.rows(), Index(3)); // layers × heads
    QCOMPARE(grid->values.cols(), Index(2));
    const QString csv = out.filePath(name + QStringLiteral(".csv"));
    QVERIFY2(writeHeadGridCsv(csv, grid->values, &error), qPrintable(error));
    QCOMPARE(readAll(csv, &error), QByteArray::fromStdString(headGridCsv(grid->values)));
}

void TestModelFigures::predictionShowsTheInterventionsEffect()
{
    ModelFigureInput in = input();
    Intervention zero;
    zero.layer = 1;
    zero.head = 0;
    zero.kind = HeadIntervention::Kind::Zero;
    in.modified = std::make_shared<const Prediction>(m_run->predict({zero}));
    in.interventions = QStringLiteral("L1.H0 zero");
    const PredictionDisplay display =
        std::get<PredictionDisplay>(ModelFigures::find(QStringLiteral("prediction"))->compute(in));
    QCOMPARE(display.position, 3);
    QCOMPARE(display.tokens.size(), 7);
    QCOMPARE(display.interventions, in.interventions);
    QVERIFY(display.message.isEmpty());
    QVERIFY(!display.logitLabel.isEmpty());
    QVERIFY(!display.modified.top.isEmpty());
    for (const PredictionBar& bar : display.clean.top)
        QVERIFY(!bar.delta.has_value());
    for (const PredictionBar& bar : display.modified.top)
        QVERIFY(bar.delta.has_value() && !bar.token.isEmpty());
    QVERIFY(*display.modified.meanLoss != *display.clean.meanLoss);
    // A failed run with interventions: the message instead of the bars.
    in.modified.reset();
    in.modifiedError = QStringLiteral("L9.H0: layer 9 is out of range");
    const PredictionDisplay failed = predictionDisplay(in);
    QVERIFY(failed.message.contains(in.modifiedError));
    QVERIFY(failed.modified.top.isEmpty());
}

namespace {

/// The lines of a CSV text after its header, each split at its commas (the tests' tokens have none).
QList<QStringList> csvRows(const std::string& text, const QString& header)
{
    QStringList lines = QString::fromStdString(text).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (lines.isEmpty() || lines.takeFirst() != header)
        return {};
    QList<QStringList> rows;
    for (const QString& line : lines)
        rows << line.split(QLatin1Char(','));
    return rows;
}

} // namespace

// The lens figure shows the core's logit lens cell by cell, its CSV holds the same numbers, and it exports.
void TestModelFigures::lensIsTheCoresLens()
{
    const std::optional<RegisteredModelFigure> registered = ModelFigures::find(QStringLiteral("lens"));
    QVERIFY(registered && registered->csv && !registered->needsRun);
    const ModelFigureContent content = registered->compute(input());
    const LensDisplay& display = std::get<LensDisplay>(content);
    LensOptions options;
    options.top = 5;
    options.answer = 5;
    const LogitLens expected = logitLens(m_run->model(), m_run->ids(), options);
    QVERIFY(display.lens && display.lens->hasAnswer);
    QCOMPARE(display.lens->layers.size(), std::size_t(4)); // 3 layers and the output
    QCOMPARE(display.tokens.size(), 7);

    const std::unique_ptr<QWidget> widget(registered->create(nullptr));
    widget->setAttribute(Qt::WA_DontShowOnScreen);
    widget->resize(900, 400);
    registered->show(widget.get(), content);
    const auto* view = static_cast<LensView*>(widget.get());
    QCOMPARE(view->layerCount(), 4);
    QCOMPARE(view->positionCount(), 7);
    const QList<QStringList> rows =
        csvRows(registered->csv(content),
                QStringLiteral("layer,position,token_id,token,probability,answer_probability,answer_rank"));
    QCOMPARE(rows.size(), 4 * 7);
    for (int layer = 0; layer < 4; ++layer)
        for (int position = 0; position < 7; ++position) {
            const LensCell& cell = expected.layers[std::size_t(layer)][std::size_t(position)];
            QKV_COMPARE_NEAR(view->cellValue(layer, position), cell.answerProbability, 1e-12);
            QCOMPARE(view->cellToken(layer, position),
                     QString::fromStdString(tokenLabels(m_run->model(), {cell.top.front().id}).front()));
            const QString hover = view->cellDescription(layer, position);
            QVERIFY2(hover.contains(QStringLiteral("rank %1").arg(cell.answerRank)), qPrintable(hover));
            const QStringList& row = rows.at(layer * 7 + position);
            QCOMPARE(row.size(), 7);
            QCOMPARE(row.at(0).toInt(), layer);
            QCOMPARE(row.at(1).toInt(), position);
            QCOMPARE(row.at(2).toLongLong(), qlonglong(cell.top.front().id));
            QCOMPARE(row.at(4).toDouble(), cell.top.front().probability); // shortest round trip: exact
            QCOMPARE(row.at(5).toDouble(), cell.answerProbability);
            QCOMPARE(row.at(6).toLongLong(), qlonglong(cell.answerRank));
        }
    // The output row is the model's prediction: the answer's probability there is the run's.
    const RowVector logits = m_run->clean().logitsAt(6);
    const double softmax5 =
        std::exp(logits(5) - logits.maxCoeff()) / (logits.array() - logits.maxCoeff()).exp().sum();
    QKV_COMPARE_NEAR(view->cellValue(3, 6), softmax5, 1e-9);

    QTemporaryDir out;
    QString error;
    const QString svg = out.filePath(QStringLiteral("lens.svg"));
    QVERIFY2(exportFigure(*view, FigureFormat::Svg, svg, QSize(800, 300), 1.0, &error), qPrintable(error));
    const QString problem =
        checkSvg(svg, {QStringLiteral("output"), QStringLiteral("L0"), QStringLiteral("6")});
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestModelFigures::patchGridIsTheCoresGrid_data()
{
    QTest::addColumn<QString>("site");
    QTest::addColumn<QString>("method");
    QTest::addColumn<int>("first");
    QTest::addColumn<int>("last");
    QTest::addColumn<QString>("header");
    QTest::newRow("resid_pre exact") << "resid_pre"
                                     << "exact" << 0 << -1 << "layer,position,value,normalized";
    QTest::newRow("attn_out 2..5") << "attn_out"
                                   << "exact" << 2 << 5 << "layer,position,value,normalized";
    QTest::newRow("head_out attribution") << "head_out"
                                          << "attribution" << 0 << -1 << "layer,head,value,normalized";
    QTest::newRow("head_v") << "head_v"
                            << "exact" << 0 << -1 << "layer,kv_head,value,normalized";
    QTest::newRow("head_out_pos 4..6") << "head_out_pos"
                                       << "exact" << 4 << 6 << "layer,head,position,value,normalized";
}

// The patch figure draws the core's normalized grid, its CSV holds the raw and normalized values, and it
// exports; the colours diverge about 0.
void TestModelFigures::patchGridIsTheCoresGrid()
{
    QFETCH(QString, site);
    QFETCH(QString, method);
    QFETCH(int, first);
    QFETCH(int, last);
    QFETCH(QString, header);
    ModelFigureInput in = input();
    in.patching->site = *patchSiteNamed(site.toStdString());
    in.patching->method = *patchMethodNamed(method.toStdString());
    if (last >= 0)
        in.patching->positions = std::pair<Index, Index>{first, last};
    const std::optional<RegisteredModelFigure> registered = ModelFigures::find(QStringLiteral("patch"));
    QVERIFY(registered && registered->csv);
    const ModelFigureContent content = registered->compute(in);
    const PatchGridDisplay& display = std::get<PatchGridDisplay>(content);

    PatchingRun run(m_run->model(), PatchPair{in.patching->clean, in.patching->corrupt, 5, 9});
    const PatchGrid expected = run.patch(in.patching->site, in.patching->method, first, last);
    QCOMPARE(display.patched.cleanMetric, run.cleanMetric());
    QCOMPARE(display.patched.corruptMetric, run.corruptMetric());
    QKV_COMPARE_NEAR(display.patched.grid.normalized, expected.normalized, 1e-12);
    QCOMPARE(display.shown.size(), Index(expected.cells()));
    QCOMPARE(display.shown.rows(), expected.rows * (expected.depth > 1 ? expected.cols : 1));
    QCOMPARE(display.rowLabels.size(), int(display.shown.rows()));
    QCOMPARE(display.columnLabels.size(), int(display.shown.cols()));
    // Row 1's first cell: layer 1's (head_out_pos: layer 0, head 1, the first position).
    QKV_COMPARE_NEAR(display.shown(1, 0),
                     expected.depth > 1 ? expected.normalizedValue(0, 1, 0) : expected.normalizedValue(1, 0),
                     1e-12);

    const QList<QStringList> rows = csvRows(registered->csv(content), header);
    QCOMPARE(rows.size(), int(expected.cells()));
    const int columns = int(header.count(QLatin1Char(','))) + 1;
    for (const QStringList& row : rows) {
        QCOMPARE(row.size(), columns);
        const Index layer = row.at(0).toLongLong();
        Index column = row.at(1).toLongLong();
        Index k = 0;
        if (expected.depth > 1)
            k = row.at(2).toLongLong() - expected.firstPosition;
        else if (patchSiteHasPositions(expected.site))
            column -= expected.firstPosition;
        QCOMPARE(row.at(columns - 2).toDouble(), expected.value(layer, column, k));
        QCOMPARE(row.at(columns - 1).toDouble(), expected.normalizedValue(layer, column, k));
    }
    if (last >= 0) // positions counted in the prompt
        QCOMPARE(rows.front().at(expected.depth > 1 ? 2 : 1).toInt(), first);

    const std::unique_ptr<QWidget> widget(registered->create(nullptr));
    widget->setAttribute(Qt::WA_DontShowOnScreen);
    registered->show(widget.get(), content);
    const auto* heatmap = static_cast<Heatmap*>(widget.get());
    QCOMPARE(heatmap->colorMode(), Heatmap::ColorMode::Diverging);
    const auto [lower, upper] = heatmap->colorRange();
    QKV_COMPARE_NEAR(lower, -upper, 1e-12); // centred at 0
    QTemporaryDir out;
    QString error;
    const QString png = out.filePath(QStringLiteral("patch.png"));
    QVERIFY2(exportFigure(*heatmap, FigureFormat::Png, png, QSize(640, 480), 1.0, &error), qPrintable(error));
    const QString problem = checkPng(png, QSize(640, 480));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestModelFigures::failedCsvExportLeavesTheOldFile()
{
    const QString name = QStringLiteral("sweep.csv");
    const QByteArray old("layer,H0\n0,1\n");
    const FullDisk disk([&](const QString& folder) {
        QFile file(folder + QLatin1Char('/') + name);
        if (file.open(QIODevice::WriteOnly))
            file.write(old);
    });
    if (!disk.isMounted())
        QSKIP(qPrintable(disk.reason()));
    const QString path = disk.filePath(name);
    const Matrix large = Matrix::Constant(200, 100, 1.0 / 3.0); // far more than the disk has left
    QString error;
    QVERIFY(!writeHeadGridCsv(path, large, &error));
    QCOMPARE(error, path + QStringLiteral(": cannot write: No space left on device"));
    QCOMPARE(readAll(path, &error), old);
    QCOMPARE(disk.entries(), QStringList{name}); // no temporary file left
}

void TestModelFigures::csvExportToAFolderIsRefused()
{
    QTemporaryDir out;
    QString error;
    QVERIFY(!writeHeadGridCsv(out.path(), Matrix::Zero(2, 2), &error));
    QVERIFY2(error.startsWith(out.path()), qPrintable(error));
    QVERIFY(QFileInfo(out.path()).isDir());
}

QKV_TEST_MAIN(TestModelFigures)
#include "tst_modelfigures.moc"
