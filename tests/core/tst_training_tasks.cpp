// SPDX-License-Identifier: GPL-3.0-or-later
// The generated tasks (their structure, their seeds, the held-out validation set, refused text files) and
// the run around the optimizer: the folder it writes, a resumed run that equals an uninterrupted one, and a
// loss that stops being finite.

#include "Error.h"
#include "Model.h"
#include "ModelRun.h"
#include "TestMain.h"
#include "Trainer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

using namespace qkv;
using namespace qkv::training;

namespace {

std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

void writeFile(const std::string& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

nlohmann::json readJson(const std::string& path)
{
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

TrainSettings smallRun(const std::string& out)
{
    TrainSettings s;
    s.architecture.layers = 1;
    s.architecture.heads = 2;
    s.architecture.kvHeads = 2;
    s.architecture.hiddenSize = 16;
    s.architecture.headDim = 8;
    s.architecture.vocabSize = 0;
    s.architecture.maxPositions = 0;
    TaskSettings task;
    task.kind = TaskKind::Induction;
    task.vocab = 12;
    task.length = 16;
    task.minPeriod = 3;
    s.task = task;
    s.steps = 6;
    s.batch = 4;
    s.evaluateEvery = 3;
    s.optimizer.learningRate = 1e-2;
    s.optimizer.warmupSteps = 2;
    s.precision = Precision::Float64;
    s.out = out;
    return s;
}

} // namespace

class TestTrainingTasks : public QObject {
    Q_OBJECT

private slots:
    void induction()
    {
        TaskSettings settings;
        settings.vocab = 20;
        settings.length = 30;
        settings.minPeriod = 4;
        const Task task(settings);
        QCOMPARE(task.modelVocab(), Index(20));
        std::set<Index> periods;
        for (Index i = 0; i < 200; ++i) {
            const std::vector<std::int64_t> x = task.trainingSequence(1, 1 + i / 8, i % 8);
            QCOMPARE(Index(x.size()), Index(30));
            // The period: the smallest r from 4 to 15 with x[i] = x[i − r] everywhere (a smaller one may
            // appear by chance, so the drawn one is at least this).
            Index period = 0;
            for (Index r = 4; r <= 15 && period == 0; ++r) {
                bool repeats = true;
                for (Index j = r; j < 30; ++j)
                    repeats = repeats && x[std::size_t(j)] == x[std::size_t(j - r)];
                if (repeats)
                    period = r;
            }
            QVERIFY(period >= 4);
            periods.insert(period);
            for (std::int64_t id : x)
                QVERIFY(id >= 0 && id < 20);
        }
        QVERIFY(periods.size() >= 10); // the period varies
        QVERIFY(task.trainingSequence(1, 3, 2) == task.trainingSequence(1, 3, 2));
        QVERIFY(task.trainingSequence(1, 3, 2) != task.trainingSequence(2, 3, 2));
        QVERIFY(task.validationSequence(1, 0) != task.trainingSequence(1, 1, 0));
        const std::vector<std::uint8_t> scored = task.scoredPositions(task.validationSequence(1, 0));
        QCOMPARE(Index(scored.size()), Index(29));
        QCOMPARE(std::count(scored.begin(), scored.end(), 1), 15L); // targets 15 … 29
    }

    void copyReverseSortRecall()
    {
        for (TaskKind kind : {TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort}) {
            TaskSettings settings;
            settings.kind = kind;
            settings.vocab = 9;
            settings.length = 11;
            const Task task(settings);
            QCOMPARE(task.modelVocab(), Index(10));
            const std::vector<std::int64_t> x = task.trainingSequence(5, 1, 0);
            std::vector<std::int64_t> items(x.begin(), x.begin() + 5), answer(x.begin() + 6, x.end());
            QCOMPARE(x[5], std::int64_t(9));
            if (kind == TaskKind::Reverse)
                std::reverse(items.begin(), items.end());
            if (kind == TaskKind::Sort)
                std::sort(items.begin(), items.end());
            QVERIFY(items == answer);
        }
        TaskSettings settings;
        settings.kind = TaskKind::AssociativeRecall;
        settings.vocab = 8;
        settings.length = 10;
        const Task task(settings);
        QCOMPARE(task.modelVocab(), Index(16));
        for (Index i = 0; i < 20; ++i) {
            const std::vector<std::int64_t> x = task.trainingSequence(2, 1, i);
            std::set<std::int64_t> keys;
            std::int64_t expected = -1;
            for (std::size_t p = 0; p < 8; p += 2) {
                QVERIFY(x[p] < 8 && x[p + 1] >= 8);
                keys.insert(x[p]);
                if (x[p] == x[8])
                    expected = x[p + 1];
            }
            QCOMPARE(keys.size(), std::size_t(4));
            QCOMPARE(x[9], expected);
        }
        QVERIFY(errorOf([] {
                    TaskSettings s;
                    s.kind = TaskKind::Copy;
                    s.length = 10;
                    Task{s};
                }).find("--task-length") != std::string::npos);
        QVERIFY(errorOf([] { taskKind("parity"); }).find("--task parity") != std::string::npos);
    }

    void text()
    {
        QTemporaryDir folder;
        const std::string good = folder.filePath(QStringLiteral("good.txt")).toStdString();
        std::string text;
        for (int i = 0; i < 40; ++i)
            text += "the cat sat on the mat — ✓ ";
        writeFile(good, text);
        TaskSettings settings;
        settings.kind = TaskKind::Text;
        settings.length = 16;
        settings.textFile = good;
        const Task task(settings);
        QVERIFY(std::find(task.characters().begin(), task.characters().end(), "✓") !=
                task.characters().end());
        QCOMPARE(task.modelVocab(), Index(task.characters().size()));
        QCOMPARE(Index(task.trainingSequence(1, 1, 0).size()), Index(16));
        const std::vector<std::pair<std::string, std::string>> bad = {
            {"empty.txt", ""},
            {"binary.bin", std::string("ab\0cd", 5)},
            {"latin1.txt", "caf\xe9 au lait"},
        };
        for (const auto& [name, bytes] : bad) {
            const std::string path = folder.filePath(QString::fromStdString(name)).toStdString();
            writeFile(path, bytes);
            settings.textFile = path;
            const std::string message = errorOf([&] { Task{settings}; });
            QVERIFY2(message.rfind(path, 0) == 0, message.c_str());
        }
    }

    // A model folder's tokenizer encodes the text: the ids are its ids, the vocabulary its vocabulary, and
    // the trained folder carries the tokenizer, so it reads text like the folder it came from.
    void textWithATokenizer()
    {
        QTemporaryDir folder;
        const std::string source = std::string(QKV_SOURCE_DIR "/tests/data/hf-gpt2-1layer");
        const std::string file = folder.filePath(QStringLiteral("text.txt")).toStdString();
        std::string text;
        for (int i = 0; i < 30; ++i)
            text += "The cat sat on the mat. ";
        writeFile(file, text);
        TaskSettings settings;
        settings.kind = TaskKind::Text;
        settings.length = 8;
        settings.textFile = file;
        settings.tokenizer = source;
        const Task task(settings);
        const Model gpt2 = Model::open(source);
        QCOMPARE(task.modelVocab(), Index(gpt2.tokenizer()->vocabularySize()));
        QVERIFY(task.characters().empty());
        const std::vector<std::int64_t> ids = gpt2.tokenizer()->encode(text);
        const std::vector<std::int64_t> drawn = task.trainingSequence(1, 1, 0);
        QVERIFY(std::search(ids.begin(), ids.end(), drawn.begin(), drawn.end()) != ids.end());

        TrainSettings s = smallRun(folder.filePath(QStringLiteral("run")).toStdString());
        s.task = settings;
        s.steps = 2;
        s.architecture.maxPositions = 0;
        train(s);
        const Model trained = Model::open(s.out);
        QVERIFY(trained.tokenizer() != nullptr);
        QCOMPARE(trained.tokenizer()->encode("The cat"), gpt2.tokenizer()->encode("The cat"));
        QCOMPARE(readJson(s.out + "/training.json")["task"]["tokenizer"].get<std::string>(), source);

        settings.tokenizer = folder.path().toStdString();
        const std::string message = errorOf([&] { Task{settings}; });
        QVERIFY2(message.rfind("--text-tokenizer: ", 0) == 0, message.c_str());
    }

    void runWritesAFolder()
    {
        QTemporaryDir folder;
        const std::string out = folder.filePath(QStringLiteral("run")).toStdString();
        std::vector<StepReport> reports;
        const TrainOutcome outcome = train(smallRun(out), [&](const StepReport& r) {
            reports.push_back(r);
            return true;
        });
        QCOMPARE(outcome.lastStep, std::int64_t(6));
        QCOMPARE(reports.size(), std::size_t(6));
        QVERIFY(reports[2].evaluated && !reports[3].evaluated && reports[5].evaluated);
        QCOMPARE(reports[0].learningRate, 0.5e-2);
        const nlohmann::json log = readJson(out + "/training.json");
        QCOMPARE(log["steps"].size(), std::size_t(6));
        QCOMPARE(log["steps"][0]["step"].get<int>(), 1);
        QCOMPARE(log["steps"][4]["loss"].get<double>(), reports[4].loss);
        QCOMPARE(log["steps"][2]["head_scores"]["induction"].size(), std::size_t(1));
        QCOMPARE(log["steps"][2]["head_scores"]["previous_token"][0].size(), std::size_t(2));
        const Model model = Model::open(out);
        QCOMPARE(model.config().vocabSize, Index(12));
        QCOMPARE(model.checkpoint().info("wte.weight").dtype, std::string("F64"));
    }

    // The probe of step 6 (evaluated before step 6's update) is the model after five updates, which a run of
    // five steps saves: its per-position losses are that folder's forward pass on the probe's ids.
    void probeIsTheModelsPassOnTheProbe()
    {
        QTemporaryDir folder;
        const std::string six = folder.filePath(QStringLiteral("six")).toStdString();
        const std::string five = folder.filePath(QStringLiteral("five")).toStdString();
        StepReport last;
        train(smallRun(six), [&](const StepReport& r) {
            last = r;
            return true;
        });
        TrainSettings s = smallRun(five);
        s.steps = 5;
        train(s);
        const ProbeReport& probe = last.probe;
        QCOMPARE(probe.ids.size(), std::size_t(16));
        QCOMPARE(probe.losses.size(), std::size_t(15));
        QCOMPARE(probe.scored.size(), std::size_t(15));
        QVERIFY(std::count(probe.scored.begin(), probe.scored.end(), 1) > 0);
        QCOMPARE(probe.attention.size(), std::size_t(2));
        for (const Matrix& weights : probe.attention) {
            QCOMPARE(weights.rows(), Index(16));
            QVERIFY((weights.rowwise().sum().array() - 1.0).abs().maxCoeff() < 1e-12);
            QCOMPARE(weights.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().norm(), 0.0);
        }
        const ModelRun run(std::make_shared<const Model>(Model::open(five)), probe.ids, Precision::Float64);
        for (std::size_t i = 0; i < probe.losses.size(); ++i)
            QVERIFY(std::abs(run.clean().positions[i].loss - probe.losses[i]) < 1e-9);
    }

    void resumedRunEqualsOneRun()
    {
        QTemporaryDir folder;
        const std::string whole = folder.filePath(QStringLiteral("whole")).toStdString();
        const std::string first = folder.filePath(QStringLiteral("first")).toStdString();
        const std::string second = folder.filePath(QStringLiteral("second")).toStdString();
        train(smallRun(whole));
        TrainSettings s = smallRun(first);
        s.steps = 4;
        train(s);
        s = smallRun(second);
        s.steps = 2;
        s.init = first;
        s.resume = true;
        train(s);
        const nlohmann::json a = readJson(whole + "/training.json"), b = readJson(second + "/training.json");
        QCOMPARE(b["steps"].size(), std::size_t(6));
        for (std::size_t i = 0; i < 6; ++i)
            QCOMPARE(b["steps"][i]["loss"].get<double>(), a["steps"][i]["loss"].get<double>());
        const Model one = Model::open(whole), two = Model::open(second);
        for (const std::string& name : one.checkpoint().tensorNames()) {
            const bool vector = one.checkpoint().info(name).shape.size() == 1;
            QVERIFY2(vector ? one.checkpoint().readVector(name) == two.checkpoint().readVector(name)
                            : one.checkpoint().readMatrix(name) == two.checkpoint().readMatrix(name),
                     name.c_str());
        }
    }

    void divergenceKeepsTheLastFiniteModel()
    {
        QTemporaryDir folder;
        const std::string out = folder.filePath(QStringLiteral("run")).toStdString();
        TrainSettings s = smallRun(out);
        s.optimizer.kind = OptimizerKind::Sgd;
        s.optimizer.learningRate = 100.0;
        s.optimizer.warmupSteps = 0;
        s.steps = 200;
        s.precision = Precision::Float32;
        const TrainOutcome outcome = train(s);
        QVERIFY(outcome.diverged);
        QCOMPARE(outcome.lastStep + 1, outcome.divergedStep);
        const nlohmann::json log = readJson(out + "/training.json");
        QCOMPARE(log["diverged_at_step"].get<std::int64_t>(), outcome.divergedStep);
        QVERIFY(Model::open(out).checkpoint().readMatrix("wte.weight").allFinite());
    }

    void refusals()
    {
        QTemporaryDir folder;
        const std::string out = folder.filePath(QStringLiteral("run")).toStdString();
        TrainSettings s = smallRun(out);
        s.optimizer.learningRate = -1;
        QVERIFY(errorOf([&] { train(s); }).find("--lr") != std::string::npos);
        s = smallRun(out);
        s.architecture.maxPositions = 8;
        QVERIFY(errorOf([&] { train(s); }).find("--task-length") != std::string::npos);
        s = smallRun(out);
        s.architecture.heads = s.architecture.kvHeads = 32;
        QVERIFY(errorOf([&] { train(s); }).find("--heads") != std::string::npos);
        s = smallRun(out);
        s.task.reset();
        s.dataIds = folder.filePath(QStringLiteral("ids.json")).toStdString();
        writeFile(s.dataIds, "[[1, 2, 3], [4, -5]]");
        QVERIFY(errorOf([&] { train(s); }).rfind(s.dataIds, 0) == 0);
    }
};

QKV_TEST_APPLESS_MAIN(TestTrainingTasks)
#include "tst_training_tasks.moc"
