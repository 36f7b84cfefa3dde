#pragma once
/// @file
/// The output of `qkvlab compute` (spec section 6): results as one JSON object whose numbers read back
/// to the same doubles.

#include "AttentionResult.h"

#include <string>

namespace qkv {

std::string resultToJson(const AttentionResult& result);

} // namespace qkv
