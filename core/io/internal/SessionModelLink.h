// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the session file: its `model` object (the model a head came from, the interventions and the
// patching experiment) read and written.

#include "JsonText.h"
#include "Session.h"

namespace qkv::json {

/// The `model` object, checked for shape (docs/session-file.md); whether it fits the model is checked when
/// the model is opened. Throws qkv::Error naming the key ("model.patching.what: unknown site …").
ModelLink readModelLink(const Json& value);
Json modelJson(const ModelLink& model);

} // namespace qkv::json
