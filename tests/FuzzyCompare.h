// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one tolerance check of the tests: actual against expected, entry by entry within an absolute
// tolerance; a failure names the first entry that differs, both values and the tolerance.
//
//     QKV_COMPARE_NEAR(result.weights, expected, 1e-12);   // Eigen matrices, vectors, arrays, expressions
//     QKV_COMPARE_NEAR(row, Row{0.5, 0.5}, 1e-15);          // std::vector of numbers
//     QKV_COMPARE_NEAR(trace.threshold, -0.25, 1e-15);      // two numbers

#include <Eigen/Core>

#include <QString>
#include <QtTest>

#include <cmath>
#include <vector>

namespace qkv::test {

inline QString numberText(long double value)
{
    return QString::number(static_cast<double>(value), 'g', 17);
}

inline bool withinTolerance(long double actual, long double expected, long double tolerance)
{
    return std::fabs(actual - expected) <= tolerance; // false for NaN, as it must be
}

/// "" when every entry matches, else what differs first.
inline QString fuzzyMismatch(long double actual, long double expected, long double tolerance)
{
    if (withinTolerance(actual, expected, tolerance))
        return {};
    return QStringLiteral("%1, expected %2 (tolerance %3)")
        .arg(numberText(actual), numberText(expected), numberText(tolerance));
}

template <typename A, typename B>
QString fuzzyMismatch(const Eigen::DenseBase<A>& actual, const Eigen::DenseBase<B>& expected,
                      long double tolerance)
{
    if (actual.rows() != expected.rows() || actual.cols() != expected.cols())
        return QStringLiteral("shape %1 × %2, expected %3 × %4")
            .arg(actual.rows())
            .arg(actual.cols())
            .arg(expected.rows())
            .arg(expected.cols());
    // Evaluated once: a product expression may not be read entry by entry.
    const typename Eigen::DenseBase<A>::PlainObject actualValues = actual.derived();
    const typename Eigen::DenseBase<B>::PlainObject expectedValues = expected.derived();
    for (Eigen::Index r = 0; r < actual.rows(); ++r)
        for (Eigen::Index c = 0; c < actual.cols(); ++c) {
            const auto a = static_cast<long double>(actualValues(r, c));
            const auto e = static_cast<long double>(expectedValues(r, c));
            if (!withinTolerance(a, e, tolerance))
                return QStringLiteral("entry (%1, %2): %3").arg(r).arg(c).arg(fuzzyMismatch(a, e, tolerance));
        }
    return {};
}

template <typename T, typename U>
QString fuzzyMismatch(const std::vector<T>& actual, const std::vector<U>& expected, long double tolerance)
{
    if (actual.size() != expected.size())
        return QStringLiteral("%1 entries, expected %2").arg(actual.size()).arg(expected.size());
    for (std::size_t j = 0; j < actual.size(); ++j) {
        const auto a = static_cast<long double>(actual[j]);
        const auto e = static_cast<long double>(expected[j]);
        if (!withinTolerance(a, e, tolerance))
            return QStringLiteral("entry %1: %2").arg(j).arg(fuzzyMismatch(a, e, tolerance));
    }
    return {};
}

} // namespace qkv::test

#define QKV_COMPARE_NEAR(actual, expected, tolerance)                                                        \
    do {                                                                                                     \
        const QString mismatch_ = ::qkv::test::fuzzyMismatch((actual), (expected), (tolerance));             \
        QVERIFY2(mismatch_.isEmpty(), qPrintable(mismatch_));                                                \
    } while (false)
