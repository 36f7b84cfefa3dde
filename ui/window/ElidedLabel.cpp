// SPDX-License-Identifier: GPL-3.0-or-later
#include "ElidedLabel.h"

#include <cmath>

#include <QFontMetrics>
#include <QFontMetricsF>
#include <QResizeEvent>

namespace qkv::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent)
{
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ElidedLabel::setFullText(const QString& text)
{
    if (text == m_fullText)
        return;
    const QSize before = sizeHint();
    m_fullText = text;
    if (sizeHint() != before)
        updateGeometry(); // a relayout only when the preferred width changed
    elide();
}

QSize ElidedLabel::sizeHint() const
{
    const QMargins margins = contentsMargins();
    // Rounded up, and a pixel spare: elidedText() keeps the whole text only when it fits with its fractions.
    const int textWidth =
        static_cast<int>(std::ceil(QFontMetricsF(font()).horizontalAdvance(m_fullText))) + 1;
    return {textWidth + margins.left() + margins.right() + 2 * margin(), QLabel::sizeHint().height()};
}

QSize ElidedLabel::minimumSizeHint() const
{
    return {fontMetrics().horizontalAdvance(QStringLiteral("n = …")), QLabel::minimumSizeHint().height()};
}

void ElidedLabel::resizeEvent(QResizeEvent* event)
{
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::showEvent(QShowEvent* event)
{
    QLabel::showEvent(event);
    elide();
}

void ElidedLabel::elide()
{
    // Until a layout has given it a width (a window not shown yet), the whole text.
    const QString shown = isVisible()
                              ? fontMetrics().elidedText(m_fullText, Qt::ElideRight, contentsRect().width())
                              : m_fullText;
    if (shown != text())
        setText(shown);
    setToolTip(shown == m_fullText ? QString() : m_fullText);
}

} // namespace qkv::ui
