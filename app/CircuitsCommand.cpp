// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitsCommand.h"

#include "Circuits.h"
#include "Composition.h"
#include "ComputeCommand.h"
#include "Decompose.h"
#include "Error.h"
#include "Model.h"
#include "ModelArguments.h"
#include "ModelJson.h"
#include "ResourceLimits.h"
#include "Session.h"
#include "TerminalProgress.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <limits>

namespace qkv::app {

namespace {

using Json = nlohmann::ordered_json;

constexpr Index defaultTop = 5;
constexpr long long largestIndex = std::numeric_limits<int>::max();

std::string dumped(const Json& json)
{
    return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

/// A required whole number counted from 0 (--layer, --head, --query, --key), below `count`; `what` names the
/// count in the refusal ("the model has 2 layers (0 to 1)").
Index indexArgument(const ParsedArguments& arguments, std::string_view name, Index count,
                    const std::string& owner, const std::string& things)
{
    const std::optional<long long> value =
        arguments.wholeNumber(name, 0, largestIndex, "a whole number counted from 0");
    if (!value)
        throw Error("expected --" + std::string(name) + ", counted from 0");
    if (*value >= count)
        throw Error("--" + std::string(name) + " " + std::to_string(*value) + ": " + owner + " has " +
                    std::to_string(count) + " " +
                    (count == 1 ? things.substr(0, things.size() - 1) : things) +
                    (count == 1 ? " (0)" : " (0 to " + std::to_string(count - 1) + ")"));
    return Index(*value);
}

Json numbers(const std::vector<double>& values)
{
    return Json(values);
}

Json eigenvaluesJson(const Eigenvalues& eigenvalues)
{
    Json list = Json::array();
    for (const std::complex<double>& value : eigenvalues)
        list.push_back(Json{{"re", value.real()}, {"im", value.imag()}});
    return list;
}

Json matrixJson(const Matrix& matrix)
{
    Json rows = Json::array();
    for (Index r = 0; r < matrix.rows(); ++r) {
        Json row = Json::array();
        for (Index c = 0; c < matrix.cols(); ++c)
            row.push_back(matrix(r, c));
        rows.push_back(std::move(row));
    }
    return rows;
}

Json spectrumJson(const Spectrum& spectrum)
{
    return Json{{"singular_values", numbers(spectrum.singularValues)}, {"frobenius", spectrum.frobenius}};
}

/// "qk" and, when the head has W_O, "ov" (with its eigenvalues when W_O writes back into d_model).
void addSpectra(Json& root, const HeadFactors& head, const CircuitSpectra& spectra)
{
    root["qk"] = spectrumJson(spectra.qk);
    if (!spectra.ov)
        return;
    Json ov = spectrumJson(*spectra.ov);
    if (head.output.cols() == head.value.rows())
        ov["eigenvalues"] = eigenvaluesJson(spectra.ovEigenvalues);
    root["ov"] = std::move(ov);
}

std::vector<std::string> tokenNames(const Model& model, const std::vector<std::int64_t>& ids)
{
    std::vector<std::string> names;
    for (std::int64_t id : ids)
        names.push_back(tokenName(model, id));
    return names;
}

Json tokensJson(const Model& model, const ModelCircuits& circuits, Index layer, Index head,
                const std::vector<std::int64_t>& ids, Index top)
{
    Json ovTop = Json::array();
    for (const std::vector<TokenValue>& entries : circuits.ovTop(layer, head, ids, top)) {
        Json list = Json::array();
        for (const TokenValue& entry : entries)
            list.push_back(
                Json{{"id", entry.id}, {"token", tokenName(model, entry.id)}, {"logit", entry.value}});
        ovTop.push_back(Json{{"top", std::move(list)}});
    }
    return Json{{"ids", ids},
                {"tokens", tokenNames(model, ids)},
                {"qk", matrixJson(circuits.tokenQk(layer, head, ids))},
                {"ov_top", std::move(ovTop)}};
}

std::string modelCircuitsJson(const ParsedArguments& arguments, const std::string& folder,
                              const CommandStreams& streams)
{
    if (arguments.has("text") && arguments.has("ids"))
        throw Error("give --text or --ids, not both");
    const std::optional<long long> top = arguments.wholeNumber("top", 1, largestIndex);
    const Model model = Model::open(folder);
    const ModelConfig& config = model.config();
    const Index layer = indexArgument(arguments, "layer", config.layers, "the model", "layers");
    const Index head = indexArgument(arguments, "head", config.heads, "the model", "heads");
    std::optional<std::vector<std::int64_t>> ids;
    if (arguments.has("text") || arguments.has("ids"))
        ids = tokensArgument(model, arguments, "text", "ids");

    const ModelCircuits circuits(model);
    const HeadFactors factors = circuits.head(layer, head);
    const CircuitSpectra spectra = circuitSpectra(factors);
    const FullOvCircuit fullOv = circuits.fullOv(layer, head);
    TerminalProgress progress(streams.err, "qkvlab circuits composition", "layers");
    const CompositionScores composition =
        compositionScores<double>(circuits.weights(), layer, head,
                                  [&progress](Index done, Index total) { return progress(done, total); });

    Json root{{"layer", layer}, {"head", head}};
    addSpectra(root, factors, spectra);
    root["full_ov"] =
        Json{{"eigenvalues", eigenvaluesJson(fullOv.eigenvalues)}, {"copying_score", fullOv.copyingScore}};
    root["composition"] = Json{{"q", matrixJson(composition.into(CompositionKind::Query, layer, head))},
                               {"k", matrixJson(composition.into(CompositionKind::Key, layer, head))},
                               {"v", matrixJson(composition.into(CompositionKind::Value, layer, head))}};
    if (ids)
        root["tokens"] = tokensJson(model, circuits, layer, head, *ids, top ? Index(*top) : defaultTop);
    return dumped(root);
}

/// A session's head as the file holds it: no layer, no vocabulary, so no full OV circuit or composition.
std::string sessionCircuitsJson(const ParsedArguments& arguments, const std::string& source,
                                const CommandStreams& streams)
{
    for (const char* option : {"layer", "text", "ids", "top"})
        if (arguments.has(option))
            throw Error("--" + std::string(option) + " is for a model folder, and " + source +
                        " is a session (one layer of its own tokens; give --head H only)");
    const Session session = readSessionArgument(source, streams.in, defaultMemoryLimit());
    Index head = 0;
    if (arguments.has("head"))
        head = indexArgument(arguments, "head", session.headCount(), "the session", "heads");
    const HeadFactors factors = sessionHeadFactors(session, int(head));
    const CircuitSpectra spectra = circuitSpectra(factors);
    Json root{{"head", head}};
    addSpectra(root, factors, spectra);
    if (session.score == ScoreFunction::Dot) {
        // X·W_QK·Zᵀ, taken as (X·W_Q)·(Z·W_K)ᵀ: no d × d matrix.
        const Matrix qk = (session.X * factors.query) * (session.keySide() * factors.key).transpose();
        Json tokens{{"tokens", session.tokens}};
        if (session.context)
            tokens["key_tokens"] = session.keyTokens();
        tokens["qk"] = matrixJson(qk);
        root["tokens"] = std::move(tokens);
    }
    return dumped(root);
}

} // namespace

CommandLineOutcome runCircuits(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const std::string usage = "expected MODEL --layer L --head H [--text TEXT | --ids I,J,...], or a session "
                              "FILE [--head H]";
    const std::string source = modelFolderArgument(arguments, usage);
    std::error_code error;
    const bool folder = std::filesystem::is_directory(source, error);
    try {
        streams.out << (folder ? modelCircuitsJson(arguments, source, streams)
                               : sessionCircuitsJson(arguments, source, streams));
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model's circuits");
    }
    return finished();
}

CommandLineOutcome runDecompose(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const std::string usage =
        "expected MODEL --layer L --head H, --text TEXT or --ids I,J,..., --query I and --key J";
    const std::string folder = modelFolderArgument(arguments, usage);
    if (arguments.has("text") && arguments.has("ids"))
        throw Error("give --text or --ids, not both");
    if (!exactlyOneOf(arguments, "text", "ids"))
        throw Error(usage);
    try {
        const Model model = Model::open(folder);
        const ModelConfig& config = model.config();
        DecomposeRequest request;
        request.layer = indexArgument(arguments, "layer", config.layers, "the model", "layers");
        request.head = indexArgument(arguments, "head", config.heads, "the model", "heads");
        request.ids = tokensArgument(model, arguments, "text", "ids");
        const auto n = Index(request.ids.size());
        const std::string text = arguments.has("text") ? "the text" : "--ids";
        request.query = indexArgument(arguments, "query", n, text, "tokens");
        request.key = indexArgument(arguments, "key", n, text, "tokens");
        const ScoreDecomposition decomposition = decomposeScore(model, request);
        streams.out << dumped(Json{{"components", decomposition.components},
                                   {"score", decomposition.score},
                                   {"terms", matrixJson(decomposition.terms)},
                                   {"query", numbers(decomposition.query)},
                                   {"key", numbers(decomposition.key)}});
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and text");
    }
    return finished();
}

} // namespace qkv::app
