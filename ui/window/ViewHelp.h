// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// "What's This?" for every view and panel of the window: what it shows and how to read it.

#include <QString>

class QWidget;

namespace qkv::ui {

/// The What's This text of the view or panel named `objectName` ("heatmap_weights", "mathPanel",
/// "maskGrid", …); empty for a name it does not know.
QString whatsThisText(const QString& objectName);
/// The objectNames whatsThisText() knows.
QStringList viewsWithHelp();
/// Gives every descendant of `root` (and `root`) whose objectName has a text that text as its whatsThis.
void addWhatsThis(QWidget* root);

} // namespace qkv::ui
