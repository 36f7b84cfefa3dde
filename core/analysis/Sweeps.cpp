// SPDX-License-Identifier: GPL-3.0-or-later
#include "Sweeps.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "Normalizers.h"
#include "Parallel.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace qkv {

namespace {

constexpr int statistics = 3; // entropy, support, top weight

void checkRow(const HeadResult& head, Index row)
{
    if (row < 0 || row >= head.scaled.rows())
        throw std::out_of_range("sweep: row " + std::to_string(row) + " of " +
                                std::to_string(head.scaled.rows()));
    if (head.allowed.rows() != head.scaled.rows() || head.allowed.cols() != head.scaled.cols())
        throw std::invalid_argument("sweep: the mask does not have the scores' shape");
}

void checkTemperature(double temperature)
{
    if (!(std::isfinite(temperature) && temperature > 0))
        throw std::invalid_argument("sweep: the temperature must be a finite positive number");
}

/// One point of the sweep: a normalizer at a temperature.
struct Point {
    NormalizerSpec spec;
    double temperature;
};

/// Every point (normalizer-major, `parameters` per curve) for row `row`, and averaged over the rows.
SweepResult sweep(const HeadResult& head, Index row, const std::vector<Point>& points,
                  const std::vector<SweepCurve>& curves, std::size_t parameters, Index meanRowLimit,
                  const std::atomic<bool>* cancel)
{
    const Index rowCount = head.scaled.rows();
    // The rows the mean is over: all, or `meanRowLimit` of them evenly spread.
    const bool sampled = meanRowLimit > 0 && rowCount > meanRowLimit;
    const Index n = sampled ? meanRowLimit : rowCount;
    const auto rowAt = [&](Index k) {
        return sampled ? static_cast<Index>(double(k) * double(rowCount) / double(n)) : k;
    };
    const Index m = head.scaled.cols();
    const std::size_t count = points.size();

    // Statistics of one row at every point, written into `stats` (count × 3).
    const auto measure = [&](Index i, std::vector<double>& stats, RowVector& out,
                             NormalizerScratch& scratch) {
        const double* scaled = head.scaled.row(i).data(); // rows of row-major matrices are contiguous
        const std::uint8_t* allowed = head.allowed.row(i).data();
        for (std::size_t p = 0; p < count; ++p) {
            const NormalizerTrace trace =
                normalizeRow(points[p].spec, scaled, allowed, m, points[p].temperature, out.data(), scratch);
            const RowStats rs = rowStatistics(out.data(), m, trace.entropy);
            stats[p * statistics + 0] = rs.entropy;
            stats[p * statistics + 1] = static_cast<double>(rs.support);
            stats[p * statistics + 2] = rs.max;
        }
    };

    // The mean: chunks of rows summed on their own, then added in chunk order (the same sum whatever the
    // number of threads).
    const Index grain = 16;
    const Index chunks = n == 0 ? 0 : (n + grain - 1) / grain;
    std::vector<std::vector<double>> partial(static_cast<std::size_t>(chunks),
                                             std::vector<double>(count * statistics, 0.0));
    std::vector<Index> partialRows(static_cast<std::size_t>(chunks), 0);
    parallelFor(n, grain, [&](Index begin, Index end) {
        std::vector<double> stats(count * statistics);
        RowVector out(m);
        NormalizerScratch scratch;
        const auto chunk = static_cast<std::size_t>(begin / grain);
        for (Index k = begin; k < end; ++k) {
            if (cancel && cancel->load(std::memory_order_relaxed))
                throw Cancelled();
            const Index i = rowAt(k);
            if (!head.allowed.row(i).any())
                continue; // an empty row's zeros say nothing about the head
            measure(i, stats, out, scratch);
            for (std::size_t s = 0; s < stats.size(); ++s)
                partial[chunk][s] += stats[s];
            ++partialRows[chunk];
        }
    });

    std::vector<double> total(count * statistics, 0.0);
    SweepResult result;
    result.sampledRows = sampled;
    for (std::size_t c = 0; c < partial.size(); ++c) {
        for (std::size_t s = 0; s < total.size(); ++s)
            total[s] += partial[c][s];
        result.nonEmptyRows += partialRows[c];
    }
    std::vector<double> rowStats(count * statistics);
    {
        RowVector out(m);
        NormalizerScratch scratch;
        measure(row, rowStats, out, scratch);
    }

    result.row = curves;
    result.mean = curves;
    const double rows = result.nonEmptyRows > 0 ? static_cast<double>(result.nonEmptyRows) : 1.0;
    for (std::size_t k = 0; k < curves.size(); ++k) {
        for (SweepCurve* curve : {&result.row[k], &result.mean[k]}) {
            const bool mean = curve == &result.mean[k];
            const std::vector<double>& source = mean ? total : rowStats;
            const double divisor = mean ? rows : 1.0;
            for (std::size_t q = 0; q < parameters; ++q) {
                const std::size_t p = k * parameters + q;
                curve->entropy.push_back(source[p * statistics + 0] / divisor);
                curve->support.push_back(source[p * statistics + 1] / divisor);
                curve->topWeight.push_back(source[p * statistics + 2] / divisor);
            }
        }
    }
    return result;
}

} // namespace

std::vector<double> logGrid(double from, double to, int points)
{
    if (!(std::isfinite(from) && std::isfinite(to) && from > 0 && to > 0) || points < 2)
        throw std::invalid_argument("logGrid: the bounds must be finite positive numbers and points ≥ 2");
    std::vector<double> grid(static_cast<std::size_t>(points));
    const double a = std::log10(from), b = std::log10(to);
    for (int k = 0; k < points; ++k)
        grid[static_cast<std::size_t>(k)] = std::pow(10.0, a + (b - a) * k / (points - 1));
    grid.front() = from; // exact ends, whatever pow rounds to
    grid.back() = to;
    return grid;
}

std::vector<double> linearGrid(double from, double to, int points)
{
    if (!(std::isfinite(from) && std::isfinite(to)) || points < 2)
        throw std::invalid_argument("linearGrid: the bounds must be finite numbers and points ≥ 2");
    std::vector<double> grid(static_cast<std::size_t>(points));
    for (int k = 0; k < points; ++k)
        grid[static_cast<std::size_t>(k)] = from + (to - from) * k / (points - 1);
    grid.back() = to;
    return grid;
}

std::vector<NormalizerSpec> sweepNormalizers(const NormalizerSpec& session)
{
    const double alpha = session.type == NormalizerType::Entmax ? session.alpha : 1.5;
    return {{NormalizerType::Softmax, alpha},
            {NormalizerType::Sparsemax, alpha},
            {NormalizerType::Entmax, alpha},
            {NormalizerType::Sigmoid, alpha},
            {NormalizerType::Hardmax, alpha}};
}

std::string normalizerLabel(const NormalizerSpec& spec)
{
    if (spec.type != NormalizerType::Entmax)
        return toString(spec.type);
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%.4g", spec.alpha);
    return std::string(alpha) + "-entmax";
}

SweepResult sweepTemperature(const HeadResult& head, Index row,
                             const std::vector<NormalizerSpec>& normalizers,
                             const std::vector<double>& temperatures, Index meanRowLimit,
                             const std::atomic<bool>* cancel)
{
    checkRow(head, row);
    for (double temperature : temperatures)
        checkTemperature(temperature);
    std::vector<Point> points;
    std::vector<SweepCurve> curves;
    for (const NormalizerSpec& spec : normalizers) {
        curves.push_back({normalizerLabel(spec), spec, {}, {}, {}});
        for (double temperature : temperatures)
            points.push_back({spec, temperature});
    }
    SweepResult result = sweep(head, row, points, curves, temperatures.size(), meanRowLimit, cancel);
    result.parameter = temperatures;
    return result;
}

SweepResult sweepAlpha(const HeadResult& head, Index row, double temperature,
                       const std::vector<double>& alphas, Index meanRowLimit, const std::atomic<bool>* cancel)
{
    checkRow(head, row);
    checkTemperature(temperature);
    std::vector<Point> points;
    for (double alpha : alphas) {
        if (!(std::isfinite(alpha) && alpha >= 1.0))
            throw std::invalid_argument("sweepAlpha: α must be a finite number ≥ 1");
        points.push_back({{NormalizerType::Entmax, alpha}, temperature});
    }
    SweepResult result = sweep(head, row, points, {{"entmax", {NormalizerType::Entmax, 1.5}, {}, {}, {}}},
                               alphas.size(), meanRowLimit, cancel);
    result.parameter = alphas;
    return result;
}

} // namespace qkv
