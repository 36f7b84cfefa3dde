// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelSession.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "LayerAttention.h"
#include "ModelTensors.h"
#include "Parallel.h"

#include <functional>
#include <optional>
#include <type_traits>

namespace qkv {

using models::allHeads;
using models::hasTensor;
using models::layerOutOfRange;
using models::layerPrefix;
using models::layerSession;
using models::normalizedForAttention;
using models::readMatrix;
using models::readVector;

namespace {

/// RoPE for the LLaMA family: rope_theta and rope_scaling, dimension i paired with i + d_head/2.
void useRope(Session& session, const ModelConfig& config)
{
    session.positions.type = PositionType::Rope;
    session.positions.base = config.ropeTheta;
    session.positions.pairing = RopePairing::Half;
    session.positions.scaling = config.ropeScaling;
}

/// A checkpoint matrix that heads are cut out of: an F32 tensor where it is stored, any other read into
/// doubles once. Each part is copied into a double matrix, or into a float32 one for a float32 pass (where it
/// is already: a narrowing of the doubles read from an F16, BF16 or F32 tensor is exact, and an F64 one is
/// rounded as the engine rounds a session's weights), reusing the target's storage.
class TensorSource {
public:
    TensorSource(const Model& model, const std::string& name)
        : m_stored(model.checkpoint().storedFloat32(model.tensorName(name)))
    {
        if (!m_stored)
            m_read = readMatrix(model, name);
    }
    enum class Part { Rows, Columns };
    /// Rows (or columns) first … first + count − 1, or with `transposed` their transpose.
    template <typename Scalar>
    void copyInto(Part part, Index first, Index count, bool transposed, MatrixOf<Scalar>& into) const
    {
        const auto from = [&](const auto& whole) {
            if (part == Part::Rows)
                assign(whole.middleRows(first, count), transposed, into);
            else
                assign(whole.middleCols(first, count), transposed, into);
        };
        if (m_stored)
            from(*m_stored);
        else
            from(m_read);
    }

private:
    template <typename Block, typename Scalar>
    static void assign(const Block& block, bool transposed, MatrixOf<Scalar>& into)
    {
        if (transposed)
            into = block.transpose().template cast<Scalar>();
        else
            into = block.template cast<Scalar>();
    }

    std::optional<Eigen::Map<const MatrixF>> m_stored;
    Matrix m_read; // when not stored as F32
};

/// body(k) for each of `count` heads, on the engine's threads: copying the heads' columns out of a layer's
/// weights is too much copying for one thread in every layer of a forward pass.
void forEachHead(std::size_t count, const std::function<void(std::size_t)>& body)
{
    parallelFor(Index(count), 1, [&](Index begin, Index end) {
        for (Index k = begin; k < end; ++k)
            body(std::size_t(k));
    });
}

/// The chosen query heads' projections from the layer's weights, each tensor read once: W_Q, W_K, W_V as
/// d_model × d_head into the heads, or into `float32` when given, and biases when the checkpoint has them.
/// GPT-2's c_attn is d × 3d with columns q | k | v; the LLaMA family's q/k/v_proj are torch Linear weights
/// (out × in), so a head's W is its rows, transposed.
std::vector<Head> headsOf(const Model& model, Index layer, const std::vector<Index>& queryHeads,
                          Float32Weights* float32)
{
    const ModelConfig& c = model.config();
    const std::string prefix = layerPrefix(model, layer);
    const Index d = c.headDim;
    std::vector<Head> heads(queryHeads.size());
    if (float32)
        float32->heads.resize(queryHeads.size());
    // Head k's three projections, each cut by `cut(source part, target matrix)` into double or float32.
    const auto cutProjections = [&](std::size_t k, const auto& cut) {
        if (float32) {
            Float32Weights::Projections& p = float32->heads[k];
            cut(0, p.W_Q), cut(1, p.W_K), cut(2, p.W_V);
        } else {
            cut(0, heads[k].W_Q), cut(1, heads[k].W_K), cut(2, heads[k].W_V);
        }
    };
    if (c.family == ModelFamily::Gpt2) {
        const TensorSource wide(model, prefix + "attn.c_attn.weight");
        const bool biased = hasTensor(model, prefix + "attn.c_attn.bias");
        const RowVector bias = biased ? readVector(model, prefix + "attn.c_attn.bias") : RowVector();
        forEachHead(heads.size(), [&](std::size_t k) {
            const Index q = queryHeads[k] * d;
            const Index first[3] = {q, c.hiddenSize + q, 2 * c.hiddenSize + q};
            cutProjections(k, [&](int part, auto& into) {
                wide.copyInto(TensorSource::Part::Columns, first[part], d, false, into);
            });
            if (biased) {
                heads[k].b_Q = bias.segment(first[0], d).transpose();
                heads[k].b_K = bias.segment(first[1], d).transpose();
                heads[k].b_V = bias.segment(first[2], d).transpose();
            }
        });
        return heads;
    }
    struct Projection {
        TensorSource weight;
        RowVector bias; // empty: none
    };
    const auto projection = [&](const char* name) {
        const std::string base = prefix + "self_attn." + name;
        return Projection{TensorSource(model, base + ".weight"),
                          hasTensor(model, base + ".bias") ? readVector(model, base + ".bias") : RowVector()};
    };
    const Projection projections[3] = {projection("q_proj"), projection("k_proj"), projection("v_proj")};
    const auto biasOf = [d](const Projection& p, Index head) -> Vector {
        return p.bias.size() ? Vector(p.bias.segment(head * d, d).transpose()) : Vector();
    };
    forEachHead(heads.size(), [&](std::size_t i) {
        const Index queryHead = queryHeads[i], kvHead = queryHeads[i] / c.groupSize();
        const Index source[3] = {queryHead, kvHead, kvHead};
        cutProjections(i, [&](int part, auto& into) {
            projections[part].weight.copyInto(TensorSource::Part::Rows, source[part] * d, d, true, into);
        });
        heads[i].b_Q = biasOf(projections[0], queryHead);
        heads[i].b_K = biasOf(projections[1], kvHead);
        heads[i].b_V = biasOf(projections[2], kvHead);
    });
    return heads;
}

/// The output projection: rows of the chosen heads (d_head each, in their order) into the session's W_O, or
/// into `float32` when given, and its bias.
void setOutputProjection(const Model& model, Index layer, const std::vector<Index>& heads, Session& session,
                         Float32Weights* float32)
{
    const ModelConfig& c = model.config();
    const std::string prefix = layerPrefix(model, layer);
    const bool gpt2 = c.family == ModelFamily::Gpt2; // GPT-2's Conv1D is in × out, a torch Linear out × in
    const TensorSource full(model, prefix + (gpt2 ? "attn.c_proj.weight" : "self_attn.o_proj.weight"));
    const Index d = c.headDim;
    const auto cut = [&](auto& W_O) {
        using Values = std::decay_t<decltype(W_O)>;
        W_O.resize(Index(heads.size()) * d, c.hiddenSize);
        Values part;
        for (std::size_t k = 0; k < heads.size(); ++k) {
            if (gpt2)
                full.copyInto(TensorSource::Part::Rows, heads[k] * d, d, false, part);
            else
                full.copyInto(TensorSource::Part::Columns, heads[k] * d, d, true, part);
            W_O.middleRows(Index(k) * d, d) = part;
        }
    };
    if (float32)
        cut(float32->W_O ? *float32->W_O : float32->W_O.emplace()); // reused from the layer before
    else
        cut(session.W_O.emplace());
    const std::string bias = prefix + (gpt2 ? "attn.c_proj.bias" : "self_attn.o_proj.bias");
    if (hasTensor(model, bias))
        session.b_O = readVector(model, bias).transpose();
}

} // namespace

/// The layer's attention as a session over `x` (the normalized residual stream), for `heads`.
/// With `float32` (a float32 pass), the projections go there instead of into the session.
Session models::layerSession(const Model& model, const Matrix& x, Index layer,
                             const std::vector<Index>& heads, Precision precision, Float32Weights* float32)
{
    const ModelConfig& c = model.config();
    Session session;
    session.X = x;
    session.tokens.resize(static_cast<std::size_t>(x.rows()));
    for (std::size_t i = 0; i < session.tokens.size(); ++i)
        session.tokens[i] = "#" + std::to_string(i);
    session.pad.assign(session.tokens.size(), false);
    session.heads = headsOf(model, layer, heads, float32);
    setOutputProjection(model, layer, heads, session, float32);
    session.score = ScoreFunction::Dot;
    session.scale = Scale{Scale::Kind::SqrtDk, 1.0};
    session.temperature = 1.0;
    session.mask.type = MaskType::Causal;
    if (c.slidingWindow > 0 && session.n() > c.slidingWindow) { // Mistral: query i sees keys i − w + 1 … i
        session.mask.type = MaskType::Sliding;
        session.mask.window = c.slidingWindow;
    }
    session.normalizer = c.attentionNormalizer;
    session.precision = precision;
    if (c.family == ModelFamily::Llama)
        useRope(session, c);
    return session;
}

std::vector<Index> models::allHeads(const ModelConfig& c)
{
    std::vector<Index> heads;
    for (Index h = 0; h < c.heads; ++h)
        heads.push_back(h);
    return heads;
}

Session sessionFromModel(const Model& model, const ModelHeadRequest& request)
{
    const ModelConfig& c = model.config();
    std::vector<Index> heads = request.heads.empty() ? allHeads(c) : request.heads;
    for (Index h : heads)
        if (h < 0 || h >= c.heads)
            throw Error("head " + std::to_string(h) + " is out of range (layer " +
                        std::to_string(request.layer) + " has " + std::to_string(c.heads) +
                        " query heads, 0 to " + std::to_string(c.heads - 1) + ")");
    if (request.layer < 0 || request.layer >= c.layers)
        throw layerOutOfRange(c, request.layer);
    const Matrix residual = residualBeforeLayer(model, request.ids, request.layer, request.precision);
    Session session =
        layerSession(model, normalizedForAttention(model, residual, request.layer, request.precision),
                     request.layer, heads, request.precision);
    session.tokens = tokenLabels(model, request.ids);
    session.title = modelName(model) + ", layer " + std::to_string(request.layer) +
                    (request.text.empty() ? std::string() : ": \"" + request.text + "\"");
    return session;
}

ModelLink modelLinkFor(const Model& model, const ModelHeadRequest& request)
{
    ModelLink link;
    link.folder = model.folder();
    link.ids = request.ids;
    link.layer = request.layer;
    link.head = request.heads.empty() ? 0 : request.heads.front();
    HeadIntervention own;
    own.layer = link.layer;
    own.head = link.head;
    own.kind = HeadIntervention::Kind::Session;
    link.interventions.push_back(own);
    return link;
}

} // namespace qkv
