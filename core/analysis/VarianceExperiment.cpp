// SPDX-License-Identifier: GPL-3.0-or-later
#include "VarianceExperiment.h"

#include "Error.h"
#include "NumpyRandom.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace qkv {

namespace {

constexpr Index numpyBufferSize = 8192; // NPY_BUFSIZE: a long reduction is summed chunk by chunk
constexpr Index pairwiseBlock = 128;    // PW_BLOCKSIZE of numpy's pairwise_sum

// numpy/core/src/umath/loops_utils.h.src: pairwise_sum_DOUBLE, operation for operation.
double pairwiseSum(const double* a, Index n)
{
    if (n < 8) {
        double res = 0.0;
        for (Index i = 0; i < n; ++i)
            res += a[i];
        return res;
    }
    if (n <= pairwiseBlock) {
        double r[8];
        for (int j = 0; j < 8; ++j)
            r[j] = a[j];
        Index i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j)
                r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i)
            res += a[i];
        return res;
    }
    Index n2 = n / 2;
    n2 -= n2 % 8;
    return pairwiseSum(a, n2) + pairwiseSum(a + n2, n - n2);
}

// The standard error of a sample variance from the sample's central moments.
double varianceError(const std::vector<double>& x, double mean, double variance)
{
    const auto n = static_cast<double>(x.size());
    double m4 = 0.0;
    for (double v : x) {
        const double d = (v - mean) * (v - mean);
        m4 += d * d;
    }
    m4 /= n;
    const double spread = m4 - variance * variance * (n - 3.0) / (n - 1.0);
    return std::sqrt(std::max(0.0, spread) / n);
}

void checkSettings(const VarianceSettings& s)
{
    if (s.dimensions.empty())
        throw Error("variance experiment: no d_k given");
    double draws = 0.0;
    for (Index d : s.dimensions) {
        if (d < 1 || d > VarianceSettings::maxDimension)
            throw Error("variance experiment: d_k = " + std::to_string(d) + " is outside 1 … " +
                        std::to_string(VarianceSettings::maxDimension));
        draws += 2.0 * static_cast<double>(s.samples) * static_cast<double>(d);
    }
    if (s.samples < 2 || s.samples > VarianceSettings::maxSamples)
        throw Error("variance experiment: the sample count " + std::to_string(s.samples) +
                    " is outside 2 … " + std::to_string(VarianceSettings::maxSamples));
    if (s.seed > NumpyRandom::maxSeed)
        throw Error("variance experiment: the seed " + std::to_string(s.seed) + " is outside 0 … 4294967295");
    if (draws > VarianceSettings::maxDraws)
        throw Error("variance experiment: samples × Σ d_k is too large (" + std::to_string(draws / 2.0) +
                    " products; at most " + std::to_string(VarianceSettings::maxDraws / 2.0) + ")");
}

// As random.randn(rows, cols), stopping when asked (a view's run is dropped when the view closes).
Matrix drawNormals(NumpyRandom& random, Index rows, Index cols, const std::atomic<bool>* cancel)
{
    constexpr Index checkEvery = 1 << 16;
    Matrix m(rows, cols);
    double* out = m.data(); // row-major: C order
    const Index count = rows * cols;
    for (Index start = 0; start < count; start += checkEvery) {
        if (cancel && cancel->load())
            throw Cancelled();
        const Index end = std::min(count, start + checkEvery);
        for (Index i = start; i < end; ++i)
            out[i] = random.standardNormal();
    }
    return m;
}

} // namespace

std::vector<Index> defaultVarianceDimensions()
{
    std::vector<Index> dims;
    for (Index d = 1; d <= 1024; d *= 2)
        dims.push_back(d);
    return dims;
}

double numpySum(const double* values, Index count)
{
    double total = 0.0; // the reduction starts from add's identity
    for (Index start = 0; start < count; start += numpyBufferSize)
        total += pairwiseSum(values + start, std::min(numpyBufferSize, count - start));
    return total;
}

double numpyVariance(const double* values, Index count)
{
    if (count <= 0)
        return 0.0;
    const double mean = numpySum(values, count) / static_cast<double>(count);
    std::vector<double> squares(static_cast<std::size_t>(count));
    for (Index i = 0; i < count; ++i) {
        const double d = values[i] - mean;
        squares[static_cast<std::size_t>(i)] = d * d;
    }
    return numpySum(squares.data(), count) / static_cast<double>(count);
}

double scoreVariance(const Matrix& scores)
{
    return numpyVariance(scores.data(), scores.size()); // row-major storage: C order, as NumPy's
}

std::vector<VariancePoint> measureDotProductVariance(const VarianceSettings& settings,
                                                     const std::atomic<bool>* cancel)
{
    checkSettings(settings);
    NumpyRandom random(settings.seed);
    const Index n = settings.samples;
    std::vector<VariancePoint> points;
    std::vector<double> dots(static_cast<std::size_t>(n));
    std::vector<double> scaledDots(static_cast<std::size_t>(n));
    std::vector<double> products;
    for (Index d : settings.dimensions) {
        if (cancel && cancel->load())
            throw Cancelled();
        const Matrix q = drawNormals(random, n, d, cancel); // C order, q before k, as the article does
        const Matrix k = drawNormals(random, n, d, cancel);
        products.resize(static_cast<std::size_t>(d));
        const double root = std::sqrt(static_cast<double>(d));
        for (Index i = 0; i < n; ++i) {
            for (Index j = 0; j < d; ++j)
                products[static_cast<std::size_t>(j)] = q(i, j) * k(i, j);
            const double dot = pairwiseSum(products.data(), d); // one row: far below the buffer size
            dots[static_cast<std::size_t>(i)] = dot;
            scaledDots[static_cast<std::size_t>(i)] = dot / root;
        }
        VariancePoint point;
        point.dK = d;
        point.unscaled = numpyVariance(dots.data(), n);
        point.scaled = numpyVariance(scaledDots.data(), n);
        const double meanRaw = numpySum(dots.data(), n) / static_cast<double>(n);
        const double meanScaled = numpySum(scaledDots.data(), n) / static_cast<double>(n);
        point.unscaledError = varianceError(dots, meanRaw, point.unscaled);
        point.scaledError = varianceError(scaledDots, meanScaled, point.scaled);
        points.push_back(point);
    }
    return points;
}

} // namespace qkv
