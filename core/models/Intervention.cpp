// SPDX-License-Identifier: GPL-3.0-or-later
#include "Intervention.h"

#include "Error.h"
#include "SessionFile.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace qkv {

std::string describe(const Intervention& intervention)
{
    std::ostringstream text;
    text << 'L' << intervention.layer << ".H" << intervention.head << ' ' << toString(intervention.kind);
    if (intervention.kind == HeadIntervention::Kind::Scale)
        text << " ×" << intervention.factor;
    return text.str();
}

namespace {

/// A whole number ≥ 0 written in decimal digits only, or nothing.
std::optional<Index> wholeNumber(const std::string& text)
{
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return Index(std::stol(text));
}

} // namespace

Intervention parseIntervention(const std::string& spec)
{
    const auto refuse = [&spec](const std::string& problem) {
        return Error("--intervene " + spec + ": " + problem);
    };
    const std::size_t equals = spec.find('='), dot = spec.find('.');
    if (equals == std::string::npos || dot == std::string::npos || dot > equals)
        throw refuse("expected LAYER.HEAD=zero, mean, scale:C or session:FILE");
    const auto layer = wholeNumber(spec.substr(0, dot));
    const auto head = wholeNumber(spec.substr(dot + 1, equals - dot - 1));
    if (!layer || !head)
        throw refuse("the layer and head are whole numbers counted from 0, as in 3.5=zero");
    Intervention intervention;
    intervention.layer = *layer;
    intervention.head = *head;
    const std::string change = spec.substr(equals + 1);
    const std::size_t colon = change.find(':');
    const std::string kind = change.substr(0, colon);
    const std::string argument = colon == std::string::npos ? std::string() : change.substr(colon + 1);
    const auto parsed = interventionKindFromString(kind);
    if (!parsed)
        throw refuse("unknown change \"" + kind + "\" (expected zero, mean, scale:C or session:FILE)");
    intervention.kind = *parsed;
    const bool takesArgument =
        *parsed == HeadIntervention::Kind::Scale || *parsed == HeadIntervention::Kind::Session;
    if (takesArgument && (colon == std::string::npos || argument.empty()))
        throw refuse(kind == "scale" ? "scale needs a factor, as in scale:0.5"
                                     : "session needs a file, as in session:head.qkv.json");
    if (!takesArgument && colon != std::string::npos)
        throw refuse(kind + " takes no parameter");
    if (*parsed == HeadIntervention::Kind::Scale) {
        char* end = nullptr;
        const double factor = std::strtod(argument.c_str(), &end);
        if (end != argument.c_str() + argument.size() || !std::isfinite(factor))
            throw refuse("the scale factor \"" + argument + "\" is not a finite number");
        intervention.factor = factor;
    } else if (*parsed == HeadIntervention::Kind::Session) {
        try {
            intervention.session = std::make_shared<const Session>(loadSession(argument));
        } catch (const Error& e) {
            throw refuse(e.what());
        }
    }
    return intervention;
}

std::string interventionProblem(const Intervention& intervention, const ModelConfig& config)
{
    if (intervention.layer < 0 || intervention.layer >= config.layers)
        return "layer " + std::to_string(intervention.layer) + " is out of range (the model has " +
               std::to_string(config.layers) + " layers, 0 to " + std::to_string(config.layers - 1) + ")";
    if (intervention.head < 0 || intervention.head >= config.heads)
        return "head " + std::to_string(intervention.head) + " is out of range (the model has " +
               std::to_string(config.heads) + " query heads, 0 to " + std::to_string(config.heads - 1) + ")";
    if (intervention.kind == HeadIntervention::Kind::Scale && !std::isfinite(intervention.factor))
        return "the scale factor is not a finite number";
    if (intervention.kind != HeadIntervention::Kind::Session)
        return {};
    const Session* session = intervention.session.get();
    if (!session || session->heads.empty())
        return "the session has no head";
    if (session->context)
        return "the session is cross-attention; a model's head attends to its own tokens";
    if (session->dModel() != config.hiddenSize)
        return "the session's d_model is " + std::to_string(session->dModel()) + ", the model's " +
               std::to_string(config.hiddenSize);
    if (session->dK() != config.headDim || session->dV() != config.headDim)
        return "the session's head has d_k " + std::to_string(session->dK()) + " and d_v " +
               std::to_string(session->dV()) + "; the model's heads have " + std::to_string(config.headDim);
    return {};
}

} // namespace qkv
