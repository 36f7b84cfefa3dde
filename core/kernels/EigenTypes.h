// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The Eigen vocabulary of the engine: every matrix is a dense, row-major double matrix, because the
/// pipeline works row by row (one query at a time) and the session file stores matrices as arrays of rows.

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace qkv {

using Index = Eigen::Index;
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename Scalar>
using MatrixOf = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixF = MatrixOf<float>; ///< the engine's float32 work matrices
using Vector = Eigen::VectorXd;
using RowVector = Eigen::RowVectorXd;
/// 0/1 matrix: 1 where query i may attend to key j.
using MaskMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// True when no entry is infinite or NaN. Vectorised (inf·0 and NaN·0 are NaN, which survives the sum), so it
/// costs a fraction of Eigen's early-exit allFinite() on large matrices.
template <typename Derived> bool isAllFinite(const Eigen::DenseBase<Derived>& m)
{
    return std::isfinite((m.derived().array() * 0.0).sum());
}

/// Equal shapes and equal entries. Eigen's operator== requires equal shapes (it asserts, or reads out of
/// bounds in release builds), so value types compare their matrices through this.
template <typename A, typename B> bool sameMatrix(const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b)
{
    return a.rows() == b.rows() && a.cols() == b.cols() && (a.size() == 0 || a.derived() == b.derived());
}

/// Equal shapes and the same bits in every entry (−0 is not 0): what a result computed from `a` may be
/// reused for `b` by.
template <typename A, typename B>
bool sameBits(const Eigen::PlainObjectBase<A>& a, const Eigen::PlainObjectBase<B>& b)
{
    static_assert(std::is_same_v<typename A::Scalar, typename B::Scalar>);
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           (a.size() == 0 ||
            std::memcmp(a.data(), b.data(),
                        sizeof(typename A::Scalar) * static_cast<std::size_t>(a.size())) == 0);
}

} // namespace qkv
