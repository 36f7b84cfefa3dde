// SPDX-License-Identifier: GPL-3.0-or-later
// A head of a real model as a session: tiny GPT-2 and LLaMA-family checkpoints written by the test, and an
// independent forward pass in plain loops (no Eigen products, no engine) whose attention probabilities every
// layer and head of the session must equal to 1e-12 in float64.

#include "AttentionEngine.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "FuzzyCompare.h"
#include "ModelSession.h"
#include "Safetensors.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QtTest>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace qkv;
using qkv::test::errorOf;
using qkv::test::Tiny;
using qkv::test::writeModel;

namespace {

constexpr double pi = 3.14159265358979323846;

using Table = std::vector<std::vector<double>>; // rows of a tensor as the reference reads it

/// The reference forward pass, every number by a plain loop. Returns, per layer, per head, the attention
/// probabilities (n × n), and the normalized attention input of each layer.
struct Reference {
    std::vector<std::vector<Table>> probabilities; // [layer][head]
    std::vector<Table> attentionInput;             // [layer]
};

Table table(const Checkpoint& checkpoint, const std::string& name)
{
    const Matrix m = checkpoint.readMatrix(name);
    Table t(std::size_t(m.rows()), std::vector<double>(std::size_t(m.cols())));
    for (Index r = 0; r < m.rows(); ++r)
        for (Index c = 0; c < m.cols(); ++c)
            t[std::size_t(r)][std::size_t(c)] = m(r, c);
    return t;
}

std::vector<double> vec(const Checkpoint& checkpoint, const std::string& name)
{
    const RowVector v = checkpoint.readVector(name);
    return std::vector<double>(v.data(), v.data() + v.size());
}

/// x · W (W: in × out) + b, or x · Wᵀ (W: out × in) + b when `transposed`.
Table linear(const Table& x, const Table& w, const std::vector<double>& b, bool transposed)
{
    const std::size_t out = transposed ? w.size() : w[0].size(), in = x[0].size();
    Table y(x.size(), std::vector<double>(out, 0.0));
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = 0.0;
            for (std::size_t k = 0; k < in; ++k)
                sum += x[i][k] * (transposed ? w[o][k] : w[k][o]);
            y[i][o] = sum + (b.empty() ? 0.0 : b[o]);
        }
    return y;
}

Table norm(const Table& x, const std::vector<double>& gain, const std::vector<double>& bias, double epsilon,
           bool rms)
{
    Table y = x;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double n = double(x[i].size());
        double mean = 0.0, square = 0.0;
        for (double v : x[i])
            mean += v / n;
        for (double v : x[i])
            square += (rms ? v * v : (v - mean) * (v - mean)) / n;
        for (std::size_t k = 0; k < x[i].size(); ++k)
            y[i][k] = (rms ? x[i][k] : x[i][k] - mean) / std::sqrt(square + epsilon) * gain[k] +
                      (bias.empty() ? 0.0 : bias[k]);
    }
    return y;
}

Reference referenceForward(const Tiny& tiny, const Checkpoint& checkpoint,
                           const std::vector<std::int64_t>& ids)
{
    const std::size_t n = ids.size(), d = std::size_t(tiny.d), hd = std::size_t(tiny.headDim());
    Reference reference;
    Table h(n, std::vector<double>(d));
    const std::string& top = tiny.namePrefix;
    const Table embed = table(checkpoint, tiny.llama ? "model.embed_tokens.weight" : top + "wte.weight");
    for (std::size_t i = 0; i < n; ++i)
        h[i] = embed[std::size_t(ids[i])];
    if (!tiny.llama) {
        const Table wpe = table(checkpoint, top + "wpe.weight");
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t k = 0; k < d; ++k)
                h[i][k] += wpe[i][k];
    }
    for (int l = 0; l < tiny.layers; ++l) {
        const std::string p =
            tiny.llama ? "model.layers." + std::to_string(l) + "." : top + "h." + std::to_string(l) + ".";
        const Table x = tiny.llama
                            ? norm(h, vec(checkpoint, p + "input_layernorm.weight"), {}, tiny.epsilon, true)
                            : norm(h, vec(checkpoint, p + "ln_1.weight"), vec(checkpoint, p + "ln_1.bias"),
                                   tiny.epsilon, false);
        reference.attentionInput.push_back(x);
        Table q, k, v;
        if (!tiny.llama) {
            const Table qkv = linear(x, table(checkpoint, p + "attn.c_attn.weight"),
                                     vec(checkpoint, p + "attn.c_attn.bias"), false);
            q = k = v = Table(n, std::vector<double>(d));
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < d; ++c)
                    q[i][c] = qkv[i][c], k[i][c] = qkv[i][d + c], v[i][c] = qkv[i][2 * d + c];
        } else {
            const auto bias = [&](const char* name) {
                return tiny.qkvBias ? vec(checkpoint, p + "self_attn." + name + ".bias")
                                    : std::vector<double>();
            };
            q = linear(x, table(checkpoint, p + "self_attn.q_proj.weight"), bias("q_proj"), true);
            k = linear(x, table(checkpoint, p + "self_attn.k_proj.weight"), bias("k_proj"), true);
            v = linear(x, table(checkpoint, p + "self_attn.v_proj.weight"), bias("v_proj"), true);
            // RoPE, half pairing: within each head, coordinate r with r + hd/2, angle p·θ^(−2r/hd).
            for (Table* t : {&q, &k})
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t start = 0; start < (*t)[i].size(); start += hd)
                        for (std::size_t r = 0; r < hd / 2; ++r) {
                            const double angle =
                                double(i) * std::pow(tiny.theta, -2.0 * double(r) / double(hd));
                            const double a = (*t)[i][start + r], b = (*t)[i][start + r + hd / 2];
                            (*t)[i][start + r] = a * std::cos(angle) - b * std::sin(angle);
                            (*t)[i][start + r + hd / 2] = a * std::sin(angle) + b * std::cos(angle);
                        }
        }
        Table concat(n, std::vector<double>(std::size_t(tiny.heads) * hd, 0.0));
        reference.probabilities.emplace_back();
        for (int head = 0; head < tiny.heads; ++head) {
            const std::size_t qs = std::size_t(head) * hd;
            const std::size_t ks = std::size_t(head / (tiny.heads / tiny.kvHeads)) * hd;
            Table prob(n, std::vector<double>(n, 0.0));
            for (std::size_t i = 0; i < n; ++i) {
                // Causal; Mistral's window keeps keys i − w + 1 … i.
                const auto w = std::size_t(tiny.slidingWindow);
                const std::size_t first = w > 0 && i + 1 > w ? i + 1 - w : 0;
                double max = -INFINITY;
                std::vector<double> s(i + 1);
                for (std::size_t j = first; j <= i; ++j) {
                    double dot = 0.0;
                    for (std::size_t c = 0; c < hd; ++c)
                        dot += q[i][qs + c] * k[j][ks + c];
                    s[j] = dot / std::sqrt(double(hd));
                    max = std::max(max, s[j]);
                }
                double sum = 0.0;
                for (std::size_t j = first; j <= i; ++j)
                    sum += std::exp(s[j] - max);
                for (std::size_t j = first; j <= i; ++j)
                    prob[i][j] = std::exp(s[j] - max) / sum;
                for (std::size_t c = 0; c < hd; ++c)
                    for (std::size_t j = first; j <= i; ++j)
                        concat[i][qs + c] += prob[i][j] * v[j][ks + c];
            }
            reference.probabilities.back().push_back(prob);
        }
        const Table attn = tiny.llama
                               ? linear(concat, table(checkpoint, p + "self_attn.o_proj.weight"), {}, true)
                               : linear(concat, table(checkpoint, p + "attn.c_proj.weight"),
                                        vec(checkpoint, p + "attn.c_proj.bias"), false);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < d; ++c)
                h[i][c] += attn[i][c];
        Table mlp;
        if (!tiny.llama) {
            const Table m = norm(h, vec(checkpoint, p + "ln_2.weight"), vec(checkpoint, p + "ln_2.bias"),
                                 tiny.epsilon, false);
            Table hidden = linear(m, table(checkpoint, p + "mlp.c_fc.weight"),
                                  vec(checkpoint, p + "mlp.c_fc.bias"), false);
            for (auto& row : hidden)
                for (double& u : row)
                    u = 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (u + 0.044715 * u * u * u)));
            mlp = linear(hidden, table(checkpoint, p + "mlp.c_proj.weight"),
                         vec(checkpoint, p + "mlp.c_proj.bias"), false);
        } else {
            const Table m =
                norm(h, vec(checkpoint, p + "post_attention_layernorm.weight"), {}, tiny.epsilon, true);
            Table gate = linear(m, table(checkpoint, p + "mlp.gate_proj.weight"), {}, true);
            const Table up = linear(m, table(checkpoint, p + "mlp.up_proj.weight"), {}, true);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < gate[i].size(); ++c)
                    gate[i][c] = gate[i][c] / (1.0 + std::exp(-gate[i][c])) * up[i][c];
            mlp = linear(gate, table(checkpoint, p + "mlp.down_proj.weight"), {}, true);
        }
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < d; ++c)
                h[i][c] += mlp[i][c];
    }
    return reference;
}

/// A tiny GPT-2, or a tiny Qwen2 with grouped-query attention (4 query heads, 2 key/value heads).
Tiny gpt2OrGroupedLlama(bool llama)
{
    Tiny tiny;
    tiny.llama = llama;
    if (llama)
        tiny.heads = 4, tiny.kvHeads = 2;
    return tiny;
}

} // namespace

class TestModelSession : public QObject {
    Q_OBJECT
private slots:
    void everyLayerAndHeadMatchesTheReference_data();
    void everyLayerAndHeadMatchesTheReference();
    void realHuggingFaceCheckpoint();
    void chosenHeadsAndOutput();
    void everyLayerInOnePass_data();
    void everyLayerInOnePass();
    void onePassCancels();
    void llama3RopeScaling();
    void float32ForwardPass_data();
    void float32ForwardPass();
    void refusals();
};

void TestModelSession::everyLayerAndHeadMatchesTheReference_data()
{
    QTest::addColumn<bool>("llama");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("slidingWindow");
    QTest::newRow("gpt2 F32") << false << QStringLiteral("F32") << 0;
    QTest::newRow("gpt2 F64") << false << QStringLiteral("F64") << 0;
    QTest::newRow("qwen2 GQA biases BF16") << true << QStringLiteral("BF16") << 0;
    QTest::newRow("qwen2 GQA biases F32") << true << QStringLiteral("F32") << 0;
    QTest::newRow("mistral GQA sliding window 3") << true << QStringLiteral("F32") << 3;
}

void TestModelSession::everyLayerAndHeadMatchesTheReference()
{
    QFETCH(bool, llama);
    QFETCH(QString, dtype);
    QFETCH(int, slidingWindow);
    Tiny tiny;
    tiny.llama = llama;
    tiny.dtype = dtype.toStdString();
    tiny.slidingWindow = slidingWindow;
    tiny.qkvBias = slidingWindow == 0; // Mistral's projections have no biases
    if (llama)
        tiny.heads = 4, tiny.kvHeads = 2; // two query heads per key/value head
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    writeModel(tiny, folder.path(), llama ? 7 : 3);
    const Model model = Model::open(folder.path().toStdString());
    const std::vector<std::int64_t> ids{5, 17, 3, 3, 39, 0, 22, 11};
    const Reference reference = referenceForward(tiny, model.checkpoint(), ids);
    for (Index layer = 0; layer < tiny.layers; ++layer) {
        ModelHeadRequest request;
        request.layer = layer;
        request.ids = ids;
        const Session session = sessionFromModel(model, request);
        QCOMPARE(session.heads.size(), std::size_t(tiny.heads));
        QCOMPARE(session.mask.type, slidingWindow > 0 ? MaskType::Sliding : MaskType::Causal);
        if (slidingWindow > 0)
            QCOMPARE(session.mask.window, Index(slidingWindow));
        const Table& x = reference.attentionInput[std::size_t(layer)];
        for (std::size_t i = 0; i < ids.size(); ++i)
            for (std::size_t c = 0; c < std::size_t(tiny.d); ++c)
                QVERIFY(std::abs(session.X(Index(i), Index(c)) - x[i][c]) <= 1e-12);
        const AttentionResult result = computeAttention(session);
        for (int head = 0; head < tiny.heads; ++head) {
            const Table& p = reference.probabilities[std::size_t(layer)][std::size_t(head)];
            double worst = 0.0;
            for (std::size_t i = 0; i < ids.size(); ++i)
                for (std::size_t j = 0; j < ids.size(); ++j)
                    worst =
                        std::max(worst, std::abs(result.heads[std::size_t(head)].weights(Index(i), Index(j)) -
                                                 p[i][j]));
            QVERIFY2(worst <= 1e-12,
                     qPrintable(QStringLiteral("layer %1 head %2: %3").arg(layer).arg(head).arg(worst)));
        }
    }
}

// A checkpoint that Hugging Face transformers 4.36.2 wrote (GPT2LMHeadModel with random weights: 1 layer,
// d_model 2, 1 head, GPT-2's whole vocabulary and its tokenizer.json; tests/data/hf-gpt2-1layer): its
// config.json as transformers writes it, tensor names with "transformer.", opened and tokenized as a
// download folder would be, and its attention equal to the plain-loop reference's.
void TestModelSession::realHuggingFaceCheckpoint()
{
    const Model model = Model::open(QKV_SOURCE_DIR "/tests/data/hf-gpt2-1layer");
    QCOMPARE(model.config().family, ModelFamily::Gpt2);
    QVERIFY2(model.tokenizer(), model.tokenizerProblem().c_str());
    const std::vector<std::int64_t> ids = model.tokenizer()->encode("The cat sat on the mat.");
    QCOMPARE(ids, (std::vector<std::int64_t>{464, 3797, 3332, 319, 262, 2603, 13}));
    Tiny tiny;
    tiny.d = 2, tiny.heads = 1, tiny.kvHeads = 1, tiny.layers = 1, tiny.inner = 8;
    tiny.vocab = 50257, tiny.positions = 1024;
    tiny.namePrefix = "transformer.";
    const Reference reference = referenceForward(tiny, model.checkpoint(), ids);
    ModelHeadRequest request;
    request.layer = 0;
    request.ids = ids;
    const Session session = sessionFromModel(model, request);
    QCOMPARE(session.tokens.front(), std::string("The"));
    QCOMPARE(session.tokens[1], std::string("\u2423cat")); // ␣ marks the leading space
    const AttentionResult result = computeAttention(session);
    const Table& p = reference.probabilities[0][0];
    for (std::size_t i = 0; i < ids.size(); ++i)
        for (std::size_t j = 0; j < ids.size(); ++j)
            QVERIFY(std::abs(result.heads[0].weights(Index(i), Index(j)) - p[i][j]) <= 1e-12);
}

void TestModelSession::chosenHeadsAndOutput()
{
    Tiny tiny;
    tiny.llama = true;
    tiny.heads = 4, tiny.kvHeads = 2;
    QTemporaryDir folder;
    writeModel(tiny, folder.path(), 11);
    const Model model = Model::open(folder.path().toStdString());
    ModelHeadRequest all;
    all.layer = 1;
    all.ids = {1, 2, 3, 4, 5};
    const Session whole = sessionFromModel(model, all);
    ModelHeadRequest some = all;
    some.heads = {3, 1};
    const Session chosen = sessionFromModel(model, some);
    QCOMPARE(chosen.heads.size(), std::size_t(2));
    // Head 3 reads key/value head 1, as head 2 does; its W_Q is its own.
    QVERIFY(sameMatrix(chosen.heads[0].W_Q, whole.heads[3].W_Q));
    QVERIFY(sameMatrix(chosen.heads[0].W_K, whole.heads[2].W_K));
    QVERIFY(!sameMatrix(chosen.heads[0].W_K, whole.heads[1].W_K));
    QCOMPARE(chosen.W_O->rows(), Index(2 * tiny.headDim()));
    const AttentionResult a = computeAttention(whole), b = computeAttention(chosen);
    QVERIFY(sameMatrix(b.heads[0].weights, a.heads[3].weights));
    QVERIFY(sameMatrix(b.heads[1].weights, a.heads[1].weights));
    QVERIFY(chosen.title.find("layer 1") != std::string::npos);
    // The window names the query heads of a group: 0 with 1, 2 with 3.
    QCOMPARE(headsSharingKeysAndValues(whole, 0), std::vector<int>{1});
    QCOMPARE(headsSharingKeysAndValues(whole, 3), std::vector<int>{2});
    QCOMPARE(headsSharingKeysAndValues(chosen, 0), std::vector<int>{}); // heads 3 and 1: other groups
}

void TestModelSession::everyLayerInOnePass_data()
{
    QTest::addColumn<bool>("llama");
    QTest::addColumn<int>("precision");
    QTest::newRow("gpt2 float64") << false << int(Precision::Float64);
    QTest::newRow("gpt2 float32") << false << int(Precision::Float32);
    QTest::newRow("qwen2 GQA float64") << true << int(Precision::Float64);
    QTest::newRow("qwen2 GQA float32") << true << int(Precision::Float32);
}

// The model view's one forward pass gives, for every layer and head, the weights of the session that
// opening that head makes, computed by the engine: the same pass, so bit for bit.
void TestModelSession::everyLayerInOnePass()
{
    QFETCH(bool, llama);
    QFETCH(int, precision);
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const Tiny tiny = gpt2OrGroupedLlama(llama);
    writeModel(tiny, folder.path(), llama ? 13 : 17);
    const Model model = Model::open(folder.path().toStdString());
    const std::vector<std::int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    std::vector<std::pair<Index, Index>> calls;
    const std::vector<std::vector<Matrix>> weights =
        attentionOfEveryLayer(model, ids, Precision(precision), [&](Index done, Index layers) {
            calls.emplace_back(done, layers);
            return true;
        });
    QCOMPARE(weights.size(), std::size_t(tiny.layers));
    QCOMPARE(calls.size(), std::size_t(tiny.layers));
    for (int layer = 0; layer < tiny.layers; ++layer) {
        QCOMPARE(calls[std::size_t(layer)], std::make_pair(Index(layer + 1), Index(tiny.layers)));
        QCOMPARE(weights[std::size_t(layer)].size(), std::size_t(tiny.heads));
        for (int head = 0; head < tiny.heads; ++head) {
            ModelHeadRequest request;
            request.layer = layer;
            request.heads = {head};
            request.ids = ids;
            request.precision = Precision(precision);
            const AttentionResult expected = computeAttention(sessionFromModel(model, request));
            const Matrix& actual = weights[std::size_t(layer)][std::size_t(head)];
            // The pass's attention (the blocks') and the session's (the engine's) agree within rounding.
            QKV_COMPARE_NEAR(actual, expected.heads[0].weights,
                             Precision(precision) == Precision::Float32 ? 2e-6 : 1e-13);
        }
    }
    // Stopping after a layer: only the layers up to it.
    const std::vector<std::vector<Matrix>> first =
        attentionOfEveryLayer(model, ids, Precision(precision), {}, 1);
    QCOMPARE(first.size(), std::size_t(1));
    QKV_COMPARE_NEAR(first[0][1], weights[0][1], 0.0);
}

// Llama 3.1's rope_scaling reaches the session (and so every layer of the forward pass): the heads turn by
// the scaled frequencies, and the attention differs from the same weights without it.
void TestModelSession::llama3RopeScaling()
{
    Tiny tiny;
    tiny.llama = true;
    QTemporaryDir scaledFolder, plainFolder;
    QVERIFY(scaledFolder.isValid() && plainFolder.isValid());
    writeModel(tiny, plainFolder.path(), 5);
    tiny.ropeScaling = R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,)"
                       R"( "high_freq_factor": 4.0, "original_max_position_embeddings": 16})";
    writeModel(tiny, scaledFolder.path(), 5); // the same weights
    ModelHeadRequest request;
    request.layer = 1;
    request.ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    const Session scaled = sessionFromModel(Model::open(scaledFolder.path().toStdString()), request);
    const Session plain = sessionFromModel(Model::open(plainFolder.path().toStdString()), request);
    QVERIFY(scaled.positions.scaling == (RopeScaling{RopeScalingType::Llama3, 8.0, 1.0, 4.0, 16.0}));
    QVERIFY(plain.positions.scaling.type == RopeScalingType::None);
    const Matrix a = computeAttention(scaled).heads[0].weights, b = computeAttention(plain).heads[0].weights;
    QVERIFY((a - b).cwiseAbs().maxCoeff() > 1e-6);
}

void TestModelSession::float32ForwardPass_data()
{
    QTest::addColumn<bool>("llama");
    QTest::newRow("gpt2") << false;
    QTest::newRow("qwen2 GQA") << true;
}

// A float32 session from a model is the model run in float32: its X is a float32 residual stream, not the
// float64 one rounded at the end, and it agrees with float64 to what float32 allows.
void TestModelSession::float32ForwardPass()
{
    QFETCH(bool, llama);
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const Tiny tiny = gpt2OrGroupedLlama(llama);
    writeModel(tiny, folder.path(), llama ? 13 : 17);
    const Model model = Model::open(folder.path().toStdString());
    ModelHeadRequest request;
    request.layer = tiny.layers - 1; // after at least one whole float32 layer
    request.ids = {3, 1, 4, 1, 5, 9, 2, 6};
    const Session wide = sessionFromModel(model, request);
    request.precision = Precision::Float32;
    const Session narrow = sessionFromModel(model, request);
    QCOMPARE(narrow.precision, Precision::Float32);
    const Matrix roundedWide = wide.X.cast<float>().cast<double>();
    const Matrix roundedNarrow = narrow.X.cast<float>().cast<double>();
    QVERIFY(narrow.X == roundedNarrow);                        // every entry a float32 value
    QVERIFY(!(narrow.X.array() == roundedWide.array()).all()); // rounded along the way, not only at the end
    const double epsilon = std::numeric_limits<float>::epsilon();
    const double scale = std::max(1.0, wide.X.cwiseAbs().maxCoeff());
    QKV_COMPARE_NEAR(narrow.X, wide.X, 64 * epsilon * scale);

    const AttentionResult expected = computeAttention(wide);
    const AttentionResult actual = computeAttention(narrow);
    for (std::size_t h = 0; h < expected.heads.size(); ++h)
        QKV_COMPARE_NEAR(actual.heads[h].weights, expected.heads[h].weights, 256 * epsilon);
    // The whole pass, to the last layer's MLP.
    const Matrix end64 = residualBeforeLayer(model, request.ids, tiny.layers);
    const Matrix end32 = residualBeforeLayer(model, request.ids, tiny.layers, Precision::Float32);
    QVERIFY(end32 == end32.cast<float>().cast<double>());
    QKV_COMPARE_NEAR(end32, end64, 64 * epsilon * std::max(1.0, end64.cwiseAbs().maxCoeff()));
}

void TestModelSession::onePassCancels()
{
    Tiny tiny;
    tiny.layers = 4;
    QTemporaryDir folder;
    writeModel(tiny, folder.path(), 19);
    const Model model = Model::open(folder.path().toStdString());
    int calls = 0;
    const std::vector<std::vector<Matrix>> weights =
        attentionOfEveryLayer(model, {1, 2, 3}, Precision::Float64, [&](Index done, Index) {
            ++calls;
            return done < 2; // cancel once two layers are done
        });
    QCOMPARE(calls, 2);
    QCOMPARE(weights.size(), std::size_t(2));
    QVERIFY(errorOf([&] {
                attentionOfEveryLayer(model, {1, 40}, Precision::Float64);
            }).contains(QStringLiteral("token id 40 (token 1) is outside the vocabulary")));
    // 4 layers × 2 heads × 3² weights × 8 bytes = 576 bytes: refused under a 500-byte limit, before any
    // layer.
    calls = 0;
    const QString error = errorOf([&] {
        attentionOfEveryLayer(
            model, {1, 2, 3}, Precision::Float64, [&](Index, Index) { return ++calls > 0; }, -1, 500);
    });
    QVERIFY2(error.contains(QStringLiteral("needs about 576 bytes, more than the memory limit of 500 bytes")),
             qPrintable(error));
    QCOMPARE(calls, 0);
    QCOMPARE(attentionOfEveryLayer(model, {1, 2, 3}, Precision::Float64, {}, -1, 576).size(), std::size_t(4));
}

void TestModelSession::refusals()
{
    Tiny tiny;
    QTemporaryDir folder;
    writeModel(tiny, folder.path(), 5);
    const Model model = Model::open(folder.path().toStdString());
    ModelHeadRequest request;
    request.ids = {1, 2};
    request.layer = 3;
    QVERIFY(errorOf([&] {
                sessionFromModel(model, request);
            }).contains(QStringLiteral("layer 3 is out of range")));
    request.layer = 0;
    request.heads = {2};
    QVERIFY(errorOf([&] {
                sessionFromModel(model, request);
            }).contains(QStringLiteral("head 2 is out of range")));
    request.heads = {};
    request.ids = {1, 40};
    QVERIFY(errorOf([&] {
                sessionFromModel(model, request);
            }).contains(QStringLiteral("token id 40 (token 1) is outside the vocabulary")));
    request.ids = {};
    QVERIFY(errorOf([&] { sessionFromModel(model, request); }).contains(QStringLiteral("no tokens")));
    request.ids.assign(25, 1);
    QVERIFY(errorOf([&] {
                sessionFromModel(model, request);
            }).contains(QStringLiteral("more than the model's 24 positions")));
    // A tensor of the wrong shape is named when the model is opened.
    QTemporaryDir broken;
    writeModel(tiny, broken.path(), 5);
    {
        std::ofstream(broken.path().toStdString() + "/config.json")
            << "{\"model_type\": \"gpt2\", \"n_embd\": 16, \"n_head\": 2, \"n_layer\": 3, \"n_inner\": 50, "
               "\"n_positions\": 24, \"vocab_size\": 40, \"layer_norm_epsilon\": 1e-05}";
    }
    QVERIFY(errorOf([&] { Model::open(broken.path().toStdString()); })
                .contains(QStringLiteral(
                    "tensor \"h.0.mlp.c_fc.weight\" has shape [16, 48], the config says [16, 50]")));
    QVERIFY(model.tokenizer() == nullptr);
    QVERIFY(QString::fromStdString(model.tokenizerProblem()).contains(QStringLiteral("no tokenizer")));
}

QKV_TEST_GUILESS_MAIN(TestModelSession)
#include "tst_modelsession.moc"
