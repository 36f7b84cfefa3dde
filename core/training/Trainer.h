// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// A training run from start to saved folder (docs/training.md): a new model or one read from a folder,
/// batches from a task or from a file of token ids, an optimizer, every step's loss, and every few steps
/// the validation loss and the head scores; the model folder, training.json and the optimizer's state
/// written at the end, so another run can resume where this one stopped.

#include "Optimizer.h"
#include "Tasks.h"
#include "TrainingModel.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qkv::training {

struct TrainSettings {
    std::string init;    ///< a model folder to start from; empty: a new model of `architecture`
    bool resume = false; ///< with `init`: its optimizer state and step count too (it was saved by train())
    Architecture architecture;
    std::optional<TaskSettings> task; ///< the data: a task, or
    std::string dataIds;              ///< a JSON file holding an array of sequences of token ids
    std::int64_t steps = 0;           ///< 0: the recipe's
    Index batch = 0;                  ///< 0: the recipe's
    OptimizerSettings optimizer;
    std::uint64_t seed = 1;
    Precision precision = Precision::Float32;
    std::string out;
    std::int64_t evaluateEvery =
        0; ///< validation loss and head scores every this many steps (0: the recipe's)
    Index validationSequences = 32;
};

/// The recipe a task trains with when no option says otherwise: the model's shape, steps, batch and rate.
struct Recipe {
    Architecture architecture;
    std::int64_t steps = 0;
    Index batch = 0;
    double learningRate = 0.0;
    std::int64_t warmupSteps = 0;
};

/// The defaults for `kind` (documented in docs/training.md).
Recipe defaultRecipe(TaskKind kind);

/// A head score grid of the two scores the trainer follows (layers × heads each).
struct TrainingScores {
    Matrix previousToken, induction;
};

/// The probe: the first validation sequence, the loss at each of its positions and every head's attention
/// on it, so a window can show the repeated half's loss fall and the heads' patterns form.
struct ProbeReport {
    std::vector<std::int64_t> ids;
    std::vector<double> losses;       ///< n − 1: the loss of predicting token i + 1 from positions 0 … i
    std::vector<std::uint8_t> scored; ///< n − 1: the positions whose next token the task determines
    std::vector<Matrix> attention;    ///< layer · heads + head: n × n weights, a row per query
};

/// What the trainer says after each step.
struct StepReport {
    std::int64_t step = 0, lastStep = 0; ///< this step (from 1, continuing a resumed run) and the last
    double loss = 0.0;                   ///< the batch's loss before the step's update
    double learningRate = 0.0;
    double stepsPerSecond = 0.0, secondsLeft = 0.0;
    bool evaluated = false; ///< the fields below are set
    double validationLoss = 0.0;
    double validationTaskLoss = 0.0; ///< over the positions the task determines (induction: the repeats)
    TrainingScores scores;
    ProbeReport probe;
};

struct TrainOutcome {
    std::int64_t lastStep = 0; ///< the last step whose update was applied
    double lastLoss = 0.0;
    bool diverged = false; ///< the loss became NaN or infinite at `divergedStep`
    std::int64_t divergedStep = 0;
    bool stopped = false; ///< the progress function asked to stop
    Architecture architecture;
    Index taskVocab = 0;
};

/// Told after every step; returning false stops the run (the model so far is saved).
using TrainProgress = std::function<bool(const StepReport&)>;

/// Checks the settings and the data, trains, and writes `out`. Throws qkv::Error naming the option or file
/// at fault before the first step. A loss that is not finite stops the run at that step; the model saved is
/// the last one whose loss was finite.
TrainOutcome train(const TrainSettings& settings, const TrainProgress& progress = {});

} // namespace qkv::training
