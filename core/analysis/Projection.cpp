// SPDX-License-Identifier: GPL-3.0-or-later
#include "Projection.h"

#include "TopEigenpairs.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

// PCA notes:
// * The scatter matrix Xcᵀ Xc (d × d) and the Gram matrix Xc Xcᵀ (n × n) share their non-zero eigenvalues,
//   and an eigenvector u of the Gram matrix gives the axis Xcᵀ u; the smaller of the two is decomposed.
// * Rows that are not all identical always have a positive variance, so "no variance" is decided exactly
//   (every row equal to the first), not with a tolerance that would hide a small but real spread.
// * Only the two leading eigenpairs are found (TopEigenpairs.h: a block Krylov iteration on the smaller of
//   the scatter and Gram matrices, with a convergence test and the full decomposition as its fallback),
//   not all d of them.
// * Entries are divided by the largest magnitude first, so the squares in the scatter matrix and the
//   variances cannot overflow (entries above ~1e154 would), then the points are scaled back.
// * `explained` is measured on the projected points themselves (‖Xc a‖² / ‖Xc‖²_F), which is the
//   eigenvalue share for an eigenvector and stays honest for the completed second axis of a rank-1 cloud.

namespace qkv {

namespace {

/// Flips the column so that its largest-magnitude component (the first one on ties) is positive.
void fixSign(Matrix& axes, Index column)
{
    Index largest = 0;
    axes.col(column).cwiseAbs().maxCoeff(&largest);
    if (axes(largest, column) < 0.0)
        axes.col(column) *= -1.0;
}

/// A unit vector orthogonal to the unit vector `axis` (d ≥ 2): the unit vector of the coordinate where
/// `axis` is smallest, with its component along `axis` removed.
Vector orthogonalCompletion(const Vector& axis)
{
    Index smallest = 0;
    axis.cwiseAbs().minCoeff(&smallest);
    Vector v = Vector::Unit(axis.size(), smallest);
    v -= axis.dot(v) * axis;
    return v.normalized();
}

bool allRowsEqual(const Matrix& rows)
{
    for (Index r = 1; r < rows.rows(); ++r)
        if (rows.row(r) != rows.row(0))
            return false;
    return true;
}

/// The unit eigenvectors of the two largest eigenvalues of Xcᵀ Xc as columns of a d × 2 matrix (d ≥ 2,
/// at least two distinct rows).
Matrix leadingAxes(const Matrix& centred)
{
    const TopEigenpairs pairs = topScatterEigenpairs(centred);
    Vector first = pairs.vectors.col(0);
    Vector second = pairs.vectors.col(1);

    // A rank-1 cloud (all rows on a line) has no second direction: its eigenvector is rounding noise, so a
    // direction orthogonal to the first is chosen deterministically instead.
    constexpr double rankTolerance = 1e-12;
    if (!(pairs.values[1] > rankTolerance * pairs.values[0])) {
        second = orthogonalCompletion(first);
    } else {
        second -= first.dot(second) * first;
        second.normalize();
    }
    Matrix axes(centred.cols(), 2);
    axes.col(0) = first;
    axes.col(1) = second;
    return axes;
}

} // namespace

bool isLargePcaProblem(Index rows, Index width)
{
    // A few milliseconds of products at SSE2 speed: beyond that the projection runs on a worker, so that
    // the GUI thread does its other work meanwhile instead of waiting for it on every edit.
    constexpr double largeWork = 1 << 23;
    return width > 2 && static_cast<double>(rows) * static_cast<double>(width) *
                                static_cast<double>(std::min(rows, width)) >
                            largeWork;
}

Projection2D pcaProjection(const Matrix& rows)
{
    const Index n = rows.rows();
    const Index d = rows.cols();
    if (d < 1)
        throw std::invalid_argument("pcaProjection: the rows have no columns");

    Projection2D p;
    p.axes = Matrix::Zero(d, 2);
    p.axes(0, 0) = 1.0;
    if (d >= 2)
        p.axes(1, 1) = 1.0;

    const bool noVariance = n < 2 || allRowsEqual(rows);
    if (noVariance) {
        // Subtracting the first row (not a rounded mean) puts identical points exactly at the origin.
        p.mean = n > 0 ? Vector(rows.row(0).transpose()) : Vector::Zero(d);
        p.points = Matrix::Zero(n, 2);
        return p;
    }

    // In units of the largest magnitude, so that no square and no sum overflows (see the notes above).
    const double magnitude = rows.cwiseAbs().maxCoeff();
    const Matrix unit = rows / magnitude;
    const Vector unitMean = unit.colwise().mean().transpose();
    const Matrix centred = unit.rowwise() - unitMean.transpose();
    p.mean = unitMean * magnitude;
    if (d >= 2) {
        p.axes = leadingAxes(centred);
        fixSign(p.axes, 0);
        fixSign(p.axes, 1);
    }
    const Matrix unitPoints = centred * p.axes;
    constexpr double largest = std::numeric_limits<double>::max();
    p.points = (unitPoints * magnitude).cwiseMax(-largest).cwiseMin(largest);

    const double total = centred.squaredNorm();
    for (Index k = 0; k < 2; ++k)
        p.explained[k] = std::clamp(unitPoints.col(k).squaredNorm() / total, 0.0, 1.0);
    return p;
}

Projection2D pickDimensions(const Matrix& rows, Index first, Index second)
{
    const Index d = rows.cols();
    for (Index dimension : {first, second})
        if (dimension < 0 || dimension >= d)
            throw std::out_of_range("pickDimensions: dimension " + std::to_string(dimension) +
                                    " is outside [0, " + std::to_string(d) + ")");

    Projection2D p;
    p.mean = Vector::Zero(d);
    p.axes = Matrix::Zero(d, 2);
    p.axes(first, 0) = 1.0;
    p.axes(second, 1) = 1.0;
    p.points.resize(rows.rows(), 2);
    p.points.col(0) = rows.col(first);
    p.points.col(1) = rows.col(second);

    const double magnitude = rows.size() > 0 ? rows.cwiseAbs().maxCoeff() : 0.0;
    if (magnitude > 0.0) {
        const Matrix unit = rows / magnitude; // no square overflows
        const Eigen::RowVectorXd columnMeans = unit.colwise().mean();
        const Eigen::RowVectorXd variances = (unit.rowwise() - columnMeans).colwise().squaredNorm();
        const double total = variances.sum();
        if (total > 0.0) {
            p.explained[0] = std::clamp(variances(first) / total, 0.0, 1.0);
            p.explained[1] = std::clamp(variances(second) / total, 0.0, 1.0);
        }
    }
    return p;
}

Matrix projectRows(const Projection2D& projection, const Matrix& rows)
{
    if (rows.cols() != projection.mean.size())
        throw std::invalid_argument("projectRows: the rows have " + std::to_string(rows.cols()) +
                                    " columns, the projection expects " +
                                    std::to_string(projection.mean.size()));
    Matrix out = (rows.rowwise() - projection.mean.transpose()) * projection.axes;
    return out;
}

Matrix stackRows(const Matrix& a, const Matrix& b)
{
    if (a.rows() == 0)
        return b;
    if (b.rows() == 0)
        return a;
    if (a.cols() != b.cols())
        throw std::invalid_argument("stackRows: widths " + std::to_string(a.cols()) + " and " +
                                    std::to_string(b.cols()) + " differ");
    Matrix out(a.rows() + b.rows(), a.cols());
    out.topRows(a.rows()) = a;
    out.bottomRows(b.rows()) = b;
    return out;
}

} // namespace qkv
