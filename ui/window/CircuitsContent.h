// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the Circuits view shows, computed: the session's head as it holds it (its circuits' spectra and the
// prompt's QK table, cheap enough for every edit) and, for a head cut from a model, the model's full
// circuits (costly: the panel runs them off the GUI thread).

#include "Circuits.h"
#include "CircuitsView.h"
#include "ModelSession.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace qkv::ui {

/// The session's head `head`: the spectra of its W_QK and W_OV, W_OV's eigenvalues and copying score, and
/// x_i·W_QK·y_jᵀ for every query row x_i of X and key row y_j of the key side (no bias, scale or position).
/// Never throws: what cannot be computed is named in the display's messages.
CircuitsSessionDisplay sessionCircuitsDisplay(const Session& session, int head);

/// What to compute of a model's head.
struct ModelCircuitsRequest {
    std::shared_ptr<const Model> model;
    Index layer = 0;
    Index head = 0;
    std::optional<std::int64_t> query; ///< the token the lists are for (none: no lists)
    Index top = 8;
    /// Computed before for this model (and head), reused: the weights read once, the full OV once per head.
    std::shared_ptr<const ModelCircuits> circuits;
    std::optional<FullOvCircuit> fullOv;
};

struct ModelCircuitsOutcome {
    std::shared_ptr<const ModelCircuits> circuits;
    std::optional<FullOvCircuit> fullOv;
    QList<CircuitToken> topKeys; ///< best first (empty without a query)
    QList<CircuitToken> topWrites;
    QString error; ///< why nothing could be computed ("" when it was)
};

/// Computes what `request` asks for. Never throws: a refusal of the model, or memory running out, is the
/// outcome's error.
ModelCircuitsOutcome computeModelCircuits(const ModelCircuitsRequest& request);

} // namespace qkv::ui
