// SPDX-License-Identifier: GPL-3.0-or-later
#include "RecoveryPrompt.h"

#include <QDir>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>

namespace qkv::ui {

std::optional<RecoveryChoice> recoveryChoiceFromEnvironment()
{
    const QString value = qEnvironmentVariable("QKV_RECOVERY").trimmed().toLower();
    if (value == QLatin1String("restore"))
        return RecoveryChoice::Restore;
    if (value == QLatin1String("discard"))
        return RecoveryChoice::Discard;
    if (value == QLatin1String("keep"))
        return RecoveryChoice::Keep;
    if (!value.isEmpty() && value != QLatin1String("ask"))
        qWarning("QKV_RECOVERY=%s is not restore, discard, keep or ask: asking", qPrintable(value));
    return std::nullopt;
}

RecoveryChoice askToRecover(const RecoveryInfo& info, QWidget* parent)
{
    if (const std::optional<RecoveryChoice> choice = recoveryChoiceFromEnvironment())
        return *choice;
    const QString title = info.title.isEmpty() ? QMessageBox::tr("Untitled") : info.title;
    const QString file =
        info.originalPath.isEmpty()
            ? QMessageBox::tr("It was never saved.")
            : QMessageBox::tr("Its file is %1.").arg(QDir::toNativeSeparators(info.originalPath));
    QMessageBox box(QMessageBox::Warning, QMessageBox::tr("Recover Unsaved Work"),
                    QMessageBox::tr("QKV Lab did not close normally. The session “%1” had unsaved changes, "
                                    "last kept at %2.")
                        .arg(title, QLocale().toString(info.time.toLocalTime(), QLocale::LongFormat)),
                    QMessageBox::NoButton, parent);
    box.setObjectName(QStringLiteral("recoveryDialog"));
    box.setTextFormat(Qt::PlainText); // a title is never markup
    box.setInformativeText(file + QLatin1Char(' ') +
                           QMessageBox::tr("Restore opens it as an unsaved session; Discard deletes it."));
    QPushButton* restore = box.addButton(QMessageBox::tr("Restore"), QMessageBox::AcceptRole);
    QPushButton* discard = box.addButton(QMessageBox::tr("Discard"), QMessageBox::DestructiveRole);
    QPushButton* later = box.addButton(QMessageBox::tr("Not Now"), QMessageBox::RejectRole);
    box.setDefaultButton(restore);
    box.setEscapeButton(later);
    box.exec();
    if (box.clickedButton() == restore)
        return RecoveryChoice::Restore;
    if (box.clickedButton() == discard)
        return RecoveryChoice::Discard;
    return RecoveryChoice::Keep;
}

} // namespace qkv::ui
