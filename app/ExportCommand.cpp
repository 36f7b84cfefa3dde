// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExportCommand.h"

#include "CommandLine.h"
#include "Document.h"
#include "Error.h"
#include "Figure.h"
#include "FigureCatalog.h"
#include "FigureExport.h"
#include "HeadsPanel.h"
#include "Heatmap.h"
#include "ModelRun.h"
#include "ModelView.h"
#include "PredictionPanel.h"
#include "PredictionView.h"
#include "RasterFills.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>

#include <algorithm>
#include <ostream>

namespace qkv::app {

void prepareHeadlessPlatform()
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

int runExport(const ExportRequest& request, std::ostream& out, std::ostream& err)
{
    ui::RasterFills::keepOnPaintingThread(); // as in the window: Qt's fills stay on the painting thread
    ui::Document document;
    ui::FigureCatalog catalog(&document);
    const QStringList names = catalog.names();
    if (request.listViews) {
        out << exportUsage() << "\nViews:\n";
        for (const QString& name : names)
            out << "  " << name.toStdString() << "\n";
        out << "\nViews of a model (with --model MODEL and --text TEXT or --ids I,J,...; no session):\n  "
            << catalog.modelView()->figureName().toStdString() << "\n";
        return 0;
    }

    const QString view = QString::fromStdString(request.view);
    QList<const ui::Figure*> figures;
    if (request.model) {
        catalog.modelView()->setAttention(request.modelWeights, QString::fromStdString(request.modelTitle));
        figures.append(catalog.modelView());
    } else if (view == QLatin1String("all")) {
        figures = catalog.figures();
    } else if (const ui::Figure* figure = catalog.figure(view)) {
        figures.append(figure);
    } else {
        err << "qkvlab export: unknown view '" << request.view << "': expected all or one of "
            << names.join(QStringLiteral(", ")).toStdString() << "\n";
        return 2;
    }

    if (!request.model) {
        document.reset(request.session);
        document.waitForResult();
        if (!document.result()) {
            err << "qkvlab export: cannot compute attention: " << document.resultError().toStdString()
                << "\n";
            return 2;
        }
        document.setCurrentHead(request.head);
    }

    const std::optional<ui::FigureFormat> format =
        ui::figureFormatFromName(QString::fromStdString(request.format));
    if (!format) {
        err << "qkvlab export: unknown format '" << request.format << "': expected png, svg or pdf\n";
        return 2;
    }
    const QString target = QString::fromStdString(request.out);
    const QSize size(request.width, request.height); // 0: each view's default
    QStringList written;
    QString error;
    bool ok = false;
    if (view == QLatin1String("all")) {
        ok = ui::exportAllFigures(figures, *format, target, size, request.scale, &written, &error);
    } else {
        // An existing folder as --out receives NAME.SUFFIX.
        const QString path =
            QFileInfo(target).isDir()
                ? QDir(target).filePath(view + QLatin1Char('.') + ui::figureFormatSuffix(*format))
                : target;
        ok = ui::exportFigure(*figures.front(), *format, path, size, request.scale, &error);
        if (ok)
            written.append(path);
    }
    for (const QString& path : written)
        out << QDir::toNativeSeparators(path).toStdString() << "\n";
    out.flush();
    if (!ok) {
        err << "qkvlab export: " << error.toStdString() << "\n";
        return 2;
    }
    return 0;
}

int runModelExport(const ModelExportRequest& request, std::ostream& out, std::ostream& err)
{
    ui::RasterFills::keepOnPaintingThread();
    const auto fail = [&err](const std::string& message) {
        err << "qkvlab export: " << message << "\n";
        return 2;
    };
    const bool grid = request.view == "scores" || request.view == "sweep";
    if (request.view != "prediction" && !grid)
        return fail("unknown model view '" + request.view + "': expected model, prediction, scores or sweep");
    const QString target = QString::fromStdString(request.out);
    const bool csv = request.format == "csv";
    if (csv && !grid)
        return fail("CSV is for the grids (scores, sweep), not '" + request.view + "'");
    const std::optional<ui::FigureFormat> format =
        ui::figureFormatFromName(QString::fromStdString(request.format));
    if (!csv && !format)
        return fail("unknown format '" + request.format + "': expected png, svg, pdf or csv");

    std::shared_ptr<const ModelRun> run;
    ui::PredictionView prediction;
    ui::Heatmap heatmap;
    const ui::Figure* figure = nullptr;
    Matrix values;
    try {
        run = std::make_shared<const ModelRun>(request.model, request.ids, request.precision);
        const QString model = QString::fromStdString(modelName(*request.model));
        if (request.view == "prediction") {
            const int n = int(run->tokens());
            if (request.position < -1 || request.position >= n)
                return fail("position " + std::to_string(request.position) + " is out of range (0 to " +
                            std::to_string(n - 1) + ")");
            ui::PredictionInput in;
            in.run = run;
            in.position = request.position < 0 ? n - 1 : request.position;
            in.title =
                QString::fromStdString(modelInputTitle(*request.model, request.text, request.ids.size()));
            QStringList applied;
            for (const Intervention& intervention : request.interventions)
                if (intervention.enabled)
                    applied << QString::fromStdString(describe(intervention));
            in.interventions = applied.join(QStringLiteral(", "));
            in.modified = applied.isEmpty()
                              ? std::shared_ptr<const Prediction>(run, &run->clean())
                              : std::make_shared<const Prediction>(run->predict(request.interventions));
            prediction.setDisplay(ui::predictionDisplay(in));
            figure = &prediction;
        } else if (request.view == "scores") {
            const auto* score = std::find_if(allHeadScores.begin(), allHeadScores.end(),
                                             [&](HeadScore s) { return request.score == toString(s); });
            if (score == allHeadScores.end())
                return fail(
                    "unknown head score '" + request.score +
                    "': expected previous_token, duplicate_token, induction, first_token, self or entropy");
            values = run->scores()[*score];
            ui::setHeadGrid(heatmap, values, ui::headScoreTitle(*score, model),
                            QString::fromUtf8(displayName(*score)), false, *score != HeadScore::Entropy);
        } else {
            values = run->ablationSweep(request.ablation, SweepMetric{});
            const QString how = request.ablation == Intervention::Kind::Mean ? QStringLiteral("mean-ablated")
                                                                             : QStringLiteral("zero-ablated");
            ui::setHeadGrid(heatmap, values, QStringLiteral("Δ loss with each head %1 — %2").arg(how, model),
                            QStringLiteral("Δ loss"), true);
        }
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("not enough memory for the model's forward pass");
    }
    if (grid) {
        heatmap.setFigureName(QString::fromStdString(request.view));
        figure = &heatmap;
    }
    const QString path =
        QFileInfo(target).isDir()
            ? QDir(target).filePath(QString::fromStdString(request.view) + QLatin1Char('.') +
                                    (csv ? QStringLiteral("csv") : ui::figureFormatSuffix(*format)))
            : target;
    QString error;
    if (csv) {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Text) ||
            file.write(ui::headGridCsv(values).toUtf8()) < 0 || !file.commit())
            return fail("cannot write " + path.toStdString() + ": " + file.errorString().toStdString());
    } else if (!ui::exportFigure(*figure, *format, path, QSize(request.width, request.height), request.scale,
                                 &error)) {
        return fail(error.toStdString());
    }
    out << QDir::toNativeSeparators(path).toStdString() << "\n";
    out.flush();
    return 0;
}

} // namespace qkv::app
