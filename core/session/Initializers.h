// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Seeded weight initializers. The random stream is std::mt19937_64 (its output is fixed by the C++
/// standard) turned into numbers by our own code, so a seed gives the same matrix with every standard
/// library (std::normal_distribution does not). The NumPy legacy initializer uses NumPy's own stream
/// instead (NumpyRandom.h), so the articles' `np.random.seed(s); randn(...)` matrices come out exactly
/// (docs/references.md).

#include "EigenTypes.h"

#include <cstdint>
#include <optional>
#include <string>

namespace qkv {

enum class Initializer { XavierNormal, XavierUniform, HeNormal, Normal, Zeros, NumpyLegacy };

struct InitializerSpec {
    Initializer kind = Initializer::XavierNormal;
    double scale = 1.0;     ///< standard deviation for Initializer::Normal, factor for NumpyLegacy
    std::uint64_t seed = 0; ///< NumpyLegacy: 0 to NumpyRandom::maxSeed (2^32 − 1)
};

/// A rows × cols matrix (fan_in = rows, fan_out = cols, as W in x·W):
/// Xavier normal N(0, 2/(fan_in+fan_out)), Xavier uniform U(±√(6/(fan_in+fan_out))),
/// He normal N(0, 2/fan_in), Normal N(0, scale²), Zeros, NumPy legacy `np.random.seed(seed);
/// np.random.randn(rows, cols) * scale`. Throws qkv::Error for a NumPy legacy seed above 2^32 − 1.
Matrix initializeMatrix(const InitializerSpec& spec, Index rows, Index cols);

const char* toString(Initializer kind);
std::optional<Initializer> initializerFromString(const std::string& name);

} // namespace qkv
