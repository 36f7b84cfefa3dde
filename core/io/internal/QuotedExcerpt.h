// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to core: how the file readers quote a refused value in a message.

#include <cstddef>
#include <string>
#include <string_view>

namespace qkv {

/// A value as it appears in a message: quoted and, when longer than `longest` bytes, cut short (never inside
/// a UTF-8 character).
inline std::string quotedExcerpt(std::string_view text, std::size_t longest = 32)
{
    if (text.size() <= longest)
        return "\"" + std::string(text) + "\"";
    std::size_t cut = longest;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return "\"" + std::string(text.substr(0, cut)) + "…\"";
}

} // namespace qkv
