// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the commands that open a model folder read the same way: the folder, the precision, and token ids
// given as a text (tokenized by the model's tokenizer) or as numbers. Each throws qkv::Error with one line
// naming the option.

#include "ArgumentParser.h"
#include "Session.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qkv {
class Model;
}

namespace qkv::app {

/// The one model folder of the positional arguments; `usage` when there is none.
std::string modelFolderArgument(const ParsedArguments& arguments, const std::string& usage);

/// --precision: float64 (the default) or float32.
Precision precisionArgument(const ParsedArguments& arguments);

/// The ids option `idsName` ("--ids 5,17,3"), or nothing when it is absent.
std::vector<std::int64_t> idsArgument(const ParsedArguments& arguments, std::string_view idsName);

/// True when exactly one of the two options is given.
bool exactlyOneOf(const ParsedArguments& arguments, std::string_view first, std::string_view second);

/// The tokens of the text option `textName` (by the model's tokenizer) or of the ids option `idsName`,
/// whichever is given: refused when they are none, or when an id is outside the model's vocabulary.
std::vector<std::int64_t> tokensArgument(const Model& model, const ParsedArguments& arguments,
                                         std::string_view textName, std::string_view idsName);

/// One token: the text option `textName`, which must be exactly one token, or the id option `idName`,
/// which must be in the vocabulary. Nothing when neither is given; refused when both are.
std::optional<std::int64_t> tokenArgument(const Model& model, const ParsedArguments& arguments,
                                          std::string_view textName, std::string_view idName);

} // namespace qkv::app
