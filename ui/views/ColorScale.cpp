// SPDX-License-Identifier: GPL-3.0-or-later
#include "ColorScale.h"

#include <QHash>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace qkv::ui {

namespace {

QGradientStops evenStops(const char* const* colours, int count)
{
    QGradientStops stops;
    for (int i = 0; i < count; ++i)
        stops.append({static_cast<double>(i) / (count - 1), QColor(QLatin1String(colours[i]))});
    return stops;
}

double linearChannel(int value)
{
    const double s = value / 255.0;
    return s <= 0.03928 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
}

QRgb interpolate(const QGradientStops& stops, double t)
{
    if (t <= stops.front().first)
        return stops.front().second.rgb();
    for (int i = 1; i < stops.size(); ++i) {
        const auto& [position, colour] = stops.at(i);
        if (t > position)
            continue;
        const auto& [previousPosition, previous] = stops.at(i - 1);
        const double span = position - previousPosition;
        const double f = span > 0 ? (t - previousPosition) / span : 1.0;
        const auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
        return qRgb(mix(previous.red(), colour.red()), mix(previous.green(), colour.green()),
                    mix(previous.blue(), colour.blue()));
    }
    return stops.back().second.rgb();
}

} // namespace

QGradientStops paletteStops(Palette palette)
{
    switch (palette) {
    case Palette::Viridis: {
        // Matplotlib's viridis, sampled at eleven points.
        static const char* const stops[] = {"#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
                                            "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"};
        return evenStops(stops, static_cast<int>(std::size(stops)));
    }
    case Palette::Cividis: {
        // Matplotlib's cividis (readable with colour-vision deficiencies), sampled at ten points.
        static const char* const stops[] = {"#00224e", "#123570", "#3b496c", "#575d6d", "#707173",
                                            "#8a8779", "#a69d75", "#c4b56c", "#e4cf5b", "#fee838"};
        return evenStops(stops, static_cast<int>(std::size(stops)));
    }
    case Palette::Greyscale: // black to white, for print
        return {{0.0, QColor(20, 20, 20)}, {1.0, QColor(250, 250, 250)}};
    case Palette::Diverging: // ColorBrewer RdBu, reversed: blue for negative, white at 0, red for positive
        return {{0.0, QColor(0x21, 0x66, 0xac)},
                {0.25, QColor(0x67, 0xa9, 0xcf)},
                {0.5, QColor(0xff, 0xff, 0xff)},
                {0.75, QColor(0xef, 0x8a, 0x62)},
                {1.0, QColor(0xb2, 0x18, 0x2b)}};
    case Palette::Binary:
        return {{0.0, QColor(0x44, 0x01, 0x54)},
                {0.4999, QColor(0x44, 0x01, 0x54)},
                {0.5001, QColor(0xfd, 0xe7, 0x25)},
                {1.0, QColor(0xfd, 0xe7, 0x25)}};
    }
    return {{0.0, Qt::black}, {1.0, Qt::white}};
}

const QList<QRgb>& paletteTable(Palette palette, int size)
{
    static QHash<quint64, QList<QRgb>> tables; // the GUI thread's: views paint there
    const quint64 key = (static_cast<quint64>(palette) << 32) | static_cast<quint32>(std::max(2, size));
    auto it = tables.find(key);
    if (it == tables.end()) {
        const QGradientStops stops = paletteStops(palette);
        const int count = std::max(2, size);
        QList<QRgb> table;
        table.reserve(count);
        for (int i = 0; i < count; ++i)
            table.append(interpolate(stops, static_cast<double>(i) / (count - 1)));
        it = tables.insert(key, table);
    }
    return *it;
}

QRgb paletteColor(Palette palette, double t)
{
    const QList<QRgb>& table = paletteTable(palette);
    return table.at(std::isfinite(t) ? paletteIndex(t, static_cast<int>(table.size())) : 0);
}

QColor maskedCellColor()
{
    return QColor(160, 160, 160);
}

QColor textColorOn(QRgb background)
{
    const double luminance = 0.2126 * linearChannel(qRed(background)) +
                             0.7152 * linearChannel(qGreen(background)) +
                             0.0722 * linearChannel(qBlue(background));
    return luminance > 0.179 ? QColor(Qt::black) : QColor(Qt::white);
}

} // namespace qkv::ui
