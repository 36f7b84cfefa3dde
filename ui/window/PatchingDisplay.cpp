// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingDisplay.h"

#include "Heatmap.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("PatchingDisplay", text);
}

QStringList prefixed(const QString& prefix, Index count)
{
    QStringList labels;
    for (Index k = 0; k < count; ++k)
        labels << prefix + QString::number(k);
    return labels;
}

} // namespace

QString positionLabel(Index position, const QStringList& tokens)
{
    const QString token = tokens.value(int(position));
    return token.isEmpty() ? QString::number(position) : QStringLiteral("%1 %2").arg(position).arg(token);
}

bool patchCellComputed(const PatchGrid& grid, Index index)
{
    return index < grid.done && std::size_t(index) < grid.values.size() &&
           std::size_t(index) < grid.normalized.size();
}

PatchGridSlice patchGridSlice(const PatchGrid& grid, Index depth, const QStringList& tokens)
{
    PatchGridSlice slice;
    slice.normalized = Matrix::Zero(grid.rows, grid.cols);
    slice.raw = Matrix::Zero(grid.rows, grid.cols);
    slice.computed = MaskMatrix::Zero(grid.rows, grid.cols);
    const Index k = std::clamp<Index>(depth, 0, std::max<Index>(0, grid.depth - 1));
    for (Index row = 0; row < grid.rows; ++row)
        for (Index column = 0; column < grid.cols; ++column) {
            const Index index = grid.index(row, column, k);
            if (!patchCellComputed(grid, index))
                continue;
            const double raw = grid.values[std::size_t(index)];
            const double normalized = grid.normalized[std::size_t(index)];
            if (!std::isfinite(raw) || !std::isfinite(normalized)) {
                ++slice.nonFiniteCells;
                continue;
            }
            slice.raw(row, column) = raw;
            slice.normalized(row, column) = normalized;
            slice.computed(row, column) = 1;
            ++slice.computedCells;
        }
    slice.rowLabels = prefixed(QStringLiteral("L"), grid.rows);
    switch (grid.site) {
    case PatchSite::ResidPre:
    case PatchSite::AttnOut:
    case PatchSite::MlpOut:
        for (Index column = 0; column < grid.cols; ++column)
            slice.columnLabels << positionLabel(grid.firstPosition + column, tokens);
        slice.columnTitle = tr("position");
        break;
    case PatchSite::HeadK:
    case PatchSite::HeadV:
        slice.columnLabels = prefixed(QStringLiteral("KV"), grid.cols);
        slice.columnTitle = tr("key/value head");
        break;
    default:
        slice.columnLabels = prefixed(QStringLiteral("H"), grid.cols);
        slice.columnTitle = tr("head");
        break;
    }
    return slice;
}

double sharedColorRange(const PatchGridSlice& a, const PatchGridSlice& b)
{
    double range = 1.0;
    for (const PatchGridSlice* slice : {&a, &b})
        for (Index row = 0; row < slice->normalized.rows(); ++row)
            for (Index column = 0; column < slice->normalized.cols(); ++column)
                if (slice->isComputed(row, column))
                    range = std::max(range, std::abs(slice->normalized(row, column)));
    return range;
}

QString patchCellDescription(const PatchGridSlice& slice, Index row, Index column, const QString& method)
{
    const QString where =
        QStringLiteral("%1, %2 %3")
            .arg(slice.rowLabels.value(int(row)), slice.columnTitle, slice.columnLabels.value(int(column)));
    if (row < 0 || column < 0 || row >= slice.computed.rows() || column >= slice.computed.cols() ||
        !slice.isComputed(row, column))
        return tr("%1 (%2): not computed").arg(where, method);
    return tr("%1 (%2): m = %3, normalized %4")
        .arg(where, method, Heatmap::formatValue(slice.raw(row, column)),
             Heatmap::formatValue(slice.normalized(row, column)));
}

PatchScatterPoints patchScatterPoints(const PatchGridSlice& exact, const PatchGridSlice& attribution)
{
    PatchScatterPoints points;
    if (exact.computed.rows() != attribution.computed.rows() ||
        exact.computed.cols() != attribution.computed.cols())
        return points;
    for (Index row = 0; row < exact.computed.rows(); ++row)
        for (Index column = 0; column < exact.computed.cols(); ++column)
            if (exact.isComputed(row, column) && attribution.isComputed(row, column)) {
                points.exact << exact.normalized(row, column);
                points.attribution << attribution.normalized(row, column);
                points.labels << exact.rowLabels.value(int(row)) + QLatin1Char(' ') +
                                     exact.columnLabels.value(int(column));
            }
    return points;
}

QString patchSiteTitle(PatchSite site)
{
    return QString::fromStdString(patchSiteName(site));
}

QString patchSiteDescription(PatchSite site)
{
    switch (site) {
    case PatchSite::ResidPre:
        return tr("The residual stream entering each layer, one position at a time (layers × positions)");
    case PatchSite::AttnOut:
        return tr("The attention block's output of each layer, one position at a time (layers × positions)");
    case PatchSite::MlpOut:
        return tr("The MLP's output of each layer, one position at a time (layers × positions)");
    case PatchSite::HeadOut:
        return tr("Each head's output z at every position (layers × heads)");
    case PatchSite::HeadOutPos:
        return tr("Each head's output z at one position (layers × heads × positions: choose the position "
                  "shown)");
    case PatchSite::HeadPattern:
        return tr("Each head's attention weights, with the corrupted run's values (layers × heads)");
    case PatchSite::HeadQ:
        return tr("Each head's queries q (layers × heads)");
    case PatchSite::HeadK:
        return tr("Each key/value head's keys k, for every query head that reads them (layers × key/value "
                  "heads)");
    case PatchSite::HeadV:
        return tr("Each key/value head's values v, for every query head that reads them (layers × key/value "
                  "heads)");
    }
    return QString();
}

} // namespace qkv::ui
