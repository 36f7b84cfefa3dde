// SPDX-License-Identifier: GPL-3.0-or-later
#include "Geometry.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace qkv {

namespace {

/// (a − o) × (b − o): positive when o → a → b turns counter-clockwise.
double cross(double ox, double oy, double ax, double ay, double bx, double by)
{
    return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox);
}

/// Distance from p to the segment [a, b] (a may equal b).
double segmentDistance(const Eigen::Vector2d& a, const Eigen::Vector2d& b, const Eigen::Vector2d& p)
{
    const Eigen::Vector2d ab = b - a;
    const double length2 = ab.squaredNorm();
    const double t = length2 > 0.0 ? std::clamp((p - a).dot(ab) / length2, 0.0, 1.0) : 0.0;
    return (p - (a + t * ab)).norm();
}

} // namespace

std::vector<Index> convexHull(const Matrix& points2D)
{
    if (points2D.cols() != 2)
        throw std::invalid_argument("convexHull: the points need 2 columns");
    const auto x = [&points2D](Index r) { return points2D(r, 0); };
    const auto y = [&points2D](Index r) { return points2D(r, 1); };

    std::vector<Index> order(static_cast<std::size_t>(points2D.rows()));
    std::iota(order.begin(), order.end(), Index(0));
    // Stable, so that among duplicates the first row comes first and is the one kept.
    std::stable_sort(order.begin(), order.end(),
                     [&](Index a, Index b) { return x(a) < x(b) || (x(a) == x(b) && y(a) < y(b)); });
    order.erase(std::unique(order.begin(), order.end(),
                            [&](Index a, Index b) { return x(a) == x(b) && y(a) == y(b); }),
                order.end());
    if (order.size() <= 1)
        return order;

    // Andrew's monotone chain; popping on cross ≤ 0 drops collinear points.
    std::vector<Index> hull(2 * order.size());
    std::size_t h = 0;
    const auto turnsLeft = [&](std::size_t top, Index next) {
        const Index o = hull[top - 2];
        const Index a = hull[top - 1];
        return cross(x(o), y(o), x(a), y(a), x(next), y(next)) > 0.0;
    };
    for (Index i : order) { // lower chain, left to right
        while (h >= 2 && !turnsLeft(h, i))
            --h;
        hull[h++] = i;
    }
    const std::size_t lowerSize = h + 1;
    for (auto it = order.rbegin() + 1; it != order.rend(); ++it) { // upper chain, right to left
        while (h >= lowerSize && !turnsLeft(h, *it))
            --h;
        hull[h++] = *it;
    }
    hull.resize(h - 1); // the last point is the first again
    return hull;
}

bool insideOrOnHull(const Matrix& points2D, const std::vector<Index>& hull, const RowVector& p,
                    double tolerance)
{
    if (p.size() != 2)
        throw std::invalid_argument("insideOrOnHull: the point needs 2 components");
    if (points2D.cols() != 2)
        throw std::invalid_argument("insideOrOnHull: the points need 2 columns");
    for (Index index : hull)
        if (index < 0 || index >= points2D.rows())
            throw std::invalid_argument("insideOrOnHull: a hull index is out of range");
    if (hull.empty())
        return false;

    const auto vertex = [&](std::size_t k) {
        return Eigen::Vector2d(points2D(hull[k], 0), points2D(hull[k], 1));
    };
    const Eigen::Vector2d q(p(0), p(1));
    if (hull.size() <= 2)
        return segmentDistance(vertex(0), vertex(hull.size() - 1), q) <= tolerance;

    for (std::size_t k = 0; k < hull.size(); ++k) {
        const Eigen::Vector2d a = vertex(k);
        const Eigen::Vector2d b = vertex((k + 1) % hull.size());
        const Eigen::Vector2d edge = b - a;
        // Signed distance of q from the edge's line, positive on the inner (left) side.
        const double distance = (edge.x() * (q.y() - a.y()) - edge.y() * (q.x() - a.x())) / edge.norm();
        if (!(distance >= -tolerance))
            return false;
    }
    return true;
}

} // namespace qkv
