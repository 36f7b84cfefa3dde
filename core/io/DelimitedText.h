// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// One matrix as delimited text: a CSV file or a spreadsheet paste in, CSV or tab-separated text out.
/// The reader refuses bad input with qkv::Error and a message that says where the problem is.

#include "EigenTypes.h"
#include "MatrixLimits.h"

#include <string>

namespace qkv {

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

} // namespace qkv
