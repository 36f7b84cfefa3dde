// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the explanation texts (ExplanationText.cpp): how the pieces of their lines are spelled. Both
// renderings are built together: every piece of a line is a Both holding its plain-text and its LaTeX
// spelling, so which steps appear, which keys are listed and how numbers are rounded are decided once, and
// each line is then written out as plain text or as a row of a LaTeX align* environment.

#include "EigenTypes.h"

#include <charconv>
#include <string>
#include <vector>

namespace qkv::explanationText {

inline constexpr Index maxShownTerms = 8; ///< vector components or sum terms before "..."

// Numbers. std::to_chars ignores the C locale, which a Qt application sets from the environment.
std::string chars(double x, std::chars_format format, int precision);
/// "nan", "inf" or "-inf".
std::string nonFinite(double x);
/// Inputs and exact values: integers without decimals, otherwise up to 4 decimals, trailing zeros dropped.
std::string compactNumber(double x);
/// Derived values (scaled scores, exponentials, weights, outputs): 3 decimals, as the worked examples print.
std::string fixedNumber(double x);
/// "1.235e+06" → "1.235 \times 10^{6}"; other numbers unchanged.
std::string latexNumber(const std::string& plain);

/// Both spellings of a piece of a line.
struct Both {
    std::string plain;
    std::string latex;
};

Both operator+(Both a, const Both& b);
/// The same characters in both (only for ASCII that means the same in LaTeX math).
Both operator+(Both a, const char* same);
Both lit(std::string plain, std::string latex);
/// An input or exact value (compactNumber), and a derived one (fixedNumber).
Both compact(double x);
Both fixed3(double x);
/// A factor of a product: negative numbers in parentheses, "(-1)*2".
Both factor(double x);
Both times();
/// " - x" for a subtracted derived value, " + |x|" when it is negative.
Both minus(double x);
/// A derived value as a factor: negative numbers in parentheses.
Both fixedFactor(double x);
/// Text inside a line: in LaTeX it is escaped (the line wraps it in \text{}).
Both text(const std::string& s);
/// Maths inside a text line: "$...$" in LaTeX.
Both inlineMath(const std::string& plain, const std::string& latex);
/// A token's text, quoted.
Both token(const std::string& t);
/// A vector with compact (inputs) or 3-decimal (derived) entries, shortened in the middle when long.
Both vectorOf(const RowVector& v, bool derived);
/// "l_0*r_0 + l_1*r_1 + ...", shortened in the middle when long.
Both productSum(const RowVector& left, const RowVector& right);

struct Line {
    std::string plain;
    std::string latex; ///< one row of the align* environment, without the trailing "\\"
};

class Lines {
public:
    /// A formula line: plain `label + body`, LaTeX `lhs &= body`-style (lhs includes the "&").
    void formula(const std::string& label, const std::string& lhs, const Both& body)
    {
        m_lines.push_back({label + body.plain, lhs + body.latex});
    }
    /// A line of words (with inline maths): plain as is, LaTeX in \text{} at the alignment point.
    void words(const std::string& indent, const Both& body)
    {
        m_lines.push_back({indent + body.plain, "&\\text{" + body.latex + "}"});
    }
    const std::vector<Line>& lines() const { return m_lines; }

private:
    std::vector<Line> m_lines;
};

/// The lines as plain text, one a line, and as a LaTeX align* environment.
std::string plainTextOf(const std::vector<Line>& lines);
std::string latexOf(const std::vector<Line>& lines);

} // namespace qkv::explanationText
