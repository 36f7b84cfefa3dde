// SPDX-License-Identifier: GPL-3.0-or-later
#include "HeadGridCsv.h"

#include "DelimitedText.h"

namespace qkv {

std::string headGridCsv(const Matrix& values)
{
    std::string text = "layer";
    for (Index h = 0; h < values.cols(); ++h)
        text += ",H" + std::to_string(h);
    text += '\n';
    Matrix rows(values.rows(), values.cols() + 1);
    for (Index l = 0; l < values.rows(); ++l)
        rows(l, 0) = double(l);
    rows.rightCols(values.cols()) = values;
    return text + (values.rows() > 0 ? formatDelimited(rows) : std::string());
}

} // namespace qkv
