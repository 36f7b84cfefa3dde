// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The √d_k variance experiment (from Brenndoerfer's article, docs/references.md): for random q and k with
/// unit-variance components, Var(q·k) grows as d_k, and Var(q·k / √d_k) stays at 1. Drawn from NumPy's legacy
/// stream, so that np.random.seed(42) reproduces the article's `measure_dot_product_variance` exactly.

#include "EigenTypes.h"

#include <atomic>
#include <cstdint>
#include <vector>

namespace qkv {

struct VarianceSettings {
    std::vector<Index> dimensions; ///< d_k values, each 1 … maxDimension
    Index samples = 10000;         ///< pairs (q, k) per d_k, 2 … maxSamples
    std::uint64_t seed = 42;       ///< np.random.seed(seed), 0 … 2³² − 1

    static constexpr Index maxDimension = 4096;
    static constexpr Index maxSamples = 1000000;
    /// Normals drawn in all (2 · samples · Σ d_k) at most: about a second of work.
    static constexpr double maxDraws = 2e8;
};

/// 1, 2, 4, …, 1024: the dimensions of the experiment's log axis.
std::vector<Index> defaultVarianceDimensions();

/// The sample variance of q·k (and of q·k / √d_k) at one d_k, with its standard error.
struct VariancePoint {
    Index dK = 0;
    double unscaled = 0.0;      ///< Var(q·k), as numpy's var() (ddof 0)
    double unscaledError = 0.0; ///< its standard error, √((m₄ − σ⁴ (n−3)/(n−1)) / n)
    double scaled = 0.0;        ///< Var(q·k / √d_k)
    double scaledError = 0.0;
};

/// np.random.seed(seed), then for each d_k in turn `q = randn(samples, d_k)`, `k = randn(samples, d_k)`,
/// `dots = np.sum(q * k, axis=1)`, `dots.var()` and `(dots / np.sqrt(d_k)).var()`, with NumPy's summation
/// order, so the variances equal NumPy's bit for bit.
/// @throws qkv::Error naming the setting when a setting is out of range; qkv::Cancelled when `cancel` is set
std::vector<VariancePoint> measureDotProductVariance(const VarianceSettings& settings,
                                                     const std::atomic<bool>* cancel = nullptr);

/// NumPy's sum of `count` doubles (np.add.reduce on a contiguous array): pairwise in blocks of 8, and in
/// chunks of 8192 (its buffer size) for long arrays.
double numpySum(const double* values, Index count);

/// NumPy's `x.var()` (ddof 0) with its summation order.
double numpyVariance(const double* values, Index count);

/// The variance of every entry of a score matrix (ddof 0): the session's own point on the curve. 0 when
/// empty.
double scoreVariance(const Matrix& scores);

} // namespace qkv
