// SPDX-License-Identifier: GPL-3.0-or-later
#include "TopEigenpairs.h"

#include "MatrixProduct.h"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

// Notes:
// * A block Krylov basis [S, C S, C² S, …] (S the start block) reaches the leading eigenvectors as fast as
//   Lanczos does (far faster than subspace iteration when the leading eigenvalues are close, as they are
//   for Q and K of random weights), and its block finds repeated eigenvalues that one vector cannot.
// * Every new block is orthogonalised against the basis twice (classical Gram–Schmidt twice is as good as
//   orthogonal to working precision); directions that vanish are dropped, and when a whole block vanishes
//   the space it reached is invariant, so fresh start vectors continue the basis elsewhere.
// * The Rayleigh–Ritz step (the eigenproblem of Vᵀ C V) costs k³ at basis size k; it runs after every
//   block while the basis is small and every few blocks as it grows, so its total stays a few k³. It finds
//   only the two vectors it needs (leadingRitzPairs).

namespace qkv {

namespace {

using Columns = Eigen::MatrixXd; // column-major: the basis is read and written by columns

constexpr Index blockSize = 4;
constexpr Index tinyProblem = 8;          // Automatic solves up to this exactly (microseconds)
constexpr Index formedLimit = 1024;       // the operator is formed when its side is at most this
constexpr Index basisLimit = 160;         // basis columns before giving up on convergence
constexpr Index exactFallbackLimit = 512; // largest min(n, d) the full decomposition is the fallback for
constexpr double residualTolerance = 1e-8;

/// Deterministic start vectors: a fixed linear congruential sequence in [−0.5, 0.5).
class StartVectors {
public:
    Columns next(Index rows, Index columns)
    {
        Columns block(rows, columns);
        for (Index c = 0; c < columns; ++c)
            for (Index r = 0; r < rows; ++r) {
                m_state = m_state * 6364136223846793005ull + 1442695040888963407ull;
                block(r, c) = static_cast<double>(m_state >> 11) * 0x1.0p-53 - 0.5;
            }
        return block;
    }

private:
    std::uint64_t m_state = 0x9E3779B97F4A7C15ull;
};

/// The symmetric operator the iteration works with, in its own space.
class ScatterOperator {
public:
    explicit ScatterOperator(const Matrix& centred) : m_centred(centred)
    {
        const Index n = centred.rows(), d = centred.cols();
        // Formed by the engine's products (OpenBLAS): Eigen's own rank update, built for plain x86-64, would
        // be a large part of a plane's time.
        Matrix formed;
        if (d <= n && d <= formedLimit) {
            m_kind = Kind::Scatter;
            const Matrix transposed = centred.transpose();
            formed.resize(d, d);
            multiply<double>(transposed, transposed, formed, Operand::Transposed);
        } else if (n < d && n <= formedLimit) {
            m_kind = Kind::Gram;
            formed.resize(n, n);
            multiply<double>(centred, centred, formed, Operand::Transposed);
        }
        if (m_kind != Kind::Implicit) {
            m_formed = formed;
            // Exactly symmetric, whatever order the product summed each side in.
            m_formed.triangularView<Eigen::StrictlyUpper>() = m_formed.transpose();
        }
    }

    Index size() const { return m_kind == Kind::Gram ? m_centred.rows() : m_centred.cols(); }

    Columns apply(const Columns& x) const
    {
        if (m_kind == Kind::Implicit)
            return m_centred.transpose() * (m_centred * x);
        return m_formed * x;
    }

    /// An eigenvector of the operator as a direction of the rows (d): itself, or Xcᵀ u for the Gram matrix
    /// (then not normalised, and zero for a zero eigenvalue).
    Eigen::VectorXd toAxis(const Eigen::VectorXd& v) const
    {
        return m_kind == Kind::Gram ? Eigen::VectorXd(m_centred.transpose() * v) : v;
    }

private:
    enum class Kind { Scatter, Gram, Implicit };
    const Matrix& m_centred;
    Kind m_kind = Kind::Implicit;
    Columns m_formed;
};

/// The columns of `block` made orthonormal to the first `used` columns of `basis` and to each other;
/// columns that lie in that span (to 1e-10 of their length) are dropped.
Columns orthonormalise(const Columns& basis, Index used, const Columns& block)
{
    Columns kept(block.rows(), block.cols());
    Index count = 0;
    for (Index c = 0; c < block.cols(); ++c) {
        Eigen::VectorXd v = block.col(c);
        const double length = v.norm();
        if (!(length > 0.0) || !std::isfinite(length))
            continue;
        for (int pass = 0; pass < 2; ++pass) {
            if (used > 0)
                v -= basis.leftCols(used) * (basis.leftCols(used).transpose() * v);
            if (count > 0)
                v -= kept.leftCols(count) * (kept.leftCols(count).transpose() * v);
        }
        const double remaining = v.norm();
        if (remaining <= 1e-10 * length)
            continue;
        kept.col(count++) = v / remaining;
    }
    return kept.leftCols(count);
}

/// Makes the two columns orthonormal: a zero first column becomes the first unit vector, a second one
/// that is zero or along the first becomes the unit vector of the first column's smallest component with
/// its part along the first removed.
void makeOrthonormal(Matrix& vectors)
{
    const Index d = vectors.rows();
    Eigen::VectorXd first = vectors.col(0);
    if (!(first.norm() > 1e-300))
        first = Eigen::VectorXd::Unit(d, 0);
    first.normalize();
    Eigen::VectorXd second = vectors.col(1);
    second -= first.dot(second) * first;
    const double length = second.norm();
    if (!(length > 1e-12 * std::max(1.0, vectors.col(1).norm())) || !(length > 1e-300)) {
        Index smallest = 0;
        first.cwiseAbs().minCoeff(&smallest);
        second = Eigen::VectorXd::Unit(d, smallest);
        second -= first.dot(second) * first;
    }
    second.normalize();
    vectors.col(0) = first;
    vectors.col(1) = second;
}

TopEigenpairs exactPairs(const Matrix& centred)
{
    const Index n = centred.rows(), d = centred.cols();
    TopEigenpairs pairs;
    pairs.vectors.resize(d, 2);
    if (d <= n || n < 2) {
        const Columns scatter = centred.transpose() * centred;
        const Eigen::SelfAdjointEigenSolver<Columns> solver(scatter);
        for (Index k = 0; k < 2; ++k) {
            pairs.values[k] = std::max(0.0, solver.eigenvalues()(d - 1 - k));
            pairs.vectors.col(k) = solver.eigenvectors().col(d - 1 - k);
        }
    } else {
        const Columns gram = centred * centred.transpose();
        const Eigen::SelfAdjointEigenSolver<Columns> solver(gram);
        for (Index k = 0; k < 2; ++k) {
            pairs.values[k] = std::max(0.0, solver.eigenvalues()(n - 1 - k));
            pairs.vectors.col(k) = centred.transpose() * solver.eigenvectors().col(n - 1 - k);
        }
    }
    makeOrthonormal(pairs.vectors);
    return pairs;
}

/// Solves (T − σ I) x = b for the symmetric tridiagonal T with `diagonal` and `offDiagonal`, by Gaussian
/// elimination with partial pivoting (LAPACK's dgttrf and dgtts2); a zero pivot is taken as `tiny`, as
/// inverse iteration wants (σ is an eigenvalue of T).
Eigen::VectorXd solveShiftedTridiagonal(const Eigen::VectorXd& diagonal, const Eigen::VectorXd& offDiagonal,
                                        double sigma, double tiny, Eigen::VectorXd b)
{
    const Index n = diagonal.size();
    Eigen::VectorXd d = diagonal.array() - sigma;
    Eigen::VectorXd lower = offDiagonal, upper = offDiagonal;
    Eigen::VectorXd upper2 = Eigen::VectorXd::Zero(std::max<Index>(n, 1));
    const auto pivot = [tiny](double value) { return value != 0.0 ? value : tiny; };
    for (Index i = 0; i + 1 < n; ++i) {
        if (std::abs(d(i)) >= std::abs(lower(i))) { // no interchange
            const double factor = lower(i) / pivot(d(i));
            d(i + 1) -= factor * upper(i);
            b(i + 1) -= factor * b(i);
        } else { // rows i and i + 1 interchanged
            const double factor = d(i) / lower(i);
            d(i) = lower(i);
            const double above = upper(i);
            upper(i) = d(i + 1);
            d(i + 1) = above - factor * d(i + 1);
            if (i + 2 < n) {
                upper2(i) = upper(i + 1);
                upper(i + 1) = -factor * upper(i + 1);
            }
            std::swap(b(i), b(i + 1));
            b(i + 1) -= factor * b(i);
        }
    }
    for (Index i = n - 1; i >= 0; --i) {
        double sum = b(i);
        if (i + 1 < n)
            sum -= upper(i) * b(i + 1);
        if (i + 2 < n)
            sum -= upper2(i) * b(i + 2);
        b(i) = sum / pivot(d(i));
    }
    return b;
}

/// How many eigenvalues of the symmetric tridiagonal T (`diagonal`, `offDiagonal`) are below x: the
/// negative pivots of T − x I (Sturm's count; a zero pivot taken as −tiny).
Index eigenvaluesBelow(const Eigen::VectorXd& diagonal, const Eigen::VectorXd& offDiagonal, double x,
                       double tiny)
{
    Index count = 0;
    double pivot = 1.0;
    for (Index i = 0; i < diagonal.size(); ++i) {
        pivot = diagonal(i) - x - (i > 0 ? offDiagonal(i - 1) * offDiagonal(i - 1) / pivot : 0.0);
        if (pivot == 0.0)
            pivot = -tiny;
        count += pivot < 0.0 ? 1 : 0;
    }
    return count;
}

/// The `rank`-th smallest eigenvalue (from 0) of the symmetric tridiagonal T, by bisection between
/// Gershgorin's bounds to the last bits (LAPACK's dstebz): O(k) a step, where the QL iteration for all of
/// them costs O(k²) rotations.
double tridiagonalEigenvalue(const Eigen::VectorXd& diagonal, const Eigen::VectorXd& offDiagonal, Index rank,
                             double tiny)
{
    const Index k = diagonal.size();
    double low = 0.0, high = 0.0;
    for (Index i = 0; i < k; ++i) {
        const double radius =
            (i > 0 ? std::abs(offDiagonal(i - 1)) : 0.0) + (i + 1 < k ? std::abs(offDiagonal(i)) : 0.0);
        low = i == 0 ? diagonal(i) - radius : std::min(low, diagonal(i) - radius);
        high = i == 0 ? diagonal(i) + radius : std::max(high, diagonal(i) + radius);
    }
    const double margin =
        2.0 * std::numeric_limits<double>::epsilon() * std::max(std::abs(low), std::abs(high));
    low -= margin + tiny;
    high += margin + tiny;
    for (int step = 0; step < 200; ++step) {
        const double middle = 0.5 * (low + high);
        if (!(middle > low && middle < high))
            break; // adjacent doubles
        (eigenvaluesBelow(diagonal, offDiagonal, middle, tiny) > rank ? high : low) = middle;
    }
    return 0.5 * (low + high);
}

/// The two largest eigenvalues of the symmetric `h` (largest first) and unit eigenvectors for them, without
/// the whole eigendecomposition (which accumulates every rotation into k × k vectors, more work than the rest
/// of the iteration at a basis of about a hundred): Householder tridiagonalisation, the two eigenvalues by
/// bisection, inverse iteration for their vectors (the second kept orthogonal to the first, for a repeated
/// eigenvalue), and the Householder reflections applied back. The caller checks the residuals in the full
/// space, so a poor vector costs another block, never a wrong answer. False when a vector is not finite.
bool leadingRitzPairs(const Columns& h, double (&theta)[2], Eigen::VectorXd (&vectors)[2])
{
    const Index k = h.rows();
    const Eigen::Tridiagonalization<Columns> tridiagonal(h);
    const Eigen::VectorXd diagonal = tridiagonal.diagonal();
    const Eigen::VectorXd offDiagonal = tridiagonal.subDiagonal();
    const double scale = std::max(h.cwiseAbs().maxCoeff(), 1e-300);
    const double tiny = std::numeric_limits<double>::epsilon() * scale;
    StartVectors start; // the same start for the same h
    for (int i = 0; i < 2; ++i) {
        theta[i] = tridiagonalEigenvalue(diagonal, offDiagonal, k - 1 - i, tiny);
        Eigen::VectorXd x = start.next(k, 1).col(0);
        for (int iteration = 0; iteration < 3; ++iteration) {
            x = solveShiftedTridiagonal(diagonal, offDiagonal, theta[i], tiny, x);
            if (i == 1)
                x -= vectors[0].dot(x) * vectors[0];
            const double length = x.norm();
            if (!(length > 0.0) || !std::isfinite(length))
                return false;
            x /= length;
        }
        vectors[i] = x;
    }
    for (Eigen::VectorXd& vector : vectors)
        vector = tridiagonal.matrixQ() * vector;
    return true;
}

TopEigenpairs iterativePairs(const Matrix& centred)
{
    const ScatterOperator op(centred);
    const Index size = op.size();
    const Index block = std::min(blockSize, size);
    const Index limit = std::min(size, basisLimit);
    StartVectors start;
    Columns basis(size, limit);
    Columns images(size, limit);     // C · basis
    Columns projected(limit, limit); // basisᵀ C basis, filled as the basis grows
    Index used = 0;
    Columns next = start.next(size, block);

    TopEigenpairs pairs;
    pairs.iterative = true;
    bool converged = false;
    Eigen::VectorXd first, second;
    for (;;) {
        Columns q = orthonormalise(basis, used, next.leftCols(std::min(next.cols(), limit - used)));
        if (q.cols() == 0 && used < limit) // an invariant space: continue from fresh vectors
            q = orthonormalise(basis, used, start.next(size, std::min(block, limit - used)));
        if (q.cols() == 0)
            break; // the basis spans the whole space (or its size limit)
        const Columns image = op.apply(q);
        const Index added = q.cols();
        basis.middleCols(used, added) = q;
        images.middleCols(used, added) = image;
        // The new columns and rows of Vᵀ C V (symmetric).
        const Columns cross = basis.leftCols(used + added).transpose() * image;
        projected.block(0, used, used + added, added) = cross;
        projected.block(used, 0, added, used + added) = cross.transpose();
        used += added;
        ++pairs.steps;
        next = image;

        const bool complete = used >= size;
        const bool full = used >= limit;
        // Rayleigh–Ritz after every block while small, then every few blocks (see the notes above).
        const bool check = used >= 2 && (complete || full || used <= 32 || pairs.steps % 4 == 0);
        if (!check)
            continue;
        Columns h = projected.topLeftCorner(used, used);
        h = 0.5 * (h + h.transpose()).eval();
        double thetas[2];
        Eigen::VectorXd ritz[2];
        // The whole space: its Ritz pairs are the answer, taken from the full decomposition.
        if (complete || !leadingRitzPairs(h, thetas, ritz)) {
            const Eigen::SelfAdjointEigenSolver<Columns> solver(h);
            for (int i = 0; i < 2; ++i) {
                thetas[i] = solver.eigenvalues()(used - 1 - i);
                ritz[i] = solver.eigenvectors().col(used - 1 - i);
            }
        }
        const double theta1 = thetas[0], theta2 = thetas[1];
        const Eigen::VectorXd& s1 = ritz[0];
        const Eigen::VectorXd& s2 = ritz[1];
        first = basis.leftCols(used) * s1;
        second = basis.leftCols(used) * s2;
        const double residual1 = (images.leftCols(used) * s1 - theta1 * first).norm();
        const double residual2 = (images.leftCols(used) * s2 - theta2 * second).norm();
        const double scale = std::max(theta1, 0.0);
        pairs.values[0] = std::max(0.0, theta1);
        pairs.values[1] = std::max(0.0, theta2);
        converged =
            complete || (residual1 <= residualTolerance * scale && residual2 <= residualTolerance * scale);
        if (converged || full)
            break;
    }
    if (!converged) {
        if (std::min(centred.rows(), centred.cols()) <= exactFallbackLimit) {
            const int steps = pairs.steps;
            pairs = exactPairs(centred);
            pairs.steps = steps;
            return pairs;
        }
        if (first.size() == 0) // never reached a Rayleigh–Ritz step: cannot happen for size ≥ 2
            return exactPairs(centred);
    }
    pairs.vectors.resize(centred.cols(), 2);
    pairs.vectors.col(0) = op.toAxis(first);
    pairs.vectors.col(1) = op.toAxis(second);
    makeOrthonormal(pairs.vectors);
    return pairs;
}

} // namespace

TopEigenpairs topScatterEigenpairs(const Matrix& centred, EigenMethod method)
{
    if (centred.cols() < 2 || centred.rows() < 1)
        throw std::invalid_argument("topScatterEigenpairs: needs at least one row and two columns");
    if (method == EigenMethod::Exact ||
        (method == EigenMethod::Automatic && std::min(centred.rows(), centred.cols()) <= tinyProblem))
        return exactPairs(centred);
    return iterativePairs(centred);
}

} // namespace qkv
