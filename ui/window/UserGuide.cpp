// SPDX-License-Identifier: GPL-3.0-or-later
#include "UserGuide.h"

#include <QDialogButtonBox>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace qkv::ui {

UserGuide::UserGuide(QWidget* parent) : QDialog(parent), m_browser(new QTextBrowser(this))
{
    setObjectName(QStringLiteral("userGuide"));
    setWindowTitle(tr("QKV Lab User Guide"));
    m_browser->setObjectName(QStringLiteral("userGuideText"));
    m_browser->setOpenExternalLinks(true);
    m_browser->setSource(QUrl(source()));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_browser, 1);
    layout->addWidget(buttons);
    resize(720, 640);
}

QString UserGuide::source()
{
    return QStringLiteral("qrc:/help/user-guide.html");
}

} // namespace qkv::ui
