#include "ExplanationText.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

// Both renderings are built together: every piece of a line is a Both holding its plain-text and its LaTeX
// spelling, so which steps appear, which keys are listed and how numbers are rounded are decided once.

namespace qkv {

namespace {

constexpr std::size_t maxListedKeys = 12; ///< keys listed per row before "..."
constexpr Index maxShownTerms = 8;        ///< vector components or sum terms before "..."

// ---------------------------------------------------------------------------------------------------------
// Numbers. std::to_chars ignores the C locale, which a Qt application sets from the environment.

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

/// Inputs and exact values: integers without decimals, otherwise up to 4 decimals, trailing zeros dropped.
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

/// Derived values (scaled scores, exponentials, weights, outputs): 3 decimals, as the worked examples print.
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

/// "1.235e+06" → "1.235 \times 10^{6}"; other numbers unchanged.
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

std::string plainToken(const std::string& token)
{
    std::string s = token;
    std::replace_if(
        s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
    return "\"" + s + "\"";
}

// ---------------------------------------------------------------------------------------------------------
// Both spellings of a piece of a line.

struct Both {
    std::string plain;
    std::string latex;
};

Both operator+(Both a, const Both& b)
{
    a.plain += b.plain;
    a.latex += b.latex;
    return a;
}

/// The same characters in both (only for ASCII that means the same in LaTeX math).
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

/// A factor of a product: negative numbers in parentheses, "(-1)*2".
Both factor(double x)
{
    const Both b = compact(x);
    return x < 0 ? Both{"(" + b.plain + ")", "(" + b.latex + ")"} : b;
}

Both times()
{
    return lit("*", " \\cdot ");
}

/// " - x" for a subtracted derived value, " + |x|" when it is negative.
Both minus(double x)
{
    return x < 0 ? Both{" + ", " + "} + fixed3(-x) : Both{" - ", " - "} + fixed3(x);
}

/// A derived value as a factor: negative numbers in parentheses.
Both fixedFactor(double x)
{
    const Both b = fixed3(x);
    return x < 0 ? Both{"(" + b.plain + ")", "(" + b.latex + ")"} : b;
}

/// Text inside a line: in LaTeX it is escaped (the line wraps it in \text{}).
Both text(const std::string& s)
{
    return {s, escapeLatex(s)};
}

/// Maths inside a text line: "$...$" in LaTeX.
Both inlineMath(const std::string& plain, const std::string& latex)
{
    return {plain, "$" + latex + "$"};
}

Both token(const std::string& t)
{
    return {plainToken(t), "``" + escapeLatex(t) + "''"};
}

/// A vector with compact (inputs) or 3-decimal (derived) entries, shortened in the middle when long.
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

/// "l_0*r_0 + l_1*r_1 + ...", shortened in the middle when long.
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

// ---------------------------------------------------------------------------------------------------------
// Lines.

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

bool isSparsemax(const NormalizerSpec& spec)
{
    return spec.type == NormalizerType::Sparsemax ||
           (spec.type == NormalizerType::Entmax && spec.alpha == 2.0);
}

Both indexIs(const char* name, Index value)
{
    const std::string s = std::string(name) + " = " + std::to_string(value);
    return inlineMath(s, s);
}

Both keyLabel(const RowEntry& entry)
{
    return indexIs("j", entry.key) + " " + token(entry.token);
}

/// The allowed keys to list: all of them, or the first ones with the explained key kept in view.
std::vector<const RowEntry*> listedKeys(const CellExplanation& e, bool& complete)
{
    std::vector<const RowEntry*> listed;
    for (const RowEntry& entry : e.row)
        if (entry.allowed)
            listed.push_back(&entry);
    complete = listed.size() <= maxListedKeys;
    if (!complete) {
        const auto own = std::find_if(listed.begin(), listed.end(),
                                      [&e](const RowEntry* entry) { return entry->key == e.key; });
        const bool ownIsLate = own != listed.end() && own - listed.begin() >= Index(maxListedKeys);
        const RowEntry* ownEntry = ownIsLate ? *own : nullptr;
        listed.resize(maxListedKeys);
        if (ownEntry)
            listed.back() = ownEntry;
    }
    return listed;
}

Both supportList(const CellExplanation& e)
{
    Both b;
    std::size_t shown = 0;
    for (Index key : e.support) {
        if (shown == maxListedKeys) {
            b = b + text(", ... (" + std::to_string(e.support.size()) + " keys in all)");
            break;
        }
        if (shown > 0)
            b = b + ", ";
        b = b + token(e.row[static_cast<std::size_t>(key)].token) + " (" + indexIs("j", key) + ")";
        ++shown;
    }
    if (e.support.empty())
        b = b + text("none");
    return b;
}

Both maskDescription(const CellExplanation& e)
{
    const Both i = indexIs("i", e.query);
    const Both j = indexIs("j", e.key);
    if (e.allowed) {
        switch (e.maskType) {
        case MaskType::None:
            return text("allowed (no mask)");
        case MaskType::Causal:
            return text("allowed (causal mask: ") + inlineMath("j ≤ i", "j \\le i") + text(")");
        case MaskType::Prefix:
            return text("allowed (prefix-LM mask: ") +
                   inlineMath("j < p or j ≤ i", "j < p \\text{ or } j \\le i") + text(", ") +
                   indexIs("p", e.prefixLength) + text(")");
        case MaskType::Sliding:
            return text("allowed (sliding-window mask: ") +
                   inlineMath("j ≤ i and i - j < w", "j \\le i \\text{ and } i - j < w") + text(", ") +
                   indexIs("w", e.window) + text(")");
        case MaskType::Custom:
            return text("allowed (custom mask)");
        }
    }
    Both why = text("masked, so ") + inlineMath("a_ij = 0", "a_{ij} = 0") + text(": ");
    switch (e.maskReason) {
    case MaskReason::QueryPadding:
        return why + text("query ") + token(e.queryToken) + text(" is padding, so its whole row is masked");
    case MaskReason::KeyPadding:
        return why + text("key ") + token(e.keyToken) + text(" is padding, so it is masked in every row");
    case MaskReason::Causal:
        return why + text("causal mask, key ") + j + text(" comes after query ") + i + text(" (only ") +
               inlineMath("j ≤ i", "j \\le i") + text(" is allowed)");
    case MaskReason::Prefix:
        return why + text("prefix-LM mask, key ") + j + text(" is outside the prefix (") +
               indexIs("p", e.prefixLength) + text(") and comes after query ") + i;
    case MaskReason::Sliding:
        if (e.key > e.query)
            return why + text("sliding-window mask, key ") + j + text(" comes after query ") + i;
        return why + text("sliding-window mask, ") + indexIs("i - j", e.query - e.key) +
               text(" is not below ") + indexIs("w", e.window);
    case MaskReason::Custom:
    case MaskReason::Allowed:
        break;
    }
    return why + text("custom mask, ") + inlineMath("allowed[i][j] = 0", "\\mathrm{allowed}_{ij} = 0");
}

void scoreLines(const CellExplanation& e, Lines& out)
{
    const Both sum = productSum(e.left, e.right);
    switch (e.scoreFunction) {
    case ScoreFunction::Dot:
        out.formula("Score (dot product): ", "s &= ",
                    lit("s = q_i · k_j = ", "q_i \\cdot k_j = ") + sum + " = " + compact(e.score));
        break;
    case ScoreFunction::General:
        out.formula(
            "Score (general): ", "q_i W_S &= ", lit("q_i W_S = ", "") + vectorOf(e.queryTransformed, false));
        out.formula("  ", "s &= ",
                    lit("s = (q_i W_S) · k_j = ", "(q_i W_S) \\cdot k_j = ") + sum + " = " +
                        compact(e.score));
        break;
    case ScoreFunction::Additive:
        out.formula(
            "Score (additive): ", "q_i W_a &= ", lit("q_i W_a = ", "") + vectorOf(e.queryTransformed, false));
        out.formula("  ", "k_j U_a &= ", lit("k_j U_a = ", "") + vectorOf(e.keyTransformed, false));
        out.formula("  ", "h &= ",
                    lit("h = tanh(q_i W_a + k_j U_a) = ", "\\tanh(q_i W_a + k_j U_a) = ") +
                        vectorOf(e.hidden, false));
        out.formula("  ", "s &= ", lit("s = v_a · h = ", "v_a \\cdot h = ") + sum + " = " + compact(e.score));
        break;
    case ScoreFunction::Cosine: {
        out.formula(
            "Score (cosine): ", "q_i \\cdot k_j &= ", lit("q_i · k_j = ", "") + sum + " = " + compact(e.sum));
        out.formula("  ", "\\lVert q_i \\rVert &= ",
                    lit("‖q_i‖ = ", "") + compact(e.queryNorm) +
                        lit(", ‖k_j‖ = ", ", \\quad \\lVert k_j \\rVert = ") + compact(e.keyNorm));
        const Both definition = lit("s = (q_i · k_j) / (‖q_i‖ ‖k_j‖)",
                                    "\\frac{q_i \\cdot k_j}{\\lVert q_i \\rVert \\, \\lVert k_j \\rVert}");
        if (e.queryNorm > 0.0 && e.keyNorm > 0.0) {
            const Both numerator = compact(e.sum);
            const Both denominator = compact(e.queryNorm) + times() + compact(e.keyNorm);
            out.formula("  ", "s &= ",
                        definition +
                            Both{" = " + numerator.plain + " / (" + denominator.plain + ")",
                                 " = \\frac{" + numerator.latex + "}{" + denominator.latex + "}"} +
                            " = " + compact(e.score));
        } else {
            out.formula("  ", "s &= ", definition + lit(" = 0 (a zero vector has no direction)", " = 0"));
        }
        break;
    }
    }
}

void scaleLines(const CellExplanation& e, Lines& out)
{
    const Both s = compact(e.score);
    const Both result = fixed3(e.unbiasedScaled);
    switch (e.scale.kind) {
    case Scale::Kind::SqrtDk: {
        const std::string d = std::to_string(e.dK);
        out.formula("Scale: ", "s' &= ",
                    Both{"s' = s / √d_k = " + s.plain + " / √" + d,
                         "\\frac{s}{\\sqrt{d_k}} = \\frac{" + s.latex + "}{\\sqrt{" + d + "}}"} +
                        " = " + result);
        break;
    }
    case Scale::Kind::Constant: {
        const Both c = compact(e.divisor);
        out.formula("Scale: ", "s' &= ",
                    Both{"s' = s / c = " + s.plain + " / " + c.plain,
                         "\\frac{s}{c} = \\frac{" + s.latex + "}{" + c.latex + "}"} +
                        " = " + result);
        break;
    }
    case Scale::Kind::None:
        out.formula("Scale: none, ", "s' &= ", lit("s' = s = ", "s = ") + s);
        break;
    }
    if (e.alibi) {
        const std::string distance = std::to_string(std::abs(e.query - e.key));
        out.formula("ALiBi: ", "s' &= ",
                    Both{"s' − m · |i − j| = " + fixedNumber(e.unbiasedScaled) + " − " +
                             compactNumber(e.alibiSlope) + " · " + distance,
                         latexNumber(fixedNumber(e.unbiasedScaled)) + " - " +
                             latexNumber(compactNumber(e.alibiSlope)) + " \\cdot " + distance} +
                        " = " + fixed3(e.scaled));
    }
}

/// "e^x" with the exponent in braces for LaTeX.
Both power(const Both& exponent, bool parenthesize)
{
    return Both{parenthesize ? "e^(" + exponent.plain + ")" : "e^" + exponent.plain,
                "e^{" + exponent.latex + "}"};
}

void softmaxLines(const CellExplanation& e, Lines& out)
{
    bool complete = false;
    const std::vector<const RowEntry*> listed = listedKeys(e, complete);
    const RowEntry& own = e.row[static_cast<std::size_t>(e.key)];
    const std::string count = std::to_string(e.allowedCount);
    const Both sumLabel{complete ? "sum = " : "sum over all " + count + " allowed keys = ", ""};
    const Both weight = fixed3(e.weight);

    out.words("",
              text("Softmax over the " + count + " allowed keys of row ") + token(e.queryToken) + text(":"));
    if (e.showPlainExponentials) {
        // As the worked examples write it: e^S' of the scaled scores themselves (τ = 1 here).
        for (const RowEntry* entry : listed)
            out.formula("  ", "",
                        power(fixed3(entry->scaled), false) + lit(" = ", " &= ") +
                            fixed3(entry->plainExponential) + lit("  (", " \\quad \\text{(") +
                            keyLabel(*entry) + lit(")", ")}"));
        Both terms;
        if (complete) {
            for (std::size_t t = 0; t < listed.size(); ++t)
                terms = terms + (t > 0 ? " + " : "") + fixed3(listed[t]->plainExponential);
            terms = terms + " = ";
        }
        out.formula("  ",
                    "\\textstyle\\sum_{j} e^{s'_{ij}} &= ", sumLabel + terms + fixed3(e.plainExponentialSum));
        const Both numerator = fixed3(own.plainExponential);
        const Both denominator = fixed3(e.plainExponentialSum);
        out.formula("  ", "a_{ij} &= ",
                    Both{"a_ij = " + numerator.plain + " / " + denominator.plain,
                         "\\frac{" + numerator.latex + "}{" + denominator.latex + "}"} +
                        " = " + weight);
        out.words("  ", text("The engine first subtracts the row maximum ") +
                            fixed3(e.rowMax / e.temperature) + text(", which gives the same weights:"));
    }

    // As the engine computes it: e^(z_j − max z), summed to the trace's expSum.
    for (const RowEntry* entry : listed) {
        const Both difference = fixed3(entry->logit) + minus(e.rowMax / e.temperature);
        out.formula("  ", "",
                    Both{"e^(" + difference.plain + ") = ", "e^{" + difference.latex + "} &= "} +
                        power(fixed3(entry->shifted), false) + " = " + fixed3(entry->exponential) +
                        lit("  (", " \\quad \\text{(") + keyLabel(*entry) + lit(")", ")}"));
    }
    Both terms;
    if (complete) {
        for (std::size_t t = 0; t < listed.size(); ++t)
            terms = terms + (t > 0 ? " + " : "") + fixed3(listed[t]->exponential);
        terms = terms + " = ";
    }
    out.formula("  ",
                "\\textstyle\\sum_{j} e^{z_{j} - \\max z} &= ", sumLabel + terms + fixed3(e.trace.expSum));
    const Both numerator = fixed3(own.exponential);
    const Both denominator = fixed3(e.trace.expSum);
    out.formula("  ", "a_{ij} &= ",
                Both{"a_ij = " + numerator.plain + " / " + denominator.plain,
                     "\\frac{" + numerator.latex + "}{" + denominator.latex + "}"} +
                    " = " + weight);
}

void thresholdLines(const CellExplanation& e, Lines& out)
{
    const bool sparsemax = isSparsemax(e.normalizer);
    const double alpha = sparsemax ? 2.0 : e.normalizer.alpha;
    const std::string count = std::to_string(e.allowedCount);
    const Both slope = compact(alpha - 1.0);
    const Both exponent = compact(1.0 / (alpha - 1.0));

    if (sparsemax) {
        out.words("", text("Sparsemax over the " + count + " allowed keys of row ") + token(e.queryToken) +
                          text(": ") + inlineMath("a_j = max(z_j - t, 0)", "a_j = \\max(z_j - t, 0)") +
                          text(", with ") + inlineMath("t", "t") + text(" chosen so that the row sums to 1"));
    } else {
        out.words("", compact(alpha) + text("-entmax over the " + count + " allowed keys of row ") +
                          token(e.queryToken) + text(": ") +
                          inlineMath("a_j = [(α - 1) z_j - t]₊^(1/(α - 1))",
                                     "a_j = [(\\alpha - 1) z_j - t]_+^{1/(\\alpha - 1)}") +
                          text(" with ") +
                          inlineMath("α = " + compact(alpha).plain, "\\alpha = " + compact(alpha).latex) +
                          text(", ") + inlineMath("t", "t") + text(" chosen so that the row sums to 1"));
    }
    bool complete = false;
    for (const RowEntry* entry : listedKeys(e, complete))
        out.formula("  ", "",
                    lit("z = ", "z_{" + std::to_string(entry->key) + "} &= ") + fixed3(entry->logit) +
                        lit(", a = ", ", \\quad a = ") + fixed3(entry->weight) +
                        lit("  (", " \\quad \\text{(") + keyLabel(*entry) + lit(")", ")}"));
    if (!complete)
        out.words("  ", text("... (" + std::to_string(e.allowedCount) + " allowed keys in all)"));
    out.formula("  ", "t &= ", lit("threshold t = ", "") + fixed3(e.trace.threshold));
    out.words("  ", text("support (") +
                        (sparsemax ? inlineMath("z_j > t", "z_j > t")
                                   : inlineMath("(α - 1) z_j > t", "(\\alpha - 1) z_j > t")) +
                        text(", " + std::to_string(e.trace.support) + " keys): ") + supportList(e));

    const Both minusT = minus(e.trace.threshold);
    const Both weight = fixed3(e.weight);
    if (sparsemax) {
        out.formula(
            "  ", "a_{ij} &= ", lit("a_ij = max(", "\\max(") + fixed3(e.logit) + minusT + ", 0) = " + weight);
    } else {
        out.formula("  ", "a_{ij} &= ",
                    lit("a_ij = [", "[") + slope + times() + fixedFactor(e.logit) + minusT +
                        Both{"]₊^" + exponent.plain, "]_+^{" + exponent.latex + "}"} + " = " + weight);
    }
}

void sigmoidLines(const CellExplanation& e, Lines& out)
{
    out.words("", text("Sigmoid: each key on its own, so the row need not sum to 1"));
    const Both minusZ = fixed3(-e.logit);
    out.formula("  ", "a_{ij} &= ",
                Both{"a_ij = 1 / (1 + e^-z) = 1 / (1 + e^" + minusZ.plain + ")",
                     "\\frac{1}{1 + e^{-z}} = \\frac{1}{1 + e^{" + minusZ.latex + "}}"} +
                    " = " + fixed3(e.weight));
}

void hardmaxLines(const CellExplanation& e, Lines& out)
{
    const std::string count = std::to_string(e.allowedCount);
    out.words("", text("Hardmax over the " + count + " allowed keys of row ") + token(e.queryToken) +
                      text(": the largest ") + inlineMath("z", "z") + text(" = ") +
                      fixed3(e.rowMax / e.temperature) + text(" is reached by ") + supportList(e));
    const std::string k = std::to_string(e.support.size());
    const bool winner = e.weight > 0.0;
    if (winner) {
        out.formula("  ", "a_{ij} &= ",
                    Both{"a_ij = 1/k = 1/" + k, "\\frac{1}{k} = \\frac{1}{" + k + "}"} + " = " +
                        fixed3(e.weight));
    } else {
        out.formula("  ", "a_{ij} &= ",
                    lit("a_ij = 0", "0") + lit(" (z = ", " \\quad \\text{(") + fixed3(e.logit) +
                        lit(" is below the maximum)", " is below the maximum)}"));
    }
}

void outputLines(const CellExplanation& e, Lines& out)
{
    Both terms;
    Index shown = 0;
    const Index count = static_cast<Index>(e.support.size());
    for (Index t = 0; t < count; ++t) {
        if (count > maxShownTerms && t == maxShownTerms - 2) {
            terms = terms + lit(" + ...", " + \\dots");
            t = count - 1;
        }
        const RowEntry& entry = e.row[static_cast<std::size_t>(e.support[static_cast<std::size_t>(t)])];
        if (shown++ > 0)
            terms = terms + " + ";
        terms = terms + fixed3(entry.weight) + times() + vectorOf(entry.value, false);
    }
    if (count == 0)
        terms = lit("0", "0");
    out.formula("Output: ", "o_i &= ",
                lit("o_i = Σ_j a_ij v_j = ", "\\sum_j a_{ij} v_j = ") + terms + " = " +
                    vectorOf(e.output, true));
}

/// Where q_i and k_j come from, when positions or biases take part: nothing for a plain session.
void projectionLines(const CellExplanation& e, Lines& out)
{
    const bool added = e.queryInput.size() > 0;
    const bool rope = e.qBeforeRope.size() > 0;
    if (!added && !rope && !e.queryBias && !e.keyBias)
        return;
    const std::string type = toString(e.positions);
    const std::string key = e.crossAttention ? "z_j" : "x_j";
    if (added) {
        out.formula("Positions (" + type + "): ", "x_i + PE_i &= ",
                    lit("x_i + PE_i = ", "") + vectorOf(e.queryInput, true));
        out.formula("  ", key + " + PE_j &= ", lit(key + " + PE_j = ", "") + vectorOf(e.keyInput, true));
    }
    const std::string x = added ? "(x_i + PE_i)" : "x_i";
    const std::string z = added ? "(" + key + " + PE_j)" : key;
    const std::string q = x + " W_Q" + (e.queryBias ? " + b_Q" : "");
    const std::string k = z + " W_K" + (e.keyBias ? " + b_K" : "");
    if (rope) {
        out.formula("RoPE: ", q + " &= ", lit(q + " = ", "") + vectorOf(e.qBeforeRope, true));
        out.formula("  ", k + " &= ", lit(k + " = ", "") + vectorOf(e.kBeforeRope, true));
        out.words("  ", text("q_i and k_j below are these turned by positions ") + indexIs("i", e.query) +
                            text(" and ") + indexIs("j", e.key) +
                            text(" (each pair of dimensions rotated by the position times its frequency)"));
    } else {
        out.words("", inlineMath("q_i = " + q + ", k_j = " + k, "q_i = " + q + ", \\quad k_j = " + k));
    }
}

std::vector<Line> buildLines(const CellExplanation& e)
{
    Lines out;
    out.words("", text("Head " + std::to_string(e.head + 1) + ", query ") + indexIs("i", e.query) + " " +
                      token(e.queryToken) + text(", key ") + indexIs("j", e.key) + " " + token(e.keyToken));
    projectionLines(e, out);
    out.formula("", "q_i &= ", lit("q_i = ", "") + vectorOf(e.q, false));
    out.formula("", "k_j &= ", lit("k_j = ", "") + vectorOf(e.k, false));
    scoreLines(e, out);
    scaleLines(e, out);
    out.words("Mask: ", maskDescription(e));

    if (e.temperature != 1.0)
        out.formula("Temperature: ", "z &= ",
                    Both{"z = s' / τ = " + fixedNumber(e.scaled) + " / " + compactNumber(e.temperature),
                         "\\frac{s'}{\\tau} = \\frac{" + latexNumber(fixedNumber(e.scaled)) + "}{" +
                             latexNumber(compactNumber(e.temperature)) + "}"} +
                        " = " + fixed3(e.logit));

    if (e.allowedCount == 0) {
        out.words("", text("Row ") + indexIs("i", e.query) +
                          text(" has no allowed key: every weight is 0 and the output row is 0"));
    } else if (e.allowed) {
        if (normalizesAsSoftmax(e.normalizer))
            softmaxLines(e, out);
        else if (e.normalizer.type == NormalizerType::Sigmoid)
            sigmoidLines(e, out);
        else if (e.normalizer.type == NormalizerType::Hardmax)
            hardmaxLines(e, out);
        else
            thresholdLines(e, out);
    }
    out.formula("Weight: ", "a_{ij} &= ",
                lit("a_ij = ", "") + fixed3(e.weight) + (e.allowed ? lit("", "") : lit(" (masked)", "")));
    outputLines(e, out);
    return out.lines();
}

// ---------------------------------------------------------------------------------------------------------
// Precision.

/// Weights: 9 significant digits, enough to tell any two float32 values apart.
Both weightDigits(double x)
{
    const std::string s = std::isfinite(x) ? chars(x, std::chars_format::general, 9) : nonFinite(x);
    return {s, latexNumber(s)};
}

/// Differences and counts of ulps or ε: a few significant digits are all they need.
Both roughNumber(double x, int digits)
{
    const std::string s = !std::isfinite(x) ? nonFinite(x)
                          : x == 0.0        ? "0"
                                            : chars(x, std::chars_format::general, digits);
    return {s, latexNumber(s)};
}

/// Maths inside a line of words: "$...$" in LaTeX.
Both inWords(const Both& math)
{
    return {math.plain, "$" + math.latex + "$"};
}

/// x in units of float32's ε, as maths.
Both epsilons(double x)
{
    return roughNumber(x / float32Epsilon, 2) + lit(" ε", " \\varepsilon_{32}");
}

/// A count of ulps, as maths.
Both ulps(double x)
{
    return roughNumber(x, 2) + lit(" ulp", "\\ \\mathrm{ulp}");
}

std::vector<Line> precisionLines(const PrecisionComparison& c)
{
    Lines out;
    const std::string computed = toString(c.precision);
    out.words("", text("Precision: row ") + indexIs("i", c.query) + " " + token(c.queryToken) +
                      text(" as computed in " + computed + ", beside the same row in float64:"));
    if (c.allowedCount == 0) {
        out.words("  ", text("no allowed key: every weight is 0 in both precisions"));
        return out.lines();
    }
    for (const PrecisionEntry& entry : c.listed) {
        const std::string key = std::to_string(entry.key);
        out.formula("  ", "",
                    Both{"j = " + key + " ", "a_{" + std::to_string(c.query) + "," + key + "} &: \\text{"} +
                        token(entry.token) + lit(": float64 ", "} \\quad ") + weightDigits(entry.reference) +
                        lit(", " + computed + " ", " \\text{ (float64)}, \\quad ") +
                        weightDigits(entry.computed) +
                        lit(", difference ", " \\text{ (" + computed + ")}, \\quad \\Delta = ") +
                        roughNumber(entry.difference, 3) + lit(" (", " \\; (") + ulps(entry.ulps) + ")");
    }
    if (static_cast<Index>(c.listed.size()) < c.allowedCount)
        out.words("  ", text("... the " + std::to_string(c.listed.size()) + " of " +
                             std::to_string(c.allowedCount) + " allowed keys with the largest differences"));

    Both largest = text("largest difference ") +
                   inWords(roughNumber(c.maxDifference, 3) + " = " + epsilons(c.maxDifference));
    if (c.maxDifferenceKey >= 0) {
        largest = largest + text(" at ") + indexIs("j", c.maxDifferenceKey);
        const auto at = std::find_if(c.listed.begin(), c.listed.end(),
                                     [&c](const PrecisionEntry& e) { return e.key == c.maxDifferenceKey; });
        if (at != c.listed.end())
            largest = largest + " " + token(at->token);
    }
    out.words("  ", largest +
                        text("; " + std::to_string(c.differing) + " of " + std::to_string(c.allowedCount) +
                             " weights differ, by at most ") +
                        inWords(ulps(c.maxUlps)));
    if (c.sumsToOne)
        out.words("  ",
                  text("row sum - 1: float64 ") + inWords(roughNumber(c.referenceSumError, 3)) +
                      text(", " + computed + " ") +
                      inWords(roughNumber(c.computedSumError, 3) + " = " + epsilons(c.computedSumError)));
    out.words(
        "  ",
        text("(") +
            inlineMath("ε = 2^-23 ≈ 1.19e-07", "\\varepsilon_{32} = 2^{-23} \\approx 1.19 \\times 10^{-7}") +
            text(
                ", float32's step at 1; 1 ulp: its step at that weight; rounding alone is at most 0.5 ulp)"));
    return out.lines();
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

} // namespace

std::string toPlainText(const PrecisionComparison& comparison)
{
    return plainTextOf(precisionLines(comparison));
}

std::string toLatex(const PrecisionComparison& comparison)
{
    return latexOf(precisionLines(comparison));
}

std::string toPlainText(const CellExplanation& explanation)
{
    return plainTextOf(buildLines(explanation));
}

std::string toLatex(const CellExplanation& explanation)
{
    return latexOf(buildLines(explanation));
}

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
