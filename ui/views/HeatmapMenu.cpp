// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeatmapMenu.h"

#include "Heatmap.h"

#include <QActionGroup>

namespace qkv::ui {

HeatmapMenu::HeatmapMenu(Heatmap* heatmap) : QMenu(heatmap), m_heatmap(heatmap)
{
    using ColorScale = Heatmap::ColorScale;
    using ColorMap = Heatmap::ColorMap;
    setObjectName(QStringLiteral("heatmapMenu"));
    const auto add = [](QMenu* menu, QActionGroup* group, const QString& text, const char* name,
                        const QString& tip) {
        QAction* action = menu->addAction(text);
        action->setObjectName(QLatin1String(name));
        action->setStatusTip(tip);
        action->setToolTip(tip);
        action->setCheckable(true);
        group->addAction(action);
        return action;
    };
    QMenu* scales = addMenu(tr("Colour Scale"));
    scales->setObjectName(QStringLiteral("colorScaleMenu"));
    auto* scaleGroup = new QActionGroup(this);
    const struct {
        QString text;
        const char* name;
        ColorScale scale;
        QString tip;
    } scaleEntries[] = {
        {tr("Linear"), "colorScale_linear", ColorScale::Linear,
         tr("The colour map from the smallest value to the largest")},
        {tr("Logarithmic"), "colorScale_logarithmic", ColorScale::Logarithmic,
         tr("From the smallest positive value to the largest: small weights that differ by orders of "
            "magnitude get different colours")},
        {tr("Per Row"), "colorScale_perRow", ColorScale::PerRow,
         tr("Each row divided by its own largest value: where each query looks, however spread its "
            "weights are")},
        {tr("Diverging (Symmetric about 0)"), "colorScale_diverging", ColorScale::Diverging,
         tr("Blue for negative, white at 0, red for positive, the same extent both ways")},
    };
    for (const auto& entry : scaleEntries)
        connect(add(scales, scaleGroup, entry.text, entry.name, entry.tip), &QAction::triggered, this,
                [this, scale = entry.scale] { m_heatmap->setColorScale(scale); });
    QMenu* maps = addMenu(tr("Colour Map"));
    maps->setObjectName(QStringLiteral("colorMapMenu"));
    auto* mapGroup = new QActionGroup(this);
    const struct {
        QString text;
        const char* name;
        ColorMap map;
    } mapEntries[] = {{tr("Viridis"), "colorMap_viridis", ColorMap::Viridis},
                      {tr("Cividis (Colour-Vision Safe)"), "colorMap_cividis", ColorMap::Cividis},
                      {tr("Greyscale (Print)"), "colorMap_greyscale", ColorMap::Greyscale}};
    for (const auto& entry : mapEntries)
        connect(add(maps, mapGroup, entry.text, entry.name, QString()), &QAction::triggered, this,
                [this, map = entry.map] { m_heatmap->setColorMap(map); });
    addSeparator();
    // The keys are handled by keyPressEvent, only named here (not action shortcuts: one set per heatmap).
    const auto addZoom = [this](const QString& text, const char* name) {
        QAction* action = addAction(text);
        action->setObjectName(QLatin1String(name));
        return action;
    };
    connect(addZoom(tr("Zoom In\tCtrl++"), "zoomIn"), &QAction::triggered, this,
            [this] { m_heatmap->zoomBy(0.5); });
    connect(addZoom(tr("Zoom Out\tCtrl+-"), "zoomOut"), &QAction::triggered, this,
            [this] { m_heatmap->zoomBy(2.0); });
    connect(addZoom(tr("Fit\tCtrl+0"), "zoomFit"), &QAction::triggered, m_heatmap, &Heatmap::fitToView);
    refresh();
}

// The checked entries follow the heatmap; what does not apply to its kind of matrix is disabled.
void HeatmapMenu::refresh()
{
    using ColorMode = Heatmap::ColorMode;
    using ColorScale = Heatmap::ColorScale;
    using ColorMap = Heatmap::ColorMap;
    const ColorMode mode = m_heatmap->colorMode();
    const ColorScale scale = m_heatmap->colorScale();
    const ColorMap map = m_heatmap->colorMap();
    const bool binary = mode == ColorMode::Binary;
    const auto check = [this](const char* name, bool checked, bool enabled) {
        if (auto* action = findChild<QAction*>(QLatin1String(name))) {
            action->setChecked(checked);
            action->setEnabled(enabled);
        }
    };
    check("colorScale_linear", scale == ColorScale::Linear, !binary);
    // Logarithmic needs positive values: offered for maps that are not signed by nature.
    check("colorScale_logarithmic", scale == ColorScale::Logarithmic, mode == ColorMode::Sequential);
    check("colorScale_perRow", scale == ColorScale::PerRow, !binary);
    check("colorScale_diverging", scale == ColorScale::Diverging, !binary);
    const bool maps = !binary && scale != ColorScale::Diverging;
    check("colorMap_viridis", map == ColorMap::Viridis, maps);
    check("colorMap_cividis", map == ColorMap::Cividis, maps);
    check("colorMap_greyscale", map == ColorMap::Greyscale, maps);
}

} // namespace qkv::ui
