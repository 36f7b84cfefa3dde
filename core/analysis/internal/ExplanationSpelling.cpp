// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExplanationSpelling.h"

#include "ExplanationText.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace qkv {

namespace explanationText {

namespace {

std::string plainToken(const std::string& token)
{
    std::string s = token;
    std::replace_if(
        s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
    return "\"" + s + "\"";
}

} // namespace

std::string chars(double x, std::chars_format format, int precision)
{
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, x, format, precision);
    return std::string(buffer, result.ptr);
}

std::string nonFinite(double x)
{
    return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

std::string compactNumber(double x)
{
    if (!std::isfinite(x))
        return nonFinite(x);
    if (x == 0.0)
        return "0";
    const double magnitude = std::abs(x);
    if (magnitude < 1e15 && x == std::round(x))
        return chars(x, std::chars_format::fixed, 0);
    if (magnitude >= 1e6 || magnitude < 1e-4)
        return chars(x, std::chars_format::scientific, 3);
    std::string s = chars(x, std::chars_format::fixed, 4);
    while (s.back() == '0')
        s.pop_back();
    if (s.back() == '.')
        s.pop_back();
    return s;
}

std::string fixedNumber(double x)
{
    if (!std::isfinite(x))
        return nonFinite(x);
    if (x == 0.0)
        return "0.000";
    const double magnitude = std::abs(x);
    if (magnitude >= 1e6 || magnitude < 5e-4)
        return chars(x, std::chars_format::scientific, 3);
    return chars(x, std::chars_format::fixed, 3);
}

std::string latexNumber(const std::string& plain)
{
    const std::size_t e = plain.find('e');
    if (e == std::string::npos || plain == "inf" || plain == "-inf")
        return plain == "inf" ? "\\infty" : plain == "-inf" ? "-\\infty" : plain;
    int exponent = 0;
    const char* begin = plain.data() + e + 1;
    if (*begin == '+')
        ++begin;
    std::from_chars(begin, plain.data() + plain.size(), exponent);
    return plain.substr(0, e) + " \\times 10^{" + std::to_string(exponent) + "}";
}

Both operator+(Both a, const Both& b)
{
    a.plain += b.plain;
    a.latex += b.latex;
    return a;
}

Both operator+(Both a, const char* same)
{
    a.plain += same;
    a.latex += same;
    return a;
}

Both lit(std::string plain, std::string latex)
{
    return {std::move(plain), std::move(latex)};
}

Both compact(double x)
{
    const std::string s = compactNumber(x);
    return {s, latexNumber(s)};
}

Both fixed3(double x)
{
    const std::string s = fixedNumber(x);
    return {s, latexNumber(s)};
}

Both factor(double x)
{
    const Both b = compact(x);
    return x < 0 ? Both{"(" + b.plain + ")", "(" + b.latex + ")"} : b;
}

Both times()
{
    return lit("*", " \\cdot ");
}

Both minus(double x)
{
    return x < 0 ? Both{" + ", " + "} + fixed3(-x) : Both{" - ", " - "} + fixed3(x);
}

Both fixedFactor(double x)
{
    const Both b = fixed3(x);
    return x < 0 ? Both{"(" + b.plain + ")", "(" + b.latex + ")"} : b;
}

Both text(const std::string& s)
{
    return {s, escapeLatex(s)};
}

Both inlineMath(const std::string& plain, const std::string& latex)
{
    return {plain, "$" + latex + "$"};
}

Both token(const std::string& t)
{
    return {plainToken(t), "``" + escapeLatex(t) + "''"};
}

Both vectorOf(const RowVector& v, bool derived)
{
    Both b{"[", "\\begin{bmatrix}"};
    const Index size = v.size();
    const bool shorten = size > maxShownTerms;
    for (Index t = 0; t < size; ++t) {
        if (shorten && t == maxShownTerms - 2) {
            b = b + lit(", ...", " & \\cdots");
            t = size - 1;
        }
        if (t > 0)
            b = b + lit(", ", " & ");
        b = b + (derived ? fixed3(v(t)) : compact(v(t)));
    }
    if (size == 0)
        b = b + lit("", "\\,");
    return b + lit("]", "\\end{bmatrix}");
}

Both productSum(const RowVector& left, const RowVector& right)
{
    Both b;
    const Index size = left.size();
    const bool shorten = size > maxShownTerms;
    for (Index t = 0; t < size; ++t) {
        if (shorten && t == maxShownTerms - 2) {
            b = b + lit(" + ...", " + \\dots");
            t = size - 1;
        }
        if (t > 0)
            b = b + " + ";
        b = b + factor(left(t)) + times() + factor(right(t));
    }
    if (size == 0)
        b = b + "0";
    return b;
}

std::string plainTextOf(const std::vector<Line>& lines)
{
    std::string text;
    for (const Line& line : lines)
        text += line.plain + "\n";
    return text;
}

std::string latexOf(const std::vector<Line>& lines)
{
    std::string latex = "\\begin{align*}\n";
    for (std::size_t k = 0; k < lines.size(); ++k)
        latex += lines[k].latex + (k + 1 < lines.size() ? " \\\\\n" : "\n");
    latex += "\\end{align*}\n";
    return latex;
}

} // namespace explanationText

std::string escapeLatex(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
        case '\\':
            out += "\\textbackslash{}";
            break;
        case '{':
            out += "\\{";
            break;
        case '}':
            out += "\\}";
            break;
        case '$':
            out += "\\$";
            break;
        case '&':
            out += "\\&";
            break;
        case '#':
            out += "\\#";
            break;
        case '_':
            out += "\\_";
            break;
        case '%':
            out += "\\%";
            break;
        case '^':
            out += "\\textasciicircum{}";
            break;
        case '~':
            out += "\\textasciitilde{}";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                out += ' ';
            else
                out += c;
        }
    }
    return out;
}

} // namespace qkv
