// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// NumPy's legacy random stream (`np.random.seed(s)`, `np.random.random_sample`, `np.random.randn`), bit for
/// bit, so the articles' examples drawn with NumPy (docs/references.md) can be reproduced from the generator
/// itself.

#include "EigenTypes.h"

#include <cstdint>
#include <random>

namespace qkv {

/// NumPy's legacy `RandomState` for an integer seed: MT19937 seeded by `init_genrand(seed)`, 53-bit doubles
/// from two 32-bit draws, and standard normals by the polar method with the second value of each pair
/// cached for the next call. The same seed gives the same numbers as NumPy on every platform.
class NumpyRandom {
public:
    /// The largest seed `np.random.seed` accepts as an integer (2^32 − 1).
    static constexpr std::uint64_t maxSeed = 0xFFFFFFFFu;

    /// As `np.random.seed(seed)`. Throws qkv::Error when seed > maxSeed (NumPy refuses it too).
    explicit NumpyRandom(std::uint64_t seed = 0);

    /// Re-seeds as `np.random.seed(seed)`, forgetting any cached normal. Throws qkv::Error when seed >
    /// maxSeed (and then changes nothing).
    void seed(std::uint64_t seed);

    /// As `np.random.random_sample()`: uniform in [0, 1) with 53 random bits.
    double randomSample();

    /// As `np.random.standard_normal()` (one value of `np.random.randn()`).
    double standardNormal();

    /// As `np.random.randn(rows, cols)`: standard normals filled in C order (row by row).
    Matrix randn(Index rows, Index cols);

private:
    std::mt19937 m_engine; // the standard fixes its seeding (init_genrand) and output: MT19937 exactly
    double m_gauss = 0.0;
    bool m_hasGauss = false;
};

} // namespace qkv
