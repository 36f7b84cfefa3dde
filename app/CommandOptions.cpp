// SPDX-License-Identifier: GPL-3.0-or-later
#include "CommandOptions.h"

#include <cstdlib>
#include <iostream>

namespace qkv::app {

namespace {

OptionSpec valued(std::string_view name, std::string_view valueName, std::string_view description)
{
    return OptionSpec{name, valueName, description};
}

OptionSpec repeated(std::string_view name, std::string_view valueName, std::string_view description)
{
    return OptionSpec{name, valueName, description, true};
}

OptionSpec flag(std::string_view name, std::string_view description, char shortName = 0)
{
    return OptionSpec{name, {}, description, false, shortName};
}

// Options several model commands share, worded once.
const OptionSpec textOption =
    valued("text", "TEXT", "the text, tokenized by the model's own tokenizer (or give --ids)");
const OptionSpec idsOption = valued("ids", "I,J,...", "or the token ids, separated by commas");
const OptionSpec precisionOption =
    valued("precision", "P", "float64 (default) or float32: the precision of the forward pass");

CommandSpec window()
{
    return {{},
            "[FILE | example:NAME]",
            "open the workbench window on a session file or a built-in example (default: example:love)",
            {},
            {flag("version", "show the version", 'v'),
             // For the build's checks: every command's options, one "COMMAND --OPTION" a line.
             OptionSpec{"list-options", {}, "list every option of every command", false, 0, true}}};
}

CommandSpec compute()
{
    return {"compute",
            "[--max-memory SIZE] FILE | - | example:NAME",
            "compute every matrix of the session and print them as JSON",
            "The session is a file, - for standard input, or a built-in example.",
            {valued("max-memory", "SIZE",
                    "refuse a session estimated to need more than SIZE: bytes (2048), a size with a unit "
                    "(512M, 4G) or a share of the physical memory (50%); default: 3/4 of the physical "
                    "memory")}};
}

CommandSpec exportCommand()
{
    return {
        "export",
        "FILE | - | example:NAME --view NAME|all --out PATH|DIR [options]\n"
        "--model MODEL (--text TEXT | --ids I,J,...)\n"
        "  --view model|prediction|scores|sweep|attribution|lens --out PATH [options]\n"
        "--model MODEL --view patch (--clean TEXT --corrupt TEXT | --clean-ids I,J,... --corrupt-ids "
        "I,J,...)\n"
        "  (--answer TEXT | --answer-id N) (--wrong TEXT | --wrong-id N) --what SITE --out PATH [options]\n"
        "--model MODEL --view circuits|composition|decompose [--layer L] [--head H]\n"
        "  [--text TEXT | --ids I,J,...] [--kind q|k|v] [--query I] [--key J] --out PATH [options]",
        "draw a view (or every view) of a session, or a model's attention, prediction or head "
        "scores, as a PNG, SVG or PDF figure without a window",
        "No display is needed. With --model, no session is given: --view model draws every layer and "
        "head of the model's "
        "attention for the text (the window's Model workspace); prediction, scores and sweep draw the "
        "model's prediction, a head score of every head, or the change in loss when each head in "
        "turn is ablated (the Prediction and Head Scores tabs), the grids also as CSV (--format "
        "csv); lens draws the logit lens (each layer's most probable next token at each position) and "
        "patch the normalized grid of an activation-patching experiment, both also as CSV. circuits draws "
        "a head's QK circuit between every pair of the tokens, composition the composition scores of every "
        "earlier head into it (no text needed) and decompose one score taken apart by the residual "
        "stream's components, each also as CSV. Prints the paths written.",
        {valued("view", "NAME",
                "the view to draw (listed below), or all: one file per view "
                "(NAME.SUFFIX) into --out"),
         valued("out", "PATH", "the file to write; with --view all, the folder (created if needed)"),
         valued("head", "H",
                "the head to draw, counted from 0 (default 0): a session's, or the model's for circuits, "
                "composition and decompose"),
         valued("format", "F",
                "png, svg or pdf (csv for the scores, sweep, attribution, lens, patch, circuits, "
                "composition and decompose figures); default: from the suffix of --out, else png"),
         valued("width", "W",
                "the figure's width in pixels of 1/96 inch, from 16 to 20000 "
                "(default: the view's own size)"),
         valued("height", "H", "the figure's height, as --width"),
         valued("scale", "S",
                "PNG pixels per figure pixel, from 0.25 to 8 (default 1; 2: sharper, "
                "same layout)"),
         valued("model", "MODEL",
                "a Hugging Face GPT-2 or LLaMA-family model folder (config.json, "
                "safetensors, tokenizer files for --text) to draw instead of a "
                "session"),
         valued("text", "TEXT", "with --model: the text, tokenized by the model's tokenizer"),
         valued("ids", "I,J,...", "with --model: or its token ids"),
         valued("precision", "P", "with --model: float64 (default) or float32"),
         repeated("intervene", "L.H=CHANGE",
                  "prediction: a head changed in the right-hand run, as for predict (repeatable)"),
         valued("position", "P",
                "prediction: the position whose next token is shown, counted from "
                "0 (default: the last)"),
         valued("score", "NAME",
                "scores: previous_token, duplicate_token, induction (default), "
                "first_token, self or entropy"),
         valued("ablation", "KIND", "sweep: zero (default) or mean"),
         valued("answer", "TEXT",
                "lens: colour the cells by this token's probability; patch: the metric's "
                "logit(answer) − logit(wrong) at the last position (one token)"),
         valued("answer-id", "N", "lens, patch: or the answer's token id"),
         valued("wrong", "TEXT", "patch: the metric's other token (one token)"),
         valued("wrong-id", "N", "patch: or its token id"),
         valued("clean", "TEXT", "patch: the clean prompt, whose activations are patched in"),
         valued("clean-ids", "I,J,...", "patch: or its token ids"),
         valued("corrupt", "TEXT", "patch: the corrupted prompt, as many tokens as the clean one"),
         valued("corrupt-ids", "I,J,...", "patch: or its token ids"),
         valued("what", "SITE",
                "patch: the activation patched: resid_pre, attn_out, mlp_out, head_out, "
                "head_out_pos, head_pattern, head_q, head_k or head_v"),
         valued("method", "M", "patch: exact (default: one run per cell) or attribution (first order)"),
         valued("positions", "I..J",
                "patch: only positions I to J (inclusive, from 0) for the sites with a position axis"),
         valued("layer", "L",
                "circuits, composition, decompose: the head's layer, from 0 (default: the last)"),
         valued("kind", "K",
                "composition: q, k (default) or v, whether the earlier heads are read by the head's query, "
                "key or value"),
         valued("query", "I", "decompose: the query's position, from 0 (default: the last)"),
         valued("key", "J", "decompose: the key's position, from 0 (default 0)")}};
}

CommandSpec tokenize()
{
    return {"tokenize",
            "MODEL --text TEXT",
            "print the token ids and tokens of TEXT as JSON",
            "MODEL is a folder with tokenizer.json, or GPT-2's vocab.json and merges.txt.",
            {valued("text", "TEXT", "the text to tokenize")}};
}

CommandSpec fromModel()
{
    return {"from-model",
            "MODEL --layer L (--text TEXT | --ids I,J,...) [--heads all|H,H,...]\n"
            "  [--precision float64|float32] [--out FILE]",
            "write a session of layer L's attention heads of a Hugging Face GPT-2 or LLaMA-family "
            "model folder (config.json, safetensors)",
            {},
            {valued("layer", "L", "the layer, counted from 0"), textOption, idsOption,
             valued("heads", "all|H,H,...", "the query heads to keep, counted from 0 (default all)"),
             precisionOption, valued("out", "FILE", "write the session there instead of standard output")}};
}

CommandSpec predict()
{
    return {"predict",
            "MODEL (--text TEXT | --ids I,J,...) [--precision float64|float32] [--top K]\n"
            "  [--intervene L.H=zero|mean|scale:C|session:FILE]...",
            "run the model to its next-token distribution at every position and print the top K "
            "tokens and the loss as JSON",
            "Layers and heads are counted from 0.",
            {textOption, idsOption, precisionOption,
             valued("top", "K", "how many tokens to list at each position (default 10)"),
             repeated("intervene", "L.H=CHANGE",
                      "change query head H of layer L before its output projection: zero, mean, scale:C "
                      "or session:FILE; repeat it to apply several changes at once")}};
}

CommandSpec heads()
{
    return {"heads",
            "MODEL (--text TEXT | --ids I,J,...) [--precision float64|float32]",
            "print every head's previous-token, duplicate-token, induction, first-token, self and "
            "entropy scores on the text as JSON",
            {},
            {textOption, idsOption, precisionOption}};
}

CommandSpec patch()
{
    return {"patch",
            "MODEL (--clean TEXT --corrupt TEXT | --clean-ids I,J,... --corrupt-ids I,J,...)\n"
            "  (--answer TEXT | --answer-id N) (--wrong TEXT | --wrong-id N) --what SITE\n"
            "  [--method exact|attribution] [--positions I..J] [--precision float64|float32]\n"
            "  [--script FILE.py]",
            "activation patching: where in the model the difference between a clean and a corrupted "
            "prompt lives, as a grid of layers by positions or heads, printed as JSON",
            "The metric is logit[answer] - logit[wrong] at the last position. Each cell replaces one "
            "activation of the corrupted run (SITE: resid_pre, attn_out, mlp_out, head_out, head_out_pos, "
            "head_pattern, head_q, head_k, head_v) by the clean run's; the grid holds the metric then, raw "
            "and normalized (0: the corrupted run's, 1: the clean run's). Layers, positions and heads are "
            "counted from 0.",
            {valued("clean", "TEXT", "the clean prompt, tokenized by the model's tokenizer"),
             valued("corrupt", "TEXT", "the corrupted prompt: as many tokens as the clean one"),
             valued("clean-ids", "I,J,...", "or the clean prompt's token ids, separated by commas"),
             valued("corrupt-ids", "I,J,...", "or the corrupted prompt's token ids"),
             valued("answer", "TEXT", "the token the metric counts for: a text of exactly one token"),
             valued("answer-id", "N", "or its id"),
             valued("wrong", "TEXT", "the token the metric counts against: a text of exactly one token"),
             valued("wrong-id", "N", "or its id"),
             valued("what", "SITE",
                    "the activation each cell replaces: resid_pre, attn_out, mlp_out (layers × positions), "
                    "head_out, head_pattern, head_q (layers × heads), head_k, head_v (layers × key/value "
                    "heads) or head_out_pos (layers × heads × positions)"),
             valued("method", "M",
                    "exact (default: the corrupted prompt run again for every cell) or attribution (the "
                    "first-order estimate from one backward pass)"),
             valued("positions", "I..J",
                    "the positions of the sites that have a position axis, first and last counted from 0 "
                    "(default: all)"),
             precisionOption,
             valued("script", "FILE.py",
                    "also write a Python script (PyTorch only) that recomputes the grid in float64 from the "
                    "model folder and prints the same JSON")}};
}

CommandSpec lens()
{
    return {"lens",
            "MODEL (--text TEXT | --ids I,J,...) [--answer TEXT | --answer-id N] [--top K]",
            "the logit lens: the residual stream entering every layer, at every position, read through the "
            "final norm and the unembedding; the top K tokens as JSON",
            "Row L (after the last layer) is the model's own prediction, as predict gives it.",
            {textOption, idsOption,
             valued("answer", "TEXT", "a token to follow through the layers: a text of exactly one token"),
             valued("answer-id", "N", "or its id"),
             valued("top", "K", "how many tokens to list at each layer and position (default 10)")}};
}

CommandSpec circuits()
{
    return {"circuits",
            "MODEL --layer L --head H [--text TEXT | --ids I,J,...] [--top K]\n"
            "FILE | - | example:NAME [--head H]",
            "a head's QK and OV circuits: their singular values and eigenvalues, the full OV circuit's "
            "copying score, the composition with every earlier head and, for a text, the token × token QK "
            "table and what each token writes into the logits, as JSON",
            "A folder is read as a model (its norms folded into the weights), anything else as a session, "
            "whose head is taken as the file holds it. Layers and heads are counted from 0.",
            {valued("layer", "L", "the model's layer, counted from 0"),
             valued("head", "H", "the query head, counted from 0 (a session's: default 0)"), textOption,
             idsOption, valued("top", "K", "how many tokens each token's OV circuit lists (default 5)")}};
}

CommandSpec decompose()
{
    return {"decompose",
            "MODEL --layer L --head H (--text TEXT | --ids I,J,...) --query I --key J",
            "one attention score taken apart: the query's and the key's parts from each component of the "
            "residual stream (embedding, position, every earlier head, output bias and MLP), and every "
            "product of two parts, as JSON",
            "The score is the scaled one, before the mask and the softmax: a key the causal mask hides still "
            "has one. Layers, heads and positions are counted from 0.",
            {valued("layer", "L", "the layer, counted from 0"),
             valued("head", "H", "the query head, counted from 0"), textOption, idsOption,
             valued("query", "I", "the query's position, counted from 0"),
             valued("key", "J", "the key's position, counted from 0")}};
}

std::vector<OptionSpec> trainModelOptions()
{
    return {
        valued("init", "MODEL", "start from a GPT-2 or LLaMA-family model folder"),
        valued("resume", "DIR",
               "continue a run qkvlab train saved (its model, optimizer state and step "
               "count)"),
        valued("layers", "L", "a new model's layers (1 to 64; default 2)"),
        valued("heads", "H", "query heads per layer (default 2)"),
        valued("kv-heads", "K", "key/value heads, dividing H (default H; fewer: grouped-query attention)"),
        valued("d-model", "D", "the residual stream's width (default 64); H must divide D"),
        flag("mlp", "add an MLP to each block (4·D wide unless --mlp-width)"),
        valued("mlp-width", "W", "the MLP's width"),
        valued("vocab", "V", "the vocabulary (default: the task's)"),
        valued("positions", "P",
               "learned (GPT-2-shaped: LayerNorm, biases) or rope (LLaMA-shaped: "
               "RMSNorm, RoPE, no biases); default: rope for --task induction, else "
               "learned"),
        valued("max-positions", "N", "the model's positions (default: the task's length)"),
        valued("normalizer", "N", "the attention normalizer: softmax (default), sparsemax or entmax"),
        valued("entmax-alpha", "A", "α of entmax, 1 to 8 (default 1.5)"),
    };
}

std::vector<OptionSpec> trainDataAndRunOptions()
{
    return {
        valued("task", "NAME", "induction, copy, reverse, sort, associative-recall or text"),
        valued("task-vocab", "V", "the tokens the task draws from"),
        valued("task-length", "N", "tokens per sequence"),
        valued("task-min-period", "P", "induction: the shortest period of the repeats"),
        valued("text-file", "FILE", "text: a UTF-8 file, read one character per token"),
        valued("text-tokenizer", "MODEL",
               "text: encode the file with MODEL's tokenizer instead (the "
               "model's vocabulary is then the tokenizer's, and --out gets its "
               "tokenizer files)"),
        valued("data-ids", "FILE",
               "a JSON array of sequences of token ids; step s uses the B sequences "
               "after the (s − 1)·B first ones, wrapping around"),
        valued("steps", "N", "optimizer steps (default 2000)"),
        valued("batch", "B", "sequences per step (default 32)"),
        valued("lr", "X", "the learning rate (default 0.01 for induction, else 0.003)"),
        valued("optimizer", "O", "adamw (default: PyTorch's AdamW defaults) or sgd"),
        valued("weight-decay", "X", "AdamW's decoupled weight decay (default 0.01)"),
        valued("clip", "X", "clip the gradient to this global norm (default: no clipping)"),
        valued("warmup", "N", "raise the learning rate linearly over N steps (default: the recipe's)"),
        valued("seed", "S", "the seed of the initialization and the data (default 1)"),
        valued("precision", "P", "float32 (default) or float64"),
        valued("eval-every", "N", "validation loss and head scores every N steps"),
        flag("quiet", "no progress on standard error"),
        valued("out", "DIR", "the folder to write (created if needed)"),
    };
}

CommandSpec train()
{
    std::vector<OptionSpec> options = trainModelOptions();
    for (OptionSpec& option : trainDataAndRunOptions())
        options.push_back(option);
    return {"train",
            "[--init MODEL | --resume DIR | --layers L --heads H --d-model D [--mlp] [--vocab V]\n"
            "  [--positions learned|rope]] (--task NAME [task options] | --data-ids FILE) [--steps N]\n"
            "  [--batch B] [--lr X] [--optimizer adamw|sgd] [--seed S] [--precision float64|float32]\n"
            "  --out DIR",
            "train a small transformer and save it as a model folder",
            "The model is a decoder-only transformer; the folder holds config.json and "
            "model.safetensors, with training.json (every step's loss, and the head scores every few "
            "steps) and optimizer.safetensors. Progress goes to standard error.",
            std::move(options)};
}

} // namespace

const OptionSpec* CommandSpec::option(std::string_view optionName) const
{
    for (const OptionSpec& candidate : options)
        if (candidate.name == optionName)
            return &candidate;
    return nullptr;
}

const std::vector<CommandSpec>& commandSpecs()
{
    static const std::vector<CommandSpec> all = {window(),    compute(),  exportCommand(), tokenize(),
                                                 fromModel(), predict(),  heads(),         patch(),
                                                 lens(),      circuits(), decompose(),     train()};
    return all;
}

const CommandSpec* findCommand(std::string_view name)
{
    for (const CommandSpec& command : commandSpecs())
        if (command.name == name)
            return &command;
    return nullptr;
}

const CommandSpec& commandSpec(std::string_view name)
{
    if (const CommandSpec* command = findCommand(name))
        return *command;
    std::cerr << "qkvlab: no command " << name << " is declared\n";
    std::abort();
}

} // namespace qkv::app
