// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Training data made in the program (docs/training.md): sequences of a task, each step's batch drawn from
/// the seed and the step's number (so a run is reproducible and can resume at any step), and a held-out
/// validation set drawn from a stream no step uses.

#include "EigenTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::training {

enum class TaskKind { Induction, Copy, Reverse, Sort, AssociativeRecall, Text };

/// "induction", "copy", "reverse", "sort", "associative-recall", "text".
const char* toString(TaskKind kind);
/// The task named `name`; throws qkv::Error naming --task and listing the tasks.
TaskKind taskKind(const std::string& name);

struct TaskSettings {
    TaskKind kind = TaskKind::Induction;
    Index vocab = 0;       ///< --task-vocab: the tokens the task draws from (0: the task's default)
    Index length = 0;      ///< --task-length: tokens in a sequence (0: the task's default)
    Index minPeriod = 0;   ///< --task-min-period (induction; 0: the default)
    std::string textFile;  ///< text: a UTF-8 file, read at character level, or
    std::string tokenizer; ///< text: a model folder whose tokenizer encodes the file (its vocabulary's ids)
};

/// A task ready to draw from: its settings with the defaults filled in, the model vocabulary it needs and,
/// for text, the text's ids: at character level with the characters (one UTF-8 string per token id), or
/// the ids of a model folder's tokenizer (the model's vocabulary is then the tokenizer's).
class Task {
public:
    /// Fills in defaults and checks the settings; throws qkv::Error naming the option (--task-vocab,
    /// --task-length, --task-min-period, --text-file, --text-tokenizer). A text file that is empty, not UTF-8
    /// or binary (a NUL or other control character than tab, newline and carriage return) is refused by name.
    explicit Task(TaskSettings settings);

    const TaskSettings& settings() const { return m_settings; }
    /// The tokens a model for this task needs.
    Index modelVocab() const { return m_modelVocab; }
    /// Tokens in each sequence.
    Index sequenceLength() const { return m_settings.length; }
    /// The text task's characters (token id → UTF-8); empty for the others.
    const std::vector<std::string>& characters() const { return m_characters; }

    /// Sequence `index` of step `step`'s batch (step ≥ 1), from `seed`.
    std::vector<std::int64_t> trainingSequence(std::uint64_t seed, std::int64_t step, Index index) const;
    /// Validation sequence `index`, from `seed`; never one a training step draws (text: from the held-out
    /// last tenth of the file).
    std::vector<std::int64_t> validationSequence(std::uint64_t seed, Index index) const;
    /// The positions whose next token the task determines (for induction: the repeats; for copy, reverse
    /// and sort: the answer; for recall: the value): a 0/1 mask over positions 0 … n − 2.
    std::vector<std::uint8_t> scoredPositions(const std::vector<std::int64_t>& sequence) const;

private:
    std::vector<std::int64_t> draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                   bool validation) const;

    TaskSettings m_settings;
    Index m_modelVocab = 0;
    std::vector<std::string> m_characters;
    std::vector<std::int64_t> m_text; // the text as token ids
    Index m_validationStart = 0;      // where the held-out tenth of the text starts
};

/// UTF-8 text split into characters; throws qkv::Error starting with `name` for invalid UTF-8 (with the
/// byte offset), a NUL or another control character than tab, newline and carriage return (binary data),
/// and an empty text.
std::vector<std::string> utf8Characters(const std::string& bytes, const std::string& name);

} // namespace qkv::training
