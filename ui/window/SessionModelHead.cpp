// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionModelHead.h"

#include "Document.h"
#include "Model.h"
#include "ModelLoading.h"

#include <algorithm>

namespace qkv::ui {

std::optional<SessionModelHead> sessionModelHead(const ModelLoading& loading, const Document& document)
{
    const Session& session = document.session();
    const std::shared_ptr<const Model> model = loading.model();
    if (!session.model || !model)
        return std::nullopt;
    const ModelLink& link = *session.model;
    const ModelHeadRequest& request = loading.request();
    if (model->folder() != link.folder || request.layer != link.layer || request.ids != link.ids)
        return std::nullopt;
    // The session holds the heads asked for, in order (every query head when none were named); a session
    // reopened from a file was asked for its first head only, so it is matched by its count of heads.
    const int current = std::max(0, document.currentHead());
    const std::size_t held = session.heads.size();
    Index head = link.head;
    if (held == request.heads.size() && std::size_t(current) < held)
        head = request.heads[std::size_t(current)];
    else if (held == std::size_t(model->config().heads))
        head = current;
    else if (current != 0)
        return std::nullopt; // some of the model's heads, which ones the link does not say
    return SessionModelHead{model, link.layer, head, link.ids};
}

} // namespace qkv::ui
