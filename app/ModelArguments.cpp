// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelArguments.h"

#include "BpeTokenizer.h"
#include "Error.h"
#include "Model.h"
#include "ModelCommands.h"

namespace qkv::app {

namespace {

std::string dashed(std::string_view name)
{
    return "--" + std::string(name);
}

std::vector<std::int64_t> tokenize(const Model& model, const std::string& text)
{
    if (!model.tokenizer())
        throw Error(model.tokenizerProblem());
    return model.tokenizer()->encode(text);
}

} // namespace

std::string modelFolderArgument(const ParsedArguments& arguments, const std::string& usage)
{
    const std::vector<std::string>& given = arguments.positional;
    if (given.size() > 1)
        throw Error("expected one model folder, found " + given[0] + " and " + given[1]);
    if (given.empty())
        throw Error(usage);
    return given.front();
}

Precision precisionArgument(const ParsedArguments& arguments)
{
    const std::optional<std::string> name = arguments.choice("precision", {"float64", "float32"});
    return name ? *precisionFromString(*name) : Precision::Float64;
}

std::vector<std::int64_t> idsArgument(const ParsedArguments& arguments, std::string_view idsName)
{
    std::vector<std::int64_t> ids;
    if (arguments.has(idsName) && !parseIndexList(arguments.value(idsName), ids))
        throw Error("bad " + dashed(idsName) + " '" + arguments.value(idsName) +
                    "': expected token ids separated by commas (5,17,3)");
    return ids;
}

bool exactlyOneOf(const ParsedArguments& arguments, std::string_view first, std::string_view second)
{
    return arguments.has(first) != arguments.has(second);
}

std::vector<std::int64_t> tokensArgument(const Model& model, const ParsedArguments& arguments,
                                         std::string_view textName, std::string_view idsName)
{
    const bool text = arguments.has(textName);
    const std::string option = dashed(text ? textName : idsName);
    const std::vector<std::int64_t> ids =
        text ? tokenize(model, arguments.value(textName)) : idsArgument(arguments, idsName);
    if (ids.empty())
        throw Error(option + " '" + arguments.value(textName) + "' has no tokens");
    const Index vocabulary = model.config().vocabSize;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] >= vocabulary)
            throw Error(option + ": token id " + std::to_string(ids[i]) + " at position " +
                        std::to_string(i) + " is outside the model's vocabulary of " +
                        std::to_string(vocabulary) + " tokens");
    return ids;
}

std::optional<std::int64_t> tokenArgument(const Model& model, const ParsedArguments& arguments,
                                          std::string_view textName, std::string_view idName)
{
    if (arguments.has(textName) && arguments.has(idName))
        throw Error("give " + dashed(textName) + " or " + dashed(idName) + ", not both");
    const Index vocabulary = model.config().vocabSize;
    if (arguments.has(idName))
        return arguments.wholeNumber(idName, 0, vocabulary - 1,
                                     "a token id from 0 to " + std::to_string(vocabulary - 1));
    if (!arguments.has(textName))
        return std::nullopt;
    const std::string text = arguments.value(textName);
    const std::vector<std::int64_t> ids = tokenize(model, text);
    if (ids.size() != 1)
        throw Error(dashed(textName) + " '" + text + "' is " + std::to_string(ids.size()) +
                    " tokens: expected exactly one token (or give " + dashed(idName) + ")");
    if (ids.front() >= vocabulary)
        throw Error(dashed(textName) + " '" + text + "' is token " + std::to_string(ids.front()) +
                    ", outside the model's vocabulary of " + std::to_string(vocabulary) + " tokens");
    return ids.front();
}

} // namespace qkv::app
