// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The user guide, docs/user-guide.md compiled into the resources and rendered by Qt's Markdown support, shown
// in a window of its own.

#include <QDialog>
#include <QStringList>

class QTextBrowser;

namespace qkv::ui {

/// A non-modal window showing the user guide (Help ▸ User Guide, F1); its browser's objectName is
/// "userGuideText". Every heading has the anchor GitHub gives it ("## The views" is "#the-views"), so links
/// to sections work here as in docs/; links to web pages open in the system browser.
class UserGuide : public QDialog {
    Q_OBJECT
public:
    explicit UserGuide(QWidget* parent = nullptr);

    QTextBrowser* browser() const { return m_browser; }
    /// Where the guide is read from (a Qt resource).
    static QString source();
    /// The anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
    static QString anchorOf(const QString& heading);
    /// Every anchor of the rendered guide.
    QStringList anchors() const;
    /// Every link of the rendered guide, once each ("#the-views", "models.md", "https://…").
    QStringList links() const;
    /// Scrolls to the section `anchor` ("the-views"); false when the guide has no such section.
    bool showSection(const QString& anchor);

private:
    QTextBrowser* m_browser;
};

} // namespace qkv::ui
