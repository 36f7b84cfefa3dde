// SPDX-License-Identifier: GPL-3.0-or-later
#include "Network.h"

#include "Error.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <type_traits>

namespace qkv::training {

using namespace transformer;

namespace {

template <typename Scalar> const M<Scalar>* tensor(const Tensors<Scalar>& p, int slot)
{
    return slot >= 0 ? &p[std::size_t(slot)] : nullptr;
}

template <typename Scalar> M<Scalar>* gradient(Tensors<Scalar>* g, int slot)
{
    return g != nullptr && slot >= 0 ? &(*g)[std::size_t(slot)] : nullptr;
}

/// A norm's bias, or an empty row (RMSNorm).
template <typename Scalar> Row<Scalar> biasRow(const Tensors<Scalar>& p, int slot)
{
    return slot >= 0 ? Row<Scalar>(p[std::size_t(slot)]) : Row<Scalar>();
}

/// The caller's stop question is not kept past the run that asked it.
struct ForgetProceed {
    HookRequest& hooks;
    ~ForgetProceed() { hooks.proceed = nullptr; }
};

/// No entry infinite or NaN, in pieces on the engine's threads (GPT-2's logits at 1024 tokens: 51 million).
template <typename Scalar> bool finiteEverywhere(const M<Scalar>& m)
{
    return allPiecesPass(m.size(), [&m](Index first, Index size) {
        return isAllFinite(Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(m.data() + first, size));
    });
}

std::string shapeText(Index rows, Index cols)
{
    return std::to_string(rows) + " × " + std::to_string(cols);
}

} // namespace

/// The hooks of one forward: the replacements checked against their hooks, and what is kept.
template <typename Scalar> struct Network<Scalar>::Hooks {
    const Architecture& config;
    Index tokens = 0;
    bool keepAll = false;
    std::set<std::string> keep;
    std::vector<std::pair<HookPoint, const HookReplacement*>> replacements;
    std::vector<std::pair<HookPoint, const HookEdit*>> edits;
    ActivationCache& cache;

    Hooks(const Architecture& c, Index n, const HookRequest& request, ActivationCache& kept)
        : config(c), tokens(n), cache(kept)
    {
        for (const std::string& name : request.keep) {
            if (name == "*") {
                keepAll = true;
                continue;
            }
            if (!parseHookName(name, config))
                throw Error(name + ": no such hook in this model (" + std::to_string(config.layers) +
                            " layers; names as hook_embed, blocks.0.attn.hook_z, ln_final.hook_normalized)");
            keep.insert(name);
        }
        for (std::int64_t id : request.logitIds)
            if (id < 0 || id >= config.vocabSize)
                throw Error("logit of token id " + std::to_string(id) +
                            " asked for: outside the vocabulary (0 to " +
                            std::to_string(config.vocabSize - 1) + ")");
        for (const HookReplacement& r : request.replace) {
            const std::optional<HookPoint> point = parseHookName(r.name, config);
            if (!point)
                throw Error(r.name + ": no such hook in this model, nothing to replace");
            const Index heads = hookHeads(*point, config);
            if (r.head >= heads || r.head < -1)
                throw Error(r.name + ": head " + std::to_string(r.head) + " is out of range (" +
                            (heads > 0 ? "0 to " + std::to_string(heads - 1) : "not a per-head hook") + ")");
            const HookShape shape = hookShape(*point, config, tokens, r.head);
            if (r.value.rows() != shape.rows || r.value.cols() != shape.cols)
                throw Error(r.name + (r.head >= 0 ? " head " + std::to_string(r.head) : std::string()) +
                            ": the replacement is " + shapeText(r.value.rows(), r.value.cols()) +
                            ", the hook " + shapeText(shape.rows, shape.cols));
            if (!isAllFinite(r.value))
                throw Error(r.name + ": the replacement is not finite");
            replacements.emplace_back(*point, &r);
        }
        for (const HookEdit& e : request.edits) {
            const std::optional<HookPoint> point = parseHookName(e.name, config);
            if (!point)
                throw Error(e.name + ": no such hook in this model, nothing to change");
            edits.emplace_back(*point, &e);
        }
        if (request.oneLogitsRow && request.logitsRow >= tokens)
            throw Error("the logits of position " + std::to_string(request.logitsRow) +
                        " asked for: the text has " + std::to_string(tokens) + " tokens");
        if (request.stopBeforeLayer > config.layers)
            throw Error("a run asked to stop before layer " + std::to_string(request.stopBeforeLayer) +
                        "; the model has " + std::to_string(config.layers) + " layers");
    }

    /// The first layer the replacements and edits change (the model's layers: none).
    Index firstChange() const
    {
        Index from = config.layers;
        for (const auto& [point, r] : replacements)
            from = std::min(from, firstLayerChanged(point, config));
        for (const auto& [point, e] : edits)
            from = std::min(from, firstLayerChanged(point, config));
        return from;
    }

    bool kept(const std::string& name) const { return keepAll || keep.count(name) > 0; }

    bool replaced(const HookPoint& point, Index head = -2) const
    {
        for (const auto& [where, r] : replacements)
            if (where == point && (head == -2 || r->head == -1 || r->head == head))
                return true;
        for (const auto& [where, e] : edits)
            if (where == point)
                return true;
        return false;
    }

    /// The hook's replacements written into `value` (whole, or a head's columns), then its edits, then
    /// `value` kept.
    void at(const HookPoint& point, M<Scalar>& value) const
    {
        for (const auto& [where, r] : replacements) {
            if (!(where == point))
                continue;
            applyReplacement(*r, point.kind, config.headDim, value);
        }
        const std::string name = hookName(point);
        for (const auto& [where, e] : edits) {
            if (!(where == point))
                continue;
            Matrix edited = value.template cast<double>();
            e->edit(edited, cache);
            if (edited.rows() != value.rows() || edited.cols() != value.cols())
                throw Error(name + ": the edit changed the hook's shape (" +
                            shapeText(value.rows(), value.cols()) + " to " +
                            shapeText(edited.rows(), edited.cols()) + ")");
            if (!isAllFinite(edited))
                throw Error(name + ": the edited value is not finite");
            value = edited.cast<Scalar>();
        }
        if (kept(name))
            cache[name] = value.template cast<double>();
    }
};

template <typename Scalar>
Network<Scalar>::Network(Architecture architecture, Layout layout)
    : m_architecture(std::move(architecture)), m_layout(std::move(layout))
{
}

template <typename Scalar> NormKind Network<Scalar>::normKind() const
{
    return m_architecture.layerNorm() ? NormKind::LayerNorm : NormKind::RmsNorm;
}

template <typename Scalar> void Network<Scalar>::checkBatch(const Batch& batch, bool hooked) const
{
    const Architecture& a = m_architecture;
    if (batch.empty())
        throw Error("a batch needs at least one sequence");
    for (std::size_t b = 0; b < batch.size(); ++b) {
        const Index n = Index(batch[b].size());
        if (n < (hooked ? 1 : 2))
            throw Error("sequence " + std::to_string(b) + " has " + std::to_string(n) +
                        (n == 1 ? " token" : " tokens") +
                        "; a sequence needs at least 2 tokens to have a next token to predict");
        if (n > a.maxPositions)
            throw Error("sequence " + std::to_string(b) + " of " + std::to_string(n) +
                        " tokens is longer than the model's " + std::to_string(a.maxPositions) +
                        " positions");
        for (std::int64_t id : batch[b])
            if (id < 0 || id >= a.vocabSize)
                throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                            std::to_string(a.vocabSize - 1) + ")");
    }
}

template <typename Scalar> void Network<Scalar>::setBatch(const Batch& batch)
{
    m_batch = batch;
    std::vector<Index> lengths;
    m_ids.clear();
    for (const auto& sequence : batch) {
        lengths.push_back(Index(sequence.size()));
        m_ids.insert(m_ids.end(), sequence.begin(), sequence.end());
    }
    m_sequences = Sequences::ofLengths(lengths);
    m_positions = m_sequences.positions();
    m_targets = nextTokenTargets(m_sequences, m_ids);
    // RoPE's table grows to the longest sequence seen (a model's 131072 positions would take 100 MB).
    const Architecture& a = m_architecture;
    const Index longest = *std::max_element(lengths.begin(), lengths.end());
    if (!a.learnedPositions() && m_rope.cos.rows() < longest)
        m_rope = ropeTable<Scalar>(a.headDim, a.ropeTheta, a.ropeScaling, longest);
    m_cache.clear();
    m_layers.resize(std::size_t(a.layers)); // each layer run overwrites its cache: the buffers are reused
    m_forwardStream.clear();
    m_firstRunLayer = 0;
}

template <typename Scalar>
double Network<Scalar>::forward(const Tensors<Scalar>& p, const Batch& batch, const HookRequest* hooks)
{
    checkBatch(batch, hooks != nullptr);
    if (hooks != nullptr && batch.size() != 1)
        throw Error("hooks are kept and replaced on one sequence; the batch has " +
                    std::to_string(batch.size()));
    if (hooks != nullptr) {
        ActivationCache unused;
        Hooks(m_architecture, Index(batch.front().size()), *hooks, unused); // refused before anything changes
    }
    setBatch(batch);
    m_hooks = hooks != nullptr ? *hooks : HookRequest{};
    const ForgetProceed forget{m_hooks};
    double loss = 0.0;
    if (hooks == nullptr) {
        loss = run(p, 0, nullptr);
    } else {
        Hooks h(m_architecture, m_sequences.rows, m_hooks, m_cache);
        loss = run(p, 0, &h);
    }
    if (batch.size() == 1 && m_hooks.stopBeforeLayer < 0) {
        // What a restart starts from: the stream entering each layer as this forward computed it (a
        // restart's own layers are not kept here, so restarts never build on one another).
        for (const LayerCache& layer : m_layers)
            m_forwardStream.push_back(layer.residPre);
        m_forwardStream.push_back(m_final);
    }
    return loss;
}

template <typename Scalar> double Network<Scalar>::restart(const Tensors<Scalar>& p, const HookRequest& hooks)
{
    if (m_batch.size() != 1 || m_forwardStream.empty())
        throw Error("restart needs a forward on one sequence first");
    ActivationCache unused;
    Hooks(m_architecture, m_sequences.rows, hooks, unused); // refused before anything changes
    m_hooks = hooks;
    Hooks h(m_architecture, m_sequences.rows, m_hooks, m_cache);
    const ForgetProceed forget{m_hooks};
    const Index from = h.firstChange();
    // What the last forward kept at and above that layer is recomputed (or dropped when not asked for).
    for (auto it = m_cache.begin(); it != m_cache.end();) {
        const std::optional<HookPoint> point = parseHookName(it->first, m_architecture);
        it = point && firstLayerChanged(*point, m_architecture) >= from ? m_cache.erase(it) : std::next(it);
    }
    m_final = m_forwardStream[std::size_t(from)];
    return run(p, from, &h);
}

template <typename Scalar>
double Network<Scalar>::runFrom(const Tensors<Scalar>& p, const std::vector<std::int64_t>& ids, Index from,
                                const MatrixOf<Scalar>& stream, const HookRequest& hooks)
{
    const Architecture& a = m_architecture;
    checkBatch({ids}, true);
    if (from < 0 || from > a.layers)
        throw Error("a run from layer " + std::to_string(from) + " asked for; the model has " +
                    std::to_string(a.layers) + " layers");
    const Index n = Index(ids.size());
    if (stream.rows() != n || stream.cols() != a.hiddenSize)
        throw Error("the stream entering layer " + std::to_string(from) + " is " +
                    shapeText(stream.rows(), stream.cols()) + ", the run's " + shapeText(n, a.hiddenSize));
    ActivationCache unused;
    const Hooks checked(a, n, hooks, unused); // refused before anything changes
    if (checked.firstChange() < from)
        throw Error("a run from layer " + std::to_string(from) + " cannot change layer " +
                    std::to_string(checked.firstChange()));
    setBatch({ids});
    m_hooks = hooks;
    m_firstRunLayer = from;
    Hooks h(a, n, m_hooks, m_cache);
    const ForgetProceed forget{m_hooks};
    m_final = stream;
    return run(p, from, &h);
}

template <typename Scalar>
void Network<Scalar>::runLayer(const Tensors<Scalar>& p, Index l, M<Scalar>& h, Hooks* hooks)
{
    const Architecture& a = m_architecture;
    const LayerSlots& s = m_layout.layers[std::size_t(l)];
    LayerCache& c = m_layers[std::size_t(l)];
    const auto hook = [&](HookKind kind, M<Scalar>& value) {
        if (hooks != nullptr)
            hooks->at({kind, l}, value);
    };
    c.residPre = h;
    hook(HookKind::ResidPre, h);
    normForward<Scalar>(normKind(), h, p[std::size_t(s.norm1)], biasRow(p, s.norm1Bias), a.normEpsilon,
                        c.norm1);
    linearForward(c.norm1.out, p[std::size_t(s.q)], tensor(p, s.qBias), c.q);
    linearForward(c.norm1.out, p[std::size_t(s.k)], tensor(p, s.kBias), c.k);
    linearForward(c.norm1.out, p[std::size_t(s.v)], tensor(p, s.vBias), c.v);
    hook(HookKind::Q, c.q);
    hook(HookKind::K, c.k);
    hook(HookKind::V, c.v);
    if (!a.learnedPositions()) {
        ropeForward(m_rope, m_positions, a.heads, c.q);
        ropeForward(m_rope, m_positions, a.kvHeads, c.k);
    }
    const AttentionShape shape{a.heads, a.kvHeads, a.headDim, a.attentionNormalizer, a.slidingWindow};
    attentionForward(shape, m_sequences, c.q, c.k, c.v, c.weights, c.z);
    if (hooks != nullptr) {
        // One sequence: the pattern hook is every head's weights stacked, (heads · n) × n.
        const Index n = m_sequences.rows, dh = a.headDim;
        const HookPoint pattern{HookKind::Pattern, l};
        const bool replaced = hooks->replaced(pattern);
        if (replaced || hooks->kept(hookName(pattern))) {
            M<Scalar> stacked(a.heads * n, n);
            for (Index head = 0; head < a.heads; ++head)
                stacked.middleRows(head * n, n) = c.weights[std::size_t(head)];
            hooks->at(pattern, stacked);
            for (Index head = 0; replaced && head < a.heads; ++head) {
                if (!hooks->replaced(pattern, head))
                    continue;
                M<Scalar>& w = c.weights[std::size_t(head)];
                w = stacked.middleRows(head * n, n);
                const Index g = head / a.groupSize();
                c.z.middleCols(head * dh, dh) = w * c.v.middleCols(g * dh, dh);
            }
        }
    }
    hook(HookKind::Z, c.z);
    linearForward(c.z, p[std::size_t(s.o)], tensor(p, s.oBias), m_output);
    hook(HookKind::AttnOut, m_output);
    h += m_output;
    c.residMid = h;
    if (a.hasMlp()) {
        normForward<Scalar>(normKind(), h, p[std::size_t(s.norm2)], biasRow(p, s.norm2Bias), a.normEpsilon,
                            c.norm2);
        if (a.gatedMlp()) {
            linearForward(c.norm2.out, p[std::size_t(s.gate)], tensor(p, s.gateBias), c.pre);
            linearForward(c.norm2.out, p[std::size_t(s.up)], tensor(p, s.upBias), c.up);
            activationForward<Scalar>(c.pre, &c.up, c.activated);
        } else {
            linearForward(c.norm2.out, p[std::size_t(s.up)], tensor(p, s.upBias), c.pre);
            activationForward<Scalar>(c.pre, nullptr, c.activated);
        }
        linearForward(c.activated, p[std::size_t(s.down)], tensor(p, s.downBias), m_output);
        hook(HookKind::MlpOut, m_output);
        h += m_output;
    }
    hook(HookKind::ResidPost, h);
}

template <typename Scalar>
double Network<Scalar>::run(const Tensors<Scalar>& p, Index fromLayer, Hooks* hooks)
{
    const Architecture& a = m_architecture;
    const Layout& layout = m_layout;
    M<Scalar>& h = m_final;
    if (fromLayer == 0) {
        embeddingForward(p[std::size_t(layout.embedding)], m_ids, h);
        if (hooks != nullptr)
            hooks->at({HookKind::Embed, -1}, h);
        if (layout.positions >= 0) {
            positionsForward(p[std::size_t(layout.positions)], m_positions, m_output);
            if (hooks != nullptr)
                hooks->at({HookKind::PosEmbed, -1}, m_output);
            h += m_output;
        }
    }
    const Index layers =
        hooks != nullptr && m_hooks.stopBeforeLayer >= 0 ? m_hooks.stopBeforeLayer : a.layers;
    for (Index l = fromLayer; l < layers; ++l) {
        runLayer(p, l, h, hooks);
        if (hooks != nullptr && !finiteEverywhere(h))
            throw Error("layer " + std::to_string(l) + ": the residual stream overflows " +
                        (std::is_same_v<Scalar, float> ? "float32; choose precision float64" : "float64"));
        if (hooks != nullptr && m_hooks.proceed && !m_hooks.proceed())
            throw Cancelled();
    }
    if (hooks != nullptr && m_hooks.stopBeforeLayer >= 0) {
        if (layers < a.layers) // the stream entering the layer it stopped before
            hooks->at({HookKind::ResidPre, layers}, h);
        m_logits.resize(0, 0);
        m_positionLosses.resize(0, 0);
        m_logNormalizers.clear();
        return 0.0;
    }
    normForward<Scalar>(normKind(), m_final, p[std::size_t(layout.finalNorm)],
                        biasRow(p, layout.finalNormBias), a.normEpsilon, m_finalNorm);
    if (hooks != nullptr)
        hooks->at({HookKind::FinalNormalized, -1}, m_finalNorm.out);
    const bool lastOnly = hooks != nullptr && m_hooks.oneLogitsRow;
    const M<Scalar>& normed = m_finalNorm.out;
    if (lastOnly)
        m_lastNormed = normed.middleRows(m_hooks.logitsRow < 0 ? normed.rows() - 1 : m_hooks.logitsRow, 1);
    const M<Scalar>& unembedded = lastOnly ? m_lastNormed : normed;
    if (lastOnly && !m_hooks.logitIds.empty()) {
        m_logits.resize(1, Index(m_hooks.logitIds.size()));
        for (std::size_t k = 0; k < m_hooks.logitIds.size(); ++k) {
            const auto id = Index(m_hooks.logitIds[k]);
            m_logits(0, Index(k)) = layout.unembedding >= 0
                                        ? m_lastNormed.row(0).dot(p[std::size_t(layout.unembedding)].col(id))
                                        : m_lastNormed.row(0).dot(p[std::size_t(layout.embedding)].row(id));
        }
    } else if (layout.unembedding >= 0) {
        product(unembedded, p[std::size_t(layout.unembedding)], m_logits);
    } else {
        productTransposed(unembedded, p[std::size_t(layout.embedding)], m_logits);
    }
    if (hooks != nullptr && !finiteEverywhere(m_logits))
        throw Error(std::string("the logits overflow ") +
                    (std::is_same_v<Scalar, float> ? "float32; choose precision float64" : "float64"));
    if (lastOnly) {
        m_logNormalizers.clear();
        m_positionLosses = Matrix::Zero(1, m_sequences.rows - 1);
        return 0.0;
    }
    std::vector<double> rowLosses;
    const double loss = crossEntropyForward(m_logits, m_targets, &rowLosses, &m_logNormalizers);
    const Index longest = *std::max_element(m_sequences.lengths.begin(), m_sequences.lengths.end());
    m_positionLosses = Matrix::Zero(m_sequences.count(), longest - 1);
    for (Index b = 0; b < m_sequences.count(); ++b)
        for (Index i = 0; i + 1 < m_sequences.lengths[std::size_t(b)]; ++i)
            m_positionLosses(b, i) = rowLosses[std::size_t(m_sequences.offsets[std::size_t(b)] + i)];
    return loss;
}

template <typename Scalar>
const MatrixOf<Scalar>& Network<Scalar>::attention(Index sequence, Index layer, Index head) const
{
    return m_layers[std::size_t(layer)].weights[std::size_t(sequence * m_architecture.heads + head)];
}

template <typename Scalar> void Network<Scalar>::checkDifferentiable() const
{
    if (m_hooks.oneLogitsRow)
        throw Error("gradients need every position's logits; the last run kept only one position's");
    if (m_firstRunLayer > 0 || m_hooks.stopBeforeLayer >= 0)
        throw Error("gradients need a run through every layer; the last one ran layers " +
                    std::to_string(m_firstRunLayer) + " to " +
                    std::to_string(m_hooks.stopBeforeLayer >= 0 ? m_hooks.stopBeforeLayer - 1
                                                                : m_architecture.layers - 1));
    if (!m_hooks.edits.empty())
        throw Error(
            m_hooks.edits.front().name +
            ": gradients through a hook changed by a function are not supported; replace it by a value");
}

template <typename Scalar> void Network<Scalar>::backward(const Tensors<Scalar>& p, Tensors<Scalar>& g)
{
    checkDifferentiable();
    if (g.size() != m_layout.tensors.size())
        g = zeroTensors<Scalar>(m_layout);
    else
        for (auto& t : g)
            t.setZero();
    crossEntropyBackward(m_logits, m_targets); // the logits become the loss's gradient
    backwardFrom(p, &g, nullptr, {});
}

template <typename Scalar>
ActivationCache Network<Scalar>::hookGradients(const Tensors<Scalar>& p, const Objective& objective,
                                               const std::vector<std::string>& names, Tensors<Scalar>* g)
{
    const Architecture& a = m_architecture;
    if (m_batch.size() != 1)
        throw Error("gradients to hooks are taken on one sequence; the last forward had " +
                    std::to_string(m_batch.size()));
    checkDifferentiable();
    for (const std::string& name : names)
        if (!parseHookName(name, a))
            throw Error(name + ": no such hook in this model");
    for (const HookReplacement& r : m_hooks.replace)
        if (parseHookName(r.name, a)->kind == HookKind::Pattern)
            throw Error(r.name + ": gradients through a replaced attention pattern are not supported");
    const Index n = m_sequences.rows;
    M<Scalar> dLogits = m_logits;
    if (objective.kind == Objective::Kind::Loss) {
        crossEntropyBackward(dLogits, m_targets);
    } else {
        const Index position = objective.position < 0 ? n - 1 : objective.position;
        if (position >= n)
            throw Error("position " + std::to_string(position) + " is beyond the sequence's " +
                        std::to_string(n) + " tokens");
        for (std::int64_t id : {objective.tokenA, objective.tokenB})
            if (id < 0 || id >= a.vocabSize)
                throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                            std::to_string(a.vocabSize - 1) + ")");
        dLogits.setZero();
        dLogits(position, Index(objective.tokenA)) += Scalar(1);
        dLogits(position, Index(objective.tokenB)) -= Scalar(1);
    }
    if (g != nullptr) {
        *g = zeroTensors<Scalar>(m_layout);
    }
    std::swap(dLogits, m_logits);
    ActivationCache out;
    try {
        backwardFrom(p, g, &out, names);
    } catch (...) {
        std::swap(dLogits, m_logits);
        throw;
    }
    std::swap(dLogits, m_logits);
    return out;
}

template <typename Scalar>
void Network<Scalar>::mlpBackward(const Tensors<Scalar>& p, Tensors<Scalar>* g, Index l, M<Scalar>& dResid)
{
    const LayerSlots& s = m_layout.layers[std::size_t(l)];
    const LayerCache& c = m_layers[std::size_t(l)];
    linearBackward(c.activated, dResid, p[std::size_t(s.down)], gradient(g, s.down), gradient(g, s.downBias),
                   &m_dHidden, false);
    const M<Scalar>& norm2 = c.norm2.out;
    if (m_architecture.gatedMlp()) {
        activationBackward<Scalar>(c.pre, &c.up, m_dHidden, &m_dUp);
        linearBackward(norm2, m_dHidden, p[std::size_t(s.gate)], gradient(g, s.gate), gradient(g, s.gateBias),
                       &m_dNormed, false);
        linearBackward(norm2, m_dUp, p[std::size_t(s.up)], gradient(g, s.up), gradient(g, s.upBias),
                       &m_dNormed, true);
    } else {
        activationBackward<Scalar>(c.pre, nullptr, m_dHidden, nullptr);
        linearBackward(norm2, m_dHidden, p[std::size_t(s.up)], gradient(g, s.up), gradient(g, s.upBias),
                       &m_dNormed, false);
    }
    normBackward<Scalar>(normKind(), c.norm2, p[std::size_t(s.norm2)], m_dNormed, dResid,
                         gradient(g, s.norm2), gradient(g, s.norm2Bias));
}

template <typename Scalar>
void Network<Scalar>::unembeddingBackwardRows(const Tensors<Scalar>& p, const M<Scalar>& dLogits,
                                              M<Scalar>& dFinal) const
{
    // Only the rows of dLogits that are not zero reach the stream: a logit difference has one, so the
    // product over the vocabulary is taken for that row alone.
    std::vector<Index> rows;
    for (Index i = 0; i < dLogits.rows(); ++i)
        if (!dLogits.row(i).isZero(0))
            rows.push_back(i);
    M<Scalar> gathered(Index(rows.size()), dLogits.cols());
    for (std::size_t r = 0; r < rows.size(); ++r)
        gathered.row(Index(r)) = dLogits.row(rows[r]);
    M<Scalar> fromRows;
    if (m_layout.unembedding >= 0)
        productTransposed(gathered, p[std::size_t(m_layout.unembedding)], fromRows);
    else
        product(gathered, p[std::size_t(m_layout.embedding)], fromRows);
    dFinal.setZero(dLogits.rows(), m_architecture.hiddenSize);
    for (std::size_t r = 0; r < rows.size(); ++r)
        dFinal.row(rows[r]) = fromRows.row(Index(r));
}

template <typename Scalar>
void Network<Scalar>::backwardFrom(const Tensors<Scalar>& p, Tensors<Scalar>* g, ActivationCache* hookGrads,
                                   const std::vector<std::string>& names)
{
    const Architecture& a = m_architecture;
    const Layout& layout = m_layout;
    const Index dh = a.headDim;
    const M<Scalar>& dLogits = m_logits;
    // A hook's gradient is recorded where the backward pass reaches it; a replaced hook is an input of the
    // run, so nothing flows on into what it replaced.
    std::optional<Hooks> hooks;
    if (hookGrads != nullptr)
        hooks.emplace(a, m_sequences.rows, m_hooks, m_cache);
    const auto record = [&](HookPoint point, const M<Scalar>& value) {
        if (hookGrads == nullptr)
            return;
        const std::string name = hookName(point);
        if (names.empty() || std::find(names.begin(), names.end(), name) != names.end())
            (*hookGrads)[name] = value.template cast<double>();
    };
    // Cuts the flow at a replaced hook: the whole gradient, or the replaced heads' columns.
    const auto cut = [&](HookPoint point, M<Scalar>& value) {
        if (!hooks)
            return;
        for (const auto& [where, r] : hooks->replacements)
            if (where == point) {
                if (r->head < 0)
                    value.setZero();
                else
                    value.middleCols(r->head * dh, dh).setZero();
            }
    };
    const auto isReplaced = [&](HookPoint point) { return hooks && hooks->replaced(point); };
    M<Scalar>& dFinal = m_dNormed;
    if (g == nullptr) {
        unembeddingBackwardRows(p, dLogits, dFinal);
    } else if (layout.unembedding >= 0) {
        addTransposedProduct(m_finalNorm.out, dLogits, (*g)[std::size_t(layout.unembedding)]);
        productTransposed(dLogits, p[std::size_t(layout.unembedding)], dFinal);
    } else {
        addTransposedProduct(dLogits, m_finalNorm.out, (*g)[std::size_t(layout.embedding)]);
        product(dLogits, p[std::size_t(layout.embedding)], dFinal);
    }
    record({HookKind::FinalNormalized, -1}, dFinal);
    cut({HookKind::FinalNormalized, -1}, dFinal);
    M<Scalar> dResid = M<Scalar>::Zero(m_sequences.rows, a.hiddenSize);
    normBackward<Scalar>(normKind(), m_finalNorm, p[std::size_t(layout.finalNorm)], dFinal, dResid,
                         gradient(g, layout.finalNorm), gradient(g, layout.finalNormBias));
    const AttentionShape shape{a.heads, a.kvHeads, a.headDim, a.attentionNormalizer, a.slidingWindow};
    for (Index l = a.layers - 1; l >= 0; --l) {
        const LayerSlots& s = layout.layers[std::size_t(l)];
        const LayerCache& c = m_layers[std::size_t(l)];
        record({HookKind::ResidPost, l}, dResid);
        cut({HookKind::ResidPost, l}, dResid);
        if (a.hasMlp()) {
            record({HookKind::MlpOut, l}, dResid);
            if (!isReplaced({HookKind::MlpOut, l}))
                mlpBackward(p, g, l, dResid);
        }
        record({HookKind::AttnOut, l}, dResid);
        if (!isReplaced({HookKind::AttnOut, l})) {
            linearBackward(c.z, dResid, p[std::size_t(s.o)], gradient(g, s.o), gradient(g, s.oBias), &m_dz,
                           false);
            record({HookKind::Z, l}, m_dz);
            cut({HookKind::Z, l}, m_dz);
            if (hookGrads != nullptr) {
                // ∂/∂pattern of head h: dz_h · v_gᵀ (one sequence).
                const Index n = m_sequences.rows;
                M<Scalar> dPattern(a.heads * n, n);
                for (Index head = 0; head < a.heads; ++head) {
                    const Index kv = head / a.groupSize();
                    dPattern.middleRows(head * n, n) =
                        m_dz.middleCols(head * dh, dh) * c.v.middleCols(kv * dh, dh).transpose();
                }
                record({HookKind::Pattern, l}, dPattern);
            }
            attentionBackward(shape, m_sequences, c.q, c.k, c.v, c.weights, m_dz, m_dq, m_dk, m_dv);
            if (!a.learnedPositions()) {
                ropeBackward(m_rope, m_positions, a.heads, m_dq);
                ropeBackward(m_rope, m_positions, a.kvHeads, m_dk);
            }
            record({HookKind::Q, l}, m_dq);
            record({HookKind::K, l}, m_dk);
            record({HookKind::V, l}, m_dv);
            cut({HookKind::Q, l}, m_dq);
            cut({HookKind::K, l}, m_dk);
            cut({HookKind::V, l}, m_dv);
            const M<Scalar>& norm1 = c.norm1.out;
            linearBackward(norm1, m_dq, p[std::size_t(s.q)], gradient(g, s.q), gradient(g, s.qBias),
                           &m_dNormed, false);
            linearBackward(norm1, m_dk, p[std::size_t(s.k)], gradient(g, s.k), gradient(g, s.kBias),
                           &m_dNormed, true);
            linearBackward(norm1, m_dv, p[std::size_t(s.v)], gradient(g, s.v), gradient(g, s.vBias),
                           &m_dNormed, true);
            normBackward<Scalar>(normKind(), c.norm1, p[std::size_t(s.norm1)], m_dNormed, dResid,
                                 gradient(g, s.norm1), gradient(g, s.norm1Bias));
        }
        record({HookKind::ResidPre, l}, dResid);
        cut({HookKind::ResidPre, l}, dResid);
    }
    if (layout.positions >= 0) {
        record({HookKind::PosEmbed, -1}, dResid);
        if (g != nullptr && !isReplaced({HookKind::PosEmbed, -1}))
            positionsBackward(m_positions, dResid, (*g)[std::size_t(layout.positions)]);
    }
    record({HookKind::Embed, -1}, dResid);
    if (g != nullptr && !isReplaced({HookKind::Embed, -1}))
        embeddingBackward(m_ids, dResid, (*g)[std::size_t(layout.embedding)]);
}

template class Network<double>;
template class Network<float>;

template <typename Scalar>
double lossAndGradients(const Architecture& architecture, const Layout& layout,
                        const Tensors<Scalar>& parameters, const Batch& batch, Tensors<Scalar>& gradients)
{
    Network<Scalar> network(architecture, layout);
    const double loss = network.forward(parameters, batch);
    network.backward(parameters, gradients);
    return loss;
}

template <typename Scalar> double globalNorm(const Tensors<Scalar>& tensors)
{
    double sum = 0.0;
    for (const auto& t : tensors)
        sum += t.template cast<double>().squaredNorm();
    return std::sqrt(sum);
}

template double lossAndGradients<double>(const Architecture&, const Layout&, const Tensors<double>&,
                                         const Batch&, Tensors<double>&);
template double lossAndGradients<float>(const Architecture&, const Layout&, const Tensors<float>&,
                                        const Batch&, Tensors<float>&);
template double globalNorm<double>(const Tensors<double>&);
template double globalNorm<float>(const Tensors<float>&);

} // namespace qkv::training
