// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An independent forward pass to the logits, every number by a plain loop over std::vector tables (no Eigen
// products, no engine): the tiny checkpoints of TinyModels.h run from the embeddings through every layer,
// the final norm and the unembedding, with head interventions (zero, mean, scale, or a session's head with
// its own projections, scale, temperature, normalizer, mask and RoPE), and the head scores from its weights.
// tst_prediction compares ModelRun with it.

#include "HeadScores.h"
#include "Safetensors.h"
#include "Session.h"
#include "TinyModels.h"

#include <QtGlobal>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qkv::test {

using Table = std::vector<std::vector<double>>; // rows

inline Table tableOf(const Checkpoint& checkpoint, const std::string& name)
{
    const Matrix m = checkpoint.readMatrix(name);
    Table t(std::size_t(m.rows()), std::vector<double>(std::size_t(m.cols())));
    for (Index r = 0; r < m.rows(); ++r)
        for (Index c = 0; c < m.cols(); ++c)
            t[std::size_t(r)][std::size_t(c)] = m(r, c);
    return t;
}

inline std::vector<double> vectorOf(const Checkpoint& checkpoint, const std::string& name)
{
    const RowVector v = checkpoint.readVector(name);
    return std::vector<double>(v.data(), v.data() + v.size());
}

/// A table as a matrix, for comparing with the code's.
inline Matrix matrixOf(const Table& t)
{
    Matrix m(Index(t.size()), Index(t.front().size()));
    for (Index r = 0; r < m.rows(); ++r)
        for (Index c = 0; c < m.cols(); ++c)
            m(r, c) = t[std::size_t(r)][std::size_t(c)];
    return m;
}

inline Table zeros(std::size_t rows, std::size_t columns)
{
    return Table(rows, std::vector<double>(columns, 0.0));
}

/// x · W (W: in × out) + b, or x · Wᵀ (W: out × in) + b when `transposed`.
inline Table linear(const Table& x, const Table& w, const std::vector<double>& b, bool transposed)
{
    const std::size_t out = transposed ? w.size() : w[0].size(), in = x[0].size();
    Table y = zeros(x.size(), out);
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = 0.0;
            for (std::size_t k = 0; k < in; ++k)
                sum += x[i][k] * (transposed ? w[o][k] : w[k][o]);
            y[i][o] = sum + (b.empty() ? 0.0 : b[o]);
        }
    return y;
}

/// LayerNorm, or RMSNorm when `rms`; `divisor` receives each row's √(variance + ε) (√(mean x² + ε)).
inline Table normalized(const Table& x, const std::vector<double>& gain, const std::vector<double>& bias,
                        double epsilon, bool rms, std::vector<double>* divisor = nullptr)
{
    Table y = x;
    if (divisor)
        divisor->assign(x.size(), 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double n = double(x[i].size());
        double mean = 0.0, square = 0.0;
        for (double v : x[i])
            mean += v / n;
        for (double v : x[i])
            square += (rms ? v * v : (v - mean) * (v - mean)) / n;
        const double scale = std::sqrt(square + epsilon);
        if (divisor)
            (*divisor)[i] = scale;
        for (std::size_t k = 0; k < x[i].size(); ++k)
            y[i][k] = (rms ? x[i][k] : x[i][k] - mean) / scale * gain[k] + (bias.empty() ? 0.0 : bias[k]);
    }
    return y;
}

/// How one head turns q, k and v into weights: the model's own heads use the defaults (dot, ÷√d_head,
/// τ = 1, causal softmax) and, in the LLaMA family, RoPE with half pairing.
struct Attend {
    ScoreFunction score = ScoreFunction::Dot;
    double divisor = 1.0;
    double temperature = 1.0;
    NormalizerSpec normalizer;
    MaskSpec mask{MaskType::Causal, 0, 1, {}};
    double ropeBase = 0.0; ///< 0: no RoPE
    RopePairing pairing = RopePairing::Half;
};

/// One row's weights from its scaled scores over the allowed keys; masked keys get 0, an empty row all 0.
inline std::vector<double> normalizeRow(const NormalizerSpec& spec, const std::vector<double>& scaled,
                                        const std::vector<bool>& allowed, double temperature)
{
    std::vector<double> p(scaled.size(), 0.0);
    double max = -INFINITY;
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            max = std::max(max, scaled[j]);
    if (max == -INFINITY)
        return p;
    std::vector<double> z; // the allowed logits, shifted so that their maximum is 0
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            z.push_back((scaled[j] - max) / temperature);
    std::vector<double> out(z.size());
    if (spec.type == NormalizerType::Softmax) {
        double sum = 0.0;
        for (double v : z)
            sum += std::exp(v);
        for (std::size_t j = 0; j < z.size(); ++j)
            out[j] = std::exp(z[j]) / sum;
    } else if (spec.type == NormalizerType::Sparsemax) {
        // Martins & Astudillo: the largest k with 1 + k·z_(k) > Σ_{r ≤ k} z_(r), τ = (Σ_{r ≤ k} z_(r) − 1)/k.
        std::vector<double> sorted = z;
        std::sort(sorted.rbegin(), sorted.rend());
        double cumulative = 0.0, threshold = 0.0;
        for (std::size_t k = 0; k < sorted.size(); ++k) {
            cumulative += sorted[k];
            if (1.0 + double(k + 1) * sorted[k] > cumulative)
                threshold = (cumulative - 1.0) / double(k + 1);
        }
        for (std::size_t j = 0; j < z.size(); ++j)
            out[j] = std::max(z[j] - threshold, 0.0);
    } else if (spec.type == NormalizerType::Entmax) {
        // p_j = [(α − 1) z_j − t]₊^{1/(α − 1)}, Σ p = 1; t by bisection on [−1, −(1/m)^{α − 1}].
        const double a = spec.alpha - 1.0;
        const auto mass = [&](double t) {
            double sum = 0.0;
            for (double v : z)
                sum += std::pow(std::max(a * v - t, 0.0), 1.0 / a);
            return sum;
        };
        double low = -1.0, high = -std::pow(1.0 / double(z.size()), a);
        for (int step = 0; step < 200; ++step) {
            const double middle = 0.5 * (low + high);
            (mass(middle) >= 1.0 ? low : high) = middle;
        }
        const double sum = mass(low);
        for (std::size_t j = 0; j < z.size(); ++j)
            out[j] = std::pow(std::max(a * z[j] - low, 0.0), 1.0 / a) / sum;
    } else {
        qFatal("normalizeRow: this normalizer has no reference here");
    }
    for (std::size_t j = 0, k = 0; j < scaled.size(); ++j)
        if (allowed[j])
            p[j] = out[k++];
    return p;
}

inline bool isAllowed(const MaskSpec& mask, std::size_t i, std::size_t j)
{
    switch (mask.type) {
    case MaskType::None:
        return true;
    case MaskType::Causal:
        return j <= i;
    case MaskType::Prefix:
        return Index(j) < mask.prefixLength || j <= i;
    case MaskType::Sliding:
        return j <= i && Index(i - j) < mask.window;
    case MaskType::Custom:
        return mask.allowed(Index(i), Index(j)) != 0;
    }
    return false;
}

/// Rotates each pair of coordinates of each row by position · base^(−2r/d).
inline void rotate(Table& t, double base, RopePairing pairing)
{
    const std::size_t d = t.empty() ? 0 : t[0].size();
    for (std::size_t i = 0; i < t.size(); ++i)
        for (std::size_t r = 0; r < d / 2; ++r) {
            const double angle = double(i) * std::pow(base, -2.0 * double(r) / double(d));
            const std::size_t x = pairing == RopePairing::Half ? r : 2 * r;
            const std::size_t y = pairing == RopePairing::Half ? r + d / 2 : 2 * r + 1;
            const double a = t[i][x], b = t[i][y];
            t[i][x] = a * std::cos(angle) - b * std::sin(angle);
            t[i][y] = a * std::sin(angle) + b * std::cos(angle);
        }
}

/// One head: the weights (n × n) into `weights` and z = A·V (n × d_v) into `z`.
inline void attend(Table q, Table k, const Table& v, const Attend& how, Table& weights, Table& z)
{
    if (how.ropeBase > 0.0) {
        rotate(q, how.ropeBase, how.pairing);
        rotate(k, how.ropeBase, how.pairing);
    }
    const std::size_t n = q.size(), dk = q[0].size(), dv = v[0].size();
    weights = zeros(n, n);
    z = zeros(n, dv);
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> scaled(n);
        std::vector<bool> allowed(n);
        for (std::size_t j = 0; j < n; ++j) {
            double dot = 0.0, qq = 0.0, kk = 0.0;
            for (std::size_t c = 0; c < dk; ++c)
                dot += q[i][c] * k[j][c], qq += q[i][c] * q[i][c], kk += k[j][c] * k[j][c];
            if (how.score == ScoreFunction::Cosine)
                dot = qq > 0.0 && kk > 0.0 ? dot / (std::sqrt(qq) * std::sqrt(kk)) : 0.0;
            scaled[j] = dot / how.divisor;
            allowed[j] = isAllowed(how.mask, i, j);
        }
        weights[i] = normalizeRow(how.normalizer, scaled, allowed, how.temperature);
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t c = 0; c < dv; ++c)
                z[i][c] += weights[i][j] * v[j][c];
    }
}

/// x · W + b for a session head's d_model × d matrix W and bias b (empty: none).
inline Table project(const Table& x, const Matrix& w, const Vector& b)
{
    Table y = zeros(x.size(), std::size_t(w.cols()));
    for (std::size_t i = 0; i < x.size(); ++i)
        for (Index c = 0; c < w.cols(); ++c) {
            double sum = 0.0;
            for (Index k = 0; k < w.rows(); ++k)
                sum += x[i][std::size_t(k)] * w(k, c);
            y[i][std::size_t(c)] = sum + (b.size() ? b(c) : 0.0);
        }
    return y;
}

/// The first head of `session` over `x` (n × d_model) in place of the session's own X.
inline void sessionHead(const Session& session, const Table& x, Table& weights, Table& z)
{
    const Head& head = session.heads.front();
    Attend how;
    how.score = session.score;
    how.divisor = session.scale.kind == Scale::Kind::SqrtDk ? std::sqrt(double(head.W_Q.cols()))
                  : session.scale.kind == Scale::Kind::None ? 1.0
                                                            : session.scale.value;
    how.temperature = session.temperature;
    how.normalizer = session.normalizer;
    how.mask = session.mask;
    if (session.positions.type == PositionType::Rope) {
        how.ropeBase = session.positions.base;
        how.pairing = session.positions.pairing;
    }
    attend(project(x, head.W_Q, head.b_Q), project(x, head.W_K, head.b_K), project(x, head.W_V, head.b_V),
           how, weights, z);
}

/// A head score as its definition says, from the head's weights A (n × n) on `ids`.
inline double referenceScore(HeadScore score, const Table& a, const std::vector<std::int64_t>& ids)
{
    const std::size_t n = ids.size();
    double sum = 0.0;
    std::size_t rows = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double part = 0.0;
        bool counted = true;
        switch (score) {
        case HeadScore::PreviousToken:
            counted = i >= 1;
            part = counted ? a[i][i - 1] : 0.0;
            break;
        case HeadScore::DuplicateToken:
        case HeadScore::Induction:
            counted = false;
            for (std::size_t j = 0; j <= i; ++j) {
                const bool match = score == HeadScore::DuplicateToken ? j < i && ids[j] == ids[i]
                                                                      : j >= 1 && ids[j - 1] == ids[i];
                if (match)
                    counted = true, part += a[i][j];
            }
            break;
        case HeadScore::FirstToken:
            part = a[i][0];
            break;
        case HeadScore::Self:
            part = a[i][i];
            break;
        case HeadScore::Entropy:
            for (double w : a[i])
                part -= w > 0.0 ? w * std::log(w) : 0.0;
            break;
        }
        if (counted)
            sum += part, ++rows;
    }
    return rows ? sum / double(rows) : 0.0;
}
struct ReferenceIntervention {
    int layer = 0, head = 0;
    HeadIntervention::Kind kind = HeadIntervention::Kind::Zero;
    double factor = 1.0;
    const Session* session = nullptr;
};

struct ReferenceRun {
    std::vector<std::vector<Table>> weights; ///< [layer][query head], n × n, as the head attended
    std::vector<std::vector<Table>> z;       ///< [layer][query head], n × d_head, after any intervention
    std::vector<Table> attentionInput;       ///< [layer]: the normalized input of its attention
    // What TransformerLens's hooks see (tst_hooks): the embeddings, and per layer the stream entering it,
    // q (heads · d_head wide), k and v (kv_heads · d_head) before RoPE, the attention and MLP outputs
    // added to the stream, and the stream leaving it.
    Table embed, posEmbed;
    std::vector<Table> residPre, q, k, v, attnOut, mlpOut, residPost;
    Table residual;                         ///< after the last layer, before the final norm
    Table normed, logits, logProbabilities; ///< after the final norm; n × vocabulary
    std::vector<double> normDivisor;        ///< the final norm's √(var + ε) per position
    std::vector<double> losses;             ///< −ln p_i(ids[i + 1]), n − 1 of them
    double meanLoss = 0.0;
};

/// Called where TransformerLens's hooks are, with the hook's value to change in place (tst_patching):
/// "resid_pre", "q", "k", "v" (every head, before RoPE), "pattern" and "z" (one head, `head`), "attn_out",
/// "mlp_out". A changed pattern's head output is its weights times V.
using ReferenceEdit = std::function<void(const std::string& hook, int layer, int head, Table& value)>;

/// The checkpoint's forward pass, read by tensor name.
class ReferenceModel {
public:
    ReferenceModel(const Tiny& tiny, const Checkpoint& checkpoint) : m_tiny(tiny), m_checkpoint(checkpoint) {}

    /// GPT-2's tensors may carry the "transformer." prefix GPT2LMHeadModel saves them with.
    Table table(const std::string& name) const { return tableOf(m_checkpoint, named(name)); }
    std::vector<double> vec(const std::string& name) const { return vectorOf(m_checkpoint, named(name)); }

    /// W_U as vocabulary rows of d_model.
    Table unembedding() const
    {
        if (!m_tiny.llama)
            return table("wte.weight");
        return table(m_checkpoint.has("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight");
    }
    std::vector<double> finalGain() const { return vec(m_tiny.llama ? "model.norm.weight" : "ln_f.weight"); }
    /// Layer l's W_O as (heads · d_head) × d_model rows.
    Table outputProjection(int layer) const
    {
        if (!m_tiny.llama)
            return table(prefix(layer) + "attn.c_proj.weight");
        const Table o = table(prefix(layer) + "self_attn.o_proj.weight"); // out × in
        Table w = zeros(o[0].size(), o.size());
        for (std::size_t r = 0; r < o.size(); ++r)
            for (std::size_t c = 0; c < o[0].size(); ++c)
                w[c][r] = o[r][c];
        return w;
    }

    ReferenceRun run(const std::vector<std::int64_t>& ids,
                     const std::vector<ReferenceIntervention>& interventions = {},
                     const ReferenceEdit& edit = {}) const
    {
        const auto edited = [&](const char* hook, int layer, int head, Table& value) {
            if (edit)
                edit(hook, layer, head, value);
        };
        const Tiny& t = m_tiny;
        const std::size_t n = ids.size(), d = std::size_t(t.d), hd = std::size_t(t.headDim());
        ReferenceRun out;
        const Table embed = table(t.llama ? "model.embed_tokens.weight" : "wte.weight");
        Table h;
        for (std::int64_t id : ids)
            h.push_back(embed[std::size_t(id)]);
        out.embed = h;
        if (!t.llama) {
            const Table wpe = table("wpe.weight");
            out.posEmbed = zeros(n, d);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t k = 0; k < d; ++k)
                    h[i][k] += wpe[i][k], out.posEmbed[i][k] = wpe[i][k];
        }
        for (int l = 0; l < t.layers; ++l) {
            edited("resid_pre", l, -1, h);
            out.residPre.push_back(h);
            const std::string p = prefix(l);
            const Table x =
                t.llama ? normalized(h, vec(p + "input_layernorm.weight"), {}, t.epsilon, true)
                        : normalized(h, vec(p + "ln_1.weight"), vec(p + "ln_1.bias"), t.epsilon, false);
            out.attentionInput.push_back(x);
            Table q, k, v;
            if (!t.llama) {
                const Table qkv =
                    linear(x, table(p + "attn.c_attn.weight"), vec(p + "attn.c_attn.bias"), false);
                q = k = v = zeros(n, d);
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t c = 0; c < d; ++c)
                        q[i][c] = qkv[i][c], k[i][c] = qkv[i][d + c], v[i][c] = qkv[i][2 * d + c];
            } else {
                const auto bias = [&](const char* name) {
                    const std::string b = p + "self_attn." + name + ".bias";
                    return m_checkpoint.has(b) ? vec(b) : std::vector<double>();
                };
                q = linear(x, table(p + "self_attn.q_proj.weight"), bias("q_proj"), true);
                k = linear(x, table(p + "self_attn.k_proj.weight"), bias("k_proj"), true);
                v = linear(x, table(p + "self_attn.v_proj.weight"), bias("v_proj"), true);
            }
            edited("q", l, -1, q);
            edited("k", l, -1, k);
            edited("v", l, -1, v);
            out.q.push_back(q), out.k.push_back(k), out.v.push_back(v);
            Attend how;
            how.divisor = std::sqrt(double(hd));
            how.ropeBase = t.llama ? t.theta : 0.0;
            if (t.slidingWindow > 0) // Mistral: query i sees keys i − w + 1 … i
                how.mask = MaskSpec{MaskType::Sliding, 0, Index(t.slidingWindow), {}};
            Table concat = zeros(n, std::size_t(t.heads) * hd);
            out.weights.emplace_back();
            out.z.emplace_back();
            for (int head = 0; head < t.heads; ++head) {
                const std::size_t qs = std::size_t(head) * hd;
                const std::size_t ks = std::size_t(head / (t.heads / t.kvHeads)) * hd; // grouped query
                const auto columns = [&](const Table& all, std::size_t first) {
                    Table part = zeros(n, hd);
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t c = 0; c < hd; ++c)
                            part[i][c] = all[i][first + c];
                    return part;
                };
                Table weights, z;
                attend(columns(q, qs), columns(k, ks), columns(v, ks), how, weights, z);
                if (edit) {
                    edited("pattern", l, head, weights);
                    const Table values = columns(v, ks);
                    z = zeros(n, hd);
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t j = 0; j < n; ++j)
                            for (std::size_t c = 0; c < hd; ++c)
                                z[i][c] += weights[i][j] * values[j][c];
                }
                for (const ReferenceIntervention& change : interventions) {
                    if (change.layer != l || change.head != head)
                        continue;
                    std::vector<double> mean(hd, 0.0);
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t c = 0; c < hd; ++c)
                            mean[c] += z[i][c] / double(n);
                    switch (change.kind) {
                    case HeadIntervention::Kind::Zero:
                        z = zeros(n, hd);
                        break;
                    case HeadIntervention::Kind::Mean:
                        z.assign(n, mean);
                        break;
                    case HeadIntervention::Kind::Scale:
                        for (auto& row : z)
                            for (double& value : row)
                                value *= change.factor;
                        break;
                    case HeadIntervention::Kind::Session:
                        sessionHead(*change.session, x, weights, z);
                        break;
                    }
                }
                edited("z", l, head, z);
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t c = 0; c < hd; ++c)
                        concat[i][qs + c] = z[i][c];
                out.weights.back().push_back(weights);
                out.z.back().push_back(z);
            }
            Table attention =
                t.llama ? linear(concat, table(p + "self_attn.o_proj.weight"), {}, true)
                        : linear(concat, table(p + "attn.c_proj.weight"), vec(p + "attn.c_proj.bias"), false);
            edited("attn_out", l, -1, attention);
            out.attnOut.push_back(attention);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < d; ++c)
                    h[i][c] += attention[i][c];
            Table mlpOut = mlp(h, l);
            edited("mlp_out", l, -1, mlpOut);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < d; ++c)
                    h[i][c] += mlpOut[i][c];
            out.mlpOut.push_back(mlpOut);
            out.residPost.push_back(h);
        }
        out.residual = h;
        out.normed = t.llama
                         ? normalized(h, finalGain(), {}, t.epsilon, true, &out.normDivisor)
                         : normalized(h, finalGain(), vec("ln_f.bias"), t.epsilon, false, &out.normDivisor);
        out.logits = linear(out.normed, unembedding(), {}, true);
        for (const auto& row : out.logits) {
            const double max = *std::max_element(row.begin(), row.end());
            double sum = 0.0;
            for (double v : row)
                sum += std::exp(v - max);
            std::vector<double> lp;
            for (double v : row)
                lp.push_back(v - max - std::log(sum));
            out.logProbabilities.push_back(lp);
        }
        for (std::size_t i = 0; i + 1 < n; ++i) {
            out.losses.push_back(-out.logProbabilities[i][std::size_t(ids[i + 1])]);
            out.meanLoss += out.losses.back() / double(n - 1);
        }
        return out;
    }

    /// Head (layer, head)'s direct contribution to logit(token) − logit(minus) at `position` of `clean`: its
    /// z through its rows of W_O, centred under LayerNorm, ÷ the final norm's divisor, × the norm's gain.
    double directLogitAttribution(const ReferenceRun& clean, int layer, int head, std::size_t position,
                                  std::int64_t token, std::int64_t minus) const
    {
        const std::size_t d = std::size_t(m_tiny.d), hd = std::size_t(m_tiny.headDim());
        const Table wo = outputProjection(layer), unembed = unembedding();
        const std::vector<double> gain = finalGain();
        std::vector<double> out(d, 0.0);
        for (std::size_t k = 0; k < d; ++k)
            for (std::size_t c = 0; c < hd; ++c)
                out[k] += clean.z[std::size_t(layer)][std::size_t(head)][position][c] *
                          wo[std::size_t(head) * hd + c][k];
        double mean = 0.0;
        for (double v : out)
            mean += v / double(d);
        double sum = 0.0;
        for (std::size_t k = 0; k < d; ++k) {
            const double u =
                unembed[std::size_t(token)][k] - (minus >= 0 ? unembed[std::size_t(minus)][k] : 0.0);
            sum += ((m_tiny.llama ? out[k] : out[k] - mean) / clean.normDivisor[position] * gain[k]) * u;
        }
        return sum;
    }

private:
    std::string named(const std::string& name) const
    {
        return m_tiny.llama ? name : m_tiny.namePrefix + name;
    }
    std::string prefix(int layer) const
    {
        return m_tiny.llama ? "model.layers." + std::to_string(layer) + "."
                            : "h." + std::to_string(layer) + ".";
    }

    /// The MLP's output for the stream `h`.
    Table mlp(const Table& h, int layer) const
    {
        constexpr double pi = 3.14159265358979323846;
        const std::string p = prefix(layer);
        Table out;
        if (!m_tiny.llama) {
            const Table m =
                normalized(h, vec(p + "ln_2.weight"), vec(p + "ln_2.bias"), m_tiny.epsilon, false);
            Table hidden = linear(m, table(p + "mlp.c_fc.weight"), vec(p + "mlp.c_fc.bias"), false);
            for (auto& row : hidden)
                for (double& u : row)
                    u = 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (u + 0.044715 * u * u * u)));
            out = linear(hidden, table(p + "mlp.c_proj.weight"), vec(p + "mlp.c_proj.bias"), false);
        } else {
            const Table m =
                normalized(h, vec(p + "post_attention_layernorm.weight"), {}, m_tiny.epsilon, true);
            Table gate = linear(m, table(p + "mlp.gate_proj.weight"), {}, true);
            const Table up = linear(m, table(p + "mlp.up_proj.weight"), {}, true);
            for (std::size_t i = 0; i < gate.size(); ++i)
                for (std::size_t c = 0; c < gate[i].size(); ++c)
                    gate[i][c] = gate[i][c] / (1.0 + std::exp(-gate[i][c])) * up[i][c];
            out = linear(gate, table(p + "mlp.down_proj.weight"), {}, true);
        }
        return out;
    }

    Tiny m_tiny;
    const Checkpoint& m_checkpoint;
};

} // namespace qkv::test
