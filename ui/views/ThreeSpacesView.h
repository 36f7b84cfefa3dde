// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Q, K and V as three separate planes, as Brenndoerfer's article draws them (docs/references.md).

#include "Figure.h"

#include <QWidget>

namespace qkv::ui {

class Document;
class RowSpaceView;

/// Three RowSpaceViews side by side (queries, keys, values of the current head), each with its own plane
/// controls; exported as one figure.
class ThreeSpacesView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit ThreeSpacesView(Document* document, QWidget* parent = nullptr);

    RowSpaceView* queries() const { return m_views[0]; }
    RowSpaceView* keys() const { return m_views[1]; }
    RowSpaceView* values() const { return m_views[2]; }

    QString figureName() const override { return QStringLiteral("spaces"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1500, 560}; }

private:
    Document* m_document;
    RowSpaceView* m_views[3];
};

} // namespace qkv::ui
