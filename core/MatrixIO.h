#pragma once
/// @file
/// Importing and exporting one matrix: delimited text (CSV, a spreadsheet paste) and NumPy .npy files.
/// Every reader refuses bad input with qkv::Error and a message that says where the problem is.

#include "EigenTypes.h"
#include "Session.h"

#include <algorithm>
#include <string>

namespace qkv {

/// The largest matrix the readers accept, in each direction (the session's limits, spec section 5).
inline constexpr Index maxMatrixSide = std::max(Limits::maxTokens, Limits::maxDimension);

/// Reads a matrix from CSV text: one row per line, values separated by commas, tabs or semicolons (a
/// spreadsheet paste is tab-separated). The separator is chosen once for the whole text from the first
/// non-blank line: a tab if it has one, else a semicolon if it has one, else a comma. Line breaks may be
/// "\n", "\r\n" or "\r"; a UTF-8 byte order mark, blank lines before the first row and after the last row,
/// and spaces around a value are ignored. Every value must be a finite number written with a '.' decimal
/// point ("1", "-2.5", "+3", ".5", "1e-3"); rows must have equal length; at most 4096 × 4096.
/// Throws qkv::Error with "line L, column C: ..." (1-based; C counts values, not characters).
Matrix parseDelimited(const std::string& text);

/// Writes one line per row, values joined by `separator` (',' for CSV, '\t' for the clipboard), each line
/// ending in '\n'. Numbers are written shortest-round-trip ("0.1", "1e-300", "-0"), so parseDelimited gives
/// back exactly the same doubles.
std::string formatDelimited(const Matrix& m, char separator = ',');

/// Reads a NumPy .npy file (format versions 1.0, 2.0 and 3.0): little-endian float32 ('<f4') or float64
/// ('<f8'), a 2-D shape (a 1-D shape (k,) reads as a 1 × k row), C or Fortran order. Refuses with
/// qkv::Error: wrong magic, unsupported version, big-endian or any other dtype, a header that does not
/// parse, a shape with more than 2 dimensions, a zero dimension or more than 4096 in one, a body shorter or
/// longer than the shape needs, and non-finite values ("row r, column c", 1-based, with the NumPy index).
Matrix parseNpy(const std::string& bytes);

/// Writes a version 1.0 .npy file: '<f8', fortran_order False, the header padded with spaces and ending in
/// '\n' so that magic + header length is a multiple of 64 bytes, as NumPy writes it.
std::string formatNpy(const Matrix& m);

/// Reads the whole file and parses it by its extension: ".npy" (any case) as NumPy, anything else as
/// delimited text. Throws qkv::Error; when the file cannot be read, the message starts with the path
/// (a parse error does not, as with loadSession).
Matrix loadMatrixFile(const std::string& path);

/// Writes the matrix atomically (a temporary file beside it, then renamed): ".npy" (any case) as NumPy,
/// anything else as CSV. Refuses an empty matrix or one with a non-finite value, so what is saved always
/// loads back. Throws qkv::Error naming the path on I/O failure.
void saveMatrixFile(const Matrix& m, const std::string& path);

} // namespace qkv
