#include "ExportCommand.h"

#include "CommandLine.h"
#include "Document.h"
#include "Figure.h"
#include "FigureCatalog.h"
#include "FigureExport.h"
#include "ModelView.h"
#include "RasterFills.h"

#include <QDir>
#include <QFileInfo>

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

} // namespace qkv::app
