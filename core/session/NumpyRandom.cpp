// SPDX-License-Identifier: GPL-3.0-or-later
#include "NumpyRandom.h"

#include "Error.h"

#include <cmath>
#include <string>

namespace qkv {

NumpyRandom::NumpyRandom(std::uint64_t seed)
{
    this->seed(seed);
}

void NumpyRandom::seed(std::uint64_t seed)
{
    if (seed > maxSeed) {
        throw Error("the NumPy seed " + std::to_string(seed) +
                    " is out of range: np.random.seed takes an integer from 0 to 4294967295 (2^32 - 1)");
    }
    // std::mt19937::seed(s) is MT19937's init_genrand(s), which is what NumPy's mt19937_seed does.
    m_engine.seed(static_cast<std::mt19937::result_type>(seed));
    m_gauss = 0.0;
    m_hasGauss = false;
}

double NumpyRandom::randomSample()
{
    // NumPy's legacy_double: 27 bits of the first draw and 26 of the second, as one 53-bit fraction.
    const auto a = static_cast<std::uint32_t>(m_engine()) >> 5;
    const auto b = static_cast<std::uint32_t>(m_engine()) >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

double NumpyRandom::standardNormal()
{
    // NumPy's legacy_gauss: the polar method; each accepted pair gives f·x2 now and f·x1 on the next call.
    if (m_hasGauss) {
        m_hasGauss = false;
        const double cached = m_gauss;
        m_gauss = 0.0;
        return cached;
    }
    double x1 = 0.0;
    double x2 = 0.0;
    double r2 = 0.0;
    do {
        x1 = 2.0 * randomSample() - 1.0;
        x2 = 2.0 * randomSample() - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    m_gauss = f * x1;
    m_hasGauss = true;
    return f * x2;
}

Matrix NumpyRandom::randn(Index rows, Index cols)
{
    Matrix result(rows, cols);
    // Row-major storage is C order: the same sequence NumPy fills.
    for (Index i = 0; i < rows; ++i) {
        for (Index j = 0; j < cols; ++j) {
            result(i, j) = standardNormal();
        }
    }
    return result;
}

} // namespace qkv
