// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The engine's large matrix products, in float64 or float32: float32 by oneDNN and float64 by OpenBLAS
/// when they are installed, both opened at run time.
///
/// Why OpenBLAS, loaded at run time: Debian builds it with DYNAMIC_ARCH (one library holding SSE, AVX2 and
/// AVX-512 kernels, chosen for the CPU it runs on), so a build from source and a package are both fast on
/// any x86-64, where Eigen's own kernels, built for plain x86-64, reach a fraction of the CPU's speed. It is
/// opened with dlopen() (by prepareMatrixProducts(), else by the first product) so that QKV Lab can choose
/// its kernels: an OpenBLAS older than the CPU does not recognise it and falls back to its far slower SSE3
/// kernels (docs/design.md, "Matrix products"). When OPENBLAS_CORETYPE is not set, QKV Lab names the family
/// from the CPU's instruction sets (SkylakeX with AVX-512, Haswell with AVX2 and FMA, Sandybridge with AVX);
/// a value the user set is left alone. Why oneDNN for float32: its products generate their kernels for the
/// CPU's instruction sets at run time, so it needs no kernel family named, and it ran float32 products up to
/// twice as fast as OpenBLAS (docs/design.md); it has no float64 product. QKV_PRODUCTS=openblas leaves
/// every product to OpenBLAS (for comparisons with programs that use it). Each product runs on one thread
/// (OpenBLAS's and OpenMP's thread counts set to one): the engine splits products over its own threads
/// (Parallel.h). Without either library, Eigen does the products.

#include "EigenTypes.h"

#include <string>
#include <vector>

namespace qkv {

/// Rows of a row-major matrix (a whole matrix, middleRows or middleCols), without a copy.
template <typename Scalar> using ConstRows = Eigen::Ref<const MatrixOf<Scalar>>;
template <typename Scalar> using Rows = Eigen::Ref<MatrixOf<Scalar>>;

enum class Operand { AsIs, Transposed };

/// c = a · b (b as it is) or a · bᵀ (b transposed); c already has its shape and must not overlap a or b.
/// A large product is split by rows of c (by columns when c is short and wide) over the engine's threads;
/// inside a parallelFor chunk it runs on the calling thread.
template <typename Scalar>
void multiply(const ConstRows<Scalar>& a, const ConstRows<Scalar>& b, Rows<Scalar> c,
              Operand bForm = Operand::AsIs);

/// c = a · op(b) in one call on the calling thread, never cut: for the engine's blocks of query rows,
/// which are already the threads' unit of work (cut in halves, each half would pack all of b again).
template <typename Scalar>
void multiplyOnThisThread(const ConstRows<Scalar>& a, const ConstRows<Scalar>& b, Rows<Scalar> c,
                          Operand bForm = Operand::AsIs);

/// One product for multiplyAll: c = a · op(b), as multiply takes it.
template <typename Scalar> struct Product {
    ConstRows<Scalar> a;
    ConstRows<Scalar> b;
    Rows<Scalar> c;
    Operand bForm = Operand::AsIs;
};

/// Several independent products at once (a head's three projections): each is cut into the chunks multiply
/// would cut it into (so the results are the same bits), and all the chunks are shared out over the engine's
/// threads in one go, so that the threads meet once instead of once per product.
template <typename Scalar> void multiplyAll(const std::vector<Product<Scalar>>& products);

/// What does the products, for the About box and the benchmark: "oneDNN 2.6.3 (float32), OpenBLAS 0.3.21 …,
/// SkylakeX kernels (float64)", "OpenBLAS 0.3.21 …, SkylakeX kernels" or "Eigen (OpenBLAS not found)".
std::string productLibrary();

/// Opens OpenBLAS with the kernel family for this CPU, and oneDNN. Call it once at the start of main(),
/// before any other thread starts: it sets environment variables for OpenBLAS's start-up, and setenv() is not
/// safe while other threads run. Without the call, the first product opens OpenBLAS itself.
void prepareMatrixProducts();

} // namespace qkv
