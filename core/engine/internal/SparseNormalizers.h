// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the normalizers (Normalizers.cpp): the sparse ones, sparsemax and α-entmax for α > 1. Each
// works on the shifted logits z = (S' − max S')/τ ≤ 0 already in `out` (0 where masked), overwrites them with
// the weights and returns the threshold t of the shifted logits. The scratch must hold 2m values and m
// indices.

#include "EigenTypes.h"
#include "Normalizers.h"

#include <cstdint>

namespace qkv::sparse {

/// Sparsemax: p = [z − t]₊.
double sparsemaxRow(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch);

/// 1.5-entmax: p = [z/2 − t]₊².
double entmax15Row(const std::uint8_t* allowed, Index m, double* out, NormalizerScratch& scratch);

/// α-entmax in the λ form: LowAlpha for 1 < α < 2, otherwise for α so large that ε·ln k > 600.
template <bool LowAlpha>
double entmaxSolve(double alpha, const std::uint8_t* allowed, Index m, double* out,
                   NormalizerScratch& scratch);

/// α-entmax for α > 2 with ε·ln k ≤ 600, solved directly for t.
double entmaxSolveHighAlpha(double alpha, const std::uint8_t* allowed, Index m, double* out,
                            NormalizerScratch& scratch);

} // namespace qkv::sparse
