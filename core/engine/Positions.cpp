// SPDX-License-Identifier: GPL-3.0-or-later
#include "Positions.h"

#include <algorithm>

namespace qkv {

Matrix sinusoidalTable(Index count, Index dModel, double base)
{
    Matrix table(count, dModel);
    for (Index column = 0; column < dModel; column += 2) {
        // Columns 2i and 2i + 1 share the frequency base^{−2i/d_model}.
        const double frequency = std::pow(base, -static_cast<double>(column) / static_cast<double>(dModel));
        for (Index p = 0; p < count; ++p) {
            const double angle = static_cast<double>(p) * frequency;
            table(p, column) = std::sin(angle);
            if (column + 1 < dModel)
                table(p, column + 1) = std::cos(angle);
        }
    }
    return table;
}

bool addsToEmbeddings(const PositionSpec& positions)
{
    return positions.type == PositionType::Sinusoidal || positions.type == PositionType::Learned;
}

Matrix additiveEncoding(const PositionSpec& positions, Index count, Index dModel)
{
    switch (positions.type) {
    case PositionType::Sinusoidal:
        return sinusoidalTable(count, dModel, positions.base);
    case PositionType::Learned:
        return positions.P.topRows(count);
    default:
        return Matrix();
    }
}

std::vector<double> ropeFrequencies(Index d, double base, const RopeScaling& scaling)
{
    constexpr double pi = 3.14159265358979323846;
    const Index pairs = d / 2;
    std::vector<double> frequencies(static_cast<std::size_t>(std::max<Index>(0, pairs)));
    for (Index r = 0; r < pairs; ++r) {
        double& theta = frequencies[static_cast<std::size_t>(r)];
        theta = std::pow(base, -2.0 * static_cast<double>(r) / static_cast<double>(d));
        switch (scaling.type) {
        case RopeScalingType::None:
            break;
        case RopeScalingType::Linear:
            theta /= scaling.factor;
            break;
        case RopeScalingType::Llama3: {
            const double wavelength = 2.0 * pi / theta;
            const double L = scaling.originalMaxPositions;
            if (wavelength > L / scaling.lowFrequencyFactor) {
                theta /= scaling.factor;
            } else if (!(wavelength < L / scaling.highFrequencyFactor)) { // between: a smooth blend
                const double smooth = (L / wavelength - scaling.lowFrequencyFactor) /
                                      (scaling.highFrequencyFactor - scaling.lowFrequencyFactor);
                theta = (1.0 - smooth) * theta / scaling.factor + smooth * theta;
            }
            break;
        }
        }
    }
    return frequencies;
}

template <typename Scalar>
void applyRope(Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& rows, double base,
               RopePairing pairing, Index firstPosition, const RopeScaling& scaling)
{
    const Index d = rows.cols();
    const Index pairs = d / 2;
    const bool half = pairing == RopePairing::Half;
    const std::vector<double> frequencies = ropeFrequencies(d, base, scaling);
    for (Index p = 0; p < rows.rows(); ++p) {
        Scalar* row = rows.row(p).data();
        const auto position = static_cast<double>(firstPosition + p);
        for (Index r = 0; r < pairs; ++r) {
            const double angle = position * frequencies[static_cast<std::size_t>(r)];
            const auto cosine = static_cast<Scalar>(std::cos(angle));
            const auto sine = static_cast<Scalar>(std::sin(angle));
            Scalar& x = row[half ? r : 2 * r];
            Scalar& y = row[half ? r + pairs : 2 * r + 1];
            const Scalar rotatedX = x * cosine - y * sine;
            y = x * sine + y * cosine;
            x = rotatedX;
        }
    }
}

template void applyRope<double>(Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>&,
                                double, RopePairing, Index, const RopeScaling&);
template void applyRope<float>(Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>&, double,
                               RopePairing, Index, const RopeScaling&);

namespace {

// 2^(−8h/H) for h = 1 … H (H a power of two): exact powers of two when 8h/H is whole.
std::vector<double> powerOfTwoSlopes(int heads)
{
    std::vector<double> slopes;
    for (int h = 1; h <= heads; ++h)
        slopes.push_back(std::exp2(-8.0 * h / heads));
    return slopes;
}

} // namespace

std::vector<double> alibiSlopes(int heads)
{
    if (heads < 1)
        return {};
    int power = 1;
    while (power * 2 <= heads)
        power *= 2;
    std::vector<double> slopes = powerOfTwoSlopes(power);
    // Press et al.'s rule for the rest: every other slope of twice as many heads (those not already taken).
    const std::vector<double> doubled = powerOfTwoSlopes(2 * power);
    for (std::size_t k = 0; static_cast<int>(slopes.size()) < heads; k += 2)
        slopes.push_back(doubled[k]);
    return slopes;
}

std::vector<double> effectiveAlibiSlopes(const PositionSpec& positions, int heads)
{
    return positions.slopes.empty() ? alibiSlopes(heads) : positions.slopes;
}

} // namespace qkv
