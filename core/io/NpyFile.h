// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// One matrix as the bytes of a NumPy .npy file, read and written.
/// The reader refuses bad input with qkv::Error and a message that says where the problem is.

#include "EigenTypes.h"
#include "MatrixLimits.h"

#include <string>

namespace qkv {

/// Reads a NumPy .npy file (format versions 1.0, 2.0 and 3.0): little-endian float32 ('<f4') or float64
/// ('<f8'), a 2-D shape (a 1-D shape (k,) reads as a 1 × k row), C or Fortran order. Refuses with
/// qkv::Error: wrong magic, unsupported version, big-endian or any other dtype, a header that does not
/// parse, a shape with more than 2 dimensions, a zero dimension or more than 4096 in one, a body shorter or
/// longer than the shape needs, and non-finite values ("row r, column c", 1-based, with the NumPy index).
Matrix parseNpy(const std::string& bytes);

/// Writes a version 1.0 .npy file: '<f8', fortran_order False, the header padded with spaces and ending in
/// '\n' so that magic + header length is a multiple of 64 bytes, as NumPy writes it.
std::string formatNpy(const Matrix& m);

} // namespace qkv
