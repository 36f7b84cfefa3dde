#include "ModelSession.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "MatrixProduct.h"
#include "Parallel.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <type_traits>

namespace qkv {

namespace {

constexpr double pi = 3.14159265358979323846;

std::string layerPrefix(const Model& model, Index layer)
{
    return model.config().family == ModelFamily::Gpt2 ? "h." + std::to_string(layer) + "."
                                                      : "model.layers." + std::to_string(layer) + ".";
}

/// Checks that the checkpoint has `name` with exactly `shape`, naming both when it does not.
void requireTensor(const Model& model, const std::string& name, const std::vector<std::uint64_t>& shape)
{
    const std::string full = model.tensorName(name);
    if (!model.checkpoint().has(full))
        throw Error(model.folder() + ": the checkpoint has no tensor \"" + full + "\"");
    const std::vector<std::uint64_t>& found = model.checkpoint().info(full).shape;
    if (found != shape) {
        const auto text = [](const std::vector<std::uint64_t>& s) {
            std::string out = "[";
            for (std::size_t i = 0; i < s.size(); ++i)
                out += (i ? ", " : "") + std::to_string(s[i]);
            return out + "]";
        };
        throw Error(model.folder() + ": tensor \"" + full + "\" has shape " + text(found) +
                    ", the config says " + text(shape));
    }
}

bool hasTensor(const Model& model, const std::string& name)
{
    return model.checkpoint().has(model.tensorName(name));
}

Matrix readMatrix(const Model& model, const std::string& name)
{
    return model.checkpoint().readMatrix(model.tensorName(name));
}

RowVector readVector(const Model& model, const std::string& name)
{
    return model.checkpoint().readVector(model.tensorName(name));
}

/// Every entry rounded to float32 (to nearest) in a float32 pass; as it is in float64.
template <typename Values> Values inPrecision(Values values, Precision precision)
{
    if (precision == Precision::Float32)
        values = values.template cast<float>().template cast<double>();
    return values;
}

double inPrecision(double value, Precision precision)
{
    return precision == Precision::Float32 ? double(float(value)) : value;
}

/// f(value, row, column) applied to every entry of `values` in place, each result rounded to float32 in a
/// float32 pass: one pass, in chunks of rows on the engine's threads (on one thread, GPT-2's GELU alone took
/// a tenth of the forward pass at 512 tokens). The same bits as an entry-by-entry loop, with any number of
/// threads.
template <typename EntryFunction>
void transformEntries(Matrix& values, Precision precision, const EntryFunction& f)
{
    const Index columns = values.cols();
    const Index grain = std::max<Index>(1, (Index(1) << 14) / std::max<Index>(1, columns));
    parallelFor(values.rows(), grain, [&](Index begin, Index end) {
        for (Index i = begin; i < end; ++i) {
            double* row = values.row(i).data();
            for (Index j = 0; j < columns; ++j) {
                const double v = f(row[j], i, j);
                row[j] = inPrecision(v, precision);
            }
        }
    });
}

/// What a forward pass reuses from one layer to the next: the weight matrix a product reads, and its float32
/// operands. Fresh buffers at every product cost a page fault per 4 KB (a tenth of the pass).
struct PassBuffers {
    Matrix weight;
    MatrixF weightF, inputF, productF;
};

/// x · W (or x · Wᵀ) for the checkpoint's tensor W = `name`, through the engine's product routine; in a
/// float32 pass a float32 product (float32 accumulation, as PyTorch's), W read straight into float32.
Matrix productWithTensor(const Model& model, const Matrix& x, const std::string& name, Precision precision,
                         PassBuffers& buffers, Operand form = Operand::AsIs)
{
    const auto columnsOf = [form](const auto& w) { return form == Operand::AsIs ? w.cols() : w.rows(); };
    const Checkpoint& checkpoint = model.checkpoint();
    const std::string tensor = model.tensorName(name);
    if (precision == Precision::Float32) {
        buffers.inputF = x.cast<float>();
        const auto multiplyBy = [&](const ConstRows<float>& w) {
            buffers.productF.resize(x.rows(), columnsOf(w));
            multiply<float>(buffers.inputF, w, buffers.productF, form);
        };
        if (const auto stored = checkpoint.storedFloat32(tensor)) { // an F32 checkpoint: no copy
            multiplyBy(*stored);
        } else {
            checkpoint.readMatrixInto(tensor, buffers.weightF);
            multiplyBy(buffers.weightF);
        }
        return buffers.productF.cast<double>();
    }
    checkpoint.readMatrixInto(tensor, buffers.weight);
    Matrix c(x.rows(), columnsOf(buffers.weight));
    multiply<double>(x, buffers.weight, c, form);
    return c;
}

/// A 1-D tensor in the pass's precision (norm gains, biases).
RowVector readVectorIn(const Model& model, const std::string& name, Precision precision)
{
    return inPrecision(readVector(model, name), precision);
}

// The norms and the activation functions are evaluated in double from their (float32) inputs; a float32
// pass rounds their results, so they are within half a float32 unit of the exact value (PyTorch's float32
// kernels: within a few units).
Matrix layerNorm(const Matrix& x, const RowVector& gain, const RowVector& bias, double epsilon)
{
    Matrix out(x.rows(), x.cols());
    for (Index i = 0; i < x.rows(); ++i) {
        const double mean = x.row(i).mean();
        const double variance = (x.row(i).array() - mean).square().mean();
        out.row(i) =
            ((x.row(i).array() - mean) / std::sqrt(variance + epsilon)).matrix().cwiseProduct(gain) + bias;
    }
    return out;
}

Matrix rmsNorm(const Matrix& x, const RowVector& gain, double epsilon)
{
    Matrix out(x.rows(), x.cols());
    for (Index i = 0; i < x.rows(); ++i)
        out.row(i) =
            (x.row(i) / std::sqrt(x.row(i).squaredNorm() / double(x.cols()) + epsilon)).cwiseProduct(gain);
    return out;
}

/// GELU in its tanh form (GPT-2's gelu_new, PyTorch's approximate="tanh"): ½·x·(1 + tanh u) with
/// u = √(2/π)·(x + 0.044715·x³), written as x / (1 + e^(−2u)), the same function: one exp instead of a tanh
/// (which costs an expm1 and more: GELU was a tenth of a forward pass), and no cancellation in 1 + tanh u
/// for negative x. e^(−2u) overflows to ∞ only where the result is −0, as it should be.
double geluTanh(double x)
{
    const double u = std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x);
    return x / (1.0 + std::exp(-2.0 * u));
}

double silu(double x)
{
    return x / (1.0 + std::exp(-x));
}

/// RoPE for the LLaMA family: rope_theta and rope_scaling, dimension i paired with i + d_head/2.
void useRope(Session& session, const ModelConfig& config)
{
    session.positions.type = PositionType::Rope;
    session.positions.base = config.ropeTheta;
    session.positions.pairing = RopePairing::Half;
    session.positions.scaling = config.ropeScaling;
}

/// The attention input of `layer`: the normalized residual stream.
Matrix normalizedForAttention(const Model& model, const Matrix& residual, Index layer, Precision precision)
{
    const std::string prefix = layerPrefix(model, layer);
    const auto vector = [&](const std::string& name) { return readVectorIn(model, name, precision); };
    if (model.config().family == ModelFamily::Gpt2)
        return inPrecision(layerNorm(residual, vector(prefix + "ln_1.weight"), vector(prefix + "ln_1.bias"),
                                     model.config().normEpsilon),
                           precision);
    return inPrecision(
        rmsNorm(residual, vector(prefix + "input_layernorm.weight"), model.config().normEpsilon), precision);
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
/// weights took a tenth of a float32 forward pass on one thread.
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

/// The layer's attention as a session over `x` (the normalized residual stream), for `heads`.
/// With `float32` (a float32 pass), the projections go there instead of into the session.
Session layerSession(const Model& model, const Matrix& x, Index layer, const std::vector<Index>& heads,
                     Precision precision, Float32Weights* float32 = nullptr)
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
    session.normalizer = NormalizerSpec{NormalizerType::Softmax, 1.5};
    session.precision = precision;
    if (c.family == ModelFamily::Llama)
        useRope(session, c);
    return session;
}

std::vector<Index> allHeads(const ModelConfig& c)
{
    std::vector<Index> heads;
    for (Index h = 0; h < c.heads; ++h)
        heads.push_back(h);
    return heads;
}

Matrix mlp(const Model& model, const Matrix& x, Index layer, Precision precision, PassBuffers& buffers)
{
    const ModelConfig& c = model.config();
    const std::string prefix = layerPrefix(model, layer);
    const auto vector = [&](const std::string& name) { return readVectorIn(model, name, precision); };
    const auto rounded = [precision](double v) { return inPrecision(v, precision); };
    if (c.family == ModelFamily::Gpt2) {
        const Matrix m = inPrecision(
            layerNorm(x, vector(prefix + "ln_2.weight"), vector(prefix + "ln_2.bias"), c.normEpsilon),
            precision);
        Matrix hidden = productWithTensor(model, m, prefix + "mlp.c_fc.weight", precision, buffers);
        const RowVector fcBias = vector(prefix + "mlp.c_fc.bias");
        transformEntries(hidden, precision,
                         [&](double v, Index, Index j) { return geluTanh(rounded(v + fcBias[j])); });
        Matrix out = productWithTensor(model, hidden, prefix + "mlp.c_proj.weight", precision, buffers);
        const RowVector projBias = vector(prefix + "mlp.c_proj.bias");
        transformEntries(out, precision, [&](double v, Index, Index j) { return v + projBias[j]; });
        return out;
    }
    const Matrix m =
        inPrecision(rmsNorm(x, vector(prefix + "post_attention_layernorm.weight"), c.normEpsilon), precision);
    const auto linear = [&](const Matrix& in, const char* name) {
        Matrix out = productWithTensor(model, in, prefix + "mlp." + name + ".weight", precision, buffers,
                                       Operand::Transposed);
        const std::string biasName = prefix + "mlp." + name + ".bias";
        const RowVector bias = hasTensor(model, biasName) ? vector(biasName) : RowVector();
        transformEntries(out, precision,
                         [&](double v, Index, Index j) { return bias.size() > 0 ? v + bias[j] : v; });
        return out;
    };
    Matrix gate = linear(m, "gate_proj");
    const Matrix up = linear(m, "up_proj");
    transformEntries(gate, precision,
                     [&](double v, Index i, Index j) { return rounded(silu(v)) * up(i, j); });
    return linear(gate, "down_proj");
}

Error layerOutOfRange(const ModelConfig& c, Index layer)
{
    return Error("layer " + std::to_string(layer) + " is out of range (the model has " +
                 std::to_string(c.layers) + " layers, 0 to " + std::to_string(c.layers - 1) + ")");
}

void checkIds(const Model& model, const std::vector<std::int64_t>& ids)
{
    const ModelConfig& c = model.config();
    if (ids.empty())
        throw Error("no tokens: give a text or at least one token id");
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= c.vocabSize)
            throw Error("token id " + std::to_string(ids[i]) + " (token " + std::to_string(i) +
                        ") is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ")");
    if (c.maxPositions > 0 && Index(ids.size()) > c.maxPositions)
        throw Error(std::to_string(ids.size()) + " tokens are more than the model's " +
                    std::to_string(c.maxPositions) + " positions");
}

} // namespace

Model Model::open(const std::string& folder)
{
    Model model;
    model.m_folder = folder;
    model.m_config = loadModelConfig(folder);
    model.m_checkpoint = std::make_shared<Checkpoint>(Checkpoint::open(folder));
    const ModelConfig& c = model.m_config;
    const auto d = std::uint64_t(c.hiddenSize);
    if (c.family == ModelFamily::Gpt2) {
        model.m_prefix = model.m_checkpoint->has("transformer.wte.weight") ? "transformer." : "";
        requireTensor(model, "wte.weight", {std::uint64_t(c.vocabSize), d});
        requireTensor(model, "wpe.weight", {std::uint64_t(c.maxPositions), d});
    } else {
        requireTensor(model, "model.embed_tokens.weight", {std::uint64_t(c.vocabSize), d});
    }
    const auto q = std::uint64_t(c.heads * c.headDim), kv = std::uint64_t(c.kvHeads * c.headDim),
               inner = std::uint64_t(c.intermediateSize);
    for (Index layer = 0; layer < c.layers; ++layer) {
        const std::string p = layerPrefix(model, layer);
        if (c.family == ModelFamily::Gpt2) {
            for (const char* norm : {"ln_1", "ln_2"}) {
                requireTensor(model, p + norm + ".weight", {d});
                requireTensor(model, p + norm + ".bias", {d});
            }
            requireTensor(model, p + "attn.c_attn.weight", {d, 3 * d});
            requireTensor(model, p + "attn.c_proj.weight", {d, d});
            requireTensor(model, p + "mlp.c_fc.weight", {d, inner});
            requireTensor(model, p + "mlp.c_fc.bias", {inner});
            requireTensor(model, p + "mlp.c_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.c_proj.bias", {d});
            if (hasTensor(model, p + "attn.c_attn.bias"))
                requireTensor(model, p + "attn.c_attn.bias", {3 * d});
            if (hasTensor(model, p + "attn.c_proj.bias"))
                requireTensor(model, p + "attn.c_proj.bias", {d});
        } else {
            requireTensor(model, p + "input_layernorm.weight", {d});
            requireTensor(model, p + "post_attention_layernorm.weight", {d});
            requireTensor(model, p + "self_attn.q_proj.weight", {q, d});
            requireTensor(model, p + "self_attn.k_proj.weight", {kv, d});
            requireTensor(model, p + "self_attn.v_proj.weight", {kv, d});
            requireTensor(model, p + "self_attn.o_proj.weight", {d, q});
            for (const auto& [name, size] : {std::pair<const char*, std::uint64_t>{"q_proj", q},
                                             {"k_proj", kv},
                                             {"v_proj", kv},
                                             {"o_proj", d}})
                if (hasTensor(model, p + "self_attn." + name + ".bias"))
                    requireTensor(model, p + "self_attn." + name + ".bias", {size});
            requireTensor(model, p + "mlp.gate_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.up_proj.weight", {inner, d});
            requireTensor(model, p + "mlp.down_proj.weight", {d, inner});
        }
    }
    try {
        model.m_tokenizer.emplace(BpeTokenizer::fromDirectory(folder));
    } catch (const Error& e) {
        model.m_tokenizerProblem = e.what(); // the model still opens: ids can be given directly
    }
    return model;
}

std::string modelName(const Model& model)
{
    const std::string name = std::filesystem::path(model.folder()).filename().string();
    return model.config().modelType + " " + (name.empty() ? model.folder() : name);
}

std::string modelInputTitle(const Model& model, const std::string& text, std::size_t tokens)
{
    return modelName(model) + (text.empty()
                                   ? ", " + std::to_string(tokens) + (tokens == 1 ? " token" : " tokens")
                                   : ": \"" + text + "\"");
}

std::vector<std::string> tokenLabels(const Model& model, const std::vector<std::int64_t>& ids)
{
    std::vector<std::string> labels;
    for (std::int64_t id : ids) {
        const BpeTokenizer* tokenizer = model.tokenizer();
        if (!tokenizer || tokenizer->tokenString(id).empty()) {
            labels.push_back("#" + std::to_string(id));
            continue;
        }
        std::string bytes = tokenizer->tokenBytes(id);
        if (!isValidUtf8(bytes)) { // part of a character: its vocabulary entry says which bytes
            labels.push_back(tokenizer->tokenString(id));
            continue;
        }
        if (!bytes.empty() && bytes[0] == ' ')
            bytes.replace(0, 1, "\u2423");
        labels.push_back(bytes);
    }
    return labels;
}

namespace {

/// Called once per layer of the forward pass with the result of its attention (every head, in the pass's
/// precision); false stops the pass.
using LayerVisitor = std::function<bool(Index layer, const AttentionResult& result)>;

/// The forward pass, the one loop every caller goes through: the residual stream after `layers` layers.
/// With `lastMlp` false, the last layer stops after its attention (its MLP is not needed by the caller).
Matrix forwardPass(const Model& model, const std::vector<std::int64_t>& ids, Index layers, bool lastMlp,
                   Precision precision, const LayerVisitor& visit)
{
    const ModelConfig& c = model.config();
    checkIds(model, ids);
    if (layers < 0 || layers > c.layers)
        throw layerOutOfRange(c, layers);
    const auto n = Index(ids.size());
    // Only the rows of the tokens and positions used are read (GPT-2's table has 50257 rows).
    const std::vector<Index> rows(ids.begin(), ids.end());
    Matrix residual = inPrecision(
        model.checkpoint().readRows(
            model.tensorName(c.family == ModelFamily::Gpt2 ? "wte.weight" : "model.embed_tokens.weight"),
            rows),
        precision);
    if (c.family == ModelFamily::Gpt2) {
        std::vector<Index> positions(static_cast<std::size_t>(n));
        std::iota(positions.begin(), positions.end(), Index{0});
        residual = inPrecision(Matrix(residual + inPrecision(model.checkpoint().readRows(
                                                                 model.tensorName("wpe.weight"), positions),
                                                             precision)),
                               precision);
    }
    const auto checkFinite = [&](Index layer, const char* part) {
        if (!isAllFinite(residual))
            throw Error("layer " + std::to_string(layer) + ": the residual stream overflows " +
                        (precision == Precision::Float32 ? "float32 after the " : "float64 after the ") +
                        part + (precision == Precision::Float32 ? "; choose precision float64" : ""));
    };
    AttentionResult result; // reused: a layer's buffers (12 heads × 3 n × n at GPT-2's size) are the next's
    PassBuffers buffers;
    // A float32 pass hands the engine its weights in float32, in buffers reused from layer to layer.
    Float32Weights float32Weights;
    Float32Weights* const float32 = precision == Precision::Float32 ? &float32Weights : nullptr;
    ComputeOptions options;
    options.float32Weights = float32;
    for (Index l = 0; l < layers; ++l) {
        const Session attention = layerSession(model, normalizedForAttention(model, residual, l, precision),
                                               l, allHeads(c), precision, float32);
        computeAttention(attention, result, options);
        if (visit && !visit(l, result))
            break;
        transformEntries(residual, precision,
                         [&](double v, Index i, Index j) { return v + result.output(i, j); });
        checkFinite(l, "attention");
        if (lastMlp || l + 1 < layers) {
            const Matrix update = mlp(model, residual, l, precision, buffers);
            transformEntries(residual, precision,
                             [&](double v, Index i, Index j) { return v + update(i, j); });
            checkFinite(l, "MLP");
        }
    }
    return residual;
}

} // namespace

Matrix residualBeforeLayer(const Model& model, const std::vector<std::int64_t>& ids, Index layer,
                           Precision precision)
{
    return forwardPass(model, ids, layer, true, precision, {});
}

std::vector<std::vector<Matrix>> attentionOfEveryLayer(const Model& model,
                                                       const std::vector<std::int64_t>& ids,
                                                       Precision precision, const LayerProgress& progress,
                                                       Index layers, std::uint64_t memoryLimit)
{
    const ModelConfig& c = model.config();
    if (layers < 0)
        layers = c.layers;
    // Checked before the pass: at 2048 tokens a 24-layer, 14-head model's weights alone take 11 GB.
    const double n = static_cast<double>(ids.size());
    const double bytes = static_cast<double>(std::min(layers, c.layers)) * static_cast<double>(c.heads) * n *
                         n * static_cast<double>(sizeof(double));
    if (memoryLimit > 0 && bytes > double(memoryLimit))
        throw Error("every layer's and head's attention for " + std::to_string(ids.size()) +
                    " tokens needs about " + formatBytes(static_cast<std::uint64_t>(bytes)) +
                    ", more than the memory limit of " + formatBytes(memoryLimit) + "; use a shorter text");
    std::vector<std::vector<Matrix>> weights;
    forwardPass(model, ids, layers, false, precision, [&](Index, const AttentionResult& result) {
        std::vector<Matrix> layer;
        layer.reserve(result.heads.size());
        for (const HeadResult& head : result.heads)
            layer.push_back(head.weights);
        weights.push_back(std::move(layer));
        return !progress || progress(Index(weights.size()), layers);
    });
    return weights;
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

} // namespace qkv
