// SPDX-License-Identifier: GPL-3.0-or-later
#include "SeriesPalette.h"

#include <iterator>

namespace qkv::ui {

namespace {

const QColor tableau10[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                            QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                            QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                            QColor(0x17, 0xbe, 0xcf)};

} // namespace

QColor seriesColor(int index)
{
    return tableau10[static_cast<std::size_t>(index < 0 ? 0 : index) % std::size(tableau10)];
}

int seriesColorCount()
{
    return static_cast<int>(std::size(tableau10));
}

QColor neutralSeriesColor()
{
    return QColor(150, 160, 175);
}

} // namespace qkv::ui
