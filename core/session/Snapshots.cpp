// SPDX-License-Identifier: GPL-3.0-or-later
#include "Snapshots.h"

#include <algorithm>
#include <memory>

namespace qkv {

Snapshot makeSnapshot(const Session& session, const std::string& name)
{
    auto copy = std::make_shared<Session>(session);
    copy->snapshots.clear();
    copy->view = ViewState();
    copy->title = name;
    return {name, std::move(copy)};
}

std::string nextSnapshotName(const Session& session)
{
    for (std::size_t k = session.snapshots.size() + 1;; ++k) {
        const std::string name = "Snapshot " + std::to_string(k);
        if (std::none_of(session.snapshots.begin(), session.snapshots.end(),
                         [&](const Snapshot& s) { return s.name == name; }))
            return name;
    }
}

std::vector<ComparedMatrix> comparedMatrices()
{
    return {ComparedMatrix::X,          ComparedMatrix::Q,          ComparedMatrix::K,
            ComparedMatrix::V,          ComparedMatrix::Scores,     ComparedMatrix::Scaled,
            ComparedMatrix::Weights,    ComparedMatrix::HeadOutput, ComparedMatrix::Concat,
            ComparedMatrix::FinalOutput};
}

std::string comparedMatrixName(ComparedMatrix which)
{
    switch (which) {
    case ComparedMatrix::X:
        return "X";
    case ComparedMatrix::Q:
        return "Q";
    case ComparedMatrix::K:
        return "K";
    case ComparedMatrix::V:
        return "V";
    case ComparedMatrix::Scores:
        return "scores";
    case ComparedMatrix::Scaled:
        return "scaled scores";
    case ComparedMatrix::Weights:
        return "weights";
    case ComparedMatrix::HeadOutput:
        return "head output";
    case ComparedMatrix::Concat:
        return "concat";
    case ComparedMatrix::FinalOutput:
        break;
    }
    return "final output";
}

bool isPerHead(ComparedMatrix which)
{
    return which != ComparedMatrix::X && which != ComparedMatrix::Concat &&
           which != ComparedMatrix::FinalOutput;
}

const Matrix* comparedMatrix(const Session& session, const AttentionResult& result, ComparedMatrix which,
                             int head)
{
    if (which == ComparedMatrix::X)
        return &session.X;
    if (which == ComparedMatrix::Concat)
        return &result.concat;
    if (which == ComparedMatrix::FinalOutput)
        return &result.output;
    if (head < 0 || head >= static_cast<int>(result.heads.size()))
        return nullptr;
    const HeadResult& h = result.heads[static_cast<std::size_t>(head)];
    switch (which) {
    case ComparedMatrix::Q:
        return &h.Q;
    case ComparedMatrix::K:
        return &h.K;
    case ComparedMatrix::V:
        return &h.V;
    case ComparedMatrix::Scores:
        return &h.scores;
    case ComparedMatrix::Scaled:
        return &h.scaled;
    case ComparedMatrix::Weights:
        return &h.weights;
    default:
        return &h.output;
    }
}

} // namespace qkv
