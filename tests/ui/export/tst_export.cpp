// SPDX-License-Identifier: GPL-3.0-or-later
// Figures: every view of the catalog exported to PNG, SVG and PDF, all views to a folder, and the clipboard.

#include "Document.h"
#include "Figure.h"
#include "FigureCatalog.h"
#include "FigureExport.h"
#include "FigureFileChecks.h"
#include "FullDisk.h"
#include "Heatmap.h"
#include "QueuedReplots.h"
#include "TestMain.h"

#include <QClipboard>
#include <QDir>
#include <QFileInfo>
#include <QMimeData>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace qkv;
using namespace qkv::ui;
using namespace qkv::test;

namespace {

const QStringList loveTokens{QStringLiteral("I"), QStringLiteral("love"), QStringLiteral("AI")};

const QStringList heatmapNames{
    QStringLiteral("Q"),       QStringLiteral("K"),      QStringLiteral("V"),
    QStringLiteral("scores"),  QStringLiteral("scaled"), QStringLiteral("mask"),
    QStringLiteral("weights"), QStringLiteral("output"), QStringLiteral("final_output")};

/// What a file of `format` must be: tokens as SVG text for heatmaps, the exact pixel size for PNG.
QString checkFigureFile(const Figure& figure, FigureFormat format, const QString& path, QSize size,
                        double scale)
{
    switch (format) {
    case FigureFormat::Png:
        return checkPng(path, QSize(qRound(size.width() * scale), qRound(size.height() * scale)));
    case FigureFormat::Svg: {
        QStringList texts;
        if (dynamic_cast<const Heatmap*>(&figure))
            texts = loveTokens;
        if (!figure.figureTitle().isEmpty())
            texts.append(figure.figureTitle());
        return checkSvg(path, texts);
    }
    case FigureFormat::Pdf:
        return checkPdf(path);
    }
    return QStringLiteral("unknown format");
}

} // namespace

Q_DECLARE_METATYPE(qkv::ui::FigureFormat)

class TestExport : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void formatNames_data();
    void formatNames();
    void catalogListsTheViews();
    void exportEveryFigure_data();
    void exportEveryFigure();
    void defaultSizeWhenNoneIsGiven();
    void pdfPageIsTheFigure();
    void cellValuesFollowTheExportSize();
    void exportKeepsTheScreenLayout();
    void exportAllWritesOneFilePerFigure();
    void missingFolderGivesAnErrorAndNoFile();
    void uncreatableFolderGivesAnError();
    void failedExportKeepsTheOldFile();
    void fullDiskNamesTheFileAndTheReason_data();
    void fullDiskNamesTheFileAndTheReason();
    void exportThroughASymbolicLinkWritesItsTarget();
    void clipboardHoldsPngAndSvg();

private:
    std::unique_ptr<Document> m_document;
    std::unique_ptr<FigureCatalog> m_catalog;
};

void TestExport::initTestCase()
{
    m_document = std::make_unique<Document>();
    QString error;
    QVERIFY2(m_document->open(QStringLiteral("example:love"), &error), qPrintable(error));
    m_document->waitForResult();
    QVERIFY(m_document->result());
    m_catalog = std::make_unique<FigureCatalog>(m_document.get());
}

void TestExport::cleanupTestCase()
{
    m_catalog.reset();
    m_document.reset();
}

void TestExport::formatNames_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("known");
    QTest::addColumn<FigureFormat>("format");
    QTest::newRow("png") << QStringLiteral("png") << true << FigureFormat::Png;
    QTest::newRow("SVG") << QStringLiteral("SVG") << true << FigureFormat::Svg;
    QTest::newRow("Pdf") << QStringLiteral("Pdf") << true << FigureFormat::Pdf;
    QTest::newRow("jpg") << QStringLiteral("jpg") << false << FigureFormat::Png;
    QTest::newRow("empty") << QString() << false << FigureFormat::Png;
}

void TestExport::formatNames()
{
    QFETCH(QString, text);
    QFETCH(bool, known);
    QFETCH(FigureFormat, format);
    const std::optional<FigureFormat> byName = figureFormatFromName(text);
    const std::optional<FigureFormat> bySuffix =
        figureFormatFromSuffix(QStringLiteral("dir.v2/figure.") + text);
    QCOMPARE(byName.has_value(), known);
    QCOMPARE(bySuffix.has_value(), known);
    if (known) {
        QCOMPARE(*byName, format);
        QCOMPARE(*bySuffix, format);
        QCOMPARE(figureFormatSuffix(format), text.toLower());
    }
    QVERIFY(!figureFormatFromSuffix(QStringLiteral("figure")).has_value());
}

void TestExport::catalogListsTheViews()
{
    const QStringList names = m_catalog->names();
    QCOMPARE(names.mid(0, heatmapNames.size()), heatmapNames);
    QCOMPARE(QSet<QString>(names.begin(), names.end()).size(), names.size()); // unique: they are file names
    QCOMPARE(m_catalog->figures().size(), names.size());
    for (const QString& name : names) {
        const Figure* figure = m_catalog->figure(name);
        QVERIFY2(figure, qPrintable(name));
        QCOMPARE(figure->figureName(), name);
        QVERIFY(!figure->defaultFigureSize().isEmpty());
    }
    QVERIFY(!m_catalog->figure(QStringLiteral("no-such-view")));
    QCOMPARE(m_catalog->figure(QStringLiteral("weights"))->figureTitle(),
             QStringLiteral("Attention weights"));
}

void TestExport::exportEveryFigure_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<FigureFormat>("format");
    QTest::addColumn<double>("scale");
    for (const QString& name : m_catalog->names()) {
        const QByteArray row = name.toUtf8();
        QTest::newRow((row + " png ×1").constData()) << name << FigureFormat::Png << 1.0;
        QTest::newRow((row + " png ×2").constData()) << name << FigureFormat::Png << 2.0;
        QTest::newRow((row + " svg").constData()) << name << FigureFormat::Svg << 1.0;
        QTest::newRow((row + " pdf").constData()) << name << FigureFormat::Pdf << 1.0;
    }
}

void TestExport::exportEveryFigure()
{
    QFETCH(QString, name);
    QFETCH(FigureFormat, format);
    QFETCH(double, scale);
    const Figure* figure = m_catalog->figure(name);
    QVERIFY(figure);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(name + QLatin1Char('.') + figureFormatSuffix(format));
    const QSize size(640, 480);
    QString error;
    QVERIFY2(exportFigure(*figure, format, path, size, scale, &error), qPrintable(error));
    QVERIFY(error.isEmpty());
    const QString problem = checkFigureFile(*figure, format, path, size, scale);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files),
             QStringList{QFileInfo(path).fileName()}); // no temporaries
}

void TestExport::defaultSizeWhenNoneIsGiven()
{
    const Figure* weights = m_catalog->figure(QStringLiteral("weights"));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("weights.png"));
    QString error;
    QVERIFY2(exportFigure(*weights, FigureFormat::Png, path, QSize(), 1.0, &error), qPrintable(error));
    QCOMPARE(QImage(path).size(), weights->defaultFigureSize());
    QVERIFY2(exportFigure(*weights, FigureFormat::Png, path, QSize(900, 0), 1.0, &error), qPrintable(error));
    QCOMPARE(QImage(path).size(), QSize(900, weights->defaultFigureSize().height()));
}

void TestExport::pdfPageIsTheFigure()
{
    // 1 figure pixel = 1/96 inch = 0.75 point; the page has no margins.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("weights.pdf"));
    QString error;
    QVERIFY2(exportFigure(*m_catalog->figure(QStringLiteral("weights")), FigureFormat::Pdf, path,
                          QSize(800, 600), 1.0, &error),
             qPrintable(error));
    QString problem;
    const QByteArray pdf = readAll(path, &problem);
    QCOMPARE(pdf.count("/Type /Page\n") + pdf.count("/Type /Page\r") + pdf.count("/Type /Page/") +
                 pdf.count("/Type /Page "),
             1);
    const QRegularExpression mediaBox(QStringLiteral("/MediaBox \\[\\s*0 0 ([0-9.]+) ([0-9.]+)\\s*\\]"));
    const QRegularExpressionMatch match = mediaBox.match(QString::fromLatin1(pdf));
    QVERIFY2(match.hasMatch(), "no MediaBox");
    QCOMPARE(match.captured(1).toDouble(), 600.0);
    QCOMPARE(match.captured(2).toDouble(), 450.0);
}

void TestExport::cellValuesFollowTheExportSize()
{
    // Large: the weights are written in the cells (0.707: "love" attends to … see the worked example).
    const Figure* weights = m_catalog->figure(QStringLiteral("weights"));
    QTemporaryDir dir;
    const QString large = dir.filePath(QStringLiteral("large.svg"));
    const QString small = dir.filePath(QStringLiteral("small.svg"));
    QString error;
    QVERIFY2(exportFigure(*weights, FigureFormat::Svg, large, QSize(800, 600), 1.0, &error),
             qPrintable(error));
    QVERIFY2(exportFigure(*weights, FigureFormat::Svg, small, QSize(160, 120), 1.0, &error),
             qPrintable(error));
    QString problem;
    const QSet<QString> largeTexts = svgTexts(readAll(large, &problem), &problem);
    const QSet<QString> smallTexts = svgTexts(readAll(small, &problem), &problem);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QVERIFY2(largeTexts.contains(QStringLiteral("0.707")),
             qPrintable(QStringList(largeTexts.values()).join(u'|')));
    QVERIFY2(!smallTexts.contains(QStringLiteral("0.707")),
             qPrintable(QStringList(smallTexts.values()).join(u'|')));
    QVERIFY(largeTexts.contains(QStringLiteral("query")) && largeTexts.contains(QStringLiteral("key")));
}

void TestExport::exportKeepsTheScreenLayout()
{
    Heatmap map;
    map.setFigureName(QStringLiteral("small"));
    map.setTitle(QStringLiteral("Small"));
    map.resize(170, 130);
    map.show();
    QVERIFY(QTest::qWaitForWindowExposed(&map));
    map.setMatrix((Matrix(3, 3) << 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9).finished(), loveTokens,
                  loveTokens);
    int replots = 0;
    QVERIFY(test::settleReplots(&map, &replots));
    QVERIFY(replots > 0); // laid out for the screen
    const bool shownBefore = map.showsCellValues();
    const QPoint centreBefore = map.cellCentre(1, 1);
    QVERIFY(!shownBefore); // cells too small for the values

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("small.svg"));
    QString error;
    QVERIFY2(exportFigure(map, FigureFormat::Svg, path, QSize(900, 700), 1.0, &error), qPrintable(error));
    QString problem;
    QVERIFY(svgTexts(readAll(path, &problem), &problem).contains(QStringLiteral("0.500")));
    QCOMPARE(map.showsCellValues(), shownBefore);
    QCOMPARE(map.cellCentre(1, 1), centreBefore);
    // The replot the export queued to lay the plot out for the screen again changes nothing.
    replots = 0;
    QVERIFY(test::settleReplots(&map, &replots));
    QVERIFY(replots > 0);
    QCOMPARE(map.showsCellValues(), shownBefore);
    QCOMPARE(map.cellCentre(1, 1), centreBefore);
}

void TestExport::exportAllWritesOneFilePerFigure()
{
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("figures/new"));
    const QSize size(500, 400);
    QStringList written;
    QString error;
    QVERIFY2(exportAllFigures(m_catalog->figures(), FigureFormat::Svg, folder, size, 1.0, &written, &error),
             qPrintable(error));
    QStringList expected;
    for (const QString& name : m_catalog->names())
        expected.append(name + QStringLiteral(".svg"));
    QStringList files = QDir(folder).entryList(QDir::Files);
    QStringList sortedExpected = expected;
    files.sort();
    sortedExpected.sort();
    QCOMPARE(files, sortedExpected);
    QCOMPARE(written.size(), expected.size());
    for (const Figure* figure : m_catalog->figures()) {
        const QString path = QDir(folder).filePath(figure->figureName() + QStringLiteral(".svg"));
        QVERIFY(written.contains(path));
        const QString problem = checkFigureFile(*figure, FigureFormat::Svg, path, size, 1.0);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    written.clear();
    QVERIFY2(exportAllFigures(m_catalog->figures(), FigureFormat::Png, folder, size, 2.0, &written, &error),
             qPrintable(error));
    for (const Figure* figure : m_catalog->figures()) {
        const QString problem =
            checkFigureFile(*figure, FigureFormat::Png,
                            QDir(folder).filePath(figure->figureName() + QStringLiteral(".png")), size, 2.0);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }
}

void TestExport::missingFolderGivesAnErrorAndNoFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("missing/deeper/weights.png"));
    const Figure* weights = m_catalog->figure(QStringLiteral("weights"));
    for (const FigureFormat format : {FigureFormat::Png, FigureFormat::Svg, FigureFormat::Pdf}) {
        QString error;
        QVERIFY(!exportFigure(*weights, format, path, QSize(300, 200), 1.0, &error));
        QVERIFY2(error.contains(QDir::toNativeSeparators(path)), qPrintable(error));
        QVERIFY(!QFileInfo::exists(path));
        QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("missing"))));
    }
}

void TestExport::uncreatableFolderGivesAnError()
{
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("a-file"));
    QFile blocker(file);
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString folder = file + QStringLiteral("/figures");
    QStringList written;
    QString error;
    QVERIFY(!exportAllFigures(m_catalog->figures(), FigureFormat::Pdf, folder, QSize(300, 200), 1.0, &written,
                              &error));
    QVERIFY2(error.contains(QDir::toNativeSeparators(folder)), qPrintable(error));
    QVERIFY(written.isEmpty());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("a-file")});
}

void TestExport::failedExportKeepsTheOldFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("weights.png"));
    const Figure* weights = m_catalog->figure(QStringLiteral("weights"));
    QString error;
    QVERIFY2(exportFigure(*weights, FigureFormat::Png, path, QSize(300, 200), 1.0, &error),
             qPrintable(error));
    const QByteArray before = readAll(path, &error);
    // Too many pixels for an image: refused after the file was opened, so the temporary must go.
    QVERIFY(!exportFigure(*weights, FigureFormat::Png, path, QSize(20000, 20000), 4.0, &error));
    QVERIFY2(error.contains(QDir::toNativeSeparators(path)), qPrintable(error));
    QCOMPARE(readAll(path, &error), before);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{QStringLiteral("weights.png")});
}

void TestExport::fullDiskNamesTheFileAndTheReason_data()
{
    QTest::addColumn<FigureFormat>("format");
    QTest::newRow("PNG") << FigureFormat::Png;
    QTest::newRow("SVG") << FigureFormat::Svg;
    QTest::newRow("PDF") << FigureFormat::Pdf;
}

void TestExport::fullDiskNamesTheFileAndTheReason()
{
    QFETCH(FigureFormat, format);
    const QString name = QStringLiteral("figure.") + figureFormatSuffix(format);
    const QByteArray old("the previous figure");
    const FullDisk disk([&](const QString& folder) {
        QFile file(folder + QLatin1Char('/') + name);
        if (file.open(QIODevice::WriteOnly))
            file.write(old);
    });
    if (!disk.isMounted())
        QSKIP(qPrintable(disk.reason()));
    const QString path = disk.filePath(name);
    QString error;
    QVERIFY(!exportFigure(*m_catalog->figure(QStringLiteral("weights")), format, path, QSize(300, 200), 1.0,
                          &error));
    QCOMPARE(error,
             QDir::toNativeSeparators(path) + QStringLiteral(": cannot write: No space left on device"));
    QCOMPARE(readAll(path, &error), old);
    QCOMPARE(disk.entries(), QStringList{name}); // no temporary file left
}

void TestExport::exportThroughASymbolicLinkWritesItsTarget()
{
    QTemporaryDir dir;
    const QString target = dir.filePath(QStringLiteral("figures/weights.svg"));
    const QString link = dir.filePath(QStringLiteral("weights.svg"));
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("figures")));
    QVERIFY(QFile::link(QStringLiteral("figures/weights.svg"), link)); // dangling until the export
    QString error;
    QVERIFY2(exportFigure(*m_catalog->figure(QStringLiteral("weights")), FigureFormat::Svg, link,
                          QSize(300, 200), 1.0, &error),
             qPrintable(error));
    QVERIFY(QFileInfo(link).isSymLink());
    QVERIFY(!QFileInfo(target).isSymLink());
    const QString problem = checkSvg(target, loveTokens);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

void TestExport::clipboardHoldsPngAndSvg()
{
    QClipboard* clipboard = QGuiApplication::clipboard();
    if (!clipboard)
        QSKIP("no clipboard on this platform");
    copyFigureToClipboard(*m_catalog->figure(QStringLiteral("weights")), QSize(400, 300), 2.0);
    const QMimeData* data = clipboard->mimeData();
    QVERIFY(data);
    QVERIFY2(data->hasFormat(QStringLiteral("image/png")), qPrintable(data->formats().join(u',')));
    QVERIFY2(data->hasFormat(QStringLiteral("image/svg+xml")), qPrintable(data->formats().join(u',')));
    QImage png;
    QVERIFY(png.loadFromData(data->data(QStringLiteral("image/png")), "PNG"));
    QCOMPARE(png.size(), QSize(800, 600));
    QString problem;
    const QSet<QString> texts = svgTexts(data->data(QStringLiteral("image/svg+xml")), &problem);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    for (const QString& token : loveTokens)
        QVERIFY2(texts.contains(token), qPrintable(token));
}

QKV_TEST_MAIN(TestExport)
#include "tst_export.moc"
