// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: qkv::parseNpy. Refusal with qkv::Error is fine; an accepted matrix must be finite,
// within the limits, and survive formatNpy → parseNpy exactly.

#include "FuzzChecks.h"
#include "NpyFile.h"

using namespace qkv;
using namespace qkv::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Matrix m;
    try {
        m = parseNpy(text(data, size));
    } catch (const Error&) {
        return 0;
    }
    if (m.rows() < 1 || m.cols() < 1 || m.rows() > maxMatrixSide || m.cols() > maxMatrixSide)
        fail("parseNpy accepted a " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
             " matrix");
    if (!allFinite(m))
        fail("parseNpy accepted a non-finite value");
    const std::string bytes = mustNotThrow("formatNpy", [&] { return formatNpy(m); });
    const Matrix back = mustNotThrow("parseNpy(formatNpy(m))", [&] { return parseNpy(bytes); });
    if (!sameMatrix(back, m))
        fail("formatNpy/parseNpy round trip changed the matrix");
    return 0;
}
