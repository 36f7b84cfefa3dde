// SPDX-License-Identifier: GPL-3.0-or-later
#include "Trainer.h"

#include "Error.h"
#include "FileReading.h"
#include "HeadScores.h"
#include "Network.h"
#include "Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>

namespace qkv::training {

namespace {

using Json = nlohmann::ordered_json;

/// The data a run draws its batches from.
struct Data {
    std::optional<Task> task;
    std::vector<std::vector<std::int64_t>> sequences; // --data-ids
};

std::vector<std::vector<std::int64_t>> readDataIds(const std::string& path)
{
    const std::string text = readRegularFile(path, std::uint64_t(1) << 30, "the token-id file");
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
    const auto refuse = [&](const std::string& problem) { throw Error(path + ": " + problem); };
    if (json.is_discarded())
        refuse("not JSON (expected an array of sequences of token ids)");
    if (!json.is_array() || json.empty())
        refuse("expected a non-empty array of sequences of token ids");
    std::vector<std::vector<std::int64_t>> sequences;
    for (std::size_t s = 0; s < json.size(); ++s) {
        if (!json[s].is_array() || json[s].size() < 2)
            refuse("sequence " + std::to_string(s) + ": expected an array of at least 2 token ids");
        std::vector<std::int64_t> ids;
        for (const auto& id : json[s]) {
            if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
                refuse("sequence " + std::to_string(s) + ": expected whole numbers ≥ 0, found " + id.dump());
            ids.push_back(id.get<std::int64_t>());
        }
        sequences.push_back(std::move(ids));
    }
    return sequences;
}

std::vector<std::int64_t> batchSequence(const Data& data, std::uint64_t seed, std::int64_t step, Index index,
                                        Index batch)
{
    if (data.task)
        return data.task->trainingSequence(seed, step, index);
    const auto count = std::uint64_t(data.sequences.size());
    return data.sequences[std::size_t(
        (std::uint64_t(step - 1) * std::uint64_t(batch) + std::uint64_t(index)) % count)];
}

Json matrixJson(const Matrix& m)
{
    Json rows = Json::array();
    for (Index i = 0; i < m.rows(); ++i) {
        Json row = Json::array();
        for (Index j = 0; j < m.cols(); ++j)
            row.push_back(m(i, j));
        rows.push_back(row);
    }
    return rows;
}

std::string optimizerFile(const std::string& folder)
{
    return (std::filesystem::path(folder) / "optimizer.safetensors").string();
}

template <typename Scalar>
void saveOptimizer(const std::string& folder, const Layout& layout, const Optimizer<Scalar>& optimizer)
{
    std::vector<SafetensorsTensor> tensors;
    const std::string dtype = std::is_same_v<Scalar, double> ? "F64" : "F32";
    const auto add = [&](const std::string& prefix, const Tensors<Scalar>& moments) {
        for (std::size_t t = 0; t < moments.size(); ++t) {
            const auto& m = moments[t];
            SafetensorsTensor tensor{prefix + layout.tensors[t].name,
                                     dtype,
                                     {std::uint64_t(m.rows()), std::uint64_t(m.cols())},
                                     std::vector<double>(m.data(), m.data() + m.size())};
            tensors.push_back(std::move(tensor));
        }
    };
    add("exp_avg.", optimizer.firstMoments());
    add("exp_avg_sq.", optimizer.secondMoments());
    writeSafetensors(
        optimizerFile(folder), tensors,
        {{"optimizer", toString(optimizer.settings().kind)}, {"step", std::to_string(optimizer.steps())}});
}

template <typename Scalar>
void restoreOptimizer(const std::string& folder, const Layout& layout, Optimizer<Scalar>& optimizer)
{
    const std::string path = optimizerFile(folder);
    if (!std::filesystem::exists(path))
        throw Error("--resume " + folder + ": no optimizer.safetensors (a folder qkvlab train wrote)");
    const SafetensorsFile file = SafetensorsFile::open(path);
    const auto meta = file.metadata();
    const auto kind = meta.find("optimizer"), step = meta.find("step");
    if (kind == meta.end() || step == meta.end())
        throw Error(path + ": no optimizer or step in its metadata");
    if (kind->second != toString(optimizer.settings().kind))
        throw Error("--resume " + folder + ": the run used --optimizer " + kind->second);
    Tensors<Scalar> first, second;
    if (optimizer.settings().kind == OptimizerKind::AdamW)
        for (const TensorShape& t : layout.tensors) {
            first.push_back(file.readMatrix("exp_avg." + t.name).template cast<Scalar>());
            second.push_back(file.readMatrix("exp_avg_sq." + t.name).template cast<Scalar>());
            if (first.back().rows() != t.rows || first.back().cols() != t.cols)
                throw Error(path + ": exp_avg." + t.name + " does not have the model's shape");
        }
    optimizer.restore(std::stoll(step->second), std::move(first), std::move(second));
}

/// The tokenizer files of `from` into `to`, so the trained folder encodes text as the data was encoded.
void copyTokenizer(const std::string& from, const std::string& to)
{
    namespace fs = std::filesystem;
    for (const char* name :
         {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json"}) {
        const fs::path source = fs::path(from) / name;
        std::error_code error;
        if (!fs::is_regular_file(source, error))
            continue;
        fs::copy_file(source, fs::path(to) / name, fs::copy_options::overwrite_existing, error);
        if (error)
            throw Error(to + "/" + name + ": cannot be written (" + error.message() + ")");
    }
}

template <typename Scalar> struct Evaluation {
    double loss = 0.0, taskLoss = 0.0;
    TrainingScores scores;
    ProbeReport probe;
};

template <typename Scalar>
Evaluation<Scalar> evaluate(const Architecture& a, const Layout& layout, const Tensors<Scalar>& parameters,
                            const Task& task, const Batch& validation)
{
    Evaluation<Scalar> e;
    Network<Scalar> network(a, layout);
    e.loss = network.forward(parameters, validation);
    ProbeReport& probe = e.probe; // the first validation sequence, as the scores below see it
    probe.ids = validation.front();
    double taskSum = 0.0;
    Index taskCount = 0;
    for (std::size_t b = 0; b < validation.size(); ++b) {
        const std::vector<std::uint8_t> scored = task.scoredPositions(validation[b]);
        if (b == 0)
            probe.scored = scored;
        for (std::size_t i = 0; i < scored.size(); ++i)
            if (scored[i] != 0) {
                taskSum += network.positionLosses()(Index(b), Index(i));
                ++taskCount;
            }
    }
    e.taskLoss = taskCount > 0 ? taskSum / double(taskCount) : 0.0;
    const auto probes = std::min<std::size_t>(validation.size(), 8);
    e.scores.previousToken = Matrix::Zero(a.layers, a.heads);
    e.scores.induction = Matrix::Zero(a.layers, a.heads);
    for (std::size_t b = 0; b < probes; ++b)
        for (Index l = 0; l < a.layers; ++l)
            for (Index h = 0; h < a.heads; ++h) {
                Matrix weights = network.attention(Index(b), l, h).template cast<double>();
                e.scores.previousToken(l, h) += headScore(HeadScore::PreviousToken, weights, validation[b]);
                e.scores.induction(l, h) += headScore(HeadScore::Induction, weights, validation[b]);
                if (b == 0) // layer by layer, head by head: index layer · heads + head
                    probe.attention.push_back(std::move(weights));
            }
    e.scores.previousToken /= double(probes);
    e.scores.induction /= double(probes);
    const Matrix& losses = network.positionLosses();
    for (Index i = 0; i < losses.cols(); ++i)
        probe.losses.push_back(losses(0, i));
    return e;
}

Json architectureJson(const Architecture& a)
{
    Json j;
    j["family"] = a.family == ModelFamily::Gpt2 ? "gpt2" : "llama";
    j["layers"] = a.layers;
    j["heads"] = a.heads;
    j["kv_heads"] = a.kvHeads;
    j["d_model"] = a.hiddenSize;
    j["mlp"] = a.intermediateSize;
    j["vocab"] = a.vocabSize;
    j["positions"] = a.maxPositions;
    j["normalizer"] = a.attentionNormalizer.type == NormalizerType::Softmax     ? "softmax"
                      : a.attentionNormalizer.type == NormalizerType::Sparsemax ? "sparsemax"
                                                                                : "entmax";
    if (a.attentionNormalizer.type == NormalizerType::Entmax)
        j["alpha"] = a.attentionNormalizer.alpha;
    return j;
}

template <typename Scalar>
TrainOutcome run(const TrainSettings& settings, Architecture a, const Data& data,
                 const TrainProgress& progress)
{
    const Layout layout = layoutOf(a);
    Tensors<Scalar> parameters = settings.init.empty() ? initialParameters<Scalar>(a, layout, settings.seed)
                                                       : loadParameters<Scalar>(settings.init, a, layout);
    Optimizer<Scalar> optimizer(settings.optimizer, layout);
    Json previous = Json::array();
    if (settings.resume) {
        restoreOptimizer(settings.init, layout, optimizer);
        const std::filesystem::path log = std::filesystem::path(settings.init) / "training.json";
        if (std::filesystem::exists(log)) {
            const Json old = Json::parse(
                readRegularFile(log.string(), std::uint64_t(1) << 30, "training.json"), nullptr, false);
            if (old.is_object() && old.contains("steps") && old["steps"].is_array())
                previous = old["steps"];
        }
    }
    const std::int64_t firstStep = optimizer.steps() + 1, lastStep = optimizer.steps() + settings.steps;
    Batch validation;
    if (data.task)
        for (Index i = 0; i < settings.validationSequences; ++i)
            validation.push_back(data.task->validationSequence(settings.seed, i));
    Json steps = previous;
    Network<Scalar> network(a, layout);
    Tensors<Scalar> gradients, lastFinite;
    TrainOutcome outcome;
    outcome.architecture = a;
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t step = firstStep; step <= lastStep; ++step) {
        Batch batch;
        for (Index i = 0; i < settings.batch; ++i)
            batch.push_back(batchSequence(data, settings.seed, step, i, settings.batch));
        const double loss = network.forward(parameters, batch);
        if (!std::isfinite(loss)) {
            outcome.diverged = true;
            outcome.divergedStep = step;
            if (!lastFinite.empty())
                parameters = lastFinite;
            break;
        }
        StepReport report;
        report.step = step;
        report.lastStep = lastStep;
        report.loss = loss;
        const bool evaluate_ = data.task && (step % settings.evaluateEvery == 0 || step == lastStep);
        if (evaluate_) {
            const Evaluation<Scalar> e = evaluate<Scalar>(a, layout, parameters, *data.task, validation);
            report.evaluated = true;
            report.validationLoss = e.loss;
            report.validationTaskLoss = e.taskLoss;
            report.scores = e.scores;
            report.probe = e.probe;
        }
        network.backward(parameters, gradients);
        lastFinite = parameters;
        report.learningRate = optimizer.step(parameters, gradients);
        outcome.lastStep = step;
        outcome.lastLoss = loss;
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        report.stepsPerSecond = double(step - firstStep + 1) / std::max(seconds, 1e-9);
        report.secondsLeft = double(lastStep - step) / std::max(report.stepsPerSecond, 1e-9);
        Json entry;
        entry["step"] = step;
        entry["loss"] = loss;
        entry["lr"] = report.learningRate;
        if (report.evaluated) {
            entry["validation_loss"] = report.validationLoss;
            entry["validation_task_loss"] = report.validationTaskLoss;
            entry["head_scores"] = {{"previous_token", matrixJson(report.scores.previousToken)},
                                    {"induction", matrixJson(report.scores.induction)}};
        }
        steps.push_back(std::move(entry));
        if (progress && !progress(report)) {
            outcome.stopped = true;
            break;
        }
    }
    saveModel(settings.out, a, layout, parameters);
    saveOptimizer(settings.out, layout, optimizer);
    if (data.task && !data.task->settings().tokenizer.empty())
        copyTokenizer(data.task->settings().tokenizer, settings.out);
    Json log;
    log["steps"] = std::move(steps);
    log["model"] = architectureJson(a);
    if (data.task) {
        const TaskSettings& t = data.task->settings();
        log["task"] = {{"name", toString(t.kind)},
                       {"vocab", t.vocab},
                       {"length", t.length},
                       {"min_period", t.minPeriod}};
        if (!data.task->characters().empty())
            log["task"]["characters"] = data.task->characters();
        if (!t.tokenizer.empty())
            log["task"]["tokenizer"] = t.tokenizer;
    } else {
        log["data_ids"] = settings.dataIds;
    }
    log["optimizer"] = {{"name", toString(settings.optimizer.kind)},
                        {"lr", settings.optimizer.learningRate},
                        {"clip", settings.optimizer.clipNorm},
                        {"warmup", settings.optimizer.warmupSteps}};
    log["batch"] = settings.batch;
    log["seed"] = settings.seed;
    log["precision"] = std::is_same_v<Scalar, double> ? "float64" : "float32";
    if (outcome.diverged)
        log["diverged_at_step"] = outcome.divergedStep;
    const std::string text = log.dump(1) + "\n";
    std::ofstream file(std::filesystem::path(settings.out) / "training.json", std::ios::binary);
    file << text;
    if (!file.flush())
        throw Error(settings.out + "/training.json: cannot be written");
    return outcome;
}

} // namespace

Recipe defaultRecipe(TaskKind kind)
{
    Recipe r;
    Architecture& a = r.architecture;
    a.layers = 2;
    a.heads = a.kvHeads = 2;
    a.hiddenSize = 64;
    a.headDim = 32;
    r.steps = 2000;
    r.batch = 32;
    r.learningRate = 1e-2;
    r.warmupSteps = 100;
    if (kind == TaskKind::Induction) {
        // RoPE: with learned positions the previous-token head, and so the induction head, forms far later
        // (docs/training.md).
        a.family = ModelFamily::Llama;
        a.modelType = "llama";
        a.qkvBias = a.outputBias = a.mlpBias = false;
    } else if (kind == TaskKind::Text) {
        a.heads = a.kvHeads = 4;
        a.hiddenSize = 128;
        a.intermediateSize = 512;
        r.learningRate = 3e-3;
    } else {
        r.learningRate = 3e-3;
    }
    return r;
}

TrainOutcome train(const TrainSettings& given, const TrainProgress& progress)
{
    TrainSettings settings = given;
    if (settings.out.empty())
        throw Error("--out DIR is needed: the folder the model is saved to");
    if (settings.task.has_value() == !settings.dataIds.empty())
        throw Error("give either --task NAME or --data-ids FILE");
    if (settings.resume && settings.init.empty())
        throw Error("--resume needs the folder of the run to continue");
    Data data;
    if (settings.task)
        data.task.emplace(*settings.task);
    else
        data.sequences = readDataIds(settings.dataIds);
    const Recipe recipe = defaultRecipe(settings.task ? settings.task->kind : TaskKind::Text);
    if (settings.steps == 0)
        settings.steps = recipe.steps;
    if (settings.batch == 0)
        settings.batch = settings.task ? recipe.batch : std::min<Index>(8, Index(data.sequences.size()));
    if (settings.evaluateEvery == 0)
        settings.evaluateEvery = std::max<std::int64_t>(1, std::min<std::int64_t>(100, settings.steps / 20));
    if (settings.steps < 1 || settings.steps > 100'000'000)
        throw Error("--steps " + std::to_string(settings.steps) + ": expected 1 to 100000000");
    if (settings.batch < 1 || settings.batch > 1'000'000)
        throw Error("--batch " + std::to_string(settings.batch) + ": expected 1 to 1000000");
    if (settings.evaluateEvery < 1)
        throw Error("--eval-every: expected 1 or more steps");
    checkOptimizerSettings(settings.optimizer);
    Architecture a = settings.init.empty() ? settings.architecture : architectureOf(settings.init);
    if (!settings.init.empty())
        a.attentionNormalizer = settings.architecture.attentionNormalizer;
    if (settings.init.empty() && data.task) {
        if (a.vocabSize != 0 && a.vocabSize < data.task->modelVocab())
            throw Error("--vocab " + std::to_string(a.vocabSize) + ": the task needs " +
                        std::to_string(data.task->modelVocab()) + " tokens");
        if (a.vocabSize == 0)
            a.vocabSize = data.task->modelVocab();
        if (a.maxPositions == 0)
            a.maxPositions = data.task->sequenceLength();
    }
    if (settings.init.empty() && !data.task)
        for (const auto& sequence : data.sequences) {
            if (settings.architecture.vocabSize == 0)
                a.vocabSize =
                    std::max<Index>(a.vocabSize, 1 + *std::max_element(sequence.begin(), sequence.end()));
            if (settings.architecture.maxPositions == 0)
                a.maxPositions = std::max<Index>(a.maxPositions, Index(sequence.size()));
        }
    checkArchitecture(a);
    const Index length = data.task ? data.task->sequenceLength() : 0;
    if (data.task && length > a.maxPositions)
        throw Error("--task-length " + std::to_string(length) + ": longer than the model's " +
                    std::to_string(a.maxPositions) + " positions");
    if (data.task && data.task->modelVocab() > a.vocabSize)
        throw Error("--task-vocab: the task needs " + std::to_string(data.task->modelVocab()) +
                    " tokens, more than the model's vocabulary of " + std::to_string(a.vocabSize));
    for (std::size_t s = 0; s < data.sequences.size(); ++s) {
        if (Index(data.sequences[s].size()) > a.maxPositions)
            throw Error(settings.dataIds + ": sequence " + std::to_string(s) +
                        " has more tokens than the model's " + std::to_string(a.maxPositions) + " positions");
        for (std::int64_t id : data.sequences[s])
            if (id >= a.vocabSize)
                throw Error(settings.dataIds + ": sequence " + std::to_string(s) + ": token id " +
                            std::to_string(id) + " is outside the model's vocabulary of " +
                            std::to_string(a.vocabSize));
    }
    TrainOutcome outcome = settings.precision == Precision::Float64 ? run<double>(settings, a, data, progress)
                                                                    : run<float>(settings, a, data, progress);
    outcome.taskVocab = data.task ? data.task->settings().vocab : 0;
    return outcome;
}

} // namespace qkv::training
