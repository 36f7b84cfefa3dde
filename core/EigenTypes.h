#pragma once
/// @file
/// The Eigen vocabulary of the engine: every matrix is a dense, row-major double matrix, because the
/// pipeline works row by row (one query at a time) and the session file stores matrices as arrays of rows.

#include <Eigen/Core>

#include <cstdint>

namespace qkv {

using Index = Eigen::Index;
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;
using RowVector = Eigen::RowVectorXd;
/// 0/1 matrix: 1 where query i may attend to key j.
using MaskMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

} // namespace qkv
