// SPDX-License-Identifier: GPL-3.0-or-later
// Attention learns: the default induction recipe (docs/training.md) cut to 800 steps and trained from its
// seed, then opened as a model folder and run on fresh repeated random tokens: a head in layer 1 attends to
// the token after the earlier occurrence of the current one (induction score at least 0.5), and the
// repeated half's loss is below half of ln(vocabulary). Then patching finds those heads: with the first
// occurrence of a repeated token corrupted, patching back the induction head's output (layer 1) and the
// previous-token head's output after the corrupted token (layer 0) restores the most of the clean answer.

#include "HeadScores.h"
#include "Model.h"
#include "ModelRun.h"
#include "Patching.h"
#include "TestMain.h"
#include "Trainer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

using namespace qkv;
using namespace qkv::training;

class TestTrainingRecipe : public QObject {
    Q_OBJECT

private slots:
    void inductionHeadForms()
    {
        QTemporaryDir folder;
        const std::string out = folder.filePath(QStringLiteral("induction")).toStdString();
        TrainSettings s;
        const Recipe recipe = defaultRecipe(TaskKind::Induction);
        s.architecture = recipe.architecture;
        s.architecture.vocabSize = 0;
        s.architecture.maxPositions = 0;
        TaskSettings task;
        task.kind = TaskKind::Induction;
        s.task = task;
        s.steps = 800;
        s.batch = 32;
        s.optimizer.learningRate = recipe.learningRate;
        s.optimizer.warmupSteps = recipe.warmupSteps;
        s.seed = 1;
        s.out = out;
        const TrainOutcome outcome = train(s);
        QVERIFY(!outcome.diverged);

        const auto model = std::make_shared<const Model>(Model::open(out));
        const Index vocab = model->config().vocabSize, half = 24;
        double bestInduction = 0.0, bestPrevious = 0.0, repeatedLoss = 0.0;
        const int probes = 4;
        for (int p = 0; p < probes; ++p) {
            const std::vector<std::int64_t> ids = repeatedRandomTokens(half, vocab, 100 + std::uint64_t(p));
            const ModelRun run(model, ids, Precision::Float64);
            const HeadScoreGrid& scores = run.scores();
            bestInduction +=
                scores[HeadScore::Induction].bottomRows(scores[HeadScore::Induction].rows() - 1).maxCoeff() /
                probes;
            bestPrevious += scores[HeadScore::PreviousToken].row(0).maxCoeff() / probes;
            double sum = 0.0;
            for (Index i = half - 1; i + 1 < Index(ids.size()); ++i)
                sum += run.clean().positions[std::size_t(i)].loss;
            repeatedLoss += sum / double(half) / probes;
        }
        qInfo("induction %.3f, previous-token %.3f, repeated half's loss %.3f (ln V / 2 = %.3f)",
              bestInduction, bestPrevious, repeatedLoss, std::log(double(vocab)) / 2);
        QVERIFY(bestInduction >= 0.5);
        QVERIFY(repeatedLoss < std::log(double(vocab)) / 2);
        whereTheModelCopiesFrom(*model);
    }

private:
    /// The first occurrence of a repeated token corrupted: the clean prompt ends at its second occurrence and
    /// the answer is the token that followed the first. Patching each head's output back finds the heads by
    /// their cells: the layer-1 heads the induction score names, and, at the position after the corrupted
    /// token, the layer-0 head the previous-token score names.
    void whereTheModelCopiesFrom(const Model& model)
    {
        const Index vocab = model.config().vocabSize, half = 24, k = 10;
        const std::vector<std::int64_t> repeated = repeatedRandomTokens(half, vocab, 200);
        const std::vector<std::int64_t> clean(repeated.begin(), repeated.begin() + half + k + 1);
        const auto unused = [&](std::int64_t after) {
            std::int64_t v = after + 1;
            while (std::find(clean.begin(), clean.end(), v) != clean.end())
                ++v;
            return v;
        };
        std::vector<std::int64_t> corrupt = clean;
        corrupt[std::size_t(k)] = unused(-1);
        PatchingRun run(model, {clean, corrupt, clean[std::size_t(k + 1)], unused(corrupt[std::size_t(k)])});
        const std::shared_ptr<const Model> shared(&model, [](const Model*) {});
        const ModelRun cleanRun(shared, clean, Precision::Float64);
        const HeadScoreGrid& scores = cleanRun.scores();
        Index previousHead = 0;
        scores[HeadScore::PreviousToken].row(0).maxCoeff(&previousHead);

        const PatchGrid heads = run.patch(PatchSite::HeadOut, PatchMethod::Exact);
        const PatchGrid atNext = run.patch(PatchSite::HeadOutPos, PatchMethod::Exact, k + 1, k + 1);
        const PatchGrid estimate = run.patch(PatchSite::HeadOut, PatchMethod::Attribution);
        Index bestInLayer1 = 0, bestInLayer0 = 0;
        for (Index h = 0; h < heads.cols; ++h) {
            if (heads.normalizedValue(1, h) > heads.normalizedValue(1, bestInLayer1))
                bestInLayer1 = h;
            if (atNext.normalizedValue(0, h) > atNext.normalizedValue(0, bestInLayer0))
                bestInLayer0 = h;
            qInfo("head %lld: layer 0 at %lld %.3f (previous-token score %.3f); layer 1 %.3f exact, %.3f "
                  "attribution (induction score %.3f)",
                  (long long)h, (long long)(k + 1), atNext.normalizedValue(0, h),
                  scores[HeadScore::PreviousToken](0, h), heads.normalizedValue(1, h),
                  estimate.normalizedValue(1, h), scores[HeadScore::Induction](1, h));
        }
        QCOMPARE(bestInLayer0, previousHead);
        QVERIFY(atNext.normalizedValue(0, previousHead) > 0.5);
        // Layer 1 may share the copying among several induction heads: each head the induction score finds
        // restores a part, and the one that restores most is one of them.
        QVERIFY(scores[HeadScore::Induction](1, bestInLayer1) >= 0.3);
        for (Index h = 0; h < heads.cols; ++h)
            if (scores[HeadScore::Induction](1, h) >= 0.3)
                QVERIFY(heads.normalizedValue(1, h) > 0.2);
    }
};

QKV_TEST_APPLESS_MAIN(TestTrainingRecipe)
#include "tst_training_recipe.moc"
