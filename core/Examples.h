#pragma once
/// @file
/// The built-in example sessions, compiled in from resources/examples/*.qkv.json.

#include "Session.h"

#include <string>
#include <vector>

namespace qkv {

struct ExampleInfo {
    std::string name;  ///< as in "example:love"
    std::string title; ///< the session's title
};

std::vector<ExampleInfo> builtinExamples();

/// The example's JSON text; throws qkv::Error listing the known names when there is none by that name.
const std::string& exampleJson(const std::string& name);

/// Parses the example; throws qkv::Error when unknown.
Session loadExample(const std::string& name);

/// The prefix users write before an example name on the command line.
inline constexpr const char* examplePrefix = "example:";

} // namespace qkv
