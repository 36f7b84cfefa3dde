// SPDX-License-Identifier: GPL-3.0-or-later
// The export dialog: its choices, and the files and clipboard they lead to.

#include "Document.h"
#include "ExportDialog.h"
#include "Figure.h"
#include "FigureCatalog.h"
#include "FigureExport.h"

#include "TestMain.h"
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGuiApplication>
#include <QImage>
#include <QMimeData>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

using namespace qkv::ui;

class TestExportDialog : public QObject {
    Q_OBJECT
private slots:
    void choicesReachTheExport();
    void copyPutsTheFigureOnTheClipboard();
    void exportAllUsesEachViewsOwnSize();
};

void TestExportDialog::choicesReachTheExport()
{
    Document document;
    FigureCatalog catalog(&document);
    const QList<const Figure*> figures = catalog.figures();
    const int weights = static_cast<int>(figures.indexOf(catalog.figure(QStringLiteral("weights"))));
    ExportDialog dialog(figures, weights, false);
    QCOMPARE(dialog.figure()->figureName(), QStringLiteral("weights"));
    QCOMPARE(dialog.figureSize(), figures.at(weights)->defaultFigureSize());
    dialog.findChild<QComboBox*>(QStringLiteral("exportFormat"))->setCurrentIndex(0); // PNG
    dialog.findChild<QSpinBox*>(QStringLiteral("exportWidth"))->setValue(500);
    dialog.findChild<QSpinBox*>(QStringLiteral("exportHeight"))->setValue(300);
    dialog.findChild<QDoubleSpinBox*>(QStringLiteral("exportScale"))->setValue(2.0);
    QCOMPARE(dialog.format(), FigureFormat::Png);
    QCOMPARE(dialog.figureSize(), QSize(500, 300));

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("weights.png"));
    QString error;
    QVERIFY2(
        exportFigure(*dialog.figure(), dialog.format(), path, dialog.figureSize(), dialog.scale(), &error),
        qPrintable(error));
    QCOMPARE(QImage(path).size(), QSize(1000, 600));

    // The scale only applies to PNG.
    dialog.findChild<QComboBox*>(QStringLiteral("exportFormat"))->setCurrentIndex(1);
    QCOMPARE(dialog.format(), FigureFormat::Svg);
    QVERIFY(!dialog.findChild<QDoubleSpinBox*>(QStringLiteral("exportScale"))->isEnabled());
}

void TestExportDialog::copyPutsTheFigureOnTheClipboard()
{
    Document document;
    FigureCatalog catalog(&document);
    ExportDialog dialog(catalog.figures(), 0, false);
    QSignalSpy copy(&dialog, &ExportDialog::copyRequested);
    dialog.findChild<QPushButton*>(QStringLiteral("exportCopy"))->click();
    QCOMPARE(copy.count(), 1);
    copyFigureToClipboard(*dialog.figure(), QSize(320, 240), 1.0);
    const QMimeData* data = QGuiApplication::clipboard()->mimeData();
    QVERIFY(data);
    QVERIFY(data->hasFormat(QStringLiteral("image/svg+xml")));
    QVERIFY(data->hasFormat(QStringLiteral("image/png")));
}

void TestExportDialog::exportAllUsesEachViewsOwnSize()
{
    Document document;
    FigureCatalog catalog(&document);
    ExportDialog dialog(catalog.figures(), 0, true);
    QVERIFY(dialog.findChild<QCheckBox*>(QStringLiteral("exportDefaultSize"))->isChecked());
    QCOMPARE(dialog.figureSize(), QSize()); // each view's own
    dialog.findChild<QCheckBox*>(QStringLiteral("exportDefaultSize"))->setChecked(false);
    QVERIFY(dialog.figureSize().isValid());
}

QKV_TEST_MAIN(TestExportDialog)
#include "tst_exportdialog.moc"
