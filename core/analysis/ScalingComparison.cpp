// SPDX-License-Identifier: GPL-3.0-or-later
#include "ScalingComparison.h"

#include "Error.h"
#include "Positions.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace qkv {

namespace {

ScalingSide computeSide(const Session& single, const ScalingSetting& setting)
{
    Session copy = single;
    copy.scale = setting.scale;
    copy.temperature = setting.temperature;
    ScalingSide side;
    side.setting = setting;
    const AttentionResult result = computeAttention(copy);
    const HeadResult& r = result.heads.front();
    side.divisor = scaleDivisor(setting.scale, copy.dK());
    side.scaled = r.scaled;
    side.weights = r.weights;
    side.entropy.reserve(r.rowStats.size());
    side.topWeight.reserve(r.rowStats.size());
    double sum = 0.0;
    Index counted = 0;
    for (std::size_t i = 0; i < r.rowStats.size(); ++i) {
        side.entropy.push_back(r.rowStats[i].entropy);
        side.topWeight.push_back(r.rowStats[i].max);
        if (r.rowStats[i].support > 0) {
            sum += r.rowStats[i].entropy;
            ++counted;
        }
    }
    side.meanEntropy = counted > 0 ? sum / static_cast<double>(counted) : 0.0;
    return side;
}

} // namespace

ScalingSetting alternativeSetting(const Session& session)
{
    ScalingSetting other;
    other.temperature = session.temperature;
    other.scale.kind = session.scale.kind == Scale::Kind::SqrtDk ? Scale::Kind::None : Scale::Kind::SqrtDk;
    return other;
}

ScalingComparison compareScaling(const Session& session, int head, const ScalingSetting& first,
                                 const ScalingSetting& second, const ComputeOptions& options)
{
    if (head < 0 || head >= session.headCount())
        throw std::out_of_range("compareScaling: head " + std::to_string(head) +
                                " is not a head of the session");
    // One head and no W_O: the other heads and the output projection do not change its weights.
    Session single = session;
    single.heads = {session.heads[static_cast<std::size_t>(head)]};
    single.W_O.reset();
    single.b_O.resize(0);
    if (!session.positions.slopes.empty() || session.positions.type == PositionType::Alibi)
        single.positions.slopes = {
            effectiveAlibiSlopes(session.positions, session.headCount())[std::size_t(head)]};
    for (const ScalingSetting* setting : {&first, &second}) {
        if (setting->scale.kind == Scale::Kind::Constant &&
            !(std::isfinite(setting->scale.value) && setting->scale.value > 0.0))
            throw Error("scale: the constant divisor must be a finite positive number");
        if (!(std::isfinite(setting->temperature) && setting->temperature > 0.0))
            throw Error("temperature: must be a finite positive number");
    }
    if (options.cancel && options.cancel->load())
        throw Cancelled();
    ScalingComparison comparison;
    comparison.first = computeSide(single, first);
    if (options.cancel && options.cancel->load())
        throw Cancelled();
    comparison.second = computeSide(single, second);
    return comparison;
}

Session querySessionFromMatrices(const Matrix& queries, const Matrix& keys)
{
    if (queries.cols() != keys.cols())
        throw Error("queries and keys differ in dimension (" + std::to_string(queries.cols()) + " and " +
                    std::to_string(keys.cols()) + ")");
    const Index d = queries.cols();
    Session session;
    session.title = "queries and keys";
    for (Index i = 0; i < queries.rows(); ++i)
        session.tokens.push_back("q" + std::to_string(i));
    session.pad.assign(static_cast<std::size_t>(queries.rows()), false);
    session.X = queries;
    Context context;
    for (Index j = 0; j < keys.rows(); ++j)
        context.tokens.push_back("k" + std::to_string(j));
    context.pad.assign(static_cast<std::size_t>(keys.rows()), false);
    context.Z = keys;
    session.context = std::move(context);
    Head identity;
    identity.W_Q = Matrix::Identity(d, d);
    identity.W_K = Matrix::Identity(d, d);
    identity.W_V = Matrix::Identity(d, d);
    session.heads.push_back(std::move(identity));
    session.scale.kind = Scale::Kind::SqrtDk;
    const std::string problem = validate(session);
    if (!problem.empty())
        throw Error(problem);
    return session;
}

} // namespace qkv
