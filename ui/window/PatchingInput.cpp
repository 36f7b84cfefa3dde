// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingInput.h"

#include "Error.h"
#include "Model.h"

#include <QCoreApplication>
#include <QRegularExpression>

#include <algorithm>
#include <tuple>

namespace qkv::ui {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("PatchingInput", text);
}

// "#4 8 15", "#4 #8 #15", "#4, 8, 15": the ids, or the first item that is not one.
PromptTokens parseIds(const Model& model, const QString& text)
{
    PromptTokens tokens;
    const std::int64_t vocabulary = std::int64_t(model.config().vocabSize);
    static const QRegularExpression separators(QStringLiteral("[\\s,]+"));
    const QStringList items = text.trimmed().split(separators, Qt::SkipEmptyParts);
    for (QString item : items) {
        if (item.startsWith(QLatin1Char('#')))
            item.remove(0, 1);
        bool ok = false;
        const qlonglong id = item.toLongLong(&ok);
        if (!ok || id < 0 || id >= vocabulary) {
            tokens.ids.clear();
            tokens.error = tr("“%1” is not a token id of this model (0 to %2)").arg(item).arg(vocabulary - 1);
            return tokens;
        }
        tokens.ids.push_back(id);
    }
    if (tokens.ids.empty())
        tokens.error = tr("“#” gives no token ids: write them as #4 8 15");
    return tokens;
}

} // namespace

PromptTokens tokenizePrompt(const Model& model, const QString& text)
{
    PromptTokens tokens;
    if (text.trimmed().isEmpty())
        return tokens;
    if (text.trimmed().startsWith(QLatin1Char('#'))) {
        tokens = parseIds(model, text);
    } else if (!model.tokenizer()) {
        tokens.error = tr("this model has no tokenizer: give the prompt as token ids, #4 8 15");
    } else {
        try {
            tokens.ids = model.tokenizer()->encode(text.toStdString());
        } catch (const Error& e) {
            tokens.error = QString::fromStdString(e.what());
        }
    }
    for (const std::string& label : qkv::tokenLabels(model, tokens.ids))
        tokens.labels << QString::fromStdString(label);
    return tokens;
}

QString promptText(const Model& model, const std::vector<std::int64_t>& ids)
{
    if (model.tokenizer() && !ids.empty()) {
        try {
            std::string text;
            for (std::int64_t id : ids)
                text += model.tokenizer()->tokenBytes(id);
            const QString decoded = QString::fromUtf8(text);
            if (decoded.toUtf8().toStdString() == text && model.tokenizer()->encode(text) == ids)
                return decoded;
        } catch (const Error&) {
            // Ids the tokenizer cannot spell back: written as ids.
        }
    }
    QStringList written;
    for (std::int64_t id : ids)
        written << QString::number(id);
    return QLatin1Char('#') + written.join(QLatin1Char(' '));
}

QList<int> differingPositions(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b)
{
    QList<int> positions;
    const std::size_t shared = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < shared; ++i)
        if (a[i] != b[i])
            positions << int(i);
    return positions;
}

QString tokenCountProblem(const PromptTokens& clean, const PromptTokens& corrupt)
{
    if (clean.ids.empty() || corrupt.ids.empty() || clean.ids.size() == corrupt.ids.size())
        return QString();
    return tr("The clean prompt has %1 tokens and the corrupted one %2: both need the same number of tokens.")
        .arg(clean.ids.size())
        .arg(corrupt.ids.size());
}

QString patchingInputProblem(const PatchingInput& input)
{
    for (const auto& [tokens, text, name] :
         {std::tuple{&input.clean, &input.cleanText, tr("clean")},
          std::tuple{&input.corrupt, &input.corruptText, tr("corrupted")}}) {
        if (text->trimmed().isEmpty())
            return tr("The %1 prompt is empty: type a text (or token ids as #4 8 15).").arg(name);
        if (!tokens->error.isEmpty())
            return tr("The %1 prompt: %2.").arg(name, tokens->error);
    }
    const QString counts = tokenCountProblem(input.clean, input.corrupt);
    if (!counts.isEmpty())
        return counts;
    if (input.clean.ids == input.corrupt.ids)
        return tr("The clean and corrupted prompts are the same tokens: change at least one token of the "
                  "corrupted prompt.");
    if (!input.answerError.isEmpty())
        return tr("Answer: %1.").arg(input.answerError);
    if (!input.wrongError.isEmpty())
        return tr("Wrong token: %1.").arg(input.wrongError);
    if (!input.answer)
        return tr("Pick the answer token (the one the clean prompt should predict).");
    if (!input.wrong)
        return tr("Pick the wrong token (the one the corrupted prompt points to).");
    if (*input.answer == *input.wrong)
        return tr("The answer and the wrong token are the same token (%1): their logit difference is always "
                  "0. Pick two different tokens.")
            .arg(input.answerLabel);
    if (input.limitPositions && patchSiteHasPositions(input.site)) {
        const int n = int(input.clean.ids.size());
        if (input.firstPosition < 0 || input.firstPosition > input.lastPosition || input.lastPosition >= n)
            return tr("Positions %1 to %2 are outside the prompt's %3 tokens (0 to %4).")
                .arg(input.firstPosition)
                .arg(input.lastPosition)
                .arg(n)
                .arg(n - 1);
    }
    return QString();
}

} // namespace qkv::ui
