// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionFile.h"

#include "Error.h"
#include "FileReading.h"
#include "JsonText.h"
#include "ResourceLimits.h"
#include "SessionFileChecks.h"
#include "SessionFileFormat.h"
#include "SessionJsonReader.h"
#include "SessionModelLink.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cmath>
#include <istream>
#include <new>
#include <optional>

namespace qkv {

namespace {

using json::checkCount;
using json::Compact;
using json::CompactMatrices;
using json::currentVersion;
using json::find;
using json::formatName;
using json::Json;
using json::placeholderIndex;
using json::readModelLink;
using json::readNamed;
using json::readNumber;
using json::readString;
using json::readWholeNumber;
using json::refuse;
using json::require;
using json::requireObject;
using json::SessionJsonReader;
using json::wrongType;

/// A matrix's row count, then its column count (row 0's length), against the expected ones.
void checkRows(const std::string& path, Index rowCount, Index rows, Index maxRows)
{
    if (rows >= 0 && rowCount != rows)
        refuse(path, "expected " + std::to_string(rows) + " rows, found " + std::to_string(rowCount));
    checkCount(path, static_cast<std::size_t>(rowCount), "rows", maxRows);
}

void checkColumns(const std::string& path, Index colCount, Index cols, Index maxCols)
{
    if (cols >= 0 && colCount != cols)
        refuse(path, "expected " + std::to_string(cols) + " columns, found " + std::to_string(colCount));
    checkCount(path + "[0]", static_cast<std::size_t>(colCount), "columns", maxCols);
}

/// A matrix as an array of rows. `rows`/`cols` of −1 mean "any" (within the limits); otherwise the
/// shape must match exactly. A placeholder's matrix (rectangular, all numbers) is moved out of `compact`,
/// refused with the messages its array of rows would get.
Matrix readMatrix(CompactMatrices& compact, const Json& value, const std::string& path, Index rows,
                  Index cols, Index maxRows, Index maxCols)
{
    if (const auto index = placeholderIndex(value, Compact::Numbers)) {
        Matrix& matrix = compact.numbers.at(*index);
        checkRows(path, matrix.rows(), rows, maxRows);
        checkColumns(path, matrix.cols(), cols, maxCols);
        return std::move(matrix);
    }
    if (!value.is_array())
        wrongType(path, "an array of rows", value);
    const auto rowCount = static_cast<Index>(value.size());
    checkRows(path, rowCount, rows, maxRows);
    const Json& first = value.front();
    if (!first.is_array())
        wrongType(path + "[0]", "an array of numbers", first);
    const auto colCount = static_cast<Index>(first.size());
    checkColumns(path, colCount, cols, maxCols);
    Matrix matrix(rowCount, colCount);
    for (Index r = 0; r < rowCount; ++r) {
        const Json& row = value[static_cast<std::size_t>(r)];
        const std::string rowPath = path + "[" + std::to_string(r) + "]";
        if (!row.is_array())
            wrongType(rowPath, "an array of numbers", row);
        if (static_cast<Index>(row.size()) != colCount)
            refuse(rowPath, "expected " + std::to_string(colCount) + " numbers (like row 0), found " +
                                std::to_string(row.size()));
        for (Index c = 0; c < colCount; ++c)
            matrix(r, c) =
                readNumber(row[static_cast<std::size_t>(c)], rowPath + "[" + std::to_string(c) + "]");
    }
    return matrix;
}

Vector readVector(const Json& value, const std::string& path, Index size)
{
    if (!value.is_array())
        wrongType(path, "an array of numbers", value);
    if (static_cast<Index>(value.size()) != size)
        refuse(path, "expected " + std::to_string(size) + " numbers, found " + std::to_string(value.size()));
    Vector vector(size);
    for (Index i = 0; i < size; ++i)
        vector(i) = readNumber(value[static_cast<std::size_t>(i)], path + "[" + std::to_string(i) + "]");
    return vector;
}

/// An optional bias vector (b_Q, b_K, b_V, b_O): `size` numbers, `dimension` naming where the size comes
/// from.
Vector readBias(const Json& value, const std::string& path, Index size, const char* dimension)
{
    if (!value.is_array())
        wrongType(path, "an array of numbers", value);
    if (static_cast<Index>(value.size()) != size)
        refuse(path, "expected " + std::to_string(size) + " entries (" + dimension + " = " +
                         std::to_string(size) + "), found " + std::to_string(value.size()));
    return readVector(value, path, size);
}

std::vector<std::string> readTokens(const Json& value, const std::string& path, Index count)
{
    if (!value.is_array())
        wrongType(path, "an array of strings", value);
    if (static_cast<Index>(value.size()) != count)
        refuse(path, "expected " + std::to_string(count) + " tokens (one per row), found " +
                         std::to_string(value.size()));
    std::vector<std::string> tokens;
    tokens.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i)
        tokens.push_back(readString(value[i], path + "[" + std::to_string(i) + "]"));
    return tokens;
}

/// Optional names of the d_model columns of `matrix` ("dims", "context.dims"): an array of d_model strings.
std::vector<std::string> readDimensionNames(const Json* value, const std::string& path, const char* matrix,
                                            Index dModel)
{
    if (!value)
        return {};
    if (!value->is_array())
        wrongType(path, "an array of strings (one name per column)", *value);
    if (static_cast<Index>(value->size()) != dModel)
        refuse(path, "expected " + std::to_string(dModel) + " names (one per column of " + matrix +
                         ", d_model = " + std::to_string(dModel) + "), found " +
                         std::to_string(value->size()));
    std::vector<std::string> names;
    names.reserve(value->size());
    for (std::size_t i = 0; i < value->size(); ++i)
        names.push_back(readString((*value)[i], path + "[" + std::to_string(i) + "]"));
    return names;
}

std::vector<bool> readPad(const Json* value, const std::string& path, Index count)
{
    std::vector<bool> pad(static_cast<std::size_t>(count), false);
    if (!value)
        return pad;
    if (!value->is_array())
        wrongType(path, "an array of booleans", *value);
    if (static_cast<Index>(value->size()) != count)
        refuse(path, "expected " + std::to_string(count) + " flags (one per token), found " +
                         std::to_string(value->size()));
    for (std::size_t i = 0; i < value->size(); ++i) {
        const Json& flag = (*value)[i];
        if (!flag.is_boolean())
            wrongType(path + "[" + std::to_string(i) + "]", "true or false", flag);
        pad[i] = flag.get<bool>();
    }
    return pad;
}

/// Copies the keys of `object` that are not in `known` into `extras`.
void keepUnknown(const Json& object, std::initializer_list<const char*> known, Json& extras)
{
    for (auto it = object.begin(); it != object.end(); ++it) {
        bool isKnown = false;
        for (const char* key : known)
            isKnown = isKnown || it.key() == key;
        if (!isKnown)
            extras[it.key()] = it.value();
    }
}

MaskSpec readMask(CompactMatrices& compact, const Json& value, Index n, Index m, Json& extras)
{
    requireObject(value, "mask");
    MaskSpec mask;
    mask.type = readNamed(require(value, "mask", "type"), "mask.type", maskTypeFromString, "mask",
                          "none, causal, prefix, sliding or custom");
    if (const Json* p = find(value, "prefix_length"))
        mask.prefixLength = readWholeNumber(*p, "mask.prefix_length", 0);
    if (const Json* w = find(value, "window"))
        mask.window = readWholeNumber(*w, "mask.window", 1);
    const Json* allowed = find(value, "allowed");
    if (const auto index = allowed ? placeholderIndex(*allowed, Compact::Mask) : std::nullopt) {
        // Rectangular and all 0, 1, true or false: only its shape can be refused, row 0's length first.
        MaskMatrix& matrix = compact.masks.at(*index);
        if (matrix.rows() != n)
            refuse("mask.allowed",
                   "expected " + std::to_string(n) + " rows, found " + std::to_string(matrix.rows()));
        if (matrix.cols() != m)
            refuse("mask.allowed[0]", "expected " + std::to_string(m) + " entries (one per key), found " +
                                          std::to_string(matrix.cols()));
        mask.allowed = std::move(matrix);
    } else if (allowed) {
        if (!allowed->is_array())
            wrongType("mask.allowed", "an array of rows", *allowed);
        if (static_cast<Index>(allowed->size()) != n)
            refuse("mask.allowed",
                   "expected " + std::to_string(n) + " rows, found " + std::to_string(allowed->size()));
        mask.allowed.resize(n, m);
        for (Index i = 0; i < n; ++i) {
            const Json& row = (*allowed)[static_cast<std::size_t>(i)];
            const std::string rowPath = "mask.allowed[" + std::to_string(i) + "]";
            if (!row.is_array())
                wrongType(rowPath, "an array of 0 and 1", row);
            if (static_cast<Index>(row.size()) != m)
                refuse(rowPath, "expected " + std::to_string(m) + " entries (one per key), found " +
                                    std::to_string(row.size()));
            for (Index j = 0; j < m; ++j) {
                const Json& cell = row[static_cast<std::size_t>(j)];
                const std::string cellPath = rowPath + "[" + std::to_string(j) + "]";
                if (cell.is_boolean())
                    mask.allowed(i, j) = cell.get<bool>() ? 1 : 0;
                else if (cell.is_number() && (cell.get<double>() == 0.0 || cell.get<double>() == 1.0))
                    mask.allowed(i, j) = cell.get<double>() == 1.0 ? 1 : 0;
                else
                    refuse(cellPath, "expected 0 or 1, found " + cell.dump());
            }
        }
    } else if (mask.type == MaskType::Custom) {
        refuse("mask.allowed", "missing (a custom mask needs an n × m matrix of 0 and 1)");
    }
    Json unknown = Json::object();
    keepUnknown(value, {"type", "prefix_length", "window", "allowed"}, unknown);
    if (!unknown.empty())
        extras["mask"] = unknown;
    return mask;
}

NormalizerSpec readNormalizer(const Json& value, Json& extras)
{
    requireObject(value, "normalizer");
    NormalizerSpec normalizer;
    normalizer.type = readNamed(require(value, "normalizer", "type"), "normalizer.type", normalizerFromString,
                                "normalizer", "softmax, sparsemax, entmax, sigmoid or hardmax");
    if (const Json* alpha = find(value, "alpha")) {
        normalizer.alpha = readNumber(*alpha, "normalizer.alpha");
        if (normalizer.alpha < 1.0)
            refuse("normalizer.alpha", "expected a number ≥ 1, found " + alpha->dump());
    }
    Json unknown = Json::object();
    keepUnknown(value, {"type", "alpha"}, unknown);
    if (!unknown.empty())
        extras["normalizer"] = unknown;
    return normalizer;
}

/// `positions` (docs/semantics.md, "Positional encodings"): the type and whichever parameters are given (kept
/// whatever the type); what the type needs of the session (P's rows, an even d_k) is checked by validate().
/// `positions.scaling`, Hugging Face's rope_scaling as its config.json writes it: {"type": "linear",
/// "factor"} or {"type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
/// "original_max_position_embeddings"}. The values' ranges are checked with the session (checkPositions).
RopeScaling readRopeScaling(const Json& value)
{
    requireObject(value, "positions.scaling");
    RopeScaling scaling;
    const Json& typeJson = require(value, "positions.scaling", "type");
    const auto type = ropeScalingFromString(readString(typeJson, "positions.scaling.type"));
    if (!type)
        refuse("positions.scaling.type", "expected one of none, linear, llama3, found " + typeJson.dump());
    scaling.type = *type;
    const std::vector<std::pair<const char*, double*>> numbers = {
        {"factor", &scaling.factor},
        {"low_freq_factor", &scaling.lowFrequencyFactor},
        {"high_freq_factor", &scaling.highFrequencyFactor},
        {"original_max_position_embeddings", &scaling.originalMaxPositions}};
    for (const auto& [key, number] : numbers)
        if (const Json* found = find(value, key))
            *number = readNumber(*found, std::string("positions.scaling.") + key);
    for (const auto& item : value.items()) {
        const std::string& key = item.key(); // not a structured binding: clang 14 cannot capture one
        const bool known = key == "type" || std::any_of(numbers.begin(), numbers.end(),
                                                        [&key](const auto& n) { return key == n.first; });
        if (!known)
            refuse("positions.scaling." + key, "unknown key (expected type, factor, low_freq_factor, "
                                               "high_freq_factor, original_max_position_embeddings)");
    }
    return scaling;
}

PositionSpec readPositions(CompactMatrices& compact, const Json& value, Index dModel, std::size_t heads,
                           Json& extras)
{
    requireObject(value, "positions");
    PositionSpec positions;
    const Json& typeJson = require(value, "positions", "type");
    const std::string typeText = readString(typeJson, "positions.type");
    const auto type = positionTypeFromString(typeText);
    if (!type)
        refuse("positions.type",
               "expected one of none, sinusoidal, learned, rope, alibi, found " + typeJson.dump());
    positions.type = *type;
    if (const Json* base = find(value, "base")) {
        if (!base->is_number() || !(base->get<double>() > 0) || !std::isfinite(base->get<double>()))
            refuse("positions.base", "expected a positive finite number, found " + base->dump());
        positions.base = base->get<double>();
    }
    if (const Json* pairingJson = find(value, "pairing")) {
        const std::string pairingText = readString(*pairingJson, "positions.pairing");
        const auto pairing = ropePairingFromString(pairingText);
        if (!pairing)
            refuse("positions.pairing", "expected one of half, interleaved, found " + pairingJson->dump());
        positions.pairing = *pairing;
    }
    if (const Json* scaling = find(value, "scaling"))
        positions.scaling = readRopeScaling(*scaling);
    if (const Json* p = find(value, "P"))
        positions.P =
            readMatrix(compact, *p, "positions.P", -1, dModel, Limits::maxTokens, Limits::maxDimension);
    if (const Json* slopes = find(value, "slopes")) {
        if (!slopes->is_array())
            wrongType("positions.slopes", "an array of numbers (one per head)", *slopes);
        if (slopes->size() != heads)
            refuse("positions.slopes", slopeCountProblem(heads, slopes->size()));
        for (std::size_t h = 0; h < heads; ++h)
            positions.slopes.push_back(
                readNumber((*slopes)[h], "positions.slopes[" + std::to_string(h) + "]"));
    }
    Json unknown = Json::object();
    keepUnknown(value, {"type", "base", "pairing", "scaling", "P", "slopes"}, unknown);
    if (!unknown.empty())
        extras["positions"] = unknown;
    return positions;
}

Scale readScale(const Json& value)
{
    Scale scale;
    if (value.is_string()) {
        const std::string text = value.get<std::string>();
        if (text == "sqrt_dk")
            scale.kind = Scale::Kind::SqrtDk;
        else if (text == "none")
            scale.kind = Scale::Kind::None;
        else
            refuse("scale",
                   "unknown scale \"" + text + "\" (expected \"sqrt_dk\", \"none\" or a number > 0)");
        return scale;
    }
    scale.kind = Scale::Kind::Constant;
    scale.value = readNumber(value, "scale");
    if (scale.value <= 0)
        refuse("scale", "expected a number > 0, found " + value.dump());
    return scale;
}

/// The typed part of `view` (its head and selection, when they have the right form); the rest of the object
/// is kept in extras["view"], free-form, as docs/session-file.md allows.
ViewState readViewState(const Json& view, Json& extras)
{
    ViewState state;
    Json unknown = Json::object();
    for (auto it = view.begin(); it != view.end(); ++it) {
        const Json& value = it.value();
        const auto wholeNumber = [](const Json& v) {
            return (v.is_number_integer() || v.is_number_unsigned()) && v.get<long long>() >= 0 &&
                   v.get<long long>() <= Limits::maxTokens;
        };
        if (it.key() == "head" && wholeNumber(value))
            state.head = value.get<int>();
        else if (it.key() == "selection" && value.is_array() && value.size() == 2 && wholeNumber(value[0]) &&
                 wholeNumber(value[1]))
            state.selection = std::make_pair(value[0].get<Index>(), value[1].get<Index>());
        else
            unknown[it.key()] = value;
    }
    extras["view"] = std::move(unknown); // present, even if empty: the file had a view object
    return state;
}

Session sessionFromJson(const Json& root, CompactMatrices& compact, const std::string& defaultTitle);

/// The `snapshots` array: each a name and a complete session of its own (without snapshots), checked as a
/// session file is, its messages prefixed with where it is ("snapshots[1].session.X: ...").
std::vector<Snapshot> readSnapshots(const Json& value, CompactMatrices& compact)
{
    if (!value.is_array())
        wrongType("snapshots", "an array of snapshots", value);
    if (value.size() > static_cast<std::size_t>(Limits::maxSnapshots))
        refuse("snapshots", "expected at most " + std::to_string(Limits::maxSnapshots) +
                                " snapshots, found " + std::to_string(value.size()));
    std::vector<Snapshot> snapshots;
    for (std::size_t k = 0; k < value.size(); ++k) {
        const std::string at = "snapshots[" + std::to_string(k) + "]";
        const Json& snapshotJson = requireObject(value[k], at);
        Snapshot snapshot;
        snapshot.name = readString(require(snapshotJson, at, "name"), at + ".name");
        if (snapshot.name.empty() || snapshot.name.size() > Limits::maxSnapshotName)
            refuse(at + ".name", "expected 1 to " + std::to_string(Limits::maxSnapshotName) + " characters");
        const Json& sessionJson = requireObject(require(snapshotJson, at, "session"), at + ".session");
        if (sessionJson.contains("snapshots"))
            refuse(at + ".session.snapshots", "a snapshot cannot hold snapshots of its own");
        try {
            snapshot.session =
                std::make_shared<const Session>(sessionFromJson(sessionJson, compact, snapshot.name));
        } catch (const Error& e) {
            throw Error(at + ".session." + e.what());
        }
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

/// The `format` and `version` members: this format, a version this build reads.
void checkFormatAndVersion(const Json& root)
{
    const Json& format = require(root, "", "format");
    if (!format.is_string() || format.get<std::string>() != formatName)
        refuse("format", std::string("expected \"") + formatName + "\", found " + format.dump());
    const Json& version = require(root, "", "version");
    if (!version.is_number_integer() && !version.is_number_unsigned())
        wrongType("version", "a whole number", version);
    if (version.get<long long>() > currentVersion)
        refuse("version", "this file is version " + version.dump() +
                              ", made by a newer QKV Lab; this one reads version " +
                              std::to_string(currentVersion));
    if (version.get<long long>() < 1)
        refuse("version", "expected 1, found " + version.dump());
}

/// The `context` object of cross-attention: Z with d_model columns, its tokens, padding and dimension names.
Context readContext(CompactMatrices& compact, const Json& context, Index dModel, Json& extras)
{
    requireObject(context, "context");
    Context c;
    c.Z = readMatrix(compact, require(context, "context", "Z"), "context.Z", -1, dModel, Limits::maxTokens,
                     Limits::maxDimension);
    const Index m = c.Z.rows();
    c.tokens = readTokens(require(context, "context", "tokens"), "context.tokens", m);
    c.pad = readPad(find(context, "pad"), "context.pad", m);
    c.dims = readDimensionNames(find(context, "dims"), "context.dims", "context.Z", dModel);
    Json unknown = Json::object();
    keepUnknown(context, {"tokens", "Z", "pad", "dims"}, unknown);
    if (!unknown.empty())
        extras["context"] = unknown;
    return c;
}

/// The sizes every head shares, −1 until a head sets them: d_k, d_v and the additive score's d_a.
struct HeadSizes {
    Index dK = -1, dV = -1, dA = -1;
};

/// One head's matrices at `at` ("heads[h]"), each checked against the sizes the heads before it set; its
/// unknown members go to `unknown`.
Head readHead(CompactMatrices& compact, const Json& headJson, const std::string& at, Index dModel,
              HeadSizes& sizes, Json& unknown)
{
    Head head;
    head.W_Q = readMatrix(compact, require(headJson, at, "W_Q"), at + ".W_Q", dModel, sizes.dK,
                          Limits::maxDimension, Limits::maxDimension);
    sizes.dK = head.W_Q.cols();
    head.W_K = readMatrix(compact, require(headJson, at, "W_K"), at + ".W_K", dModel, sizes.dK,
                          Limits::maxDimension, Limits::maxDimension);
    head.W_V = readMatrix(compact, require(headJson, at, "W_V"), at + ".W_V", dModel, sizes.dV,
                          Limits::maxDimension, Limits::maxDimension);
    sizes.dV = head.W_V.cols();
    if (const Json* bias = find(headJson, "b_Q"))
        head.b_Q = readBias(*bias, at + ".b_Q", sizes.dK, "d_k");
    if (const Json* bias = find(headJson, "b_K"))
        head.b_K = readBias(*bias, at + ".b_K", sizes.dK, "d_k");
    if (const Json* bias = find(headJson, "b_V"))
        head.b_V = readBias(*bias, at + ".b_V", sizes.dV, "d_v");
    if (const Json* ws = find(headJson, "W_S"))
        head.W_S = readMatrix(compact, *ws, at + ".W_S", sizes.dK, sizes.dK, Limits::maxDimension,
                              Limits::maxDimension);
    if (const Json* wa = find(headJson, "W_a")) {
        head.W_a = readMatrix(compact, *wa, at + ".W_a", sizes.dK, sizes.dA, Limits::maxDimension,
                              Limits::maxDimension);
        sizes.dA = head.W_a.cols();
    }
    if (const Json* ua = find(headJson, "U_a")) {
        head.U_a = readMatrix(compact, *ua, at + ".U_a", sizes.dK, sizes.dA, Limits::maxDimension,
                              Limits::maxDimension);
        sizes.dA = head.U_a.cols();
    }
    if (const Json* va = find(headJson, "v_a")) {
        if (sizes.dA < 0)
            refuse(at + ".v_a", "needs W_a and U_a beside it");
        head.v_a = readVector(*va, at + ".v_a", sizes.dA);
    }
    keepUnknown(headJson, {"W_Q", "W_K", "W_V", "W_S", "W_a", "U_a", "v_a", "b_Q", "b_K", "b_V"}, unknown);
    return head;
}

/// The `heads` array; returns d_v (−1 when there is no head).
Index readHeads(CompactMatrices& compact, const Json& heads, Index dModel, Session& s, Json& extras)
{
    if (!heads.is_array())
        wrongType("heads", "an array of heads", heads);
    checkCount("heads", heads.size(), "heads", Limits::maxHeads);
    HeadSizes sizes;
    Json headExtras = Json::array();
    bool anyHeadExtras = false;
    for (std::size_t h = 0; h < heads.size(); ++h) {
        const std::string at = "heads[" + std::to_string(h) + "]";
        const Json& headJson = requireObject(heads[h], at);
        Json unknown = Json::object();
        s.heads.push_back(readHead(compact, headJson, at, dModel, sizes, unknown));
        anyHeadExtras = anyHeadExtras || !unknown.empty();
        headExtras.push_back(unknown);
    }
    if (anyHeadExtras)
        extras["heads"] = headExtras;
    return sizes.dV;
}

/// What the computation is told beside the matrices: score, scale, temperature, mask, normalizer, positional
/// encoding and precision, for n queries and m keys.
void readSettings(CompactMatrices& compact, const Json& root, Index n, Index m, Session& s, Json& extras)
{
    if (const Json* score = find(root, "score"))
        s.score = readNamed(*score, "score", scoreFromString, "score", "dot, general, additive or cosine");
    s.scale = defaultScale(s.score);
    if (const Json* scale = find(root, "scale"))
        s.scale = readScale(*scale);
    if (const Json* temperature = find(root, "temperature")) {
        s.temperature = readNumber(*temperature, "temperature");
        if (s.temperature <= 0)
            refuse("temperature", "expected a number > 0, found " + temperature->dump());
    }
    if (const Json* mask = find(root, "mask"))
        s.mask = readMask(compact, *mask, n, m, extras);
    if (const Json* normalizer = find(root, "normalizer"))
        s.normalizer = readNormalizer(*normalizer, extras);
    if (const Json* positions = find(root, "positions"))
        s.positions = readPositions(compact, *positions, s.X.cols(), s.heads.size(), extras);
    if (const Json* precision = find(root, "precision"))
        s.precision =
            readNamed(*precision, "precision", precisionFromString, "precision", "float64 or float32");
}

Session sessionFromJson(const Json& root, CompactMatrices& compact, const std::string& defaultTitle)
{
    requireObject(root, "(file)");
    checkFormatAndVersion(root);

    Session s;
    Json extras = Json::object();
    const Json* title = find(root, "title");
    s.title = title ? readString(*title, "title") : defaultTitle;

    s.X = readMatrix(compact, require(root, "", "X"), "X", -1, -1, Limits::maxTokens, Limits::maxDimension);
    const Index n = s.X.rows();
    const Index dModel = s.X.cols();
    s.tokens = readTokens(require(root, "", "tokens"), "tokens", n);
    s.pad = readPad(find(root, "pad"), "pad", n);
    s.dims = readDimensionNames(find(root, "dims"), "dims", "X", dModel);
    if (const Json* context = find(root, "context"))
        s.context = readContext(compact, *context, dModel, extras);
    const Index m = s.context ? s.context->Z.rows() : n;

    const Index dV = readHeads(compact, require(root, "", "heads"), dModel, s, extras);
    const Index concatWidth = static_cast<Index>(s.heads.size()) * dV;
    if (const Json* wo = find(root, "W_O"))
        s.W_O = readMatrix(compact, *wo, "W_O", concatWidth, -1, concatWidth, Limits::maxDimension);
    if (const Json* bias = find(root, "b_O")) {
        if (!s.W_O)
            refuse("b_O", "needs W_O beside it (it is the bias of the output projection)");
        s.b_O = readBias(*bias, "b_O", s.W_O->cols(), "d_out");
    }
    readSettings(compact, root, n, m, s, extras);
    if (const Json* view = find(root, "view"))
        s.view = readViewState(requireObject(*view, "view"), extras);

    if (const Json* snapshots = find(root, "snapshots"))
        s.snapshots = readSnapshots(*snapshots, compact);
    if (const Json* model = find(root, "model"))
        s.model = readModelLink(*model);

    keepUnknown(root, {"format",  "version",    "title",     "tokens",    "pad",   "X",         "dims",
                       "context", "heads",      "W_O",       "b_O",       "score", "scale",     "temperature",
                       "mask",    "normalizer", "positions", "precision", "view",  "snapshots", "model"},
                extras);
    if (!extras.empty())
        s.preservedJson = extras.dump();

    // Everything the reader could not see on its own (score parameters needed by the score, ...).
    if (const std::string problem = validate(s); !problem.empty())
        throw Error(problem);
    return s;
}

template <typename Input>
Session parseSessionFrom(Input&& input, const std::string& defaultTitle, std::uint64_t size)
{
    const auto outOfMemory = [size] {
        return Error("not enough memory to read this session (" + formatBytes(size) + " of JSON)");
    };
    Json root;
    CompactMatrices compact;
    SessionJsonReader reader(root, compact);
    try {
        Json::sax_parse(std::forward<Input>(input), &reader);
    } catch (const Json::out_of_range&) {
        // A number too large for a double (1e999): refused with its key path like any non-finite number.
        refuse(reader.currentPath(), "not a finite number");
    } catch (const std::bad_alloc&) {
        throw outOfMemory();
    } catch (const Json::parse_error& e) {
        std::string what = e.what();
        // Drop nlohmann's "[json.exception.parse_error.101] " prefix: it means nothing to a user.
        if (const auto end = what.find("] ");
            what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
            what = what.substr(end + 2);
        throw Error("not valid JSON: " + what);
    }
    try {
        return sessionFromJson(root, compact, defaultTitle);
    } catch (const std::bad_alloc&) {
        throw outOfMemory();
    }
}

} // namespace

Session parseSession(const std::string& jsonText, const std::string& defaultTitle)
{
    return parseSessionFrom(jsonText, defaultTitle, jsonText.size());
}

std::string titleFromPath(const std::string& path)
{
    std::string name =
        path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    for (const std::string suffix : {".qkv.json", ".json"}) {
        if (name.size() > suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            name.resize(name.size() - suffix.size());
            break;
        }
    }
    return name.empty() ? std::string("Untitled") : name;
}

Session loadSession(const std::string& path, std::uint64_t maxBytes)
{
    const std::uint64_t limit = maxBytes > 0 ? maxBytes : sessionFileSizeLimit(defaultMemoryLimit());
    // Parsed as it is read: the file's text is never held whole (its checks come first).
    RegularFileBuffer file(path, limit, "a session file");
    std::istream stream(&file);
    return parseSessionFrom(stream, titleFromPath(path), file.size());
}

void setViewJson(Session& session, const std::string& viewObject)
{
    Json extras = session.preservedJson.empty() ? Json::object() : Json::parse(session.preservedJson);
    if (viewObject.empty()) {
        extras.erase("view");
        session.view = ViewState();
    } else {
        Json view;
        try {
            view = Json::parse(viewObject);
        } catch (const Json::parse_error&) {
            throw Error("view: not valid JSON");
        }
        if (!view.is_object())
            throw Error("view: expected an object");
        session.view = readViewState(view, extras);
    }
    session.preservedJson = extras.empty() ? std::string() : extras.dump();
}

} // namespace qkv
