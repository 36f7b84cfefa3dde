// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionFile.h"

#include "Error.h"
#include "FileWriting.h"
#include "JsonText.h"
#include "SessionFileFormat.h"

#include <nlohmann/json.hpp>

namespace qkv {

namespace {

using json::currentVersion;
using json::find;
using json::formatName;
using json::Json;

Json sessionToJson(const Session& s)
{
    const Json extras = s.preservedJson.empty() ? Json::object() : Json::parse(s.preservedJson);
    const auto mergeExtras = [](Json& target, const Json* source) {
        if (source && source->is_object())
            for (auto it = source->begin(); it != source->end(); ++it)
                target[it.key()] = it.value();
    };
    Json root = Json::object();
    root["format"] = formatName;
    root["version"] = currentVersion;
    root["title"] = s.title;
    root["tokens"] = s.tokens;
    root["pad"] = s.pad;
    root["X"] = json::matrix(s.X);
    if (!s.dims.empty())
        root["dims"] = s.dims;
    if (s.context) {
        Json context = Json::object();
        context["tokens"] = s.context->tokens;
        context["pad"] = s.context->pad;
        context["Z"] = json::matrix(s.context->Z);
        if (!s.context->dims.empty())
            context["dims"] = s.context->dims;
        mergeExtras(context, find(extras, "context"));
        root["context"] = std::move(context);
    }
    Json heads = Json::array();
    const Json* headExtras = find(extras, "heads");
    for (std::size_t h = 0; h < s.heads.size(); ++h) {
        const Head& head = s.heads[h];
        Json headJson = Json::object();
        headJson["W_Q"] = json::matrix(head.W_Q);
        headJson["W_K"] = json::matrix(head.W_K);
        headJson["W_V"] = json::matrix(head.W_V);
        if (head.W_S.size() > 0)
            headJson["W_S"] = json::matrix(head.W_S);
        if (head.W_a.size() > 0)
            headJson["W_a"] = json::matrix(head.W_a);
        if (head.U_a.size() > 0)
            headJson["U_a"] = json::matrix(head.U_a);
        if (head.v_a.size() > 0)
            headJson["v_a"] = std::vector<double>(head.v_a.data(), head.v_a.data() + head.v_a.size());
        // Biases only when present, so files without them are written as before.
        for (const auto& [key, bias] : {std::pair<const char*, const Vector*>{"b_Q", &head.b_Q},
                                        {"b_K", &head.b_K},
                                        {"b_V", &head.b_V}})
            if (bias->size() > 0)
                headJson[key] = std::vector<double>(bias->data(), bias->data() + bias->size());
        if (headExtras && headExtras->is_array() && h < headExtras->size())
            mergeExtras(headJson, &(*headExtras)[h]);
        heads.push_back(std::move(headJson));
    }
    root["heads"] = std::move(heads);
    if (s.W_O)
        root["W_O"] = json::matrix(*s.W_O);
    if (s.b_O.size() > 0)
        root["b_O"] = std::vector<double>(s.b_O.data(), s.b_O.data() + s.b_O.size());
    root["score"] = toString(s.score);
    switch (s.scale.kind) {
    case Scale::Kind::SqrtDk:
        root["scale"] = "sqrt_dk";
        break;
    case Scale::Kind::None:
        root["scale"] = "none";
        break;
    case Scale::Kind::Constant:
        root["scale"] = s.scale.value;
        break;
    }
    root["temperature"] = s.temperature;
    Json mask = Json::object();
    mask["type"] = toString(s.mask.type);
    // A parameter is written when its mask uses it or when it differs from its default, so a round trip
    // keeps what a person set before switching to another mask type.
    if (s.mask.type == MaskType::Prefix || s.mask.prefixLength != MaskSpec().prefixLength)
        mask["prefix_length"] = s.mask.prefixLength;
    if (s.mask.type == MaskType::Sliding || s.mask.window != MaskSpec().window)
        mask["window"] = s.mask.window;
    if (s.mask.allowed.size() > 0) {
        Json rows = Json::array();
        for (Index i = 0; i < s.mask.allowed.rows(); ++i) {
            Json row = Json::array();
            for (Index j = 0; j < s.mask.allowed.cols(); ++j)
                row.push_back(static_cast<int>(s.mask.allowed(i, j)));
            rows.push_back(std::move(row));
        }
        mask["allowed"] = std::move(rows);
    }
    mergeExtras(mask, find(extras, "mask"));
    root["mask"] = std::move(mask);
    Json normalizer = Json::object();
    normalizer["type"] = toString(s.normalizer.type);
    if (s.normalizer.type == NormalizerType::Entmax || s.normalizer.alpha != NormalizerSpec().alpha)
        normalizer["alpha"] = s.normalizer.alpha;
    mergeExtras(normalizer, find(extras, "normalizer"));
    root["normalizer"] = std::move(normalizer);
    // Written only when not none (or when a parameter was set), so files that do not use it stay as they
    // were. A parameter is written when its type uses it or when it differs from its default, as for the
    // mask.
    const PositionSpec& positions = s.positions;
    const PositionSpec defaults;
    const bool rope = positions.type == PositionType::Rope;
    const bool usesBase = rope || positions.type == PositionType::Sinusoidal;
    const Json* positionExtras = find(extras, "positions");
    if (!(positions == defaults) || positionExtras) {
        Json positionsJson = Json::object();
        positionsJson["type"] = toString(positions.type);
        if (usesBase || positions.base != defaults.base)
            positionsJson["base"] = positions.base;
        if (rope || positions.pairing != defaults.pairing)
            positionsJson["pairing"] = toString(positions.pairing);
        const RopeScaling& scaling = positions.scaling;
        if (scaling.type != RopeScalingType::None) {
            Json scalingJson = Json::object();
            scalingJson["type"] = toString(scaling.type);
            scalingJson["factor"] = scaling.factor;
            if (scaling.type == RopeScalingType::Llama3) {
                scalingJson["low_freq_factor"] = scaling.lowFrequencyFactor;
                scalingJson["high_freq_factor"] = scaling.highFrequencyFactor;
                scalingJson["original_max_position_embeddings"] = scaling.originalMaxPositions;
            }
            positionsJson["scaling"] = std::move(scalingJson);
        }
        if (positions.P.size() > 0)
            positionsJson["P"] = json::matrix(positions.P);
        if (!positions.slopes.empty())
            positionsJson["slopes"] = positions.slopes;
        mergeExtras(positionsJson, positionExtras);
        root["positions"] = std::move(positionsJson);
    }
    // Written only when it is not the default, so files that do not use it stay as they were.
    if (s.precision != Precision::Float64)
        root["precision"] = toString(s.precision);
    const Json* viewExtras = find(extras, "view");
    if (viewExtras || s.view.head || s.view.selection) {
        Json view = Json::object();
        mergeExtras(view, viewExtras);
        if (s.view.head)
            view["head"] = *s.view.head;
        if (s.view.selection)
            view["selection"] = Json::array({s.view.selection->first, s.view.selection->second});
        root["view"] = std::move(view);
    }
    if (!s.snapshots.empty()) {
        Json snapshots = Json::array();
        for (const Snapshot& snapshot : s.snapshots)
            snapshots.push_back(Json{{"name", snapshot.name}, {"session", sessionToJson(*snapshot.session)}});
        root["snapshots"] = std::move(snapshots);
    }
    if (s.model) {
        Json interventions = Json::array();
        for (const HeadIntervention& change : s.model->interventions) {
            Json entry{{"layer", change.layer}, {"head", change.head}, {"kind", toString(change.kind)}};
            if (change.kind == HeadIntervention::Kind::Scale)
                entry["factor"] = change.factor;
            if (!change.enabled)
                entry["enabled"] = false;
            interventions.push_back(std::move(entry));
        }
        root["model"] = Json{{"folder", s.model->folder},
                             {"ids", s.model->ids},
                             {"layer", s.model->layer},
                             {"head", s.model->head},
                             {"interventions", std::move(interventions)}};
    }
    // The extras of the structured keys were merged above; "context" extras must not come back as a
    // context of their own when the session no longer has one.
    for (auto it = extras.begin(); it != extras.end(); ++it)
        if (!root.contains(it.key()) && it.key() != "context")
            root[it.key()] = it.value();
    return root;
}

} // namespace

std::string serializeSession(const Session& session)
{
    return json::prettyJson(sessionToJson(session));
}

void saveSession(const Session& session, const std::string& path)
{
    if (const std::string problem = validate(session); !problem.empty())
        throw Error("not saved: " + problem);
    const std::string text = serializeSession(session);
    writeFileAtomically(path, text);
}

std::string viewJson(const Session& session)
{
    const Json root = sessionToJson(session);
    const Json* view = find(root, "view");
    return view ? view->dump() : std::string();
}

} // namespace qkv
