// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: qkv::parseDelimited (CSV and spreadsheet paste). Refusal with qkv::Error is fine; an
// accepted matrix must be finite, within the limits, and survive formatDelimited → parseDelimited exactly.

#include "DelimitedText.h"
#include "FuzzChecks.h"

using namespace qkv;
using namespace qkv::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Matrix m;
    try {
        m = parseDelimited(text(data, size));
    } catch (const Error&) {
        return 0;
    }
    if (m.rows() < 1 || m.cols() < 1 || m.rows() > maxMatrixSide || m.cols() > maxMatrixSide)
        fail("parseDelimited accepted a " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
             " matrix");
    if (!allFinite(m))
        fail("parseDelimited accepted a non-finite value");
    for (const char separator : {',', '\t', ';'}) {
        const Matrix back = mustNotThrow("parseDelimited(formatDelimited(m))",
                                         [&] { return parseDelimited(formatDelimited(m, separator)); });
        if (!sameMatrix(back, m))
            fail(std::string("formatDelimited/parseDelimited round trip changed the matrix (separator '") +
                 separator + "')");
    }
    return 0;
}
