// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writing figures to PNG, SVG and PDF files and to the clipboard.
//
// One figure pixel is 1/96 inch in every format: a W × H figure is a W × H SVG (W/96 inches wide), a PDF page
// of 0.75·W × 0.75·H points filled edge to edge, and a PNG of W·scale × H·scale pixels whose resolution says
// 96·scale dots per inch. Fonts are resolved at 96 dpi everywhere, so text keeps its size relative to the
// figure whatever the format.

#include <QList>
#include <QSize>
#include <QString>
#include <QStringList>

#include <optional>

namespace qkv::ui {

class Figure;

enum class FigureFormat { Png, Svg, Pdf };

/// "png", "svg" or "pdf", in any case; nothing for anything else.
std::optional<FigureFormat> figureFormatFromName(const QString& name);
/// The format a file name's suffix names ("weights.SVG": Svg); nothing for another suffix.
std::optional<FigureFormat> figureFormatFromSuffix(const QString& path);
/// "png", "svg" or "pdf".
QString figureFormatSuffix(FigureFormat format);

/// The largest PNG side in pixels (size × scale) that is rendered; larger requests are refused.
inline constexpr int maximumFigurePixels = 32000;
/// The sizes (figure pixels) and PNG scales a person may ask for, in the export dialog and on the command
/// line.
inline constexpr int minimumFigureSide = 16;
inline constexpr int maximumFigureSide = 20000;
inline constexpr double minimumFigureScale = 0.25;
inline constexpr double maximumFigureScale = 8.0;

/// A width or height of `size` that is 0 or less is taken from the figure's defaultFigureSize().
///
/// Writes `figure` at `size` (figure pixels) to `path`: the file is rendered in memory, then saved by
/// qkv::writeFileAtomically() (a symbolic link's target is written, the replaced file's permissions are
/// kept, a failure leaves no partial or temporary file). `scale` multiplies the pixels of a PNG (2: twice
/// the resolution, same layout); vector formats ignore it. The folder must exist. On failure returns false
/// with one line that starts with the path, e.g. "figure.svg: cannot write: No space left on device".
bool exportFigure(const Figure& figure, FigureFormat format, const QString& path, QSize size, double scale,
                  QString* error);

/// Writes one file per figure, `folder`/<figureName>.<suffix>, creating the folder if needed. `written`
/// receives the paths written, also when a later figure fails.
bool exportAllFigures(const QList<const Figure*>& figures, FigureFormat format, const QString& folder,
                      QSize size, double scale, QStringList* written, QString* error);

/// Puts the figure on the clipboard as a PNG (image/png and Qt's image type) and as SVG (image/svg+xml).
void copyFigureToClipboard(const Figure& figure, QSize size, double scale);

} // namespace qkv::ui
