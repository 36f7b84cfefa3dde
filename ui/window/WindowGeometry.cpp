// SPDX-License-Identifier: GPL-3.0-or-later
#include "WindowGeometry.h"

#include <QDataStream>
#include <QIODevice>

namespace qkv::ui {

namespace {
// QWidget::saveGeometry()'s header (qwidget.cpp): a magic number, then major and minor versions.
constexpr quint32 geometryMagic = 0x1D9D0CB;
constexpr quint16 geometryMajorVersion = 3;
} // namespace

QRect defaultWindowGeometry(const QRect& available)
{
    const QSize size(available.width() * 9 / 10, available.height() * 9 / 10);
    QRect rect(QPoint(0, 0), size);
    rect.moveCenter(available.center());
    return rect;
}

std::optional<QRect> savedFrameGeometry(const QByteArray& saved)
{
    if (saved.size() < 4)
        return std::nullopt;
    QDataStream stream(saved);
    stream.setVersion(QDataStream::Qt_4_0);
    quint32 magic = 0;
    quint16 major = 0;
    quint16 minor = 0;
    QRect frame;
    stream >> magic >> major >> minor >> frame;
    if (stream.status() != QDataStream::Ok || magic != geometryMagic || major > geometryMajorVersion ||
        !frame.isValid())
        return std::nullopt;
    return frame;
}

bool savedGeometryFits(const QByteArray& saved, const QRect& available)
{
    const std::optional<QRect> frame = savedFrameGeometry(saved);
    return frame && available.contains(*frame);
}

} // namespace qkv::ui
