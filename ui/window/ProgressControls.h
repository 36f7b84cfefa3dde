// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The status line, layer progress bar and Stop button the model panels show while a pass runs.

#include <QString>

class QAction;
class QLabel;
class QProgressBar;
class QToolButton;

namespace qkv::ui {

/// Names the three widgets `prefix`Status, `prefix`Progress and `prefix`Stop, hides the bar and the button
/// until a pass runs, and returns the Stop action (its tooltip `stopTip`) for the panel to connect.
QAction* setUpProgressControls(const QString& prefix, QLabel* status, QProgressBar* progress,
                               QToolButton* stop, const QString& stopTip);

/// Makes the bar at least wide enough (up to its maximum width) for its format's text with `largest` as both
/// the value and the maximum, however the row around it is squeezed.
void reserveProgressText(QProgressBar* progress, int largest);

} // namespace qkv::ui
