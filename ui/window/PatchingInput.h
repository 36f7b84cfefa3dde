// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the Patching panel's fields say, read without a widget: a prompt as token ids (text through the
// model's tokenizer, or ids written "#4 8 15"), which positions of two prompts differ, and the one message
// that says what is wrong with a patching request before anything runs.

#include "EigenTypes.h"
#include "Patching.h"

#include <QList>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <vector>

namespace qkv {
class Model;
}

namespace qkv::ui {

/// A prompt as the model reads it.
struct PromptTokens {
    std::vector<std::int64_t> ids;
    QStringList labels; ///< one per id, a leading space shown as "␣"
    QString error;      ///< why the text gives no ids ("" when it does, or when it is empty)
};

/// `text` as token ids: "#4 8 15" (or "#4 #8 #15", commas allowed) are ids, anything else is tokenized.
/// Empty text gives no ids and no error.
PromptTokens tokenizePrompt(const Model& model, const QString& text);

/// `ids` as the text to type for them: the text they spell when the tokenizer reads it back as the same ids,
/// else the ids as "#4 8 15".
QString promptText(const Model& model, const std::vector<std::int64_t>& ids);

/// The positions where `a` and `b` hold different tokens (over the shorter of the two).
QList<int> differingPositions(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

/// What the panel checks before a run, with the names it uses in its messages.
struct PatchingInput {
    PromptTokens clean, corrupt;
    QString cleanText, corruptText;
    std::optional<std::int64_t> answer, wrong;
    QString answerError, wrongError; ///< why a typed token is not understood
    QString answerLabel;             ///< for the message when answer = wrong
    bool limitPositions = false;
    int firstPosition = 0, lastPosition = 0;
    PatchSite site = PatchSite::ResidPre;
};

/// The problem with `input`, naming the field ("" when a run may start): an empty prompt, a prompt that does
/// not tokenize, prompts of different lengths (both counts), identical prompts, an answer or wrong token
/// missing or not one token, the same token for both, a position range outside the prompt.
QString patchingInputProblem(const PatchingInput& input);

/// "clean 5 tokens, corrupted 6 tokens: …" while the counts differ, "" when they agree or a prompt is empty.
QString tokenCountProblem(const PromptTokens& clean, const PromptTokens& corrupt);

} // namespace qkv::ui
