// SPDX-License-Identifier: GPL-3.0-or-later
// Training's exactness: every parameter's gradient against central finite differences of the loss in
// float64 (GPT-2 with its MLP, a LLaMA with grouped-query attention and an untied unembedding, Qwen2 with
// biases and a tied one, attention-only models with sparsemax and α-entmax), the training forward's logits
// against the model's own forward pass, one SGD and three AdamW steps against the update rules written out
// in plain loops, and saved folders that the forward pass reads back.

#include "Error.h"
#include "FuzzyCompare.h"
#include "Model.h"
#include "ModelRun.h"
#include "Network.h"
#include "Optimizer.h"
#include "TestMain.h"
#include "TinyModels.h"
#include "TrainingModel.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>
#include <random>

using namespace qkv;
using namespace qkv::training;
using qkv::test::Tiny;
using qkv::test::writeModel;

namespace {

Batch randomBatch(Index sequences, Index length, Index vocab, unsigned seed)
{
    std::mt19937 random(seed);
    Batch batch(static_cast<std::size_t>(sequences),
                std::vector<std::int64_t>(static_cast<std::size_t>(length)));
    for (auto& sequence : batch)
        for (auto& id : sequence)
            id = std::int64_t(random() % unsigned(vocab));
    return batch;
}

/// A random model of `a`'s shape with weights large enough that attention is far from uniform.
Tensors<double> randomParameters(const Layout& layout, unsigned seed)
{
    std::mt19937 random(seed);
    std::normal_distribution<double> normal(0.0, 0.4);
    Tensors<double> p = zeroTensors<double>(layout);
    for (std::size_t t = 0; t < p.size(); ++t)
        for (Index i = 0; i < p[t].size(); ++i)
            p[t].data()[i] = normal(random) + (layout.tensors[t].name.find("norm") != std::string::npos ||
                                                       layout.tensors[t].name.find("ln_") != std::string::npos
                                                   ? 1.0
                                                   : 0.0);
    return p;
}

/// Checks up to `perTensor` entries of every tensor's gradient against (L(w + h) − L(w − h)) / 2h.
void checkGradients(const Architecture& a, const Layout& layout, Tensors<double> p, const Batch& batch,
                    int perTensor = 24)
{
    Tensors<double> gradients;
    lossAndGradients(a, layout, p, batch, gradients);
    Network<double> network(a, layout);
    std::mt19937 random(7);
    const double h = 1e-5;
    for (std::size_t t = 0; t < p.size(); ++t) {
        QCOMPARE(gradients[t].rows(), p[t].rows());
        QCOMPARE(gradients[t].cols(), p[t].cols());
        const Index size = p[t].size();
        double largest = 0.0;
        for (int k = 0; k < std::min<Index>(perTensor, size); ++k) {
            const Index i = size <= perTensor ? k : Index(random() % std::uint32_t(size));
            double& w = p[t].data()[i];
            const double saved = w;
            w = saved + h;
            const double up = network.forward(p, batch);
            w = saved - h;
            const double down = network.forward(p, batch);
            w = saved;
            const double numeric = (up - down) / (2 * h);
            const double analytic = gradients[t].data()[i];
            largest = std::max(largest, std::abs(analytic));
            if (std::abs(numeric - analytic) > 1e-7 * std::max(1.0, std::abs(analytic)))
                QFAIL(qPrintable(QStringLiteral("%1[%2]: analytic %3, finite differences %4")
                                     .arg(QString::fromStdString(layout.tensors[t].name))
                                     .arg(i)
                                     .arg(analytic, 0, 'g', 12)
                                     .arg(numeric, 0, 'g', 12)));
        }
        // A gradient that is 0 everywhere would pass trivially: every tensor here reaches the loss.
        QVERIFY2(largest > 0.0, layout.tensors[t].name.c_str());
    }
}

Architecture llamaGqa()
{
    Architecture a;
    a.family = ModelFamily::Llama;
    a.modelType = "llama";
    a.layers = 2;
    a.heads = 4;
    a.kvHeads = 2;
    a.headDim = 6;
    a.hiddenSize = 16;
    a.intermediateSize = 20;
    a.vocabSize = 23;
    a.maxPositions = 16;
    a.qkvBias = a.outputBias = a.mlpBias = false;
    a.tiedEmbeddings = false;
    return a;
}

Architecture attentionOnly(NormalizerSpec normalizer)
{
    Architecture a;
    a.layers = 2;
    a.heads = 2;
    a.kvHeads = 2;
    a.headDim = 8;
    a.hiddenSize = 16;
    a.vocabSize = 13;
    a.maxPositions = 12;
    a.attentionNormalizer = normalizer;
    return a;
}

Tiny tinyGpt2()
{
    Tiny tiny;
    tiny.dtype = "F64";
    tiny.layers = 2;
    return tiny;
}

Tiny tinyQwen2()
{
    Tiny tiny = tinyGpt2();
    tiny.llama = true;
    tiny.heads = 4;
    tiny.kvHeads = 2;
    return tiny;
}

/// The logits of the training forward for `ids` against ModelRun's.
void compareLogits(const std::string& folder, const std::vector<std::int64_t>& ids)
{
    const Architecture a = architectureOf(folder);
    const Layout layout = layoutOf(a);
    const Tensors<double> p = loadParameters<double>(folder, a, layout);
    Network<double> network(a, layout);
    network.forward(p, {ids});
    const ModelRun run(std::make_shared<const Model>(Model::open(folder)), ids, Precision::Float64);
    for (Index i = 0; i < Index(ids.size()); ++i)
        QKV_COMPARE_NEAR(network.logits().row(i), run.clean().logitsAt(i), 1e-10);
    QKV_COMPARE_NEAR(network.positionLosses().mean(), run.clean().meanLoss, 1e-10);
}

} // namespace

class TestTraining : public QObject {
    Q_OBJECT

private slots:
    void gradientsGpt2()
    {
        QTemporaryDir folder;
        writeModel(tinyGpt2(), folder.path(), 3);
        const std::string path = folder.path().toStdString();
        const Architecture a = architectureOf(path);
        QVERIFY(a.hasMlp());
        const Layout layout = layoutOf(a);
        checkGradients(a, layout, loadParameters<double>(path, a, layout), randomBatch(2, 7, 40, 1));
    }

    void gradientsLlamaGroupedQuery()
    {
        const Architecture a = llamaGqa();
        const Layout layout = layoutOf(a);
        QVERIFY(layout.unembedding >= 0);
        checkGradients(a, layout, randomParameters(layout, 5), randomBatch(3, 9, a.vocabSize, 2));
    }

    void gradientsQwen2()
    {
        QTemporaryDir folder;
        writeModel(tinyQwen2(), folder.path(), 4);
        const std::string path = folder.path().toStdString();
        const Architecture a = architectureOf(path);
        QCOMPARE(a.modelType, std::string("qwen2"));
        QVERIFY(a.qkvBias && !a.outputBias && a.tiedEmbeddings && a.kvHeads == 2);
        const Layout layout = layoutOf(a);
        checkGradients(a, layout, loadParameters<double>(path, a, layout), randomBatch(2, 8, 40, 3));
    }

    void gradientsAttentionOnly_data()
    {
        QTest::addColumn<int>("type");
        QTest::addColumn<double>("alpha");
        QTest::newRow("softmax") << int(NormalizerType::Softmax) << 1.5;
        QTest::newRow("sparsemax") << int(NormalizerType::Sparsemax) << 2.0;
        QTest::newRow("entmax 1.5") << int(NormalizerType::Entmax) << 1.5;
        QTest::newRow("entmax 1.2") << int(NormalizerType::Entmax) << 1.2;
    }

    void gradientsAttentionOnly()
    {
        QFETCH(int, type);
        QFETCH(double, alpha);
        const Architecture a = attentionOnly({NormalizerType(type), alpha});
        const Layout layout = layoutOf(a);
        checkGradients(a, layout, randomParameters(layout, 9), randomBatch(2, 10, a.vocabSize, 4), 40);
    }

    void gradientsRopeAttentionOnly()
    {
        Architecture a = attentionOnly({});
        a.family = ModelFamily::Llama;
        a.modelType = "llama";
        a.qkvBias = a.outputBias = a.mlpBias = false;
        const Layout layout = layoutOf(a);
        checkGradients(a, layout, randomParameters(layout, 10), randomBatch(2, 10, a.vocabSize, 5), 40);
    }

    void raggedBatch_data()
    {
        QTest::addColumn<bool>("llama");
        QTest::newRow("gpt2") << false;
        QTest::newRow("llama grouped query") << true;
    }

    /// Sequences of different lengths in one batch: the loss is the mean over every sequence's positions
    /// but its last (Hugging Face's loss over a right-padded batch whose padding is labelled −100), and
    /// its gradient is exact.
    void raggedBatch()
    {
        QFETCH(bool, llama);
        QTemporaryDir folder;
        writeModel(tinyGpt2(), folder.path(), 21);
        const Architecture a = llama ? llamaGqa() : architectureOf(folder.path().toStdString());
        const Layout layout = layoutOf(a);
        const Tensors<double> p = llama ? randomParameters(layout, 22)
                                        : loadParameters<double>(folder.path().toStdString(), a, layout);
        Batch batch;
        for (const auto& [length, seed] : {std::pair{7, 1u}, std::pair{3, 2u}, std::pair{10, 3u}})
            batch.push_back(randomBatch(1, length, std::min<Index>(a.vocabSize, 23), seed).front());
        Network<double> network(a, layout);
        double sum = 0.0;
        Index count = 0;
        for (const auto& sequence : batch) {
            sum += network.forward(p, {sequence}) * double(sequence.size() - 1);
            count += Index(sequence.size()) - 1;
        }
        QKV_COMPARE_NEAR(network.forward(p, batch), sum / double(count), 1e-12);
        QCOMPARE(network.positionLosses().cols(), Index(9));
        QCOMPARE(network.positionLosses()(1, 2), 0.0); // past the 3-token sequence's end
        checkGradients(a, layout, p, batch);
    }

    void logitsEqualTheForwardPass()
    {
        QTemporaryDir gpt2, qwen2, llama;
        writeModel(tinyGpt2(), gpt2.path(), 11);
        writeModel(tinyQwen2(), qwen2.path(), 12);
        const Architecture a = llamaGqa();
        const Layout layout = layoutOf(a);
        saveModel(llama.path().toStdString(), a, layout, randomParameters(layout, 13));
        const std::vector<std::int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
        compareLogits(gpt2.path().toStdString(), ids);
        compareLogits(qwen2.path().toStdString(), ids);
        compareLogits(llama.path().toStdString(), ids);
        // Trained with sparse attention: the folder says so, and the forward pass normalizes the same way.
        for (const NormalizerSpec normalizer :
             {NormalizerSpec{NormalizerType::Sparsemax, 1.5}, NormalizerSpec{NormalizerType::Entmax, 1.3}}) {
            QTemporaryDir sparse;
            const Architecture s = attentionOnly(normalizer);
            const Layout sparseLayout = layoutOf(s);
            saveModel(sparse.path().toStdString(), s, sparseLayout, randomParameters(sparseLayout, 14));
            QCOMPARE(architectureOf(sparse.path().toStdString()).attentionNormalizer, normalizer);
            compareLogits(sparse.path().toStdString(), {ids.begin(), ids.begin() + 10});
        }
    }

    void savedFoldersReadBack()
    {
        // Attention only, in both families and both precisions: the MLP of width 1 with zero weights adds
        // exactly nothing, and the folder is read back as attention-only.
        for (const bool rope : {false, true})
            for (const bool f32 : {false, true}) {
                Architecture a = attentionOnly({});
                if (rope) {
                    a.family = ModelFamily::Llama;
                    a.modelType = "llama";
                    a.qkvBias = a.outputBias = a.mlpBias = false;
                }
                const Layout layout = layoutOf(a);
                Tensors<double> p = randomParameters(layout, 21);
                if (f32)
                    for (auto& t : p)
                        t = t.cast<float>().cast<double>();
                QTemporaryDir folder;
                const std::string path = folder.path().toStdString();
                if (f32) {
                    Tensors<float> pf;
                    for (const auto& t : p)
                        pf.push_back(t.cast<float>());
                    saveModel(path, a, layout, pf);
                } else {
                    saveModel(path, a, layout, p);
                }
                const Architecture back = architectureOf(path);
                QVERIFY(!back.hasMlp());
                QCOMPARE(back.family, a.family);
                const Tensors<double> read = loadParameters<double>(path, back, layoutOf(back));
                QCOMPARE(read.size(), p.size());
                for (std::size_t t = 0; t < p.size(); ++t)
                    QVERIFY(read[t] == p[t]);
                compareLogits(path, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
            }
    }

    void float32FollowsFloat64()
    {
        QTemporaryDir folder;
        writeModel(tinyGpt2(), folder.path(), 14);
        const std::string path = folder.path().toStdString();
        const Architecture a = architectureOf(path);
        const Layout layout = layoutOf(a);
        const Tensors<double> p = loadParameters<double>(path, a, layout);
        const Tensors<float> pf = loadParameters<float>(path, a, layout);
        const Batch batch = randomBatch(2, 9, 40, 6);
        Tensors<double> g;
        Tensors<float> gf;
        const double loss = lossAndGradients(a, layout, p, batch, g);
        const double lossF = lossAndGradients(a, layout, pf, batch, gf);
        QKV_COMPARE_NEAR(lossF, loss, 1e-4 * loss);
        for (std::size_t t = 0; t < g.size(); ++t)
            QKV_COMPARE_NEAR(gf[t].cast<double>(), g[t], 1e-3 * std::max(1.0, g[t].cwiseAbs().maxCoeff()));
    }

    void optimizersFollowTheirRules()
    {
        const Architecture a = llamaGqa();
        const Layout layout = layoutOf(a);
        const Tensors<double> start = randomParameters(layout, 31);
        const Batch batch = randomBatch(2, 8, a.vocabSize, 7);
        // SGD: w − lr·∇w.
        {
            OptimizerSettings s;
            s.kind = OptimizerKind::Sgd;
            s.learningRate = 0.05;
            Optimizer<double> sgd(s, layout);
            Tensors<double> p = start, g;
            lossAndGradients(a, layout, p, batch, g);
            const Tensors<double> gradients = g;
            sgd.step(p, g);
            for (std::size_t t = 0; t < p.size(); ++t)
                for (Index i = 0; i < p[t].size(); ++i)
                    QCOMPARE(p[t].data()[i], start[t].data()[i] - 0.05 * gradients[t].data()[i]);
        }
        // AdamW, three steps, each from the loss of the parameters the previous one left.
        OptimizerSettings s;
        s.learningRate = 0.01;
        Optimizer<double> adamw(s, layout);
        Tensors<double> p = start, reference = start, g, m = zeroTensors<double>(layout),
                        v = zeroTensors<double>(layout);
        for (int step = 1; step <= 3; ++step) {
            lossAndGradients(a, layout, p, batch, g);
            Tensors<double> gr;
            lossAndGradients(a, layout, reference, batch, gr);
            adamw.step(p, g);
            for (std::size_t t = 0; t < reference.size(); ++t)
                for (Index i = 0; i < reference[t].size(); ++i) {
                    double& w = reference[t].data()[i];
                    const double gi = gr[t].data()[i];
                    double& mi = m[t].data()[i];
                    double& vi = v[t].data()[i];
                    w -= 0.01 * 0.01 * w;
                    mi = 0.9 * mi + 0.1 * gi;
                    vi = 0.999 * vi + 0.001 * gi * gi;
                    const double mHat = mi / (1 - std::pow(0.9, step)),
                                 vHat = vi / (1 - std::pow(0.999, step));
                    w -= 0.01 * mHat / (std::sqrt(vHat) + 1e-8);
                }
            for (std::size_t t = 0; t < p.size(); ++t)
                QKV_COMPARE_NEAR(p[t], reference[t], 1e-13);
        }
        QCOMPARE(adamw.steps(), std::int64_t(3));
    }

    void clippingAndWarmup()
    {
        const Architecture a = attentionOnly({});
        const Layout layout = layoutOf(a);
        Tensors<double> p = randomParameters(layout, 41), g;
        lossAndGradients(a, layout, p, randomBatch(2, 8, a.vocabSize, 8), g);
        const double norm = globalNorm(g);
        QVERIFY(norm > 0.1);
        OptimizerSettings s;
        s.kind = OptimizerKind::Sgd;
        s.learningRate = 1.0;
        s.clipNorm = 0.1;
        s.warmupSteps = 4;
        Optimizer<double> sgd(s, layout);
        const Tensors<double> before = p;
        QCOMPARE(sgd.step(p, g), 0.25);
        QKV_COMPARE_NEAR(globalNorm(g), 0.1 * norm / (norm + 1e-6), 1e-12);
        for (std::size_t t = 0; t < p.size(); ++t)
            QKV_COMPARE_NEAR(p[t], before[t] - 0.25 * g[t], 1e-15);
    }

    void refusals()
    {
        Architecture a = attentionOnly({});
        a.heads = 32;
        a.kvHeads = 32;
        a.headDim = 0;
        QVERIFY_THROWS_EXCEPTION(Error, checkArchitecture(a));
        try {
            checkArchitecture(a);
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("--heads") != std::string::npos);
        }
        OptimizerSettings s;
        s.learningRate = 0.0;
        try {
            checkOptimizerSettings(s);
            QFAIL("a zero learning rate was accepted");
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("--lr") != std::string::npos);
        }
        const Layout layout = layoutOf(attentionOnly({}));
        Network<double> network(attentionOnly({}), layout);
        const Tensors<double> p = zeroTensors<double>(layout);
        QVERIFY_THROWS_EXCEPTION(Error, network.forward(p, {{1, 2, 99}}));
        QVERIFY_THROWS_EXCEPTION(Error, network.forward(p, {std::vector<std::int64_t>(13, 1)}));
        QVERIFY_THROWS_EXCEPTION(Error, network.forward(p, {{1}, {1, 2, 3}}));
    }
};

QKV_TEST_APPLESS_MAIN(TestTraining)
#include "tst_training.moc"
