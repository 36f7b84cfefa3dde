// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionModelHead.h"

#include "Document.h"
#include "Model.h"
#include "ModelLoading.h"

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
    // The session holds the heads asked for, in order: every query head when none were named.
    const int current = document.currentHead();
    Index head = link.head;
    if (request.heads.empty() && current >= 0)
        head = current;
    else if (current >= 0 && std::size_t(current) < request.heads.size())
        head = request.heads[std::size_t(current)];
    return SessionModelHead{model, link.layer, head, link.ids};
}

} // namespace qkv::ui
