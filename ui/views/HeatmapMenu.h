// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The heatmap's context menu: its colour scale, its colour map and the zoom.

#include <QMenu>

namespace qkv::ui {

class Heatmap;

/// One menu for the heatmap's life (objectName "heatmapMenu"), its actions named so that tests and the window
/// can find them (see Heatmap::contextMenu()). Choosing an entry sets it on the heatmap.
class HeatmapMenu : public QMenu {
    Q_OBJECT
public:
    explicit HeatmapMenu(Heatmap* heatmap);

    /// Checks the entries the heatmap uses and disables what does not apply to its kind of matrix.
    void refresh();

private:
    Heatmap* m_heatmap;
};

} // namespace qkv::ui
