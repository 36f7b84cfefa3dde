// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExplanationText.h"

#include "ExplanationSpelling.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

// Which lines an explanation has; how each piece of a line is spelled in plain text and in LaTeX is
// ExplanationSpelling.h's part.

namespace qkv {

namespace explanationText {

namespace {

constexpr std::size_t maxListedKeys = 12; ///< keys listed per row before "..."

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

} // namespace

} // namespace explanationText

std::string toPlainText(const PrecisionComparison& comparison)
{
    return explanationText::plainTextOf(explanationText::precisionLines(comparison));
}

std::string toLatex(const PrecisionComparison& comparison)
{
    return explanationText::latexOf(explanationText::precisionLines(comparison));
}

std::string toPlainText(const CellExplanation& explanation)
{
    return explanationText::plainTextOf(explanationText::buildLines(explanation));
}

std::string toLatex(const CellExplanation& explanation)
{
    return explanationText::latexOf(explanationText::buildLines(explanation));
}

} // namespace qkv
