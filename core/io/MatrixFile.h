// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Importing and exporting one matrix as a file: NumPy .npy by its extension, CSV otherwise.

#include "EigenTypes.h"

#include <string>

namespace qkv {

/// Reads the whole file and parses it by its extension: ".npy" (any case) as NumPy, anything else as
/// delimited text. Throws qkv::Error; when the file cannot be read, the message starts with the path
/// (a parse error does not, as with loadSession).
Matrix loadMatrixFile(const std::string& path);

/// Writes the matrix atomically (a temporary file beside it, then renamed): ".npy" (any case) as NumPy,
/// anything else as CSV. Refuses an empty matrix or one with a non-finite value, so what is saved always
/// loads back. Throws qkv::Error naming the path on I/O failure.
void saveMatrixFile(const Matrix& m, const std::string& path);

} // namespace qkv
