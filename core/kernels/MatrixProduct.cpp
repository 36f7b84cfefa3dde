// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixProduct.h"

#include "Parallel.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace qkv {

namespace {

// The Fortran BLAS interface (LP64: 32-bit integers), as every BLAS library exports it.
template <typename Scalar>
using Gemm = void(const char* transA, const char* transB, const int* m, const int* n, const int* k,
                  const Scalar* alpha, const Scalar* a, const int* lda, const Scalar* b, const int* ldb,
                  const Scalar* beta, Scalar* c, const int* ldc);

struct OpenBlas {
    Gemm<double>* dgemm = nullptr;
    Gemm<float>* sgemm = nullptr;
    std::string description = "Eigen (OpenBLAS not found)";
};

// oneDNN's float32 product: row-major, returns 0 (dnnl_success) when it ran.
using OneDnnSgemm = int(char transA, char transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                        const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                        float* c, std::int64_t ldc);

/// oneDNN, for the float32 products (it has no float64 one), with the OpenMP call that keeps each product on
/// the thread that calls it.
struct OneDnn {
    OneDnnSgemm* sgemm = nullptr;
    void (*setOpenMpThreads)(int) = nullptr;
    std::string description;
};

struct Libraries {
    OpenBlas openBlas;
    OneDnn oneDnn;
};

/// OpenBLAS's name for the kernels this CPU can run, or nullptr to let OpenBLAS decide.
const char* kernelFamilyForThisCpu()
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    if (__builtin_cpu_supports("avx"))
        return "Sandybridge";
    return nullptr;
}

/// Sets an environment variable for OpenBLAS's start-up only, unless the user set it.
struct TemporaryEnvironment {
    const char* name;
    bool set = false;
    TemporaryEnvironment(const char* variable, const char* value) : name(variable)
    {
        if (value && !std::getenv(name))
            set = setenv(name, value, 0) == 0;
    }
    ~TemporaryEnvironment()
    {
        if (set)
            unsetenv(name); // child processes see the environment the user gave
    }
    TemporaryEnvironment(const TemporaryEnvironment&) = delete;
    TemporaryEnvironment& operator=(const TemporaryEnvironment&) = delete;
};

OpenBlas loadOpenBlas()
{
    OpenBlas blas;
    void* library = nullptr;
    {
        const TemporaryEnvironment kernels("OPENBLAS_CORETYPE", kernelFamilyForThisCpu());
        const TemporaryEnvironment threads("OPENBLAS_NUM_THREADS", "1"); // no threads of its own at start
        library = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    }
    if (!library)
        return blas;
    auto dgemm = reinterpret_cast<Gemm<double>*>(dlsym(library, "dgemm_"));
    auto sgemm = reinterpret_cast<Gemm<float>*>(dlsym(library, "sgemm_"));
    auto setThreads = reinterpret_cast<void (*)(int)>(dlsym(library, "openblas_set_num_threads"));
    auto coreName = reinterpret_cast<char* (*)()>(dlsym(library, "openblas_get_corename"));
    auto config = reinterpret_cast<char* (*)()>(dlsym(library, "openblas_get_config"));
    if (!dgemm || !sgemm || !setThreads)
        return blas;
    setThreads(1); // the engine's own threads split the work (Parallel.h)
    blas.dgemm = dgemm;
    blas.sgemm = sgemm;
    blas.description =
        std::string(config ? config() : "OpenBLAS") + ", " + (coreName ? coreName() : "?") + " kernels";
    return blas;
}

/// Whether QKV_PRODUCTS asks for OpenBLAS alone (for comparisons with programs that use it).
bool openBlasAlone()
{
    const char* wanted = std::getenv("QKV_PRODUCTS");
    return wanted && std::strcmp(wanted, "openblas") == 0;
}

OneDnn loadOneDnn()
{
    OneDnn dnn;
    if (openBlasAlone())
        return dnn;
    void* library = nullptr;
    {
        const TemporaryEnvironment threads("OMP_NUM_THREADS", "1"); // no OpenMP team at start
        library = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    }
    if (!library)
        return dnn;
    auto sgemm = reinterpret_cast<OneDnnSgemm*>(dlsym(library, "dnnl_sgemm"));
    auto setThreads = reinterpret_cast<void (*)(int)>(dlsym(library, "omp_set_num_threads"));
    struct Version {
        int major, minor, patch;
        const char* hash;
        unsigned cpuRuntime, gpuRuntime;
    };
    auto version = reinterpret_cast<const Version* (*)()>(dlsym(library, "dnnl_version"));
    if (!sgemm || !setThreads)
        return dnn;
    dnn.sgemm = sgemm;
    dnn.setOpenMpThreads = setThreads;
    dnn.description = "oneDNN";
    if (version && version())
        dnn.description += " " + std::to_string(version()->major) + "." + std::to_string(version()->minor) +
                           "." + std::to_string(version()->patch);
    return dnn;
}

/// Opened once: by prepareMatrixProducts() at the start of main(), while the process has one thread
/// (setenv() is not safe beside other threads), or else by the first product.
const Libraries& libraries()
{
    static const Libraries loaded{loadOpenBlas(), loadOneDnn()};
    return loaded;
}

Gemm<double>* gemmFor(double)
{
    return libraries().openBlas.dgemm;
}
Gemm<float>* gemmFor(float)
{
    return libraries().openBlas.sgemm;
}

/// A float32 product by oneDNN, on the calling thread; false when oneDNN is not there (or refused it).
bool oneDnnMultiply(const ConstRows<float>& a, const ConstRows<float>& b, Rows<float>& c, Operand bForm)
{
    const OneDnn& dnn = libraries().oneDnn;
    if (!dnn.sgemm)
        return false;
    // oneDNN would otherwise start an OpenMP team per product; the engine's threads already split the work
    // (Parallel.h). The setting belongs to each calling thread.
    thread_local bool oneThread = false;
    if (!oneThread) {
        dnn.setOpenMpThreads(1);
        oneThread = true;
    }
    const std::int64_t lda = std::max<Index>(1, a.outerStride());
    const std::int64_t ldb = std::max<Index>(1, b.outerStride());
    const std::int64_t ldc = std::max<Index>(1, c.outerStride());
    return dnn.sgemm('N', bForm == Operand::AsIs ? 'N' : 'T', c.rows(), c.cols(), a.cols(), 1.0f, a.data(),
                     lda, b.data(), ldb, 0.0f, c.data(), ldc) == 0;
}
bool oneDnnMultiply(const ConstRows<double>&, const ConstRows<double>&, Rows<double>&, Operand)
{
    return false;
}

/// One product on the calling thread.
template <typename Scalar>
void multiplyHere(const ConstRows<Scalar>& a, const ConstRows<Scalar>& b, Rows<Scalar>& c, Operand bForm)
{
    if (oneDnnMultiply(a, b, c, bForm))
        return;
    Gemm<Scalar>* gemm = gemmFor(Scalar{});
    if (!gemm) {
        if (bForm == Operand::AsIs)
            c.noalias() = a * b;
        else
            c.noalias() = a * b.transpose();
        return;
    }
    // Row-major c = a · op(b) is column-major cᵀ = op(b)ᵀ · aᵀ, and a row-major matrix read column-major is
    // its transpose: so b goes first, transposed for BLAS exactly when it is not for us.
    const int m = static_cast<int>(c.cols());
    const int n = static_cast<int>(c.rows());
    const int k = static_cast<int>(a.cols());
    const int lda = static_cast<int>(std::max<Index>(1, a.outerStride()));
    const int ldb = static_cast<int>(std::max<Index>(1, b.outerStride()));
    const int ldc = static_cast<int>(std::max<Index>(1, c.outerStride()));
    const Scalar one = 1;
    const Scalar zero = 0;
    const char* transB = bForm == Operand::AsIs ? "N" : "T";
    gemm(transB, "N", &m, &n, &k, &one, b.data(), &ldb, a.data(), &lda, &zero, c.data(), &ldc);
}

/// A part of one product: rows (or columns) [begin, end) of its c.
struct Chunk {
    std::size_t product;
    Index begin, end;
    bool byColumns;
};

/// The chunks of one product: two halves, or chunks of 128 rows when that is more. Each chunk packs all of b
/// again, which pays only for tall chunks (so halves, not quarters, for a large product). Short
/// and wide products (the projections of a short sentence, X · W with d = 512) are split by columns instead,
/// each chunk packing its own part of b and all of the short a. The chunks depend on the shape alone, never
/// on how many threads are free, so the result is the same bits either way.
template <typename Scalar>
void addChunks(const Product<Scalar>& p, std::size_t index, std::vector<Chunk>& chunks)
{
    constexpr Index minimumChunk = 128;
    const bool byColumns = p.c.rows() < 2 * minimumChunk && p.c.cols() >= 2 * minimumChunk;
    const Index count = byColumns ? p.c.cols() : p.c.rows();
    const Index grain = std::max(minimumChunk, (count + 1) / 2);
    for (Index begin = 0; begin < count; begin += grain)
        chunks.push_back({index, begin, std::min(count, begin + grain), byColumns});
}

template <typename Scalar> void multiplyChunk(const Product<Scalar>& p, const Chunk& chunk)
{
    const Index size = chunk.end - chunk.begin;
    Rows<Scalar> c = p.c; // a writable view of the product's c
    if (!chunk.byColumns) {
        Rows<Scalar> part = c.middleRows(chunk.begin, size);
        multiplyHere<Scalar>(p.a.middleRows(chunk.begin, size), p.b, part, p.bForm);
        return;
    }
    Rows<Scalar> part = c.middleCols(chunk.begin, size);
    if (p.bForm == Operand::AsIs)
        multiplyHere<Scalar>(p.a, p.b.middleCols(chunk.begin, size), part, p.bForm);
    else
        multiplyHere<Scalar>(p.a, p.b.middleRows(chunk.begin, size), part, p.bForm);
}

} // namespace

template <typename Scalar> void multiplyAll(const std::vector<Product<Scalar>>& products)
{
    std::vector<Chunk> chunks;
    for (std::size_t i = 0; i < products.size(); ++i) {
        const Product<Scalar>& p = products[i];
        if (p.c.size() == 0)
            continue;
        if (p.a.cols() == 0) {
            Rows<Scalar> c = p.c;
            c.setZero();
            continue;
        }
        addChunks(p, i, chunks);
    }
    parallelFor(static_cast<Index>(chunks.size()), 1, [&](Index begin, Index end) {
        for (Index k = begin; k < end; ++k) {
            const Chunk& chunk = chunks[static_cast<std::size_t>(k)];
            multiplyChunk(products[chunk.product], chunk);
        }
    });
}

template <typename Scalar>
void multiply(const ConstRows<Scalar>& a, const ConstRows<Scalar>& b, Rows<Scalar> c, Operand bForm)
{
    multiplyAll<Scalar>({Product<Scalar>{a, b, c, bForm}});
}

template <typename Scalar>
void multiplyOnThisThread(const ConstRows<Scalar>& a, const ConstRows<Scalar>& b, Rows<Scalar> c,
                          Operand bForm)
{
    if (c.size() == 0)
        return;
    if (a.cols() == 0)
        c.setZero();
    else
        multiplyHere<Scalar>(a, b, c, bForm);
}

template void multiply<double>(const ConstRows<double>&, const ConstRows<double>&, Rows<double>, Operand);
template void multiply<float>(const ConstRows<float>&, const ConstRows<float>&, Rows<float>, Operand);
template void multiplyOnThisThread<double>(const ConstRows<double>&, const ConstRows<double>&, Rows<double>,
                                           Operand);
template void multiplyOnThisThread<float>(const ConstRows<float>&, const ConstRows<float>&, Rows<float>,
                                          Operand);
template void multiplyAll<double>(const std::vector<Product<double>>&);
template void multiplyAll<float>(const std::vector<Product<float>>&);

std::string productLibrary()
{
    const Libraries& loaded = libraries();
    if (loaded.oneDnn.sgemm)
        return loaded.oneDnn.description + " (float32), " + loaded.openBlas.description + " (float64)";
    return loaded.openBlas.description;
}

void prepareMatrixProducts()
{
    libraries();
}

} // namespace qkv
