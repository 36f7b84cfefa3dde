// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `qkvlab export`, the part that draws: it needs a QApplication, created by main() after the arguments were
// checked by runCommandLine().

#include "Composition.h"
#include "Intervention.h"
#include "Model.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv::app {

struct ExportRequest;

/// `qkvlab export --model MODEL (--text TEXT | --ids I,J,...) --view prediction|scores|sweep|attribution|lens
/// --out FILE`, `--view patch` with the patching experiment's options instead of the text, or a head's
/// circuits (circuits, composition, decompose), parsed: the model's forward pass or the weights' products,
/// then the view drawn as the window draws it.
struct ModelExportRequest {
    std::shared_ptr<const Model> model;
    std::vector<std::int64_t> ids;
    std::string text; ///< titles the figure ("" when ids were given)
    Precision precision = Precision::Float64;
    std::string view; ///< "prediction", "scores", "sweep", "attribution", "lens", "patch", "circuits", …
    /// prediction: the right-hand run's interventions (--intervene), and the position shown (−1: the last).
    std::vector<Intervention> interventions;
    int position = -1;
    std::string score = "induction";                        ///< scores: a head score's name
    Intervention::Kind ablation = Intervention::Kind::Zero; ///< sweep: zero or mean, the metric the loss
    std::optional<std::int64_t> answer;      ///< lens: the token whose probability colours the cells
    std::optional<PatchExperiment> patching; ///< patch: the prompts' ids, the tokens, the site and method
    /// circuits, composition, decompose: the head (layer −1: the last), which of its inputs composition
    /// reads, and decompose's query (−1: the last) and key positions.
    Index circuitLayer = -1, circuitHead = 0;
    CompositionKind compositionKind = CompositionKind::Key;
    Index query = -1, key = 0;
    std::string format; ///< "png", "svg", "pdf", or "csv" for the figures that have one (grids, lens, patch)
    std::string out;
    int width = 0; ///< figure pixels; 0: the view's default
    int height = 0;
    double scale = 1.0;
};

/// Sets QT_QPA_PLATFORM to offscreen unless it is set already, so that export needs no display. Call before
/// creating the QApplication.
void prepareHeadlessPlatform();

/// Draws the requested views into files and prints the paths written on `out`, or prints the export usage
/// and the view names (`listViews`). Returns 0, or 2 with a message on `err` for an unknown view, a session
/// the engine refuses or a file that cannot be written.
int runExport(const ExportRequest& request, std::ostream& out, std::ostream& err);

/// Draws a model view into `request.out` and prints the path on `out`. Returns 0, or 2 with one line on `err`
/// naming the problem: the model refuses the ids, an intervention does not fit, an unknown view or score, a
/// position out of range, a file that cannot be written.
int runModelExport(const ModelExportRequest& request, std::ostream& out, std::ostream& err);

} // namespace qkv::app
