#include "JsonText.h"

namespace qkv::json {

namespace {

bool isFlatArray(const Json& value)
{
    for (const Json& item : value)
        if (item.is_array() || item.is_object())
            return false;
    return true;
}

void writePretty(const Json& value, std::string& out, int depth)
{
    const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
    const std::string closing(static_cast<std::size_t>(depth) * 2, ' ');
    if (value.is_object() && !value.empty()) {
        out += "{\n";
        bool first = true;
        for (auto it = value.begin(); it != value.end(); ++it) {
            out += first ? "" : ",\n";
            first = false;
            out += indent + Json(it.key()).dump() + ": ";
            writePretty(it.value(), out, depth + 1);
        }
        out += "\n" + closing + "}";
    } else if (value.is_array() && !value.empty() && !isFlatArray(value)) {
        out += "[\n";
        for (std::size_t i = 0; i < value.size(); ++i) {
            out += i > 0 ? ",\n" : "";
            out += indent;
            writePretty(value[i], out, depth + 1);
        }
        out += "\n" + closing + "]";
    } else if (value.is_array()) {
        out += "[";
        for (std::size_t i = 0; i < value.size(); ++i) {
            out += i > 0 ? ", " : "";
            out += value[i].dump();
        }
        out += "]";
    } else {
        out += value.dump();
    }
}

} // namespace

std::string prettyJson(const Json& value)
{
    std::string out;
    writePretty(value, out, 0);
    out += "\n";
    return out;
}

} // namespace qkv::json
