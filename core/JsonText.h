#pragma once
// Internal to core: JSON helpers of the session file (the compute output is streamed by ResultJson.cpp; its
// test writes the reference document with these).

#include "EigenTypes.h"

#include <nlohmann/json.hpp>

#include <string>

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

} // namespace qkv::json
