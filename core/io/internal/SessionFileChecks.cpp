// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionFileChecks.h"

#include "Error.h"

#include <cmath>

namespace qkv::json {

[[noreturn]] void refuse(const std::string& path, const std::string& problem)
{
    throw Error(path + ": " + problem);
}

std::string typeName(const Json& value)
{
    switch (value.type()) {
    case Json::value_t::null:
        return "null";
    case Json::value_t::boolean:
        return "a boolean";
    case Json::value_t::string:
        return "a string";
    case Json::value_t::array:
        return "an array";
    case Json::value_t::object:
        return "an object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
        return "a number";
    default:
        return "an unsupported value";
    }
}

[[noreturn]] void wrongType(const std::string& path, const char* expected, const Json& found)
{
    refuse(path, std::string("expected ") + expected + ", found " + typeName(found));
}

const Json& require(const Json& object, const std::string& objectPath, const char* key)
{
    const auto it = object.find(key);
    if (it == object.end())
        refuse(objectPath.empty() ? key : objectPath + "." + key, "missing");
    return *it;
}

double readNumber(const Json& value, const std::string& path)
{
    if (!value.is_number())
        wrongType(path, "a number", value);
    const double number = value.get<double>();
    if (!std::isfinite(number))
        refuse(path, "not a finite number");
    return number;
}

Index readWholeNumber(const Json& value, const std::string& path, Index min)
{
    const double number = readNumber(value, path);
    if (number != std::floor(number) || number < static_cast<double>(min) || number > 1e9)
        refuse(path, "expected a whole number ≥ " + std::to_string(min) + ", found " + value.dump());
    return static_cast<Index>(number);
}

std::string readString(const Json& value, const std::string& path)
{
    if (!value.is_string())
        wrongType(path, "a string", value);
    return value.get<std::string>();
}

const Json& requireObject(const Json& value, const std::string& path)
{
    if (!value.is_object())
        wrongType(path, "an object", value);
    return value;
}

void checkCount(const std::string& path, std::size_t count, const char* what, Index max)
{
    if (count < 1 || static_cast<Index>(count) > max)
        refuse(path,
               "expected 1 to " + std::to_string(max) + " " + what + ", found " + std::to_string(count));
}

} // namespace qkv::json
