// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Waiting for the queued replots of the plots in a widget, instead of for a fixed time.

#include <qcustomplot.h>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QWidget>

#include <vector>

namespace qkv::test {

/// Delivers the posted events, round after round, until a round makes no plot in `widget` (or `widget`
/// itself) replot. A queued replot is a posted call, so by then every replot asked for before the call has
/// been done, and so have those their layouts asked for in turn (a heatmap's tick labels settle in two).
/// `replots`, when given, receives how many there were (0: none was queued). False when the plots were
/// still replotting after `timeoutMs`.
inline bool settleReplots(QWidget* widget, int* replots = nullptr, int timeoutMs = 5000)
{
    QList<QCustomPlot*> plots = widget->findChildren<QCustomPlot*>();
    if (auto* plot = qobject_cast<QCustomPlot*>(widget))
        plots.append(plot);
    int done = 0;
    std::vector<QMetaObject::Connection> connections;
    for (QCustomPlot* plot : plots)
        connections.push_back(QObject::connect(plot, &QCustomPlot::afterReplot, [&done] { ++done; }));
    const QDeadlineTimer deadline(timeoutMs);
    int before = 0;
    do {
        before = done;
        QCoreApplication::sendPostedEvents();
    } while (done != before && !deadline.hasExpired());
    for (const QMetaObject::Connection& connection : connections)
        QObject::disconnect(connection);
    if (replots)
        *replots = done;
    return done == before;
}

} // namespace qkv::test
