#include "FigureCatalog.h"

#include "Document.h"
#include "Figure.h"
#include "HeadOverview.h"
#include "Heatmap.h"
#include "MathPanel.h"
#include "ModelView.h"
#include "NormalizerComparisonView.h"
#include "PipelineView.h"
#include "QueryKeySpaceView.h"
#include "ResultViews.h"
#include "SaturationView.h"
#include "ScalingView.h"
#include "SnapshotDiffView.h"
#include "SweepView.h"
#include "ThreeSpacesView.h"
#include "ValueSpaceView.h"
#include "VarianceView.h"

#include <QWidget>

namespace qkv::ui {

FigureCatalog::FigureCatalog(Document* document, QObject* parent) : QObject(parent), m_document(document)
{
    registerViews();
}

FigureCatalog::~FigureCatalog() = default;

// ---------------------------------------------------------------------------------------------------------
// The exportable views, one block per kind. To add a view that is itself a Figure (a QWidget subclass taking
// the document):
//
//     add(own(new QkSpacePlots(m_document)));
//
// A view holding several figures: `auto* views = own(new Views(m_document));` then `add(views->...)` for
// each. Figure names must be unique: they are file names and `qkvlab export --view` names.
// ---------------------------------------------------------------------------------------------------------
void FigureCatalog::registerViews()
{
    auto* results = own(new ResultViews(m_document));
    for (Heatmap* map : results->heatmaps())
        add(map);
    add(own(new QueryKeySpaceView(m_document)));
    add(own(new ValueSpaceView(m_document)));
    add(own(new ThreeSpacesView(m_document)));
    add(own(new MathPanel(m_document)));
    add(own(new HeadOverview(m_document)));
    add(own(new NormalizerComparisonView(m_document)));
    add(own(new SweepView(m_document)));
    add(own(new VarianceView(m_document)));
    add(own(new SaturationView(m_document)));
    add(own(new ScalingView(m_document)));
    add(own(new SnapshotDiffView(m_document)));
    add(results->pipeline());
    m_modelView = own(new ModelView);
}

template <typename View> View* FigureCatalog::own(View* view)
{
    view->setAttribute(Qt::WA_DontShowOnScreen);
    view->resize(800, 600);
    m_views.emplace_back(view);
    return view;
}

void FigureCatalog::add(const Figure* figure)
{
    Q_ASSERT(figure && !figure->figureName().isEmpty());
    Q_ASSERT(!this->figure(figure->figureName()));
    if (figure)
        m_figures.append(figure);
}

const Figure* FigureCatalog::figure(const QString& name) const
{
    for (const Figure* candidate : m_figures)
        if (candidate->figureName() == name)
            return candidate;
    return nullptr;
}

QStringList FigureCatalog::names() const
{
    QStringList list;
    for (const Figure* figure : m_figures)
        list.append(figure->figureName());
    return list;
}

} // namespace qkv::ui
