// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What every exportable view is: a name for files and the command line, a title, and drawing onto any paint
// device (an image, an SVG generator, a PDF writer) at a chosen size.

#include <QSize>
#include <QString>

class QPaintDevice;

namespace qkv::ui {

class Figure {
public:
    virtual ~Figure() = default;
    /// The name used by `qkvlab export --view NAME` and for file names ("weights", "qk_space").
    virtual QString figureName() const = 0;
    /// The title shown on the figure, also written into SVG and PDF metadata ("" when it has none).
    virtual QString figureTitle() const { return QString(); }
    /// Draws the whole figure, title and axis labels included, filling `size` (device-independent pixels)
    /// of `device`. Vector devices (SVG, PDF) receive vector output.
    virtual void renderFigure(QPaintDevice* device, const QSize& size) const = 0;
    /// The size the figure looks best at when none is asked for.
    virtual QSize defaultFigureSize() const { return {640, 480}; }
};

} // namespace qkv::ui
