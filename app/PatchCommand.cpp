// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchCommand.h"

#include "Error.h"
#include "FileWriting.h"
#include "Model.h"
#include "ModelArguments.h"
#include "ModelJson.h"
#include "PatchScript.h"
#include "Patching.h"
#include "TerminalProgress.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>
#include <optional>

namespace qkv::app {

namespace {

using Json = nlohmann::ordered_json;

const std::string usage = "expected MODEL, the prompts (--clean TEXT --corrupt TEXT, or --clean-ids I,J,... "
                          "--corrupt-ids I,J,...), --answer and --wrong (or --answer-id and --wrong-id) and "
                          "--what SITE";

/// "resid_pre, attn_out, … or head_v".
std::string siteList()
{
    const std::vector<PatchSite> sites = allPatchSites();
    std::string list;
    for (std::size_t k = 0; k < sites.size(); ++k)
        list += (k == 0 ? "" : k + 1 == sites.size() ? " or " : ", ") + patchSiteName(sites[k]);
    return list;
}

PatchSite siteArgument(const ParsedArguments& arguments)
{
    if (!arguments.has("what"))
        throw Error("expected --what SITE: " + siteList());
    const std::string name = arguments.value("what");
    if (const std::optional<PatchSite> site = patchSiteNamed(name))
        return *site;
    throw Error("bad --what '" + name + "': expected " + siteList());
}

PatchMethod methodArgument(const ParsedArguments& arguments)
{
    const std::optional<std::string> name = arguments.choice("method", {"exact", "attribution"});
    return name ? *patchMethodNamed(*name) : PatchMethod::Exact;
}

struct PositionRange {
    Index first = 0, last = 0;
};

/// --positions I..J, read before the prompts are known (the range is checked against them later).
std::optional<PositionRange> positionsArgument(const ParsedArguments& arguments)
{
    if (!arguments.has("positions"))
        return std::nullopt;
    const std::string text = arguments.value("positions");
    const std::size_t dots = text.find("..");
    PositionRange range;
    const auto whole = [](const std::string& part, Index& value) {
        long long parsed = 0;
        const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), parsed);
        value = Index(parsed);
        return !part.empty() && error == std::errc() && end == part.data() + part.size() && parsed >= 0;
    };
    if (dots == std::string::npos || !whole(text.substr(0, dots), range.first) ||
        !whole(text.substr(dots + 2), range.last) || range.first > range.last)
        throw Error("bad --positions '" + text +
                    "': expected I..J, the first and last positions counted from 0 (I ≤ J)");
    return range;
}

/// Each prompt once, as a text or as ids; the answer and the wrong token likewise.
void requirePromptsAndTokens(const ParsedArguments& arguments)
{
    for (const auto& [text, ids] : {std::pair<const char*, const char*>{"clean", "clean-ids"},
                                    {"corrupt", "corrupt-ids"},
                                    {"answer", "answer-id"},
                                    {"wrong", "wrong-id"}}) {
        if (arguments.has(text) && arguments.has(ids))
            throw Error(std::string("give --") + text + " or --" + ids + ", not both");
        if (!exactlyOneOf(arguments, text, ids))
            throw Error(usage);
    }
}

PatchPair pairArgument(const Model& model, const ParsedArguments& arguments)
{
    PatchPair pair;
    pair.clean = tokensArgument(model, arguments, "clean", "clean-ids");
    pair.corrupt = tokensArgument(model, arguments, "corrupt", "corrupt-ids");
    if (pair.clean.size() != pair.corrupt.size())
        throw Error(std::string(arguments.has("clean") ? "--clean" : "--clean-ids") + " has " +
                    std::to_string(pair.clean.size()) + " tokens and " +
                    (arguments.has("corrupt") ? "--corrupt" : "--corrupt-ids") + " has " +
                    std::to_string(pair.corrupt.size()) + ": the prompts need the same number of tokens");
    pair.answer = *tokenArgument(model, arguments, "answer", "answer-id");
    pair.wrong = *tokenArgument(model, arguments, "wrong", "wrong-id");
    if (pair.answer == pair.wrong)
        throw Error("--answer and --wrong are the same token (id " + std::to_string(pair.answer) +
                    "): their logit difference is always 0");
    return pair;
}

PositionRange checkedPositions(const std::optional<PositionRange>& given, Index tokens)
{
    if (!given)
        return {0, tokens - 1};
    if (given->last >= tokens)
        throw Error("--positions " + std::to_string(given->first) + ".." + std::to_string(given->last) +
                    ": the prompts have n = " + std::to_string(tokens) + " tokens, positions 0 to " +
                    std::to_string(tokens - 1));
    return *given;
}

/// The grid's labels, as the window labels layers and heads (L0, H0; KV0 for a key/value head), and a
/// position as its index and token ("2 Ġsat", "2 Ġsat/Ġran" where the prompts differ).
struct GridLabels {
    std::vector<std::string> rows, cols, positions;
};

std::vector<std::string> numbered(const std::string& prefix, Index count)
{
    std::vector<std::string> labels;
    for (Index k = 0; k < count; ++k)
        labels.push_back(prefix + std::to_string(k));
    return labels;
}

GridLabels gridLabels(const Model& model, const PatchingRun& run, PatchSite site, PositionRange range)
{
    const PatchPair& pair = run.pair();
    GridLabels labels;
    labels.rows = numbered("L", run.layers());
    for (Index p = range.first; p <= range.last; ++p) {
        const auto i = std::size_t(p);
        std::string label = std::to_string(p) + " " + tokenName(model, pair.clean[i]);
        if (pair.corrupt[i] != pair.clean[i])
            label += "/" + tokenName(model, pair.corrupt[i]);
        labels.positions.push_back(std::move(label));
    }
    if (site == PatchSite::HeadK || site == PatchSite::HeadV)
        labels.cols = numbered("KV", run.kvHeads());
    else if (patchSiteHasPositions(site) && site != PatchSite::HeadOutPos)
        labels.cols = std::move(labels.positions);
    else
        labels.cols = numbered("H", run.heads());
    if (site != PatchSite::HeadOutPos)
        labels.positions.clear();
    return labels;
}

std::vector<std::string> tokenNames(const Model& model, const std::vector<std::int64_t>& ids)
{
    std::vector<std::string> names;
    for (std::int64_t id : ids)
        names.push_back(tokenName(model, id));
    return names;
}

/// values[row][col] or, with a depth, values[row][col][k].
Json nestedGrid(const PatchGrid& grid, const std::vector<double>& values)
{
    Json rows = Json::array();
    for (Index r = 0; r < grid.rows; ++r) {
        Json row = Json::array();
        for (Index c = 0; c < grid.cols; ++c) {
            if (grid.depth == 1 && grid.site != PatchSite::HeadOutPos) {
                row.push_back(values[std::size_t(grid.index(r, c))]);
                continue;
            }
            Json cell = Json::array();
            for (Index k = 0; k < grid.depth; ++k)
                cell.push_back(values[std::size_t(grid.index(r, c, k))]);
            row.push_back(std::move(cell));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string patchJson(const Model& model, const PatchingRun& run, const PatchGrid& grid,
                      const GridLabels& labels)
{
    const PatchPair& pair = run.pair();
    Json root{
        {"what", patchSiteName(grid.site)},
        {"method", patchMethodName(grid.method)},
        {"clean",
         {{"ids", pair.clean}, {"tokens", tokenNames(model, pair.clean)}, {"metric", run.cleanMetric()}}},
        {"corrupt",
         {{"ids", pair.corrupt},
          {"tokens", tokenNames(model, pair.corrupt)},
          {"metric", run.corruptMetric()}}},
        {"rows", labels.rows},
        {"cols", labels.cols}};
    if (grid.site == PatchSite::HeadOutPos)
        root["positions"] = labels.positions;
    root["values"] = nestedGrid(grid, grid.values);
    root["normalized"] = nestedGrid(grid, grid.normalized);
    return root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

PatchScriptRequest scriptRequest(const std::string& folder, const Model& model, const PatchingRun& run,
                                 PatchSite site, PatchMethod method, PositionRange range,
                                 const GridLabels& labels)
{
    PatchScriptRequest request;
    request.modelFolder = std::filesystem::absolute(folder).lexically_normal().string();
    request.pair = run.pair();
    request.site = site;
    request.method = method;
    request.firstPosition = range.first;
    request.lastPosition = range.last;
    request.cleanTokens = tokenNames(model, request.pair.clean);
    request.corruptTokens = tokenNames(model, request.pair.corrupt);
    request.rows = labels.rows;
    request.cols = labels.cols;
    request.positions = labels.positions;
    return request;
}

} // namespace

CommandLineOutcome runPatch(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const std::string folder = modelFolderArgument(arguments, usage);
    requirePromptsAndTokens(arguments);
    const PatchSite site = siteArgument(arguments);
    const PatchMethod method = methodArgument(arguments);
    const Precision precision = precisionArgument(arguments);
    const std::optional<PositionRange> positions = positionsArgument(arguments);
    try {
        const Model model = Model::open(folder);
        PatchPair pair = pairArgument(model, arguments);
        const PositionRange range = checkedPositions(positions, Index(pair.clean.size()));
        PatchingRun run(model, std::move(pair), precision);
        const GridLabels labels = gridLabels(model, run, site, range);
        std::optional<std::string> script;
        if (arguments.has("script"))
            script =
                patchScript(scriptRequest(folder, model, run, site, method, range, labels), model.config());
        TerminalProgress progress(streams.err, "qkvlab patch " + patchSiteName(site), "cells");
        const PatchGrid grid =
            run.patch(site, method, range.first, range.last,
                      [&progress](Index done, Index total) { return progress(done, total); });
        if (script)
            writeFileAtomically(arguments.value("script"), *script);
        streams.out << patchJson(model, run, grid, labels);
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and these prompts");
    }
    return finished();
}

} // namespace qkv::app
