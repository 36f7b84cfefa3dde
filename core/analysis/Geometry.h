// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Plane geometry for the projection views: the convex hull of projected value vectors, inside which every
/// output of a normalizer whose rows sum to 1 must lie.

#include "EigenTypes.h"

#include <vector>

namespace qkv {

/// The vertices of the convex hull of the rows of `points2D` (k × 2), as row indices in counter-clockwise
/// order starting from the lowest-x (then lowest-y) point (Andrew's monotone chain). Points on an edge are
/// not vertices; of duplicate points the first row is used. One distinct point gives one index, and two
/// distinct points or any all-collinear input give the two extreme points. Empty input gives an empty hull.
/// @throws std::invalid_argument when `points2D` does not have 2 columns
std::vector<Index> convexHull(const Matrix& points2D);

/// Whether p (2 components) lies inside or on the hull returned by convexHull(points2D), allowing
/// `tolerance` (≥ 0) of distance outside it: within `tolerance` of the point or segment for a hull of one or
/// two vertices, otherwise at most `tolerance` outside the line of every edge. An empty hull contains
/// nothing.
/// @throws std::invalid_argument when p does not have 2 components or an index is out of range
bool insideOrOnHull(const Matrix& points2D, const std::vector<Index>& hull, const RowVector& p,
                    double tolerance);

} // namespace qkv
