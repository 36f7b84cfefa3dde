// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainSettings.h"

#include "Error.h"

namespace qkv::app {

namespace {

/// Which model the run starts from, and where it is saved; refuses shape options for a model that exists.
void readModelSource(const ParsedArguments& arguments, training::TrainSettings& s)
{
    const bool newModel = !arguments.has("init") && !arguments.has("resume");
    if (arguments.has("init") && arguments.has("resume"))
        throw Error("give --init MODEL or --resume DIR, not both");
    for (const char* shape : {"layers", "heads", "kv-heads", "d-model", "mlp-width", "vocab", "positions",
                              "max-positions", "mlp"})
        if (!newModel && arguments.has(shape))
            throw Error("--" + std::string(shape) +
                        " shapes a new model; the model of --init or --resume has its own");
    if (arguments.has("task") == arguments.has("data-ids"))
        throw Error("give either --task NAME or --data-ids FILE");
    if (!arguments.has("out"))
        throw Error("--out DIR is needed: the folder the model is saved to");
    s.out = arguments.value("out");
    s.init = arguments.value("init", arguments.value("resume"));
    s.resume = arguments.has("resume");
}

/// --task and its options, or --data-ids; returns the task's kind (Text for --data-ids).
training::TaskKind readData(const ParsedArguments& arguments, training::TrainSettings& s)
{
    if (!arguments.has("task")) {
        s.dataIds = arguments.value("data-ids");
        for (const char* taskOption :
             {"task-vocab", "task-length", "task-min-period", "text-file", "text-tokenizer"})
            if (arguments.has(taskOption))
                throw Error("--" + std::string(taskOption) + " is a --task option");
        return training::TaskKind::Text;
    }
    training::TaskSettings task;
    task.kind = training::taskKind(arguments.value("task"));
    task.vocab = arguments.wholeNumber("task-vocab", 2, 1'000'000).value_or(0);
    task.length = arguments.wholeNumber("task-length", 2, 100'000).value_or(0);
    task.minPeriod = arguments.wholeNumber("task-min-period", 1, 50'000).value_or(0);
    for (const char* textOption : {"text-file", "text-tokenizer"})
        if (arguments.has(textOption) && task.kind != training::TaskKind::Text)
            throw Error("--" + std::string(textOption) + " is for --task text");
    task.textFile = arguments.value("text-file");
    task.tokenizer = arguments.value("text-tokenizer");
    s.task = task;
    return task.kind;
}

/// A new model's shape: the recipe's, changed by the shape options.
void readArchitecture(const ParsedArguments& arguments, const training::Recipe& recipe,
                      training::Architecture& a)
{
    a = recipe.architecture;
    const long long heads = arguments.wholeNumber("heads", 1, 8192).value_or(a.heads);
    const long long d = arguments.wholeNumber("d-model", 2, 8192).value_or(a.hiddenSize);
    a.layers = arguments.wholeNumber("layers", 1, 64).value_or(a.layers);
    a.heads = heads;
    a.kvHeads = arguments.wholeNumber("kv-heads", 1, 8192).value_or(heads);
    a.hiddenSize = d;
    const std::optional<long long> width = arguments.wholeNumber("mlp-width", 1, 1'000'000);
    a.vocabSize = arguments.wholeNumber("vocab", 2, 1'000'000).value_or(0);
    a.maxPositions = arguments.wholeNumber("max-positions", 2, 1'000'000).value_or(0);
    if (heads > d)
        throw Error("--heads " + std::to_string(heads) + ": more heads than --d-model " + std::to_string(d) +
                    " allows (each head needs at least one dimension)");
    if (d % heads != 0)
        throw Error("--heads " + std::to_string(heads) + " does not divide --d-model " + std::to_string(d));
    a.headDim = d / heads;
    const bool mlp = arguments.has("mlp");
    if (width && !mlp)
        throw Error("--mlp-width needs --mlp");
    a.intermediateSize = mlp ? width.value_or(4 * d) : (arguments.has("layers") ? 0 : a.intermediateSize);
    if (const std::optional<std::string> p = arguments.choice("positions", {"learned", "rope"})) {
        const bool rope = *p == "rope";
        a.family = rope ? ModelFamily::Llama : ModelFamily::Gpt2;
        a.modelType = rope ? "llama" : "gpt2";
        a.qkvBias = a.outputBias = a.mlpBias = !rope;
    }
    if (const std::optional<std::string> n =
            arguments.choice("normalizer", {"softmax", "sparsemax", "entmax"}))
        a.attentionNormalizer.type = *n == "softmax"     ? NormalizerType::Softmax
                                     : *n == "sparsemax" ? NormalizerType::Sparsemax
                                                         : NormalizerType::Entmax;
    if (const std::optional<double> alpha = arguments.number("entmax-alpha", 1.0, 8.0)) {
        if (a.attentionNormalizer.type != NormalizerType::Entmax)
            throw Error("--entmax-alpha needs --normalizer entmax");
        a.attentionNormalizer.alpha = *alpha;
    }
}

/// The run's length, batches, seed and optimizer.
void readRun(const ParsedArguments& arguments, const training::Recipe& recipe, training::TrainSettings& s)
{
    s.steps = arguments.wholeNumber("steps", 1, 100'000'000).value_or(0);
    s.batch = arguments.wholeNumber("batch", 1, 1'000'000).value_or(0);
    const long long warmup = arguments.wholeNumber("warmup", 0, 100'000'000).value_or(recipe.warmupSteps);
    s.seed = std::uint64_t(arguments.wholeNumber("seed", 0, 1'000'000'000'000LL).value_or(1));
    s.evaluateEvery = arguments.wholeNumber("eval-every", 1, 100'000'000).value_or(0);
    // A generated task keeps its recipe's warm-up; given ids warm up only when asked to.
    s.optimizer.warmupSteps = arguments.has("task") || arguments.has("warmup") ? warmup : 0;
    s.optimizer.learningRate = arguments.number("lr").value_or(recipe.learningRate);
    s.optimizer.clipNorm = arguments.number("clip").value_or(s.optimizer.clipNorm);
    s.optimizer.weightDecay = arguments.number("weight-decay").value_or(s.optimizer.weightDecay);
    if (const std::optional<std::string> o = arguments.choice("optimizer", {"adamw", "sgd"}))
        s.optimizer.kind = *o == "sgd" ? training::OptimizerKind::Sgd : training::OptimizerKind::AdamW;
    if (const std::optional<std::string> p = arguments.choice("precision", {"float64", "float32"}))
        s.precision = *p == "float64" ? Precision::Float64 : Precision::Float32;
}

} // namespace

training::TrainSettings trainSettings(const ParsedArguments& arguments)
{
    if (!arguments.positional.empty())
        throw Error("unexpected argument " + arguments.positional.front());
    training::TrainSettings s;
    readModelSource(arguments, s);
    const training::Recipe recipe = training::defaultRecipe(readData(arguments, s));
    readArchitecture(arguments, recipe, s.architecture);
    readRun(arguments, recipe, s);
    return s;
}

} // namespace qkv::app
