// SPDX-License-Identifier: GPL-3.0-or-later
// The hook points of the one transformer (HookPoints.h) on tiny GPT-2, LLaMA (grouped-query attention, no
// biases, lm_head) and Qwen2 (q/k/v biases, tied) checkpoints in float64: every hook kept equals the plain-
// loop reference (ReferenceModel.h) at 1e-9; the gradient of the loss and of a logit difference with
// respect to every hook kind against central finite differences through replacements; a replacement
// restarted from its layer (after another restart) equals the full run with it at 1e-12; a zero ablation as a
// hook_z replacement equals ModelRun's intervention; unknown hooks and misshapen replacements are refused by
// name.

#include "Error.h"
#include "FuzzyCompare.h"
#include "HookPoints.h"
#include "Model.h"
#include "ModelRun.h"
#include "Network.h"
#include "ReferenceModel.h"
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
using namespace qkv::transformer;
using qkv::test::matrixOf;
using qkv::test::ReferenceModel;
using qkv::test::ReferenceRun;
using qkv::test::Table;
using qkv::test::Tiny;

namespace {

const std::vector<std::int64_t> someIds{5, 17, 3, 3, 39, 0, 22, 5, 17};

/// gpt2; llama: 4 query heads over 2 key/value heads, no biases, lm_head; qwen2: q/k/v biases, tied, 4 query
/// heads over 2 key/value heads.
Tiny shape(const QString& name)
{
    Tiny tiny = qkv::test::tinyOfFamily(name, "F64", 2);
    tiny.layers = 2;
    return tiny;
}

/// A tiny checkpoint written, opened as the trainer's network reads model folders.
struct Loaded {
    Tiny tiny;
    QTemporaryDir folder;
    Architecture a;
    Layout layout;
    Tensors<double> p;

    Loaded(const QString& name, unsigned seed) : tiny(shape(name))
    {
        qkv::test::writeModel(tiny, folder.path(), seed);
        const std::string path = folder.path().toStdString();
        a = architectureOf(path);
        layout = layoutOf(a);
        p = loadParameters<double>(path, a, layout);
    }
    std::string path() const { return folder.path().toStdString(); }
};

/// Per-head tables side by side (n × heads · width), or stacked (heads · n × n) for the pattern.
Matrix sideBySide(const std::vector<Table>& heads)
{
    const Matrix first = matrixOf(heads.front());
    Matrix m(first.rows(), first.cols() * Index(heads.size()));
    for (std::size_t h = 0; h < heads.size(); ++h)
        m.middleCols(Index(h) * first.cols(), first.cols()) = matrixOf(heads[h]);
    return m;
}

Matrix stacked(const std::vector<Table>& heads)
{
    const Matrix first = matrixOf(heads.front());
    Matrix m(first.rows() * Index(heads.size()), first.cols());
    for (std::size_t h = 0; h < heads.size(); ++h)
        m.middleRows(Index(h) * first.rows(), first.rows()) = matrixOf(heads[h]);
    return m;
}

/// The objective of the network's last forward, from its logits.
double objectiveOf(const Network<double>& network, double loss, const Objective& objective)
{
    if (objective.kind == Objective::Kind::Loss)
        return loss;
    const auto& logits = network.logits();
    const Index position = objective.position < 0 ? logits.rows() - 1 : objective.position;
    return logits(position, Index(objective.tokenA)) - logits(position, Index(objective.tokenB));
}

void addModels()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("gpt2") << QStringLiteral("gpt2");
    QTest::newRow("llama grouped query") << QStringLiteral("llama");
    QTest::newRow("qwen2 biases") << QStringLiteral("qwen2");
}

} // namespace

class TestHooks : public QObject {
    Q_OBJECT

private slots:
    void cacheEqualsTheReference_data() { addModels(); }
    void cacheEqualsTheReference()
    {
        QFETCH(QString, model);
        const Loaded m(model, 31);
        Network<double> network(m.a, m.layout);
        const HookRequest keepAll{{"*"}, {}};
        network.forward(m.p, {someIds}, &keepAll);
        const ActivationCache& cache = network.cache();
        QCOMPARE(cache.size(), allHookNames(m.a).size());
        const Model opened = Model::open(m.path());
        const ReferenceRun ref = ReferenceModel(m.tiny, opened.checkpoint()).run(someIds);
        const double tolerance = 1e-9;
        QKV_COMPARE_NEAR(cache.at("hook_embed"), matrixOf(ref.embed), tolerance);
        if (!m.tiny.llama)
            QKV_COMPARE_NEAR(cache.at("hook_pos_embed"), matrixOf(ref.posEmbed), tolerance);
        double largest = 0.0;
        for (int l = 0; l < m.tiny.layers; ++l) {
            const std::string b = "blocks." + std::to_string(l) + ".";
            const std::pair<std::string, Matrix> expected[] = {
                {"hook_resid_pre", matrixOf(ref.residPre[std::size_t(l)])},
                {"attn.hook_q", matrixOf(ref.q[std::size_t(l)])},
                {"attn.hook_k", matrixOf(ref.k[std::size_t(l)])},
                {"attn.hook_v", matrixOf(ref.v[std::size_t(l)])},
                {"attn.hook_pattern", stacked(ref.weights[std::size_t(l)])},
                {"attn.hook_z", sideBySide(ref.z[std::size_t(l)])},
                {"hook_attn_out", matrixOf(ref.attnOut[std::size_t(l)])},
                {"hook_mlp_out", matrixOf(ref.mlpOut[std::size_t(l)])},
                {"hook_resid_post", matrixOf(ref.residPost[std::size_t(l)])}};
            for (const auto& [name, value] : expected) {
                QKV_COMPARE_NEAR(cache.at(b + name), value, tolerance);
                largest = std::max(largest, (cache.at(b + name) - value).cwiseAbs().maxCoeff());
            }
        }
        QKV_COMPARE_NEAR(cache.at("ln_final.hook_normalized"), matrixOf(ref.normed), tolerance);
        QKV_COMPARE_NEAR(network.logits(), matrixOf(ref.logits), tolerance);
        qInfo("%s: largest difference of a block hook from the reference %.3g", qPrintable(model), largest);
    }

    void gradientsEqualFiniteDifferences_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("logitDifference");
        for (const char* name : {"gpt2", "llama", "qwen2"})
            for (bool difference : {false, true})
                QTest::newRow((std::string(name) + (difference ? " logit difference" : " loss")).c_str())
                    << QString::fromLatin1(name) << difference;
    }

    /// ∂objective/∂hook against (f(hook + h·e) − f(hook − h·e)) / 2h, the hook replaced by its own value
    /// moved along one entry, for several entries of every hook.
    void gradientsEqualFiniteDifferences()
    {
        QFETCH(QString, model);
        QFETCH(bool, logitDifference);
        const Loaded m(model, 41);
        Objective objective;
        if (logitDifference) {
            objective.kind = Objective::Kind::LogitDifference;
            objective.position = 5;
            objective.tokenA = 3;
            objective.tokenB = 22;
        }
        Network<double> network(m.a, m.layout);
        const HookRequest keepAll{{"*"}, {}};
        network.forward(m.p, {someIds}, &keepAll);
        const ActivationCache values = network.cache();
        const ActivationCache gradients = network.hookGradients(m.p, objective);
        const std::vector<std::string> names = allHookNames(m.a);
        QCOMPARE(gradients.size(), names.size());
        std::mt19937 random(5);
        const double h = 1e-5;
        double worst = 0.0;
        for (const std::string& name : names) {
            const Matrix& value = values.at(name);
            const Matrix& gradient = gradients.at(name);
            QCOMPARE(gradient.rows(), value.rows());
            QCOMPARE(gradient.cols(), value.cols());
            double largest = 0.0;
            for (int sample = 0; sample < 8; ++sample) {
                const Index i = Index(random() % std::uint32_t(value.size()));
                HookRequest request;
                request.replace.push_back({name, value, -1});
                Matrix& moved = request.replace.front().value;
                moved.data()[i] = value.data()[i] + h;
                const double up = objectiveOf(network, network.forward(m.p, {someIds}, &request), objective);
                moved.data()[i] = value.data()[i] - h;
                const double down =
                    objectiveOf(network, network.forward(m.p, {someIds}, &request), objective);
                const double numeric = (up - down) / (2 * h);
                const double analytic = gradient.data()[i];
                largest = std::max(largest, std::abs(analytic));
                const double error = std::abs(numeric - analytic) / std::max(1.0, std::abs(analytic));
                worst = std::max(worst, error);
                if (error > 1e-7)
                    QFAIL(qPrintable(QStringLiteral("%1[%2]: analytic %3, finite differences %4")
                                         .arg(QString::fromStdString(name))
                                         .arg(i)
                                         .arg(analytic, 0, 'g', 12)
                                         .arg(numeric, 0, 'g', 12)));
            }
            // The causal pattern's entries above the diagonal still reach z; every other hook reaches the
            // objective through some entry (a logit difference at position 5 through rows ≤ 5).
            if (gradient.cwiseAbs().maxCoeff() == 0.0)
                QFAIL(qPrintable(
                    QStringLiteral("%1: the gradient is 0 everywhere").arg(QString::fromStdString(name))));
        }
        qInfo("%s: largest relative difference from finite differences %.3g", qPrintable(model), worst);
    }

    void parameterGradientsAreTheTrainersToo()
    {
        const Loaded m(QStringLiteral("qwen2"), 43);
        Network<double> network(m.a, m.layout);
        network.forward(m.p, {someIds});
        Tensors<double> viaHooks;
        network.hookGradients(m.p, Objective{}, {"hook_embed"}, &viaHooks);
        Tensors<double> trainer;
        network.forward(m.p, {someIds});
        network.backward(m.p, trainer);
        for (std::size_t t = 0; t < trainer.size(); ++t)
            QKV_COMPARE_NEAR(viaHooks[t], trainer[t], 1e-15);
    }

    void restartEqualsTheFullRun_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("hook");
        QTest::addColumn<int>("head");
        for (const char* name : {"gpt2", "llama", "qwen2"})
            for (const auto& [hook, head] :
                 {std::pair{"blocks.1.attn.hook_z", 1}, std::pair{"blocks.1.hook_resid_pre", -1},
                  std::pair{"blocks.0.attn.hook_pattern", 2}, std::pair{"blocks.1.attn.hook_k", 1},
                  std::pair{"blocks.0.hook_mlp_out", -1}, std::pair{"ln_final.hook_normalized", -1},
                  std::pair{"hook_embed", -1}})
                QTest::newRow((std::string(name) + " " + hook).c_str())
                    << QString::fromLatin1(name) << QString::fromLatin1(hook) << head;
    }

    /// A replacement handed to restart() (the layers below reused) gives the run a full forward with it
    /// gives, at 1e-12.
    void restartEqualsTheFullRun()
    {
        QFETCH(QString, model);
        QFETCH(QString, hook);
        QFETCH(int, head);
        const Loaded m(model, 51);
        const std::string name = hook.toStdString();
        const HookPoint point = *parseHookName(name, m.a);
        const Index heads = hookHeads(point, m.a);
        const Index useHead = heads > 0 ? std::min<Index>(head, heads - 1) : -1;
        const HookShape shape = hookShape(point, m.a, Index(someIds.size()), useHead);
        std::mt19937 random(9);
        std::uniform_real_distribution<double> uniform(0.0, 0.3);
        Matrix value(shape.rows, shape.cols);
        for (Index i = 0; i < value.size(); ++i)
            value.data()[i] = uniform(random);
        const HookRequest request{{"*"}, {{name, value, useHead}}};
        Network<double> restarted(m.a, m.layout), full(m.a, m.layout);
        restarted.forward(m.p, {someIds});
        // An earlier restart that changed every layer is not built on.
        const Matrix embedded = Matrix::Constant(Index(someIds.size()), m.a.hiddenSize, 0.25);
        restarted.restart(m.p, HookRequest{{}, {{"hook_embed", embedded, -1}}});
        const double restartedLoss = restarted.restart(m.p, request);
        const double fullLoss = full.forward(m.p, {someIds}, &request);
        QKV_COMPARE_NEAR(restartedLoss, fullLoss, 1e-12);
        QKV_COMPARE_NEAR(restarted.logits(), full.logits(), 1e-12);
        // Only the last position's logits, when that is all a run needs.
        HookRequest lastOnly = request;
        lastOnly.oneLogitsRow = true;
        restarted.restart(m.p, lastOnly);
        QCOMPARE(restarted.logits().rows(), Index(1));
        QKV_COMPARE_NEAR(restarted.logits(), full.logits().bottomRows(1), 1e-12);
        QVERIFY_THROWS_EXCEPTION(Error, restarted.hookGradients(m.p, Objective{}));
        // Or only a few tokens' logits there.
        lastOnly.logitIds = {22, 3};
        restarted.restart(m.p, lastOnly);
        QCOMPARE(restarted.logits().cols(), Index(2));
        const Index last = full.logits().rows() - 1;
        QKV_COMPARE_NEAR(restarted.logits()(0, 0), full.logits()(last, 22), 1e-12);
        QKV_COMPARE_NEAR(restarted.logits()(0, 1), full.logits()(last, 3), 1e-12);
        lastOnly.logitIds = {m.a.vocabSize};
        QVERIFY_THROWS_EXCEPTION(Error, restarted.restart(m.p, lastOnly));
        // The replacement changed the run.
        Network<double> clean(m.a, m.layout);
        QVERIFY(std::abs(clean.forward(m.p, {someIds}) - fullLoss) > 1e-9);
    }

    void zeroAblationIsAHookZReplacement_data() { addModels(); }
    void zeroAblationIsAHookZReplacement()
    {
        QFETCH(QString, model);
        const Loaded m(model, 61);
        const auto opened = std::make_shared<const Model>(Model::open(m.path()));
        const ModelRun run(opened, someIds, Precision::Float64);
        Intervention ablation;
        ablation.layer = 1;
        ablation.head = 1;
        ablation.kind = HeadIntervention::Kind::Zero;
        const Prediction predicted = run.predict({ablation});
        Network<double> network(m.a, m.layout);
        const HookRequest request{
            {}, {{"blocks.1.attn.hook_z", Matrix::Zero(Index(someIds.size()), m.a.headDim), 1}}};
        const double loss = network.forward(m.p, {someIds}, &request);
        QKV_COMPARE_NEAR(loss, predicted.meanLoss, 1e-10);
        QKV_COMPARE_NEAR(network.logits().row(4), predicted.logitsAt(4), 1e-10);
    }

    void refusals()
    {
        const Loaded m(QStringLiteral("llama"), 71);
        Network<double> network(m.a, m.layout);
        const auto message = [&](const HookRequest& request) {
            try {
                network.forward(m.p, {someIds}, &request);
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string("accepted");
        };
        QVERIFY(message({{"blocks.0.attn.hook_zz"}, {}}).find("blocks.0.attn.hook_zz") != std::string::npos);
        QVERIFY(message({{"blocks.2.hook_resid_pre"}, {}}).find("no such hook") != std::string::npos);
        QVERIFY(message({{"hook_pos_embed"}, {}}).find("hook_pos_embed") != std::string::npos); // RoPE: none
        const std::string shapes = message({{}, {{"blocks.1.attn.hook_k", Matrix::Zero(9, 16), -1}}});
        QVERIFY2(shapes.find("blocks.1.attn.hook_k") != std::string::npos &&
                     shapes.find("9 × 16") != std::string::npos && shapes.find("9 × 8") != std::string::npos,
                 shapes.c_str());
        const std::string head = message({{}, {{"blocks.0.attn.hook_v", Matrix::Zero(9, 4), 2}}});
        QVERIFY2(head.find("head 2") != std::string::npos, head.c_str());
        QVERIFY(message({{}, {{"blocks.0.hook_resid_post", Matrix::Constant(9, 16, std::nan("")), -1}}})
                    .find("not finite") != std::string::npos);
        const HookRequest nothing;
        QVERIFY_THROWS_EXCEPTION(Error, network.forward(m.p, {someIds, someIds}, &nothing));
        network.forward(m.p, {someIds});
        QVERIFY_THROWS_EXCEPTION(Error, network.hookGradients(m.p, Objective{}, {"blocks.0.attn.hook_y"}));
        Objective outside;
        outside.kind = Objective::Kind::LogitDifference;
        outside.tokenA = 40;
        QVERIFY_THROWS_EXCEPTION(Error, network.hookGradients(m.p, outside));
        // A refused request changes nothing: the last run's logits and gradients stay.
        const Matrix logits = network.logits();
        const HookRequest bad{{}, {{"blocks.1.attn.hook_k", Matrix::Zero(9, 16), -1}}};
        QVERIFY_THROWS_EXCEPTION(Error, network.forward(m.p, {someIds}, &bad));
        QVERIFY_THROWS_EXCEPTION(Error, network.restart(m.p, bad));
        QKV_COMPARE_NEAR(network.logits(), logits, 0.0);
        QCOMPARE(network.hookGradients(m.p, Objective{}).size(), allHookNames(m.a).size());
    }
};

QKV_TEST_APPLESS_MAIN(TestHooks)
#include "tst_hooks.moc"
