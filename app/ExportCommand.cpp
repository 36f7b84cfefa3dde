// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExportCommand.h"

#include "CommandLine.h"
#include "Document.h"
#include "Error.h"
#include "Figure.h"
#include "FigureCatalog.h"
#include "FigureExport.h"
#include "ModelFigures.h"
#include "ModelRun.h"
#include "RasterFills.h"

#include <QDir>
#include <QFileInfo>
#include <QWidget>

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
        out << "\nViews of a model (with --model MODEL and --text TEXT or --ids I,J,...; no session):\n";
        for (const ui::RegisteredModelFigure& figure : ui::ModelFigures::all())
            out << "  " << figure.name.toStdString() << "\n";
        return 0;
    }

    const QString view = QString::fromStdString(request.view);
    QList<const ui::Figure*> figures;
    std::unique_ptr<QWidget> modelView;
    if (request.model) {
        // The model's layers, computed while the arguments were read, drawn as the registry draws them.
        const std::optional<ui::RegisteredModelFigure> model =
            ui::ModelFigures::find(QStringLiteral("model"));
        modelView.reset(model->create(nullptr));
        modelView->setAttribute(Qt::WA_DontShowOnScreen);
        model->show(modelView.get(), ui::ModelAttentionDisplay{request.modelWeights,
                                                               QString::fromStdString(request.modelTitle)});
        figures.append(model->figure(modelView.get()));
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

namespace {

/// The model figure's input from the command line's request, its run made here when the figure needs one.
ui::ModelFigureInput modelFigureInput(const ModelExportRequest& request, bool needsRun)
{
    const QString title =
        QString::fromStdString(modelInputTitle(*request.model, request.text, request.ids.size()));
    if (!needsRun) {
        ui::ModelFigureInput input;
        input.model = request.model;
        input.ids = request.ids;
        input.precision = request.precision;
        input.title = title;
        input.answer = request.answer;
        input.patching = request.patching;
        input.circuit.layer = request.circuitLayer;
        input.circuit.head = request.circuitHead;
        input.circuit.kind = request.compositionKind;
        input.circuit.query = request.query;
        input.circuit.key = request.key;
        return input;
    }
    auto run = std::make_shared<const ModelRun>(request.model, request.ids, request.precision);
    ui::ModelFigureInput input = ui::ModelFigureInput::forRun(run, title);
    const int n = int(run->tokens());
    if (request.position < -1 || request.position >= n)
        throw Error("position " + std::to_string(request.position) + " is out of range (0 to " +
                    std::to_string(n - 1) + ")");
    input.position = request.position;
    QStringList applied;
    for (const Intervention& intervention : request.interventions)
        if (intervention.enabled)
            applied << QString::fromStdString(describe(intervention));
    input.interventions = applied.join(QStringLiteral(", "));
    input.modified = applied.isEmpty()
                         ? std::shared_ptr<const Prediction>(run, &run->clean())
                         : std::make_shared<const Prediction>(run->predict(request.interventions));
    const auto* score = std::find_if(allHeadScores.begin(), allHeadScores.end(),
                                     [&](HeadScore s) { return request.score == toString(s); });
    if (score == allHeadScores.end()) {
        QStringList names;
        for (HeadScore s : allHeadScores)
            names << QString::fromUtf8(toString(s));
        throw Error("unknown head score '" + request.score + "': expected " +
                    names.join(QStringLiteral(", ")).toStdString());
    }
    input.score = *score;
    input.ablation = request.ablation;
    return input;
}

} // namespace

// Every model figure is drawn through the registry (ui::ModelFigures), as the window draws it.
int runModelExport(const ModelExportRequest& request, std::ostream& out, std::ostream& err)
{
    ui::RasterFills::keepOnPaintingThread();
    const auto fail = [&err](const std::string& message) {
        err << "qkvlab export: " << message << "\n";
        return 2;
    };
    const std::optional<ui::RegisteredModelFigure> registered =
        ui::ModelFigures::find(QString::fromStdString(request.view));
    if (!registered)
        return fail("unknown model view '" + request.view + "': expected " +
                    ui::ModelFigures::names().join(QStringLiteral(", ")).toStdString());
    const bool csv = request.format == "csv";
    if (csv && !registered->csv)
        return fail("CSV is for the grids, the lens, patching and the circuits, not '" + request.view + "'");
    const std::optional<ui::FigureFormat> format =
        ui::figureFormatFromName(QString::fromStdString(request.format));
    if (!csv && !format)
        return fail("unknown format '" + request.format + "': expected png, svg, pdf or csv");

    std::unique_ptr<QWidget> view(registered->create(nullptr));
    view->setAttribute(Qt::WA_DontShowOnScreen);
    std::string csvText;
    try {
        const ui::ModelFigureContent content =
            registered->compute(modelFigureInput(request, registered->needsRun));
        if (csv)
            csvText = registered->csv(content);
        else
            registered->show(view.get(), content);
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("not enough memory for the model's forward pass");
    }
    const QString target = QString::fromStdString(request.out);
    const QString path =
        QFileInfo(target).isDir()
            ? QDir(target).filePath(registered->name + QLatin1Char('.') +
                                    (csv ? QStringLiteral("csv") : ui::figureFormatSuffix(*format)))
            : target;
    QString error;
    const bool ok = csv ? ui::writeCsvText(path, csvText, &error)
                        : ui::exportFigure(*registered->figure(view.get()), *format, path,
                                           QSize(request.width, request.height), request.scale, &error);
    if (!ok)
        return fail(error.toStdString());
    out << QDir::toNativeSeparators(path).toStdString() << "\n";
    out.flush();
    return 0;
}

} // namespace qkv::app
