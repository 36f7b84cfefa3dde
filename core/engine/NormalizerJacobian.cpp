// SPDX-License-Identifier: GPL-3.0-or-later
#include "NormalizerJacobian.h"

#include "Normalizers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace qkv {

namespace {

// Every Jacobian here is J_z = D − c s sᵀ: D diagonal, s a vector, c a number (0 for sigmoid and hardmax).
struct JacobianShape {
    std::vector<double> diagonal;
    std::vector<double> s;
    double coupling = 0.0; // 1 / Σs
};

// What J_z is for `spec`, from the weights p it gave (p = 0 off the support and on masked keys).
JacobianShape shapeOf(const NormalizerSpec& spec, const std::vector<double>& p)
{
    NormalizerType type = spec.type;
    const double alpha = spec.alpha;
    if (type == NormalizerType::Entmax) { // the engine's exact special cases
        if (!(alpha > 1.0))
            type = NormalizerType::Softmax;
        else if (alpha == 2.0)
            type = NormalizerType::Sparsemax;
        else if (std::isinf(alpha))
            type = NormalizerType::Hardmax;
    }
    JacobianShape shape;
    shape.diagonal.assign(p.size(), 0.0);
    shape.s.assign(p.size(), 0.0);
    for (std::size_t j = 0; j < p.size(); ++j) {
        if (!(p[j] > 0.0))
            continue; // off the support (or masked): its row and column are exactly 0
        switch (type) {
        case NormalizerType::Softmax:
            shape.s[j] = p[j]; // diag(p) − p pᵀ (Σp = 1)
            break;
        case NormalizerType::Sparsemax:
            shape.s[j] = 1.0; // diag(1_S) − 1_S 1_Sᵀ / |S|
            break;
        case NormalizerType::Entmax:
            shape.s[j] = std::pow(p[j], 2.0 - alpha); // diag(s) − s sᵀ / Σs
            break;
        case NormalizerType::Sigmoid:
            shape.diagonal[j] = p[j] * (1.0 - p[j]);
            break;
        case NormalizerType::Hardmax:
            break; // piecewise constant
        }
    }
    double total = 0.0;
    for (double v : shape.s)
        total += v;
    if (total > 0.0) {
        shape.coupling = 1.0 / total;
        for (std::size_t j = 0; j < p.size(); ++j)
            shape.diagonal[j] += shape.s[j];
    }
    return shape;
}

void checkTemperature(double temperature, const char* where)
{
    if (!(std::isfinite(temperature) && temperature > 0.0))
        throw std::invalid_argument(std::string(where) + ": the temperature is not a finite positive number");
}

} // namespace

RowJacobian normalizerJacobian(const NormalizerSpec& spec, const std::vector<double>& scaled,
                               double temperature, const std::vector<std::uint8_t>& allowed)
{
    if (!allowed.empty() && allowed.size() != scaled.size())
        throw std::invalid_argument("normalizerJacobian: the mask and the row differ in length");
    checkTemperature(temperature, "normalizerJacobian");
    for (double v : scaled)
        if (!std::isfinite(v))
            throw std::invalid_argument("normalizerJacobian: a score is not finite");

    RowJacobian out;
    out.weights = normalize(spec, scaled, temperature, allowed);
    const JacobianShape shape = shapeOf(spec, out.weights);
    const auto m = static_cast<Index>(out.weights.size());
    out.jacobian = Matrix::Zero(m, m);
    for (Index i = 0; i < m; ++i) {
        const double si = shape.s[static_cast<std::size_t>(i)];
        if (si != 0.0)
            for (Index j = 0; j < m; ++j) {
                const double sj = shape.s[static_cast<std::size_t>(j)];
                if (sj != 0.0)
                    out.jacobian(i, j) = -si * sj * shape.coupling;
            }
        out.jacobian(i, i) += shape.diagonal[static_cast<std::size_t>(i)];
    }
    out.jacobian /= temperature; // z = S' / τ
    return out;
}

std::vector<double> scoreGradient(const Matrix& jacobian, const std::vector<double>& upstream)
{
    if (jacobian.rows() != static_cast<Index>(upstream.size()))
        throw std::invalid_argument("scoreGradient: the upstream signal and the Jacobian differ in length");
    std::vector<double> gradient(static_cast<std::size_t>(jacobian.cols()), 0.0);
    for (Index i = 0; i < jacobian.rows(); ++i) {
        const double g = upstream[static_cast<std::size_t>(i)];
        if (g == 0.0)
            continue;
        for (Index j = 0; j < jacobian.cols(); ++j)
            gradient[static_cast<std::size_t>(j)] += jacobian(i, j) * g;
    }
    return gradient;
}

std::vector<double> scoreGradient(const NormalizerSpec& spec, const std::vector<double>& weights,
                                  double temperature, const std::vector<double>& upstream)
{
    if (weights.size() != upstream.size())
        throw std::invalid_argument("scoreGradient: the upstream signal and the weights differ in length");
    checkTemperature(temperature, "scoreGradient");
    const JacobianShape shape = shapeOf(spec, weights);
    double projection = 0.0; // sᵀ g
    for (std::size_t j = 0; j < weights.size(); ++j)
        projection += shape.s[j] * upstream[j];
    std::vector<double> gradient(weights.size());
    for (std::size_t j = 0; j < weights.size(); ++j) // J symmetric: Jᵀ g = D g − c s (sᵀ g)
        gradient[j] =
            (shape.diagonal[j] * upstream[j] - shape.s[j] * projection * shape.coupling) / temperature;
    return gradient;
}

double euclideanNorm(const std::vector<double>& values)
{
    double scale = 0.0;
    for (double v : values)
        scale = std::max(scale, std::abs(v));
    if (!(scale > 0.0) || !std::isfinite(scale))
        return scale;
    double sum = 0.0;
    for (double v : values)
        sum += (v / scale) * (v / scale); // no overflow or underflow for extreme entries
    return scale * std::sqrt(sum);
}

Index topKey(const std::vector<double>& weights)
{
    Index best = -1;
    double bestWeight = 0.0;
    for (std::size_t j = 0; j < weights.size(); ++j)
        if (weights[j] > bestWeight) {
            bestWeight = weights[j];
            best = static_cast<Index>(j);
        }
    return best;
}

std::vector<double> unitUpstream(Index m, Index key)
{
    std::vector<double> e(static_cast<std::size_t>(std::max<Index>(m, 0)), 0.0);
    if (key >= 0 && key < m)
        e[static_cast<std::size_t>(key)] = 1.0;
    return e;
}

} // namespace qkv
