// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to core: JSON helpers of the session file (the compute output is streamed by ResultJson.cpp; its
// test writes the reference document with these), and the strict parser of the checkpoint files' JSON.

#include "EigenTypes.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace qkv::json {

using Json = nlohmann::ordered_json;

/// A matrix as an array of rows.
template <typename Derived> Json matrix(const Eigen::MatrixBase<Derived>& m)
{
    Json rows = Json::array();
    for (Index r = 0; r < m.rows(); ++r) {
        Json row = Json::array();
        for (Index c = 0; c < m.cols(); ++c)
            row.push_back(m(r, c));
        rows.push_back(std::move(row));
    }
    return rows;
}

/// Indented JSON in which an array of plain values (a matrix row, the tokens) stays on one line, ending in
/// a newline. Numbers are written shortest-round-trip, so they read back to the same doubles.
std::string prettyJson(const Json& value);

/// What parseJsonStrictly accepts beyond valid JSON.
struct JsonLimits {
    /// Objects and arrays inside each other, the outermost counted.
    int maxNesting = 64;
    /// Elements of any one array.
    std::size_t maxArrayLength = std::numeric_limits<std::size_t>::max();
};

/// Parses JSON text whose shape is known to be small (a checkpoint header, a model config), refusing while
/// it parses, before a hostile text could build a deep or huge tree: nesting beyond `limits.maxNesting`, an
/// array longer than `limits.maxArrayLength`, and a key repeated in one object (which the tree would
/// silently keep once). Throws qkv::Error: "not valid JSON: ..." (nlohmann's error code dropped), or the
/// key path and the problem ("\"w\".shape: more than 64 elements").
Json parseJsonStrictly(std::string_view text, const JsonLimits& limits);

} // namespace qkv::json
