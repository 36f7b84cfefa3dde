// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Several figures drawn side by side as one, under a title: the three Q/K/V spaces, the snapshot
// comparison's heatmaps.

#include <QList>
#include <QSize>
#include <QString>

class QPaintDevice;

namespace qkv::ui {

class Figure;

/// Draws `title` (bold, centred; none when empty) across the top of `size` and the figures below it in
/// equal columns, each rendered at its column's size. Each figure is recorded as a QPicture and replayed, so
/// vector devices (SVG, PDF) keep vector output and text as text.
void renderFigureRow(QPaintDevice* device, const QSize& size, const QString& title,
                     const QList<const Figure*>& figures);

/// The height the title takes in renderFigureRow (0 for an empty title).
int figureRowTitleHeight(const QString& title);

} // namespace qkv::ui
