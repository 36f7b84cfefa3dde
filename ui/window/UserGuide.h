// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The user guide shipped in the resources (resources/help/user-guide.html), shown in a window of its own.

#include <QDialog>

class QTextBrowser;

namespace qkv::ui {

/// A non-modal window showing the user guide (Help ▸ User Guide, F1); its browser's objectName is
/// "userGuideText". Links to sections stay inside, links out open in the system browser.
class UserGuide : public QDialog {
    Q_OBJECT
public:
    explicit UserGuide(QWidget* parent = nullptr);

    QTextBrowser* browser() const { return m_browser; }
    /// Where the guide is read from (a Qt resource).
    static QString source();

private:
    QTextBrowser* m_browser;
};

} // namespace qkv::ui
