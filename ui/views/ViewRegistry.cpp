// SPDX-License-Identifier: GPL-3.0-or-later
#include "ViewRegistry.h"

#include "HeadOverview.h"
#include "Heatmap.h"
#include "MathPanel.h"
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

namespace qkv::ui {

namespace {

// A view that is itself one figure (a QWidget subclass taking the document and a parent).
template <typename View> RegisteredView single(const QString& id, const QString& title)
{
    return {id, title, [](Document* document, QWidget* parent) { return new View(document, parent); },
            [](QWidget* view) { return QList<const Figure*>{static_cast<View*>(view)}; }};
}

} // namespace

// To add a view that is itself a Figure, add `single<TheView>(id, title)` here and place it in the window
// (MainWindow::createDocks). Figure names must be unique: they are file names and `qkvlab export --view`
// names.
QList<RegisteredView> ViewRegistry::views()
{
    const RegisteredView results{
        QStringLiteral("results"), tr("Results"),
        [](Document* document, QWidget* parent) { return new ResultViews(document, parent); },
        [](QWidget* view) {
            const auto* resultViews = static_cast<ResultViews*>(view);
            QList<const Figure*> figures;
            for (Heatmap* map : resultViews->heatmaps())
                figures << map;
            figures << resultViews->pipeline();
            return figures;
        }};
    return {results,
            single<QueryKeySpaceView>(QStringLiteral("qk_space"), tr("Q/K Space")),
            single<ValueSpaceView>(QStringLiteral("v_space"), tr("Values")),
            single<ThreeSpacesView>(QStringLiteral("spaces"), tr("Q, K, V")),
            single<MathPanel>(QStringLiteral("math"), tr("Step by Step")),
            single<HeadOverview>(QStringLiteral("heads"), tr("Heads")),
            single<NormalizerComparisonView>(QStringLiteral("normalizers"), tr("Normalizers")),
            single<SweepView>(QStringLiteral("sweep"), tr("Sweeps")),
            single<VarianceView>(QStringLiteral("variance"), tr("√d_k Variance")),
            single<SaturationView>(QStringLiteral("saturation"), tr("Saturation")),
            single<ScalingView>(QStringLiteral("scaling"), tr("Scaled vs Unscaled")),
            single<SnapshotDiffView>(QStringLiteral("diff"), tr("Snapshots"))};
}

RegisteredView ViewRegistry::view(const QString& id)
{
    for (const RegisteredView& view : views())
        if (view.id == id)
            return view;
    Q_ASSERT_X(false, "ViewRegistry::view", "no view with this id");
    return {};
}

} // namespace qkv::ui
