// SPDX-License-Identifier: GPL-3.0-or-later
#include "FigureExport.h"

#include "Error.h"
#include "Figure.h"
#include "FileWriting.h"

#include <QBuffer>
#include <QClipboard>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QMimeData>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSvgGenerator>

#include <cmath>

namespace qkv::ui {

namespace {

constexpr int figureDpi = 96;
constexpr double pointsPerPixel = 72.0 / figureDpi;

QString tr(const char* text)
{
    return QCoreApplication::translate("qkv::ui::FigureExport", text);
}

int dotsPerMeter(double dpi)
{
    return static_cast<int>(std::lround(dpi / 0.0254));
}

QSize resolvedSize(const Figure& figure, QSize size)
{
    const QSize fallback = figure.defaultFigureSize();
    return {size.width() > 0 ? size.width() : fallback.width(),
            size.height() > 0 ? size.height() : fallback.height()};
}

QSize pixelSize(QSize size, double scale)
{
    return {static_cast<int>(std::lround(size.width() * scale)),
            static_cast<int>(std::lround(size.height() * scale))};
}

QString figureTitleOf(const Figure& figure)
{
    const QString title = figure.figureTitle();
    return title.isEmpty() ? figure.figureName() : title;
}

// A white image of size × scale pixels with the figure drawn at `size` device-independent pixels.
QImage renderImage(const Figure& figure, QSize size, double scale, QString* error)
{
    const QSize pixels = pixelSize(size, scale);
    if (pixels.width() < 1 || pixels.height() < 1 || pixels.width() > maximumFigurePixels ||
        pixels.height() > maximumFigurePixels) {
        *error = tr("%1 × %2 pixels is not a size an image can have (1 to %3 pixels a side)")
                     .arg(pixels.width())
                     .arg(pixels.height())
                     .arg(maximumFigurePixels);
        return QImage();
    }
    QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
        *error =
            tr("not enough memory for an image of %1 × %2 pixels").arg(pixels.width()).arg(pixels.height());
        return image;
    }
    // Fonts are resolved from the resolution while drawing (96 dpi, as the figure pixels); afterwards the
    // file says how many pixels make an inch, so every scale prints at the same physical size.
    image.setDotsPerMeterX(dotsPerMeter(figureDpi));
    image.setDotsPerMeterY(dotsPerMeter(figureDpi));
    image.setDevicePixelRatio(scale);
    image.fill(Qt::white);
    figure.renderFigure(&image, size);
    image.setDotsPerMeterX(dotsPerMeter(figureDpi * scale));
    image.setDotsPerMeterY(dotsPerMeter(figureDpi * scale));
    return image;
}

bool renderPng(const Figure& figure, QSize size, double scale, QByteArray* bytes, QString* error)
{
    const QImage image = renderImage(figure, size, scale, error);
    if (image.isNull())
        return false;
    QBuffer buffer(bytes);
    buffer.open(QIODevice::WriteOnly);
    if (!image.save(&buffer, "PNG")) {
        *error = tr("the PNG encoder failed");
        return false;
    }
    return true;
}

QByteArray renderSvg(const Figure& figure, QSize size)
{
    QByteArray svg;
    {
        QBuffer buffer(&svg);
        buffer.open(QIODevice::WriteOnly);
        QSvgGenerator generator;
        generator.setOutputDevice(&buffer);
        generator.setSize(size);
        generator.setViewBox(QRect(QPoint(0, 0), size));
        generator.setResolution(figureDpi);
        generator.setTitle(figureTitleOf(figure));
        generator.setDescription(tr("Exported from QKV Lab"));
        figure.renderFigure(&generator, size); // written when the figure's painter ends
    }
    // The generator names the font family alone ("Sans Serif" is fontconfig's alias, unknown to browsers,
    // which would fall back to a serif face): give every family the generic sans-serif as a fallback.
    static const QRegularExpression family(QStringLiteral("font-family=\"([^\",]+)\""));
    return QString::fromUtf8(svg).replace(family, QStringLiteral("font-family=\"\\1, sans-serif\"")).toUtf8();
}

bool renderPdf(const Figure& figure, QSize size, QByteArray* bytes, QString* error)
{
    QBuffer buffer(bytes);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setCreator(tr("QKV Lab"));
    writer.setTitle(figureTitleOf(figure));
    writer.setResolution(figureDpi);
    const QPageSize page(QSizeF(size.width() * pointsPerPixel, size.height() * pointsPerPixel),
                         QPageSize::Point, QString(), QPageSize::ExactMatch);
    if (!writer.setPageLayout(QPageLayout(page, QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)))) {
        *error = tr("the PDF writer refused a page of %1 × %2 points")
                     .arg(page.sizePoints().width())
                     .arg(page.sizePoints().height());
        return false;
    }
    figure.renderFigure(&writer, size); // the document is complete when the figure's painter ends
    return true;
}

// The whole file in memory, so that writing it is one atomic save with the engine's messages.
bool render(const Figure& figure, FigureFormat format, QSize size, double scale, QByteArray* bytes,
            QString* error)
{
    switch (format) {
    case FigureFormat::Png:
        return renderPng(figure, size, scale, bytes, error);
    case FigureFormat::Svg:
        *bytes = renderSvg(figure, size);
        return true;
    case FigureFormat::Pdf:
        return renderPdf(figure, size, bytes, error);
    }
    return false;
}

} // namespace

std::optional<FigureFormat> figureFormatFromName(const QString& name)
{
    for (const FigureFormat format : {FigureFormat::Png, FigureFormat::Svg, FigureFormat::Pdf})
        if (name.compare(figureFormatSuffix(format), Qt::CaseInsensitive) == 0)
            return format;
    return std::nullopt;
}

std::optional<FigureFormat> figureFormatFromSuffix(const QString& path)
{
    return figureFormatFromName(QFileInfo(path).suffix());
}

QString figureFormatSuffix(FigureFormat format)
{
    switch (format) {
    case FigureFormat::Png:
        return QStringLiteral("png");
    case FigureFormat::Svg:
        return QStringLiteral("svg");
    case FigureFormat::Pdf:
        return QStringLiteral("pdf");
    }
    return QString();
}

bool exportFigure(const Figure& figure, FigureFormat format, const QString& path, QSize size, double scale,
                  QString* error)
{
    QString problem;
    size = resolvedSize(figure, size);
    QByteArray bytes;
    if (!(scale > 0) || !std::isfinite(scale)) {
        problem = tr("the scale must be a positive number");
    } else if (render(figure, format, size, scale, &bytes, &problem)) {
        try {
            writeFileAtomically(QFile::encodeName(path).toStdString(), bytes.toStdString());
            return true;
        } catch (const Error& e) {
            // Already "PATH: cannot write: REASON".
            if (error)
                *error = QFile::decodeName(e.what());
            return false;
        }
    }
    if (error)
        *error = tr("%1: %2").arg(QDir::toNativeSeparators(path), problem);
    return false;
}

bool exportAllFigures(const QList<const Figure*>& figures, FigureFormat format, const QString& folder,
                      QSize size, double scale, QStringList* written, QString* error)
{
    if (!QDir().mkpath(folder) || !QFileInfo(folder).isDir()) {
        if (error)
            *error = tr("Cannot create the folder %1").arg(QDir::toNativeSeparators(folder));
        return false;
    }
    const QDir dir(folder);
    for (const Figure* figure : figures) {
        if (!figure)
            continue;
        const QString path =
            dir.filePath(figure->figureName() + QLatin1Char('.') + figureFormatSuffix(format));
        if (!exportFigure(*figure, format, path, size, scale, error))
            return false;
        if (written)
            written->append(path);
    }
    return true;
}

void copyFigureToClipboard(const Figure& figure, QSize size, double scale)
{
    size = resolvedSize(figure, size);
    QString problem;
    const QImage image = renderImage(figure, size, scale, &problem);
    const QByteArray svg = renderSvg(figure, size);
    auto* data = new QMimeData;
    if (!image.isNull()) {
        data->setImageData(image);
        QByteArray png;
        QBuffer pngBuffer(&png);
        pngBuffer.open(QIODevice::WriteOnly);
        if (image.save(&pngBuffer, "PNG"))
            data->setData(QStringLiteral("image/png"), png);
    }
    data->setData(QStringLiteral("image/svg+xml"), svg);
    QGuiApplication::clipboard()->setMimeData(data);
}

} // namespace qkv::ui
