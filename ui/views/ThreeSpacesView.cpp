// SPDX-License-Identifier: GPL-3.0-or-later
#include "ThreeSpacesView.h"

#include "Document.h"
#include "FigureRow.h"
#include "RowSpaceView.h"

#include <QHBoxLayout>

#include <algorithm>

namespace qkv::ui {

ThreeSpacesView::ThreeSpacesView(Document* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    setObjectName(QStringLiteral("threeSpacesView"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    const HeadRows rows[] = {HeadRows::Queries, HeadRows::Keys, HeadRows::Values};
    for (int k = 0; k < 3; ++k) {
        m_views[k] = new RowSpaceView(document, rows[k], this);
        layout->addWidget(m_views[k]);
    }
}

QString ThreeSpacesView::figureTitle() const
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    QString title = tr("Queries, keys and values as three spaces");
    if (current.count > 1)
        title += tr(" — head %1 of %2").arg(current.index + 1).arg(current.count);
    return title;
}

void ThreeSpacesView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    renderFigureRow(device, size, figureTitle(), {m_views[0], m_views[1], m_views[2]});
}

} // namespace qkv::ui
