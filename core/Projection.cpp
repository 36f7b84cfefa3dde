#include "Projection.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

// PCA notes:
// * The scatter matrix Xcᵀ Xc (d × d) and the Gram matrix Xc Xcᵀ (n × n) share their non-zero eigenvalues,
//   and an eigenvector u of the Gram matrix gives the axis Xcᵀ u; the smaller of the two is decomposed.
// * Rows that are not all identical always have a positive variance, so "no variance" is decided exactly
//   (every row equal to the first), not with a tolerance that would hide a small but real spread.
// * Up to 256 rows or dimensions the smaller eigenproblem is solved exactly; larger clouds (a d_k = 4096
//   session) get the two leading eigenvectors by block subspace iteration with Rayleigh–Ritz steps, O(n·d)
//   per step instead of O(min(n, d)³), stopped when both Ritz pairs' residuals are below 1e-8 of λ₁, when
//   the two Ritz values stop changing (to 1e-9 of λ₁), or after 40 steps: then the leading eigenvalues are so
//   close that any plane in their span is as good a picture (its `explained` shares are still measured
//   exactly on the points).
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

/// The two leading eigenpairs of Xcᵀ Xc: eigenvalues and unit eigenvectors (d × 2, largest first).
struct LeadingPairs {
    double lambda1 = 0.0;
    double lambda2 = 0.0;
    Vector first;
    Vector second;
};

LeadingPairs exactLeadingPairs(const Matrix& centred)
{
    const Index n = centred.rows();
    const Index d = centred.cols();
    LeadingPairs pairs;
    if (n >= d) {
        const Matrix scatter = centred.transpose() * centred;
        const Eigen::SelfAdjointEigenSolver<Matrix> solver(scatter);
        pairs.lambda1 = solver.eigenvalues()(d - 1);
        pairs.lambda2 = solver.eigenvalues()(d - 2);
        pairs.first = solver.eigenvectors().col(d - 1);
        pairs.second = solver.eigenvectors().col(d - 2);
    } else {
        const Matrix gram = centred * centred.transpose();
        const Eigen::SelfAdjointEigenSolver<Matrix> solver(gram);
        pairs.lambda1 = solver.eigenvalues()(n - 1);
        pairs.lambda2 = solver.eigenvalues()(n - 2);
        pairs.first = (centred.transpose() * solver.eigenvectors().col(n - 1)).normalized();
        pairs.second = centred.transpose() * solver.eigenvectors().col(n - 2);
    }
    return pairs;
}

/// Block subspace iteration on Xcᵀ Xc (never formed) from a fixed start, so the same cloud always gives the
/// same axes. The block of 10 makes the convergence rate of the second pair λ₁₁/λ₂ rather than λ₃/λ₂.
LeadingPairs iterativeLeadingPairs(const Matrix& centred)
{
    const Index d = centred.cols();
    const Index block = std::min<Index>({10, d, centred.rows()});
    Matrix basis(d, block);
    std::uint64_t state = 0x9E3779B97F4A7C15ull; // a fixed LCG start: deterministic, not random
    for (Index c = 0; c < block; ++c)
        for (Index r = 0; r < d; ++r) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            basis(r, c) = static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5;
        }
    basis = Eigen::HouseholderQR<Matrix>(basis).householderQ() * Matrix::Identity(d, block);

    LeadingPairs pairs;
    double previous1 = 0.0;
    double previous2 = 0.0;
    constexpr int maxIterations = 40;
    for (int iteration = 0; iteration < maxIterations; ++iteration) {
        const Matrix image = centred.transpose() * (centred * basis); // (Xcᵀ Xc) · basis
        const Matrix small = basis.transpose() * image;               // Rayleigh quotient, block × block
        const Eigen::SelfAdjointEigenSolver<Matrix> solver(small);
        const Matrix ritz = basis * solver.eigenvectors();
        const Matrix imageRitz = image * solver.eigenvectors();
        pairs.lambda1 = solver.eigenvalues()(block - 1);
        pairs.lambda2 = solver.eigenvalues()(block - 2);
        pairs.first = ritz.col(block - 1);
        pairs.second = ritz.col(block - 2);
        const double residual1 = (imageRitz.col(block - 1) - pairs.lambda1 * pairs.first).norm();
        const double residual2 = (imageRitz.col(block - 2) - pairs.lambda2 * pairs.second).norm();
        // The Ritz values settle long before the vectors when λ₁ ≈ λ₂ (then the plane is what matters).
        const bool settled = std::abs(pairs.lambda1 - previous1) <= 1e-9 * pairs.lambda1 &&
                             std::abs(pairs.lambda2 - previous2) <= 1e-9 * pairs.lambda1;
        if (std::max(residual1, residual2) <= 1e-8 * pairs.lambda1 || settled)
            break;
        previous1 = pairs.lambda1;
        previous2 = pairs.lambda2;
        basis = Eigen::HouseholderQR<Matrix>(imageRitz).householderQ() * Matrix::Identity(d, block);
    }
    return pairs;
}

/// The unit eigenvectors of the two largest eigenvalues of Xcᵀ Xc as columns of a d × 2 matrix (d ≥ 2,
/// at least two distinct rows).
Matrix leadingAxes(const Matrix& centred)
{
    LeadingPairs pairs = std::min(centred.rows(), centred.cols()) <= largestExactPcaProblem
                             ? exactLeadingPairs(centred)
                             : iterativeLeadingPairs(centred);
    Vector& first = pairs.first;
    Vector& second = pairs.second;

    // A rank-1 cloud (all rows on a line) has no second direction: its eigenvector is rounding noise, so a
    // direction orthogonal to the first is chosen deterministically instead.
    constexpr double rankTolerance = 1e-12;
    if (!(pairs.lambda2 > rankTolerance * pairs.lambda1)) {
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
