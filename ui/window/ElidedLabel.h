// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A one-line label that shortens its text with "…" when it is narrower than the text, and shows the whole
// text as its tooltip then: the status bar's shape label at a scale factor of 2 was cut off mid-word.

#include <QLabel>
#include <QString>

namespace qkv::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);

    /// The whole text; QLabel::text() is what is drawn.
    void setFullText(const QString& text);

    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void elide();

    QString m_fullText;
};

} // namespace qkv::ui
