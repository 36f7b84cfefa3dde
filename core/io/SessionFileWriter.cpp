// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionFile.h"

#include "Error.h"
#include "FileWriting.h"
#include "JsonText.h"
#include "SessionFileFormat.h"
#include "SessionModelLink.h"

#include <nlohmann/json.hpp>

namespace qkv {

namespace {

using json::currentVersion;
using json::find;
using json::formatName;
using json::Json;
using json::modelJson;

/// Copies the members of `source` (an object, when present) into `target`: what the file had that this
/// version does not read comes back.
void mergeExtras(Json& target, const Json* source)
{
    if (source && source->is_object())
        for (auto it = source->begin(); it != source->end(); ++it)
            target[it.key()] = it.value();
}

Json vectorJson(const Vector& v)
{
    return std::vector<double>(v.data(), v.data() + v.size());
}

Json contextJson(const Context& c, const Json& extras)
{
    Json context = Json::object();
    context["tokens"] = c.tokens;
    context["pad"] = c.pad;
    context["Z"] = json::matrix(c.Z);
    if (!c.dims.empty())
        context["dims"] = c.dims;
    mergeExtras(context, find(extras, "context"));
    return context;
}

Json headJson(const Head& head, const Json* headExtras)
{
    Json object = Json::object();
    object["W_Q"] = json::matrix(head.W_Q);
    object["W_K"] = json::matrix(head.W_K);
    object["W_V"] = json::matrix(head.W_V);
    if (head.W_S.size() > 0)
        object["W_S"] = json::matrix(head.W_S);
    if (head.W_a.size() > 0)
        object["W_a"] = json::matrix(head.W_a);
    if (head.U_a.size() > 0)
        object["U_a"] = json::matrix(head.U_a);
    if (head.v_a.size() > 0)
        object["v_a"] = vectorJson(head.v_a);
    // Biases only when present, so files without them are written as before.
    for (const auto& [key, bias] :
         {std::pair<const char*, const Vector*>{"b_Q", &head.b_Q}, {"b_K", &head.b_K}, {"b_V", &head.b_V}})
        if (bias->size() > 0)
            object[key] = vectorJson(*bias);
    mergeExtras(object, headExtras);
    return object;
}

Json headsJson(const std::vector<Head>& heads, const Json& extras)
{
    Json array = Json::array();
    const Json* headExtras = find(extras, "heads");
    for (std::size_t h = 0; h < heads.size(); ++h)
        array.push_back(headJson(heads[h], headExtras && headExtras->is_array() && h < headExtras->size()
                                               ? &(*headExtras)[h]
                                               : nullptr));
    return array;
}

Json scaleJson(const Scale& scale)
{
    switch (scale.kind) {
    case Scale::Kind::SqrtDk:
        return "sqrt_dk";
    case Scale::Kind::None:
        return "none";
    case Scale::Kind::Constant:
        break;
    }
    return scale.value;
}

Json maskJson(const MaskSpec& spec, const Json& extras)
{
    Json mask = Json::object();
    mask["type"] = toString(spec.type);
    // A parameter is written when its mask uses it or when it differs from its default, so a round trip
    // keeps what a person set before switching to another mask type.
    if (spec.type == MaskType::Prefix || spec.prefixLength != MaskSpec().prefixLength)
        mask["prefix_length"] = spec.prefixLength;
    if (spec.type == MaskType::Sliding || spec.window != MaskSpec().window)
        mask["window"] = spec.window;
    if (spec.allowed.size() > 0) {
        Json rows = Json::array();
        for (Index i = 0; i < spec.allowed.rows(); ++i) {
            Json row = Json::array();
            for (Index j = 0; j < spec.allowed.cols(); ++j)
                row.push_back(static_cast<int>(spec.allowed(i, j)));
            rows.push_back(std::move(row));
        }
        mask["allowed"] = std::move(rows);
    }
    mergeExtras(mask, find(extras, "mask"));
    return mask;
}

Json normalizerJson(const NormalizerSpec& spec, const Json& extras)
{
    Json normalizer = Json::object();
    normalizer["type"] = toString(spec.type);
    if (spec.type == NormalizerType::Entmax || spec.alpha != NormalizerSpec().alpha)
        normalizer["alpha"] = spec.alpha;
    mergeExtras(normalizer, find(extras, "normalizer"));
    return normalizer;
}

Json ropeScalingJson(const RopeScaling& scaling)
{
    Json object = Json::object();
    object["type"] = toString(scaling.type);
    object["factor"] = scaling.factor;
    if (scaling.type == RopeScalingType::Llama3) {
        object["low_freq_factor"] = scaling.lowFrequencyFactor;
        object["high_freq_factor"] = scaling.highFrequencyFactor;
        object["original_max_position_embeddings"] = scaling.originalMaxPositions;
    }
    return object;
}

/// Null when the encoding is none with its defaults and the file had no extras for it, so files that do not
/// use it stay as they were. A parameter is written when its type uses it or when it differs from its
/// default, as for the mask.
Json positionsJson(const PositionSpec& positions, const Json& extras)
{
    const PositionSpec defaults;
    const bool rope = positions.type == PositionType::Rope;
    const bool usesBase = rope || positions.type == PositionType::Sinusoidal;
    const Json* positionExtras = find(extras, "positions");
    if (positions == defaults && !positionExtras)
        return nullptr;
    Json object = Json::object();
    object["type"] = toString(positions.type);
    if (usesBase || positions.base != defaults.base)
        object["base"] = positions.base;
    if (rope || positions.pairing != defaults.pairing)
        object["pairing"] = toString(positions.pairing);
    if (positions.scaling.type != RopeScalingType::None)
        object["scaling"] = ropeScalingJson(positions.scaling);
    if (positions.P.size() > 0)
        object["P"] = json::matrix(positions.P);
    if (!positions.slopes.empty())
        object["slopes"] = positions.slopes;
    mergeExtras(object, positionExtras);
    return object;
}

/// Null when there is nothing to say (no head, no selection, no extras).
Json viewStateJson(const ViewState& state, const Json& extras)
{
    const Json* viewExtras = find(extras, "view");
    if (!viewExtras && !state.head && !state.selection)
        return nullptr;
    Json view = Json::object();
    mergeExtras(view, viewExtras);
    if (state.head)
        view["head"] = *state.head;
    if (state.selection)
        view["selection"] = Json::array({state.selection->first, state.selection->second});
    return view;
}

Json sessionToJson(const Session& s)
{
    const Json extras = s.preservedJson.empty() ? Json::object() : Json::parse(s.preservedJson);
    Json root = Json::object();
    root["format"] = formatName;
    root["version"] = currentVersion;
    root["title"] = s.title;
    root["tokens"] = s.tokens;
    root["pad"] = s.pad;
    root["X"] = json::matrix(s.X);
    if (!s.dims.empty())
        root["dims"] = s.dims;
    if (s.context)
        root["context"] = contextJson(*s.context, extras);
    root["heads"] = headsJson(s.heads, extras);
    if (s.W_O)
        root["W_O"] = json::matrix(*s.W_O);
    if (s.b_O.size() > 0)
        root["b_O"] = vectorJson(s.b_O);
    root["score"] = toString(s.score);
    root["scale"] = scaleJson(s.scale);
    root["temperature"] = s.temperature;
    root["mask"] = maskJson(s.mask, extras);
    root["normalizer"] = normalizerJson(s.normalizer, extras);
    if (Json positions = positionsJson(s.positions, extras); !positions.is_null())
        root["positions"] = std::move(positions);
    // Written only when it is not the default, so files that do not use it stay as they were.
    if (s.precision != Precision::Float64)
        root["precision"] = toString(s.precision);
    if (Json view = viewStateJson(s.view, extras); !view.is_null())
        root["view"] = std::move(view);
    if (!s.snapshots.empty()) {
        Json snapshots = Json::array();
        for (const Snapshot& snapshot : s.snapshots)
            snapshots.push_back(Json{{"name", snapshot.name}, {"session", sessionToJson(*snapshot.session)}});
        root["snapshots"] = std::move(snapshots);
    }
    if (s.model)
        root["model"] = modelJson(*s.model);
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
