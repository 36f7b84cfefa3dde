// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What both benchmarks fill their sessions with: a matrix from the engine's own initializers, by seed.

#include "Initializers.h"

#include <cstdint>

inline qkv::Matrix initialize(qkv::Initializer kind, std::uint64_t seed, qkv::Index rows, qkv::Index cols)
{
    qkv::InitializerSpec spec;
    spec.kind = kind;
    spec.scale = 1.0;
    spec.seed = seed;
    return qkv::initializeMatrix(spec, rows, cols);
}
