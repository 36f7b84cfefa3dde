// SPDX-License-Identifier: GPL-3.0-or-later
// The user guide the window shows: docs/user-guide.md, compiled in and rendered as Markdown, with every
// section reachable by the anchor its heading has on the web.

#include "UserGuide.h"

#include "TestMain.h"
#include <QFile>
#include <QScrollBar>
#include <QStandardPaths>
#include <QTextBrowser>
#include <QtTest>

using namespace qkv::ui;

class TestUserGuide : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void rendersTheMarkdownGuide();
    void headingAnchors_data();
    void headingAnchors();
    void everyLinkedSectionExists();
    void showSectionScrollsToIt();
};

// The sections a reader looks for are there, as text (no Markdown syntax left), with the picture.
void TestUserGuide::rendersTheMarkdownGuide()
{
    UserGuide guide;
    const QString shown = guide.browser()->toPlainText();
    for (const char* heading :
         {"QKV Lab user guide", "The window", "Editing", "The views", "Masks", "Normalizers",
          "A head of a real model", "From a head to the prediction", "Training", "Lessons", "Sessions",
          "Saves and crash recovery", "Keyboard shortcuts", "Where a behaviour lives: the Patching tab"})
        QVERIFY2(shown.contains(QLatin1String(heading)), heading);
    QVERIFY2(!shown.contains(QLatin1String("## ")) && !shown.contains(QLatin1String("**")),
             "Markdown syntax is shown as text");
    QVERIFY(QFile::exists(QStringLiteral(":/help/screenshot.png")));
    QVERIFY(QFile::exists(QStringLiteral(":/help/images/patching.png"))); // the Patching tab's picture
    QVERIFY(guide.anchors().contains(QStringLiteral("the-views")));
}

void TestUserGuide::headingAnchors_data()
{
    QTest::addColumn<QString>("heading");
    QTest::addColumn<QString>("anchor");
    QTest::newRow("words") << QStringLiteral("The views") << QStringLiteral("the-views");
    QTest::newRow("punctuation") << QStringLiteral("Heatmaps: moving, colours, painting")
                                 << QStringLiteral("heatmaps-moving-colours-painting");
    QTest::newRow("symbols and underscores")
        << QStringLiteral("Why √d_k: variance, saturation, scaled vs unscaled")
        << QStringLiteral("why-d_k-variance-saturation-scaled-vs-unscaled");
    QTest::newRow("letters alone") << QStringLiteral("Q, K, V") << QStringLiteral("q-k-v");
}

void TestUserGuide::headingAnchors()
{
    QFETCH(QString, heading);
    QFETCH(QString, anchor);
    QCOMPARE(UserGuide::anchorOf(heading), anchor);
}

// Every "#section" link the guide shows leads to a section of the rendered guide.
void TestUserGuide::everyLinkedSectionExists()
{
    UserGuide guide;
    const QStringList anchors = guide.anchors();
    int sectionLinks = 0;
    for (const QString& link : guide.links()) {
        if (!link.startsWith(QLatin1Char('#')))
            continue;
        ++sectionLinks;
        QVERIFY2(anchors.contains(link.mid(1)), qPrintable(link + QStringLiteral(" leads nowhere")));
    }
    QVERIFY(sectionLinks > 0);
}

void TestUserGuide::showSectionScrollsToIt()
{
    UserGuide guide;
    guide.resize(720, 640);
    guide.show();
    QVERIFY(QTest::qWaitForWindowExposed(&guide));
    QScrollBar* scroll = guide.browser()->verticalScrollBar();
    QCOMPARE(scroll->value(), 0);
    QVERIFY(guide.showSection(QStringLiteral("keyboard-shortcuts")));
    QTRY_VERIFY_WITH_TIMEOUT(scroll->value() > 0, 5000);
    QVERIFY(!guide.showSection(QStringLiteral("no-such-section")));
}

QKV_TEST_MAIN(TestUserGuide)
#include "tst_userguide.moc"
