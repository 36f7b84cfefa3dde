// SPDX-License-Identifier: GPL-3.0-or-later
#include "JsonText.h"

#include "Error.h"
#include "QuotedExcerpt.h"

#include <unordered_set>
#include <vector>

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

/// The parser callback of parseJsonStrictly: it sees every event, keeps the key path and refuses what the
/// limits do not allow.
class StrictJsonGuard {
public:
    explicit StrictJsonGuard(const JsonLimits& limits) : limits_(limits) {}

    bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed)
    {
        switch (event) {
        case Json::parse_event_t::object_start:
        case Json::parse_event_t::array_start:
            countElement();
            if (open_.size() >= static_cast<std::size_t>(limits_.maxNesting))
                refuse("nested more than " + std::to_string(limits_.maxNesting) + " levels deep");
            open_.push_back({event == Json::parse_event_t::array_start, 0, {}, {}});
            break;
        case Json::parse_event_t::key:
            open_.back().key = parsed.get<std::string>();
            if (!open_.back().keys.insert(open_.back().key).second)
                refuse("the key appears twice in one object");
            break;
        case Json::parse_event_t::value:
            countElement();
            break;
        case Json::parse_event_t::object_end:
        case Json::parse_event_t::array_end:
            open_.pop_back();
            break;
        }
        return true;
    }

private:
    struct Open {
        bool isArray;
        std::size_t count; // array: elements so far
        std::string key;   // object: the key being read
        std::unordered_set<std::string> keys;
    };

    void countElement()
    {
        if (!open_.empty() && open_.back().isArray && ++open_.back().count > limits_.maxArrayLength)
            refuse("more than " + std::to_string(limits_.maxArrayLength) + " elements in one array");
    }

    [[noreturn]] void refuse(const std::string& problem) const
    {
        std::string path;
        for (const Open& o : open_) {
            if (o.isArray && o.count > 0)
                path += "[" + std::to_string(o.count - 1) + "]";
            else if (!o.isArray && !o.key.empty())
                path += (path.empty() ? "" : ".") + quotedExcerpt(o.key, 100);
        }
        throw Error((path.empty() ? std::string() : path + ": ") + problem);
    }

    JsonLimits limits_;
    std::vector<Open> open_;
};

} // namespace

Json parseJsonStrictly(std::string_view text, const JsonLimits& limits)
{
    StrictJsonGuard guard(limits);
    try {
        return Json::parse(text.begin(), text.end(),
                           [&guard](int depth, Json::parse_event_t event, Json& parsed) {
                               return guard(depth, event, parsed);
                           });
    } catch (const Json::exception& e) { // a syntax error, or a number too large for a double (1e999)
        std::string what = e.what();
        // Drop nlohmann's "[json.exception.parse_error.101] " prefix: it means nothing to a user.
        if (const auto end = what.find("] ");
            what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
            what = what.substr(end + 2);
        throw Error("not valid JSON: " + what);
    }
}

std::string prettyJson(const Json& value)
{
    std::string out;
    writePretty(value, out, 0);
    out += "\n";
    return out;
}

} // namespace qkv::json
