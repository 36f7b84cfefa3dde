// SPDX-License-Identifier: GPL-3.0-or-later
// The model's figures (ModelFigures): one list whose every figure is computed from a run of a tiny model,
// drawn and exported by its name, the grids also as CSV; and a CSV export that fails leaves the file it
// would have replaced as it was.

#include "FigureExport.h"
#include "FigureFileChecks.h"
#include "FullDisk.h"
#include "HeadGridCsv.h"
#include "ModelFigures.h"
#include "ModelRun.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QWidget>
#include <QtTest>

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
