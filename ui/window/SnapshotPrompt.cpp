// SPDX-License-Identifier: GPL-3.0-or-later
#include "SnapshotPrompt.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Snapshots.h"

#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>

namespace qkv::ui {

namespace {

// Characters, so that the name stays within Limits::maxSnapshotName bytes of UTF-8 (4 bytes at most each).
constexpr int longestName = static_cast<int>(Limits::maxSnapshotName / 4);

} // namespace

bool promptForSnapshot(QWidget* parent, Document* document)
{
    const Session& session = document->session();
    if (static_cast<int>(session.snapshots.size()) >= Limits::maxSnapshots) {
        QMessageBox::warning(
            parent, QObject::tr("Take Snapshot"),
            QObject::tr("This session already keeps %1 snapshots, the most it may. Delete one "
                        "in the Snapshots view first.")
                .arg(Limits::maxSnapshots));
        return false;
    }
    const QString defaultName = QString::fromStdString(nextSnapshotName(session));
    QInputDialog dialog(parent);
    dialog.setObjectName(QStringLiteral("snapshotNameDialog"));
    dialog.setWindowTitle(QObject::tr("Take Snapshot"));
    dialog.setLabelText(QObject::tr("Keep the current inputs under the name:"));
    dialog.setTextValue(defaultName);
    if (auto* edit = dialog.findChild<QLineEdit*>())
        edit->setMaxLength(longestName);
    if (dialog.exec() != QDialog::Accepted)
        return false;
    QString name = dialog.textValue().simplified().left(longestName);
    if (name.isEmpty())
        name = defaultName;
    document->push(makeAddSnapshotCommand(document, makeSnapshot(document->session(), name.toStdString())));
    return true;
}

} // namespace qkv::ui
