// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Whether a file is a real figure of its kind (shared by tst_export and tst_cli): each check returns "" when
// it is, else what is wrong.

#include <QByteArray>
#include <QColor>
#include <QFile>
#include <QImage>
#include <QSet>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QXmlStreamReader>

#include <algorithm>

namespace qkv::test {

inline QByteArray readAll(const QString& path, QString* problem)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *problem = QStringLiteral("%1: %2").arg(path, file.errorString());
        return QByteArray();
    }
    return file.readAll();
}

/// A PNG that decodes to exactly `pixels`, and is not blank.
inline QString checkPng(const QString& path, QSize pixels)
{
    QString problem;
    const QByteArray bytes = readAll(path, &problem);
    if (!problem.isEmpty())
        return problem;
    if (!bytes.startsWith("\x89PNG\r\n\x1a\n"))
        return QStringLiteral("%1: no PNG signature").arg(path);
    QImage image;
    if (!image.loadFromData(bytes, "PNG"))
        return QStringLiteral("%1: does not decode as PNG").arg(path);
    if (image.size() != pixels)
        return QStringLiteral("%1: %2 × %3 pixels, expected %4 × %5")
            .arg(path)
            .arg(image.width())
            .arg(image.height())
            .arg(pixels.width())
            .arg(pixels.height());
    int coloured = 0;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            if (image.pixel(x, y) != qRgb(255, 255, 255))
                ++coloured;
    // Line plots and text are mostly white paper: 1% of the sampled pixels is already a drawn figure.
    if (coloured < image.width() * image.height() / 400)
        return QStringLiteral("%1: almost blank (%2 sampled pixels not white)").arg(path).arg(coloured);
    return QString();
}

/// The text content of every <text> element of an SVG (trimmed), or a problem if it is not an SVG document.
inline QSet<QString> svgTexts(const QByteArray& bytes, QString* problem)
{
    QSet<QString> texts;
    QXmlStreamReader xml(bytes);
    bool root = true;
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement)
            continue;
        if (root && xml.name() != QLatin1String("svg")) {
            *problem = QStringLiteral("the root element is <%1>, not <svg>").arg(xml.name().toString());
            return texts;
        }
        root = false;
        if (xml.name() == QLatin1String("text"))
            texts.insert(xml.readElementText(QXmlStreamReader::IncludeChildElements).trimmed());
    }
    if (xml.hasError())
        *problem = QStringLiteral("not XML: %1 at line %2").arg(xml.errorString()).arg(xml.lineNumber());
    else if (root)
        *problem = QStringLiteral("no element at all");
    return texts;
}

/// An XML document with an <svg> root whose <text> elements include each of `texts`.
inline QString checkSvg(const QString& path, const QStringList& texts)
{
    QString problem;
    const QByteArray bytes = readAll(path, &problem);
    if (!problem.isEmpty())
        return problem;
    const QSet<QString> found = svgTexts(bytes, &problem);
    if (!problem.isEmpty())
        return path + QStringLiteral(": ") + problem;
    // The SVG writer splits a line where the font changes (a Greek τ from a fallback font), so a line may
    // also be read as several consecutive <text> elements.
    QStringList pieces(found.values());
    std::sort(pieces.begin(), pieces.end(),
              [](const QString& a, const QString& b) { return a.size() > b.size(); });
    const auto assembled = [&pieces](QString text) {
        for (const QString& piece : pieces)
            if (!piece.isEmpty())
                text.replace(piece, QString());
        return text.trimmed().isEmpty();
    };
    for (const QString& text : texts)
        if (!found.contains(text) && !assembled(text))
            return QStringLiteral("%1: no <text> element reads \"%2\" (found: %3)")
                .arg(path, text, QStringList(found.values()).join(QStringLiteral(" | ")).left(600));
    return QString();
}

/// Starts with %PDF- and ends with the end-of-file marker.
inline QString checkPdf(const QString& path)
{
    QString problem;
    const QByteArray bytes = readAll(path, &problem);
    if (!problem.isEmpty())
        return problem;
    if (!bytes.startsWith("%PDF-"))
        return QStringLiteral("%1: does not start with %PDF-").arg(path);
    if (!bytes.right(32).contains("%%EOF"))
        return QStringLiteral("%1: no %%EOF at the end").arg(path);
    return QString();
}

} // namespace qkv::test
