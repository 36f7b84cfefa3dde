// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixFile.h"

#include "DelimitedText.h"
#include "Error.h"
#include "FileReading.h"
#include "FileWriting.h"
#include "MatrixLimits.h"
#include "NpyFile.h"

#include <cstdint>

namespace qkv {

namespace {

bool hasNpyExtension(const std::string& path)
{
    if (path.size() < 4)
        return false;
    std::string extension = path.substr(path.size() - 4);
    for (char& c : extension)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return extension == ".npy";
}

/// Larger than any file of an accepted matrix: 4096 × 4096 values, each with plenty of room.
constexpr std::uint64_t largestFile = std::uint64_t(1) << 30;

} // namespace

Matrix loadMatrixFile(const std::string& path)
{
    const std::string bytes = readRegularFile(
        path, largestFile, "a matrix file (at most " + maxMatrixSideText + " × " + maxMatrixSideText + ")");
    return hasNpyExtension(path) ? parseNpy(bytes) : parseDelimited(bytes);
}

void saveMatrixFile(const Matrix& m, const std::string& path)
{
    if (m.size() == 0)
        throw Error(path + ": not saved: the matrix is empty");
    if (!m.allFinite())
        throw Error(path + ": not saved: the matrix has a value that is not a finite number");
    writeFileAtomically(path, hasNpyExtension(path) ? formatNpy(m) : formatDelimited(m, ','));
}

} // namespace qkv
