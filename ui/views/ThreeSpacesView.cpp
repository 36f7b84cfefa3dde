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
    const std::shared_ptr<const AttentionResult> result = m_document->result();
    const int heads = result ? static_cast<int>(result->heads.size()) : 0;
    QString title = tr("Queries, keys and values as three spaces");
    if (heads > 1)
        title +=
            tr(" — head %1 of %2").arg(std::clamp(m_document->currentHead(), 0, heads - 1) + 1).arg(heads);
    return title;
}

void ThreeSpacesView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    renderFigureRow(device, size, figureTitle(), {m_views[0], m_views[1], m_views[2]});
}

} // namespace qkv::ui
