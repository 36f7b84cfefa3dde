// SPDX-License-Identifier: GPL-3.0-or-later
#include "Initializers.h"

#include "NumpyRandom.h"

#include <cmath>
#include <random>

namespace qkv {

namespace {

/// Turns the raw 64-bit stream of std::mt19937_64 (fixed by the standard) into numbers, with no help from
/// the standard library's distributions (whose algorithms differ between implementations).
class Sampler {
public:
    explicit Sampler(std::uint64_t seed) : m_engine(seed) {}

    /// Uniform in [0, 1): the top 53 bits of one draw, times 2^-53.
    double uniform01() { return static_cast<double>(m_engine() >> 11) * 0x1.0p-53; }

    /// Uniform in [-1, 1).
    double uniformSigned() { return 2.0 * uniform01() - 1.0; }

    /// Standard normal by the Marsaglia polar method. Each accepted pair gives two values; the second
    /// is kept for the next call.
    double normal()
    {
        if (m_hasSpare) {
            m_hasSpare = false;
            return m_spare;
        }
        double u = 0.0;
        double v = 0.0;
        double s = 0.0;
        do {
            u = uniformSigned();
            v = uniformSigned();
            s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        const double factor = std::sqrt(-2.0 * std::log(s) / s);
        m_spare = v * factor;
        m_hasSpare = true;
        return u * factor;
    }

private:
    std::mt19937_64 m_engine;
    double m_spare = 0.0;
    bool m_hasSpare = false;
};

template <typename Draw> Matrix fill(Index rows, Index cols, Draw draw)
{
    Matrix result(rows, cols);
    // Row-major storage: row by row, left to right.
    for (Index i = 0; i < rows; ++i) {
        for (Index j = 0; j < cols; ++j) {
            result(i, j) = draw();
        }
    }
    return result;
}

} // namespace

Matrix initializeMatrix(const InitializerSpec& spec, Index rows, Index cols)
{
    if (spec.kind == Initializer::NumpyLegacy) {
        NumpyRandom random(spec.seed); // refuses a seed NumPy refuses, even for an empty matrix
        return random.randn(rows, cols) * spec.scale;
    }
    if (rows == 0 || cols == 0) {
        return Matrix(rows, cols); // nothing to draw, and no division by a zero fan
    }
    const double fanIn = static_cast<double>(rows);
    const double fanOut = static_cast<double>(cols);
    Sampler sampler(spec.seed);

    switch (spec.kind) {
    case Initializer::XavierNormal: {
        const double stddev = std::sqrt(2.0 / (fanIn + fanOut));
        return fill(rows, cols, [&] { return stddev * sampler.normal(); });
    }
    case Initializer::XavierUniform: {
        const double bound = std::sqrt(6.0 / (fanIn + fanOut));
        return fill(rows, cols, [&] { return bound * sampler.uniformSigned(); });
    }
    case Initializer::HeNormal: {
        const double stddev = std::sqrt(2.0 / fanIn);
        return fill(rows, cols, [&] { return stddev * sampler.normal(); });
    }
    case Initializer::Normal: {
        const double stddev = spec.scale;
        return fill(rows, cols, [&] { return stddev * sampler.normal(); });
    }
    case Initializer::Zeros:
    case Initializer::NumpyLegacy: // drawn above
        break;
    }
    return Matrix::Zero(rows, cols);
}

const char* toString(Initializer kind)
{
    switch (kind) {
    case Initializer::XavierNormal:
        return "xavier_normal";
    case Initializer::XavierUniform:
        return "xavier_uniform";
    case Initializer::HeNormal:
        return "he_normal";
    case Initializer::Normal:
        return "normal";
    case Initializer::Zeros:
        return "zeros";
    case Initializer::NumpyLegacy:
        return "numpy_legacy";
    }
    return "xavier_normal";
}

std::optional<Initializer> initializerFromString(const std::string& name)
{
    for (Initializer kind : {Initializer::XavierNormal, Initializer::XavierUniform, Initializer::HeNormal,
                             Initializer::Normal, Initializer::Zeros, Initializer::NumpyLegacy}) {
        if (name == toString(kind)) {
            return kind;
        }
    }
    return std::nullopt;
}

} // namespace qkv
