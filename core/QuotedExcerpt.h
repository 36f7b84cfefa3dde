#pragma once
// Internal to core: how the file readers quote a refused value in a message.

#include <cstddef>
#include <string>
#include <string_view>

namespace qkv {

/// A value as it appears in a message: quoted and, when long, cut short.
inline std::string quotedExcerpt(std::string_view text)
{
    constexpr std::size_t longest = 32;
    if (text.size() > longest)
        return "\"" + std::string(text.substr(0, longest)) + "…\"";
    return "\"" + std::string(text) + "\"";
}

} // namespace qkv
