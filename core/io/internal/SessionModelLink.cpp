// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionModelLink.h"

#include "PatchSites.h"
#include "SessionFileChecks.h"
#include "SessionFileFormat.h"

namespace qkv::json {

namespace {

/// 1 to Limits::maxTokens token ids (whole numbers ≥ 0) at `path`.
std::vector<std::int64_t> readIds(const Json& value, const std::string& path)
{
    if (!value.is_array())
        wrongType(path, "an array of token ids", value);
    checkCount(path, value.size(), "token ids", Limits::maxTokens);
    std::vector<std::int64_t> ids;
    ids.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i)
        ids.push_back(readWholeNumber(value[i], path + "[" + std::to_string(i) + "]", 0));
    return ids;
}

std::string siteNames()
{
    std::string names;
    for (PatchSite site : allPatchSites())
        names += (names.empty() ? "" : ", ") + patchSiteName(site);
    return names;
}

/// `model.patching`: the two prompts of as many tokens, the metric's tokens, the site and method by name,
/// and the optional positions [first, last] inside the prompts.
PatchExperiment readPatchExperiment(const Json& value)
{
    const std::string at = "model.patching";
    requireObject(value, at);
    PatchExperiment experiment;
    experiment.clean = readIds(require(value, at, "clean"), at + ".clean");
    experiment.corrupt = readIds(require(value, at, "corrupt"), at + ".corrupt");
    if (experiment.corrupt.size() != experiment.clean.size())
        refuse(at + ".corrupt", "expected as many tokens as clean (" +
                                    std::to_string(experiment.clean.size()) + "), found " +
                                    std::to_string(experiment.corrupt.size()));
    experiment.answer = readWholeNumber(require(value, at, "answer"), at + ".answer", 0);
    experiment.wrong = readWholeNumber(require(value, at, "wrong"), at + ".wrong", 0);
    const std::string sites = siteNames();
    experiment.site =
        readNamed(require(value, at, "what"), at + ".what", patchSiteNamed, "site", sites.c_str());
    if (const Json* method = find(value, "method"))
        experiment.method =
            readNamed(*method, at + ".method", patchMethodNamed, "method", "exact or attribution");
    if (const Json* positions = find(value, "positions")) {
        const std::string path = at + ".positions";
        if (!positions->is_array() || positions->size() != 2)
            refuse(path, "expected [first, last], found " + positions->dump());
        const Index first = readWholeNumber((*positions)[0], path + "[0]", 0);
        const Index last = readWholeNumber((*positions)[1], path + "[1]", first);
        const auto n = static_cast<Index>(experiment.clean.size());
        if (last >= n)
            refuse(path + "[1]", "position " + std::to_string(last) + " is past the prompts' " +
                                     std::to_string(n) + " tokens");
        experiment.positions = std::pair{first, last};
    }
    return experiment;
}

Json patchExperimentJson(const PatchExperiment& experiment)
{
    Json patching{{"clean", experiment.clean},
                  {"corrupt", experiment.corrupt},
                  {"answer", experiment.answer},
                  {"wrong", experiment.wrong},
                  {"what", patchSiteName(experiment.site)},
                  {"method", patchMethodName(experiment.method)}};
    if (experiment.positions)
        patching["positions"] = Json::array({experiment.positions->first, experiment.positions->second});
    return patching;
}

} // namespace

/// The `model` object: the folder, the ids, the layer and head the session's head came from, and the
/// interventions and the patching experiment (docs/session-file.md). Checked for shape here; against the
/// model when it is opened.
ModelLink readModelLink(const Json& value)
{
    requireObject(value, "model");
    ModelLink link;
    link.folder = readString(require(value, "model", "folder"), "model.folder");
    if (link.folder.empty())
        refuse("model.folder", "expected the path of a model folder, found \"\"");
    link.ids = readIds(require(value, "model", "ids"), "model.ids");
    link.layer = readWholeNumber(require(value, "model", "layer"), "model.layer", 0);
    link.head = readWholeNumber(require(value, "model", "head"), "model.head", 0);
    if (const Json* list = find(value, "interventions")) {
        if (!list->is_array())
            wrongType("model.interventions", "an array of interventions", *list);
        // Empty is what the writer writes once every intervention was removed.
        if (list->size() > static_cast<std::size_t>(Limits::maxInterventions))
            refuse("model.interventions", "expected at most " + std::to_string(Limits::maxInterventions) +
                                              " interventions, found " + std::to_string(list->size()));
        for (std::size_t k = 0; k < list->size(); ++k) {
            const std::string at = "model.interventions[" + std::to_string(k) + "]";
            const Json& entry = requireObject((*list)[k], at);
            HeadIntervention change;
            change.layer = readWholeNumber(require(entry, at, "layer"), at + ".layer", 0);
            change.head = readWholeNumber(require(entry, at, "head"), at + ".head", 0);
            change.kind = readNamed(require(entry, at, "kind"), at + ".kind", interventionKindFromString,
                                    "kind", "zero, mean, scale or session");
            if (const Json* factor = find(entry, "factor"))
                change.factor = readNumber(*factor, at + ".factor");
            else if (change.kind == HeadIntervention::Kind::Scale)
                refuse(at + ".factor", "missing (a scale needs its factor)");
            if (const Json* enabled = find(entry, "enabled")) {
                if (!enabled->is_boolean())
                    wrongType(at + ".enabled", "true or false", *enabled);
                change.enabled = enabled->get<bool>();
            }
            link.interventions.push_back(change);
        }
    }
    if (const Json* patching = find(value, "patching"))
        link.patching = readPatchExperiment(*patching);
    return link;
}

Json modelJson(const ModelLink& model)
{
    Json interventions = Json::array();
    for (const HeadIntervention& change : model.interventions) {
        Json entry{{"layer", change.layer}, {"head", change.head}, {"kind", toString(change.kind)}};
        if (change.kind == HeadIntervention::Kind::Scale)
            entry["factor"] = change.factor;
        if (!change.enabled)
            entry["enabled"] = false;
        interventions.push_back(std::move(entry));
    }
    Json link{{"folder", model.folder},
              {"ids", model.ids},
              {"layer", model.layer},
              {"head", model.head},
              {"interventions", std::move(interventions)}};
    // Written only when there is one, so files without an experiment stay as they were.
    if (model.patching)
        link["patching"] = patchExperimentJson(*model.patching);
    return link;
}

} // namespace qkv::json
