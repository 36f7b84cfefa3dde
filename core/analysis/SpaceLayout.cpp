// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpaceLayout.h"

#include "Geometry.h"
#include "Positions.h"
#include "Projection.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace qkv {

namespace {

struct PlaneMap {
    Projection2D projection;
    std::string xLabel;
    std::string yLabel;
};

std::string percentLabel(int component, double fraction)
{
    char text[64];
    std::snprintf(text, sizeof text, "PC%d (%.1f%% of variance)", component, 100.0 * fraction);
    return text;
}

/// The raw coordinate `first`; the second coordinate is 0 (d = 1 has no second dimension).
Projection2D singleDimension(const Matrix& rows, Index first)
{
    Projection2D p = pickDimensions(rows, first, first);
    p.axes.col(1).setZero();
    p.points.col(1).setZero();
    p.explained[1] = 0.0;
    return p;
}

/// The map that puts `rows` (the points the map is fitted on) in the plane, and its axis labels.
/// `prefix` names the coordinates ("q/k", "v").
PlaneMap fitPlane(const Matrix& rows, const PlaneOptions& options, const std::string& prefix)
{
    const Index d = rows.cols();
    if (d < 1)
        throw std::invalid_argument("the " + prefix + " rows have no columns");
    const auto dimension = [&](Index k) { return prefix + " dimension " + std::to_string(k); };
    const std::string noSecond = "(" + prefix + " has one dimension)";

    if (options.mode == PlaneMode::RopePair)
        throw std::invalid_argument("RoPE pairs are a plane of queries and keys, not of " + prefix +
                                    " alone");
    PlaneMap map;
    const bool pca = options.mode == PlaneMode::Pca || (options.mode == PlaneMode::Automatic && d > 2);
    if (pca) {
        map.projection = pcaProjection(rows);
        map.xLabel = percentLabel(1, map.projection.explained[0]);
        map.yLabel = d >= 2 ? percentLabel(2, map.projection.explained[1]) : noSecond;
        return map;
    }
    const Index first = options.mode == PlaneMode::PickedDimensions ? options.first : 0;
    const Index second = options.mode == PlaneMode::PickedDimensions ? options.second : 1;
    if (d == 1) {
        map.projection = singleDimension(rows, first);
        map.yLabel = noSecond;
    } else {
        map.projection = pickDimensions(rows, first, second);
        map.yLabel = dimension(second);
    }
    map.xLabel = dimension(first);
    return map;
}

/// Rows turned back by −p · angle in the plane of their two columns (row p at position p).
Matrix turnedBack(const Matrix& points, double angle)
{
    Matrix turned(points.rows(), 2);
    for (Index p = 0; p < points.rows(); ++p) {
        const double a = -static_cast<double>(p) * angle;
        const double c = std::cos(a), s = std::sin(a);
        turned(p, 0) = points(p, 0) * c - points(p, 1) * s;
        turned(p, 1) = points(p, 0) * s + points(p, 1) * c;
    }
    return turned;
}

/// The RopePair plane: pair `options.first`'s two coordinates of the rotated Q and K, and before rotation.
QueryKeyPlane ropePairPlane(const HeadResult& head, const PlaneOptions& options)
{
    const Index d = head.Q.cols();
    const Index pairs = d / 2;
    const Index pair = options.first;
    if (pair < 0 || pair >= pairs)
        throw std::out_of_range("RoPE pair " + std::to_string(pair) + " outside [0, " +
                                std::to_string(pairs) + ") for d_k = " + std::to_string(d));
    const bool half = options.pairing == RopePairing::Half;
    const Index x = half ? pair : 2 * pair, y = half ? pair + pairs : 2 * pair + 1;
    QueryKeyPlane plane;
    // The engine's own frequency (Positions.cpp: applyRope).
    plane.pairAngle =
        ropeFrequencies(d, options.ropeBase, options.ropeScaling)[static_cast<std::size_t>(pair)];
    const auto columns = [x, y](const Matrix& rows) {
        Matrix two(rows.rows(), 2);
        two.col(0) = rows.col(x);
        two.col(1) = rows.col(y);
        return two;
    };
    plane.queries = columns(head.Q);
    plane.keys = columns(head.K);
    plane.unrotatedQueries = turnedBack(plane.queries, plane.pairAngle);
    plane.unrotatedKeys = turnedBack(plane.keys, plane.pairAngle);
    char angle[48];
    std::snprintf(angle, sizeof angle, "%.4g", plane.pairAngle);
    const std::string pairText =
        " (RoPE pair " + std::to_string(pair) + ", turned " + angle + " rad a position)";
    plane.xLabel = "q/k dimension " + std::to_string(x) + pairText;
    plane.yLabel = "q/k dimension " + std::to_string(y);
    return plane;
}

} // namespace

QueryKeyPlane queryKeyPlane(const HeadResult& head, const PlaneOptions& options)
{
    if (head.Q.cols() != head.K.cols())
        throw std::invalid_argument("queryKeyPlane: Q has " + std::to_string(head.Q.cols()) +
                                    " columns and K has " + std::to_string(head.K.cols()));
    if (options.mode == PlaneMode::RopePair)
        return ropePairPlane(head, options);
    // One map for both: fitted on Q ∪ K, so a query near a key in the plane is near it in d_k dimensions
    // as far as the projection can tell.
    const Matrix both = stackRows(head.Q, head.K);
    PlaneMap map = fitPlane(both.rows() > 0 ? both : Matrix(0, head.Q.cols()), options, "q/k");
    QueryKeyPlane plane;
    plane.queries = map.projection.points.topRows(head.Q.rows());
    plane.keys = map.projection.points.bottomRows(head.K.rows());
    plane.xLabel = std::move(map.xLabel);
    plane.yLabel = std::move(map.yLabel);
    return plane;
}

RowPlane rowPlane(const HeadResult& head, HeadRows which, const PlaneOptions& options)
{
    const Matrix& rows = which == HeadRows::Queries ? head.Q : which == HeadRows::Keys ? head.K : head.V;
    PlaneMap map = fitPlane(rows, options,
                            which == HeadRows::Queries ? "q"
                            : which == HeadRows::Keys  ? "k"
                                                       : "v");
    RowPlane plane;
    plane.points = std::move(map.projection.points);
    plane.xLabel = std::move(map.xLabel);
    plane.yLabel = std::move(map.yLabel);
    return plane;
}

ValuePlane valuePlane(const HeadResult& head, const PlaneOptions& options)
{
    if (head.output.rows() > 0 && head.output.cols() != head.V.cols())
        throw std::invalid_argument("valuePlane: V has " + std::to_string(head.V.cols()) +
                                    " columns and the output has " + std::to_string(head.output.cols()));
    // Fitted on V alone: the outputs are placed with the values' map, never pulling the axes their way.
    PlaneMap map = fitPlane(head.V, options, "v");
    ValuePlane plane;
    plane.values = map.projection.points;
    plane.outputs = head.output.rows() > 0 ? projectRows(map.projection, head.output) : Matrix(0, 2);
    plane.hull = convexHull(plane.values);
    plane.xLabel = std::move(map.xLabel);
    plane.yLabel = std::move(map.yLabel);
    return plane;
}

} // namespace qkv
