// SPDX-License-Identifier: GPL-3.0-or-later
#include "ProgressControls.h"

#include <QAction>
#include <QCoreApplication>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

#include <algorithm>

namespace qkv::ui {

QAction* setUpProgressControls(const QString& prefix, QLabel* status, QProgressBar* progress,
                               QToolButton* stop, const QString& stopTip)
{
    status->setObjectName(prefix + QStringLiteral("Status"));
    status->setWordWrap(true);
    progress->setObjectName(prefix + QStringLiteral("Progress"));
    progress->setFormat(QCoreApplication::translate("qkv::ui::ProgressControls", "Layer %v of %m"));
    progress->setMaximumWidth(160);
    reserveProgressText(progress, 888); // a deep model
    progress->hide();
    auto* action = new QAction(QCoreApplication::translate("qkv::ui::ProgressControls", "Stop"), stop);
    action->setToolTip(stopTip);
    stop->setObjectName(prefix + QStringLiteral("Stop"));
    stop->setDefaultAction(action);
    stop->hide();
    return action;
}

void reserveProgressText(QProgressBar* progress, int largest)
{
    QString widest = progress->format();
    widest.replace(QLatin1String("%v"), QString::number(largest))
        .replace(QLatin1String("%m"), QString::number(largest));
    progress->setMinimumWidth(
        std::min(progress->fontMetrics().horizontalAdvance(widest) + 24, progress->maximumWidth()));
}

} // namespace qkv::ui
