// SPDX-License-Identifier: GPL-3.0-or-later
// Attention learns: the default induction recipe (docs/training.md) cut to 800 steps and trained from its
// seed, then opened as a model folder and run on fresh repeated random tokens: a head in layer 1 attends to
// the token after the earlier occurrence of the current one (induction score at least 0.5), and the
// repeated half's loss is below half of ln(vocabulary).

#include "HeadScores.h"
#include "Model.h"
#include "ModelRun.h"
#include "TestMain.h"
#include "Trainer.h"

#include <QTemporaryDir>
#include <QtTest>

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
    }
};

QKV_TEST_APPLESS_MAIN(TestTrainingRecipe)
#include "tst_training_recipe.moc"
