// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainCommand.h"

#include "Error.h"
#include "Trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

namespace qkv::app {

namespace {

constexpr const char* usageText =
    "Usage: qkvlab train [--init MODEL | --resume DIR | --layers L --heads H --d-model D [--mlp]\n"
    "         [--vocab V] [--positions learned|rope]] (--task NAME [task options] | --data-ids FILE)\n"
    "         [--steps N] [--batch B] [--lr X] [--optimizer adamw|sgd] [--seed S]\n"
    "         [--precision float64|float32] --out DIR\n"
    "Trains a decoder-only transformer and saves it as a model folder (config.json, model.safetensors),\n"
    "with training.json (every step's loss, and the head scores every few steps) and optimizer.safetensors.\n"
    "  --init MODEL          start from a GPT-2 or LLaMA-family model folder\n"
    "  --resume DIR          continue a run qkvlab train saved (its model, optimizer state and step count)\n"
    "  --layers L            a new model's layers (1 to 64; default 2)\n"
    "  --heads H             query heads per layer (default 2)\n"
    "  --kv-heads K          key/value heads, dividing H (default H; fewer: grouped-query attention)\n"
    "  --d-model D           the residual stream's width (default 64); H must divide D\n"
    "  --mlp                 add an MLP to each block (4·D wide unless --mlp-width)\n"
    "  --mlp-width W         the MLP's width\n"
    "  --vocab V             the vocabulary (default: the task's)\n"
    "  --positions P         learned (GPT-2-shaped: LayerNorm, biases) or rope (LLaMA-shaped: RMSNorm,\n"
    "                        RoPE, no biases); default: rope for --task induction, else learned\n"
    "  --max-positions N     the model's positions (default: the task's length)\n"
    "  --normalizer N        the attention normalizer: softmax (default), sparsemax or entmax\n"
    "  --entmax-alpha A      α of entmax, 1 to 8 (default 1.5)\n"
    "  --task NAME           induction, copy, reverse, sort, associative-recall or text\n"
    "  --task-vocab V        the tokens the task draws from\n"
    "  --task-length N       tokens per sequence\n"
    "  --task-min-period P   induction: the shortest period of the repeats\n"
    "  --text-file FILE      text: a UTF-8 file, read one character per token\n"
    "  --text-tokenizer MODEL\n"
    "                        text: encode the file with MODEL's tokenizer instead (the model's\n"
    "                        vocabulary is then the tokenizer's, and --out gets its tokenizer files)\n"
    "  --data-ids FILE       a JSON array of sequences of token ids; step s uses the B sequences after\n"
    "                        the (s − 1)·B first ones, wrapping around\n"
    "  --steps N             optimizer steps (default 2000)\n"
    "  --batch B             sequences per step (default 32)\n"
    "  --lr X                the learning rate (default 0.01 for induction, else 0.003)\n"
    "  --optimizer O         adamw (default: PyTorch's AdamW defaults) or sgd\n"
    "  --weight-decay X      AdamW's decoupled weight decay (default 0.01)\n"
    "  --clip X              clip the gradient to this global norm (default: no clipping)\n"
    "  --warmup N            raise the learning rate linearly over N steps (default: the recipe's)\n"
    "  --seed S              the seed of the initialization and the data (default 1)\n"
    "  --precision P         float32 (default) or float64\n"
    "  --eval-every N        validation loss and head scores every N steps\n"
    "  --quiet               no progress on standard error\n"
    "  --out DIR             the folder to write (created if needed)\n";

std::string duration(double seconds)
{
    const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    char text[32];
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
    return text;
}

bool parseWhole(const std::string& text, long long& value)
{
    if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789-") != std::string::npos)
        return false;
    try {
        std::size_t used = 0;
        value = std::stoll(text, &used);
        return used == text.size();
    } catch (const std::exception&) {
        return false;
    }
}

bool parseNumber(const std::string& text, double& value)
{
    try {
        std::size_t used = 0;
        value = std::stod(text, &used);
        return used == text.size() && std::isfinite(value);
    } catch (const std::exception&) {
        return false;
    }
}

} // namespace

const char* trainUsage()
{
    return usageText;
}

CommandLineOutcome runTrain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    (void)out;
    CommandLineOutcome outcome;
    outcome.handled = true;
    const auto fail = [&](const std::string& message) {
        err << "qkvlab train: " << message << "\n";
        outcome.exitCode = 2;
        return outcome;
    };
    static const std::set<std::string> flags = {"--mlp", "--quiet", "--help"};
    static const std::set<std::string> valued = {"--init",        "--resume",
                                                 "--layers",      "--heads",
                                                 "--kv-heads",    "--d-model",
                                                 "--mlp-width",   "--vocab",
                                                 "--positions",   "--max-positions",
                                                 "--normalizer",  "--entmax-alpha",
                                                 "--task",        "--task-vocab",
                                                 "--task-length", "--task-min-period",
                                                 "--text-file",   "--text-tokenizer",
                                                 "--data-ids",    "--steps",
                                                 "--batch",       "--lr",
                                                 "--optimizer",   "--weight-decay",
                                                 "--clip",        "--warmup",
                                                 "--seed",        "--precision",
                                                 "--eval-every",  "--out"};
    std::map<std::string, std::string> options;
    std::set<std::string> given;
    for (std::size_t i = 1; i < args.size(); ++i) {
        std::string arg = args[i], value;
        const std::size_t equals = arg.find('=');
        const bool inline_ = arg.rfind("--", 0) == 0 && equals != std::string::npos;
        if (inline_) {
            value = arg.substr(equals + 1);
            arg = arg.substr(0, equals);
        }
        if (flags.count(arg) && !inline_) {
            given.insert(arg);
            continue;
        }
        if (!valued.count(arg))
            return fail(arg.rfind("-", 0) == 0 ? "unknown option " + arg : "unexpected argument " + arg);
        if (!inline_) {
            if (i + 1 >= args.size())
                return fail(arg + " needs a value");
            value = args[++i];
        }
        if (options.count(arg))
            return fail(arg + " is given twice");
        options[arg] = value;
    }
    if (given.count("--help")) {
        out << usageText;
        return outcome;
    }
    training::TrainSettings s;
    const auto has = [&](const char* name) { return options.count(name) > 0; };
    long long whole = 0;
    double number = 0.0;
    const auto wholeOption = [&](const char* name, long long low, long long high, long long& target) {
        if (!has(name))
            return true;
        if (!parseWhole(options[name], whole) || whole < low || whole > high) {
            fail(std::string(name) + " " + options[name] + ": expected a whole number from " +
                 std::to_string(low) + " to " + std::to_string(high));
            return false;
        }
        target = whole;
        return true;
    };
    try {
        const bool newModel = !has("--init") && !has("--resume");
        if (has("--init") && has("--resume"))
            return fail("give --init MODEL or --resume DIR, not both");
        for (const char* shape : {"--layers", "--heads", "--kv-heads", "--d-model", "--mlp-width", "--vocab",
                                  "--positions", "--max-positions"})
            if (!newModel && has(shape))
                return fail(std::string(shape) +
                            " shapes a new model; the model of --init or --resume has its own");
        if (!newModel && given.count("--mlp"))
            return fail("--mlp shapes a new model; the model of --init or --resume has its own");
        if (has("--task") == has("--data-ids"))
            return fail("give either --task NAME or --data-ids FILE");
        if (!has("--out"))
            return fail("--out DIR is needed: the folder the model is saved to");
        s.out = options["--out"];
        s.init = has("--init") ? options["--init"] : has("--resume") ? options["--resume"] : "";
        s.resume = has("--resume");
        training::TaskKind kind = training::TaskKind::Text;
        if (has("--task")) {
            training::TaskSettings task;
            task.kind = kind = training::taskKind(options["--task"]);
            long long v = 0, n = 0, p = 0;
            if (!wholeOption("--task-vocab", 2, 1'000'000, v) ||
                !wholeOption("--task-length", 2, 100'000, n) ||
                !wholeOption("--task-min-period", 1, 50'000, p))
                return outcome;
            task.vocab = v;
            task.length = n;
            task.minPeriod = p;
            if (has("--text-file") && task.kind != training::TaskKind::Text)
                return fail("--text-file is for --task text");
            task.textFile = has("--text-file") ? options["--text-file"] : "";
            if (has("--text-tokenizer") && task.kind != training::TaskKind::Text)
                return fail("--text-tokenizer is for --task text");
            task.tokenizer = has("--text-tokenizer") ? options["--text-tokenizer"] : "";
            s.task = task;
        } else {
            s.dataIds = options["--data-ids"];
            for (const char* taskOption :
                 {"--task-vocab", "--task-length", "--task-min-period", "--text-file", "--text-tokenizer"})
                if (has(taskOption))
                    return fail(std::string(taskOption) + " is a --task option");
        }
        const training::Recipe recipe = training::defaultRecipe(kind);
        training::Architecture& a = s.architecture;
        a = recipe.architecture;
        a.vocabSize = 0;
        a.maxPositions = 0;
        long long layers = a.layers, heads = a.heads, kvHeads = -1, d = a.hiddenSize, width = -1, vocab = 0,
                  positions = 0;
        if (!wholeOption("--layers", 1, 64, layers) || !wholeOption("--heads", 1, 8192, heads) ||
            !wholeOption("--kv-heads", 1, 8192, kvHeads) || !wholeOption("--d-model", 2, 8192, d) ||
            !wholeOption("--mlp-width", 1, 1'000'000, width) ||
            !wholeOption("--vocab", 2, 1'000'000, vocab) ||
            !wholeOption("--max-positions", 2, 1'000'000, positions))
            return outcome;
        a.layers = layers;
        a.heads = heads;
        a.kvHeads = kvHeads > 0 ? kvHeads : heads;
        a.hiddenSize = d;
        if (heads > d)
            return fail("--heads " + std::to_string(heads) + ": more heads than --d-model " +
                        std::to_string(d) + " allows (each head needs at least one dimension)");
        if (d % heads != 0)
            return fail("--heads " + std::to_string(heads) + " does not divide --d-model " +
                        std::to_string(d));
        a.headDim = d / heads;
        if (width > 0 && !given.count("--mlp"))
            return fail("--mlp-width needs --mlp");
        a.intermediateSize =
            given.count("--mlp") ? (width > 0 ? width : 4 * d) : (has("--layers") ? 0 : a.intermediateSize);
        a.vocabSize = vocab;
        a.maxPositions = positions;
        if (has("--positions")) {
            const std::string& p = options["--positions"];
            if (p != "rope" && p != "learned")
                return fail("--positions " + p + ": expected learned or rope");
            const bool rope = p == "rope";
            a.family = rope ? ModelFamily::Llama : ModelFamily::Gpt2;
            a.modelType = rope ? "llama" : "gpt2";
            a.qkvBias = a.outputBias = a.mlpBias = !rope;
        }
        if (has("--normalizer")) {
            const std::string& n = options["--normalizer"];
            a.attentionNormalizer.type = n == "softmax"     ? NormalizerType::Softmax
                                : n == "sparsemax" ? NormalizerType::Sparsemax
                                : n == "entmax"    ? NormalizerType::Entmax
                                                   : NormalizerType::Hardmax;
            if (a.attentionNormalizer.type == NormalizerType::Hardmax)
                return fail("--normalizer " + n + ": expected softmax, sparsemax or entmax");
        }
        if (has("--entmax-alpha")) {
            if (!parseNumber(options["--entmax-alpha"], number) || number < 1.0 || number > 8.0)
                return fail("--entmax-alpha " + options["--entmax-alpha"] +
                            ": expected a number from 1 to 8");
            if (a.attentionNormalizer.type != NormalizerType::Entmax)
                return fail("--entmax-alpha needs --normalizer entmax");
            a.attentionNormalizer.alpha = number;
        }
        long long steps = 0, batch = 0, warmup = recipe.warmupSteps, seed = 1, every = 0;
        if (!wholeOption("--steps", 1, 100'000'000, steps) || !wholeOption("--batch", 1, 1'000'000, batch) ||
            !wholeOption("--warmup", 0, 100'000'000, warmup) ||
            !wholeOption("--seed", 0, 1'000'000'000'000LL, seed) ||
            !wholeOption("--eval-every", 1, 100'000'000, every))
            return outcome;
        s.steps = steps;
        s.batch = batch;
        s.seed = std::uint64_t(seed);
        s.evaluateEvery = every;
        s.optimizer.warmupSteps = has("--task") ? warmup : (has("--warmup") ? warmup : 0);
        s.optimizer.learningRate = recipe.learningRate;
        const auto numberOption = [&](const char* name, double& target) {
            if (!has(name))
                return true;
            if (!parseNumber(options[name], number)) {
                fail(std::string(name) + " " + options[name] + ": expected a number");
                return false;
            }
            target = number;
            return true;
        };
        if (!numberOption("--lr", s.optimizer.learningRate) ||
            !numberOption("--clip", s.optimizer.clipNorm) ||
            !numberOption("--weight-decay", s.optimizer.weightDecay))
            return outcome;
        if (has("--optimizer")) {
            const std::string& o = options["--optimizer"];
            if (o != "adamw" && o != "sgd")
                return fail("--optimizer " + o + ": expected adamw or sgd");
            s.optimizer.kind = o == "sgd" ? training::OptimizerKind::Sgd : training::OptimizerKind::AdamW;
        }
        if (has("--precision")) {
            const std::string& p = options["--precision"];
            if (p != "float64" && p != "float32")
                return fail("--precision " + p + ": expected float64 or float32");
            s.precision = p == "float64" ? Precision::Float64 : Precision::Float32;
        }
    } catch (const Error& e) {
        return fail(e.what());
    }
    const bool quiet = given.count("--quiet") > 0;
    auto lastPrint = std::chrono::steady_clock::now() - std::chrono::seconds(10);
    const auto progress = [&](const training::StepReport& r) {
        const auto now = std::chrono::steady_clock::now();
        if (quiet || !(r.evaluated || r.step == r.lastStep || now - lastPrint > std::chrono::seconds(2)))
            return true;
        lastPrint = now;
        char line[200];
        std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f", static_cast<long long>(r.step),
                      static_cast<long long>(r.lastStep), r.loss);
        err << line;
        if (r.evaluated) {
            std::snprintf(line, sizeof line, "  validation %.4f (task positions %.4f)", r.validationLoss,
                          r.validationTaskLoss);
            err << line;
            std::snprintf(line, sizeof line, "  previous-token %.2f  induction %.2f",
                          r.scores.previousToken.maxCoeff(), r.scores.induction.maxCoeff());
            err << line;
        }
        std::snprintf(line, sizeof line, "  %.1f steps/s  %s left\n", r.stepsPerSecond,
                      duration(r.secondsLeft).c_str());
        err << line << std::flush;
        return true;
    };
    try {
        const training::TrainOutcome result = training::train(s, progress);
        if (result.diverged) {
            err << "qkvlab train: the loss is not finite at step " << result.divergedStep
                << "; try a lower learning rate (--lr); the model of step " << result.lastStep
                << " is saved in " << s.out << "\n";
            outcome.exitCode = 1;
            return outcome;
        }
        if (!quiet)
            err << "saved " << s.out << "\n";
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("not enough memory for this model and batch");
    }
    return outcome;
}

} // namespace qkv::app
