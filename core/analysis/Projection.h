// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Two-dimensional views of high-dimensional rows (queries, keys, values, outputs): principal component
/// analysis or two chosen coordinates. Both are affine maps p = (x − mean) · axes, so a point projected with
/// the same map keeps its place among the others (a convex combination stays a convex combination).

#include "EigenTypes.h"

namespace qkv {

/// An affine map from d dimensions to the plane and the rows it was made from.
struct Projection2D {
    Matrix points;                    ///< the input rows projected: rows × 2, (row − mean) · axes
    double explained[2] = {0.0, 0.0}; ///< fraction of the total variance along each axis, in [0, 1]
    Vector mean;                      ///< d; the centre that is subtracted (zero for pickDimensions)
    Matrix axes; ///< d × 2; the columns are the two directions (a zero column when d = 1)
};

/// Whether pcaProjection of `rows` × `width` takes long enough (a few milliseconds and more: the scatter
/// matrix it forms costs rows · width · min(rows, width)) to be run off the GUI thread.
bool isLargePcaProblem(Index rows, Index width);

/// Principal component analysis of the rows (n × d, n ≥ 0, d ≥ 1).
///
/// The rows are centred and the axes are the two leading eigenvectors of their scatter matrix, in
/// descending order of variance, each with its largest-magnitude component made positive (so the same
/// cloud gives the same picture however its rows are ordered or mirrored). `explained` is each axis's share
/// of the total variance. Special cases: d = 1 gives a zero second axis with explained 0; rows with no
/// variance (one row, or identical rows) give the first two unit vectors with explained 0; a cloud of rank
/// 1 gets a second axis orthogonal to the first. d = 2 is still PCA (a rotation of the plane); a caller
/// that wants raw coordinates uses pickDimensions. Only the two leading eigenpairs are computed
/// (topScatterEigenpairs), not a full eigendecomposition.
/// @throws std::invalid_argument when d = 0
Projection2D pcaProjection(const Matrix& rows);

/// The raw coordinates `first` and `second` of each row: axes are those unit vectors, the mean is zero,
/// and `explained` is each coordinate's share of the total variance over all d coordinates (0 when there
/// is no variance).
/// @throws std::out_of_range when a dimension is not in [0, d)
Projection2D pickDimensions(const Matrix& rows, Index first, Index second);

/// Projects more rows (k × d) with the same map: (rows − mean) · axes, k × 2.
/// @throws std::invalid_argument when the width differs from the projection's d
Matrix projectRows(const Projection2D& projection, const Matrix& rows);

/// The rows of a above the rows of b (for example Q ∪ K, to show queries and keys in one plane).
/// @throws std::invalid_argument when both have rows and their widths differ
Matrix stackRows(const Matrix& a, const Matrix& b);

} // namespace qkv
