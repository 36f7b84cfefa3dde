// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which head of the open model the document's session is: the circuits panels (the score decomposition, the
// composition grid) compute from the model's own weights, so they need the model itself, not only the
// session's link to its folder.

#include "EigenTypes.h"
#include "ModelSession.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace qkv {
class Model;
}

namespace qkv::ui {

class Document;
class ModelLoading;

struct SessionModelHead {
    std::shared_ptr<const Model> model;
    Index layer = 0;
    Index head = 0; ///< the query head the views show (the document's current head)
    std::vector<std::int64_t> ids;
};

/// The query head of `model` that the session's head `head` is, when the session was cut from `model`: by
/// `request` (the one the window opened it with: its heads, in order, or every head) when the link names the
/// same layer and tokens, by the count of the session's heads when it holds every head, else only the
/// session's first head, the one its link names. Nothing when that is not known.
std::optional<Index> modelHeadOf(const Session& session, int head, const Model& model,
                                 const ModelHeadRequest& request);

/// The model head of the session open in `document` when its model link names the model `loading` opened
/// last (the same folder, layer and tokens); nullopt when the session has no link or its model is not open
/// (yet: a saved session's model is reopened in the background).
std::optional<SessionModelHead> sessionModelHead(const ModelLoading& loading, const Document& document);

} // namespace qkv::ui
