// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Matrices written row by row in braces, for the core tests.

#include "EigenTypes.h"

#include <initializer_list>

namespace qkv::test {

inline Matrix fromRows(std::initializer_list<std::initializer_list<double>> rows)
{
    Matrix m(static_cast<Index>(rows.size()), static_cast<Index>(rows.begin()->size()));
    Index r = 0;
    for (const auto& row : rows) {
        Index c = 0;
        for (double v : row)
            m(r, c++) = v;
        ++r;
    }
    return m;
}

} // namespace qkv::test
