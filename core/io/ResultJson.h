// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The output of `qkvlab compute` (docs/session-file.md, "The `compute` output"): results as one JSON object
/// whose numbers read back to the same doubles, written as it goes.

#include "AttentionResult.h"

#include <iosfwd>

namespace qkv {

/// Writes `result` to `out` as indented JSON (an array of numbers, a matrix row, on one line), a few KiB at
/// a time: no document tree and no whole text are built, so the output costs a fixed 64 KiB whatever the
/// result's size. Numbers are nlohmann/json's shortest round-trip form (whole numbers as integers), byte
/// for byte what dumping the result as a JSON document gives. Throws qkv::Error ("cannot write: REASON")
/// as soon as `out` fails (a full disk, a closed pipe); what was written before stays written.
void writeResultJson(const AttentionResult& result, std::ostream& out);

} // namespace qkv
