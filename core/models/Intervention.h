// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A change to one query head's output inside a model's forward pass (docs/models.md): the head's z, its
/// n × d_head rows of A·V before W_O (b_O is never touched), zeroed, replaced by its mean over the
/// sequence, scaled, or computed from a session's head (the head open in the window, with its edits).

#include "EigenTypes.h"
#include "ModelConfig.h"
#include "Session.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

/// A HeadIntervention with, for the Session kind, the session whose first head computes z over the
/// layer's normalized input.
struct Intervention : HeadIntervention {
    std::shared_ptr<const Session> session; ///< Session kind only; never null then

    friend bool operator==(const Intervention& a, const Intervention& b)
    {
        return static_cast<const HeadIntervention&>(a) == static_cast<const HeadIntervention&>(b) &&
               (a.session == b.session || (a.session && b.session && *a.session == *b.session));
    }
};

/// How a list names it: "L3.H5 zero", "L0.H1 scale ×2", "L2.H0 session".
std::string describe(const Intervention& intervention);

/// Parses the command line's `L.H=zero|mean|scale:C|session:FILE` (FILE read with loadSession). Throws
/// qkv::Error naming the argument when it is malformed, C is not a finite number or FILE cannot be read.
/// Layer and head ranges are checked against a model by checkIntervention.
Intervention parseIntervention(const std::string& spec);

/// An empty string when `intervention` fits the model, else the problem ("layer 12 is out of range …",
/// "the session's d_model is 8, the model's 16", …).
std::string interventionProblem(const Intervention& intervention, const ModelConfig& config);

} // namespace qkv
