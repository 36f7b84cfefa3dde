// SPDX-License-Identifier: GPL-3.0-or-later
#include "ViewData.h"

#include "Normalizers.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace qkv {

HeadSummary summarizeHead(const HeadResult& head)
{
    HeadSummary summary;
    const Index rows = head.allowed.rows();
    double entropy = 0.0, support = 0.0;
    for (Index i = 0; i < rows && i < static_cast<Index>(head.rowStats.size()); ++i) {
        // Non-empty: at least one allowed key (emptyRows lists exactly the others).
        if (!head.allowed.row(i).any())
            continue;
        const RowStats& stats = head.rowStats[static_cast<std::size_t>(i)];
        entropy += stats.entropy;
        support += static_cast<double>(stats.support);
        ++summary.nonEmptyRows;
    }
    if (summary.nonEmptyRows > 0) {
        summary.meanEntropy = entropy / static_cast<double>(summary.nonEmptyRows);
        summary.meanSupport = support / static_cast<double>(summary.nonEmptyRows);
    }
    return summary;
}

NormalizerComparison compareNormalizers(const HeadResult& head, Index row, double temperature)
{
    if (row < 0 || row >= head.scaled.rows())
        throw std::out_of_range("compareNormalizers: row " + std::to_string(row) + " of " +
                                std::to_string(head.scaled.rows()));
    if (!(std::isfinite(temperature) && temperature > 0))
        throw std::invalid_argument("compareNormalizers: the temperature must be a finite positive number");
    if (head.allowed.rows() != head.scaled.rows() || head.allowed.cols() != head.scaled.cols())
        throw std::invalid_argument("compareNormalizers: the mask does not have the scores' shape");

    NormalizerComparison comparison;
    comparison.names = {"softmax", "sparsemax", "1.5-entmax", "sigmoid", "hardmax"};
    comparison.specs = {{NormalizerType::Softmax, 1.5},
                        {NormalizerType::Sparsemax, 1.5},
                        {NormalizerType::Entmax, 1.5},
                        {NormalizerType::Sigmoid, 1.5},
                        {NormalizerType::Hardmax, 1.5}};
    const Index m = head.scaled.cols();
    comparison.weights = Matrix::Zero(static_cast<Index>(comparison.specs.size()), m);
    // Rows of the row-major matrices are contiguous, as normalizeRow expects.
    const RowVector scaled = head.scaled.row(row);
    const Eigen::Matrix<std::uint8_t, 1, Eigen::Dynamic> allowed = head.allowed.row(row);
    RowVector out(m);
    NormalizerScratch scratch;
    for (std::size_t k = 0; k < comparison.specs.size(); ++k) {
        normalizeRow(comparison.specs[k], scaled.data(), allowed.data(), m, temperature, out.data(), scratch);
        comparison.weights.row(static_cast<Index>(k)) = out;
    }
    return comparison;
}

} // namespace qkv
