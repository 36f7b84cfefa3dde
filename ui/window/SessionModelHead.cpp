// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionModelHead.h"

#include "Document.h"
#include "Model.h"
#include "ModelLoading.h"

#include <algorithm>

namespace qkv::ui {

std::optional<Index> modelHeadOf(const Session& session, int head, const Model& model,
                                 const ModelHeadRequest& request)
{
    if (!session.model || head < 0 || session.model->folder != model.folder())
        return std::nullopt;
    const ModelLink& link = *session.model;
    const std::size_t held = session.heads.size();
    if (link.layer == request.layer && link.ids == request.ids) {
        if (request.heads.empty()) // every query head, in order
            return head < model.config().heads ? std::optional<Index>(head) : std::nullopt;
        if (held == request.heads.size() && std::size_t(head) < held)
            return request.heads[std::size_t(head)];
        if (held == std::size_t(model.config().heads)) // a saved session of every head, reopened
            return head;
    }
    if (head == 0) // the link names the session's first head
        return link.head;
    return std::nullopt;
}

std::optional<SessionModelHead> sessionModelHead(const ModelLoading& loading, const Document& document)
{
    const std::shared_ptr<const Model> model = loading.model();
    if (!model)
        return std::nullopt;
    const Session& session = document.session();
    const std::optional<Index> head =
        modelHeadOf(session, std::max(0, document.currentHead()), *model, loading.request());
    if (!head)
        return std::nullopt;
    return SessionModelHead{model, session.model->layer, *head, session.model->ids};
}

} // namespace qkv::ui
