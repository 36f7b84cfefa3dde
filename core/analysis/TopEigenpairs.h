// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The two leading eigenpairs of a scatter matrix Xcᵀ Xc, which is all the PCA planes draw, without a full
/// eigendecomposition of a d × d matrix.

#include "EigenTypes.h"

namespace qkv {

/// The two largest eigenvalues of Xcᵀ Xc (largest first) and unit eigenvectors for them.
struct TopEigenpairs {
    double values[2] = {0.0, 0.0};
    Matrix vectors; ///< d × 2, orthonormal columns
    /// How they were found: by the block Krylov iteration (converged or exhausted the space), or by the full
    /// eigendecomposition (asked for, or the fallback when the iteration did not converge).
    bool iterative = false;
    int steps = 0; ///< block steps of the iteration (0 for the full decomposition)
};

enum class EigenMethod {
    Automatic, ///< the full decomposition for tiny problems, else the iteration
    Iterative, ///< the iteration (with its fallback)
    Exact      ///< the full decomposition of the smaller of Xcᵀ Xc (d × d) and Xc Xcᵀ (n × n)
};

/// The two leading eigenpairs of Xcᵀ Xc for `centred` (n × d, n ≥ 1, d ≥ 2; any rank, including 0).
///
/// The iteration grows a block Krylov basis from a fixed start block of four vectors (so the same input gives
/// the same result, bit for bit), orthogonalised twice, with a Rayleigh–Ritz step after each block; it stops
/// when both leading Ritz pairs have residuals ‖C y − θ y‖ ≤ 1e-8 · θ₁ (θ₁ the largest Ritz value), or when
/// the basis spans the whole space (the Ritz pairs are then exact). A block of four finds eigenvalues of
/// multiplicity up to four, which a single-vector Lanczos would miss; a block that falls into the span found
/// so far is replaced by fresh start vectors. Should the basis reach its size limit unconverged, the full
/// eigendecomposition is used instead when it is affordable (min(n, d) ≤ 1024), else the best Ritz pairs.
/// The operator is C = Xcᵀ Xc formed once when d ≤ n and d ≤ 1024, the Gram matrix Xc Xcᵀ when n < d and
/// n ≤ 1024 (eigenvectors mapped back with Xcᵀ), else applied as Xcᵀ (Xc v) without being formed.
/// Eigenvectors are determined up to sign (and up to a rotation within a repeated eigenvalue's space).
/// @throws std::invalid_argument when d < 2 or n < 1
TopEigenpairs topScatterEigenpairs(const Matrix& centred, EigenMethod method = EigenMethod::Automatic);

} // namespace qkv
