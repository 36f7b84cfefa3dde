// SPDX-License-Identifier: GPL-3.0-or-later
#include "UserGuide.h"

#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextImageFormat>
#include <QVBoxLayout>

#include <utility>

namespace qkv::ui {

namespace {

// Gives every heading the anchor a Markdown renderer on the web gives it, so that "#section" links work the
// same in the window and in docs/, and fits the pictures to the window's width.
void prepareDocument(QTextDocument* document)
{
    constexpr double pictureWidth = 640.0;
    // Changed once all are found: a change of format may split or merge the fragments.
    QList<std::pair<int, QTextImageFormat>> pictures; // position (one character each), format
    QList<QTextBlock> headings;
    for (QTextBlock block = document->begin(); block.isValid(); block = block.next()) {
        for (QTextBlock::iterator it = block.begin(); !it.atEnd(); ++it)
            if (it.fragment().charFormat().isImageFormat())
                for (int k = 0; k < it.fragment().length(); ++k)
                    pictures.append(
                        {it.fragment().position() + k, it.fragment().charFormat().toImageFormat()});
        if (block.blockFormat().headingLevel() > 0 && !block.text().isEmpty())
            headings.append(block);
    }
    for (auto [position, picture] : std::as_const(pictures)) {
        picture.setWidth(pictureWidth); // the height follows, in proportion
        QTextCursor cursor(document);
        cursor.setPosition(position);
        cursor.setPosition(position + 1, QTextCursor::KeepAnchor);
        cursor.setCharFormat(picture);
    }
    for (const QTextBlock& block : std::as_const(headings)) {
        QTextCursor cursor(block);
        cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
        QTextCharFormat anchor;
        anchor.setAnchor(true);
        anchor.setAnchorNames({UserGuide::anchorOf(block.text())});
        cursor.mergeCharFormat(anchor);
    }
}

} // namespace

UserGuide::UserGuide(QWidget* parent) : QDialog(parent), m_browser(new QTextBrowser(this))
{
    setObjectName(QStringLiteral("userGuide"));
    setWindowTitle(tr("QKV Lab User Guide"));
    m_browser->setObjectName(QStringLiteral("userGuideText"));
    // Links are followed here: "#section" scrolls, web pages open in the system browser, and other pages of
    // docs/ (which the program does not carry) are left alone.
    m_browser->setOpenLinks(false);
    connect(m_browser, &QTextBrowser::anchorClicked, this, [this](const QUrl& link) {
        if (link.scheme() == QLatin1String("http") || link.scheme() == QLatin1String("https"))
            QDesktopServices::openUrl(link);
        else if (link.hasFragment() && (link.path().isEmpty() || link.path() == QUrl(source()).path()))
            showSection(link.fragment());
    });
    m_browser->setSource(QUrl(source()), QTextDocument::MarkdownResource);
    prepareDocument(m_browser->document());
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_browser, 1);
    layout->addWidget(buttons);
    resize(720, 640);
}

QString UserGuide::source()
{
    return QStringLiteral("qrc:/help/user-guide.md");
}

QString UserGuide::anchorOf(const QString& heading)
{
    // GitHub's rule: lower case, punctuation dropped (letters, digits, spaces, '-' and '_' stay), spaces to
    // '-'.
    QString anchor = heading.trimmed().toLower();
    anchor.remove(
        QRegularExpression(QStringLiteral("[^\\w\\- ]"), QRegularExpression::UseUnicodePropertiesOption));
    anchor.replace(QLatin1Char(' '), QLatin1Char('-'));
    return anchor;
}

QStringList UserGuide::anchors() const
{
    QStringList names;
    for (QTextBlock block = m_browser->document()->begin(); block.isValid(); block = block.next())
        for (QTextBlock::iterator it = block.begin(); !it.atEnd(); ++it)
            names += it.fragment().charFormat().anchorNames();
    return names;
}

QStringList UserGuide::links() const
{
    QStringList hrefs;
    for (QTextBlock block = m_browser->document()->begin(); block.isValid(); block = block.next())
        for (QTextBlock::iterator it = block.begin(); !it.atEnd(); ++it)
            if (const QTextCharFormat format = it.fragment().charFormat();
                format.isAnchor() && !format.anchorHref().isEmpty())
                hrefs += format.anchorHref();
    hrefs.removeDuplicates();
    return hrefs;
}

bool UserGuide::showSection(const QString& anchor)
{
    if (!anchors().contains(anchor))
        return false;
    m_browser->scrollToAnchor(anchor);
    return true;
}

} // namespace qkv::ui
