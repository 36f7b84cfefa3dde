// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: qkv::BpeTokenizer. An input starting with '{' is a tokenizer.json: refusal with
// qkv::Error is fine; an accepted tokenizer must encode a few texts without any other exception and give
// ids it can name. Any other input is a text for a fixed small GPT-2-style tokenizer: refused only when it
// is not UTF-8, and otherwise byte-level BPE must lose nothing: the tokens' bytes spell the text again.

#include "BpeTokenizer.h"
#include "FuzzChecks.h"

#include <string>
#include <vector>

using namespace qkv;
using namespace qkv::fuzz;

namespace {

/// The 256 byte characters, a few merges and an added token.
const BpeTokenizer& fixedTokenizer()
{
    static const BpeTokenizer tokenizer = [] {
        std::string vocab = "{";
        const std::vector<std::string>& alphabet = BpeTokenizer::byteAlphabet();
        for (std::size_t b = 0; b < alphabet.size(); ++b) {
            const std::string& c = alphabet[b];
            vocab += (b ? ",\"" : "\"") + (c == "\"" || c == "\\" ? "\\" + c : c) + "\":" + std::to_string(b);
        }
        vocab += ",\"he\":256,\"the\":257,\"Ġt\":258,\"Ġthe\":259,\"aa\":260,\"<|endoftext|>\":261}";
        const std::string json = "{\"model\":{\"type\":\"BPE\",\"vocab\":" + vocab +
                                 ",\"merges\":[\"h e\",\"t he\",\"Ġ t\",\"Ġt he\",\"a a\"]},"
                                 "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
                                 "\"added_tokens\":[{\"id\":261,\"content\":\"<|endoftext|>\"}]}";
        return BpeTokenizer::fromTokenizerJson(json, "fixed");
    }();
    return tokenizer;
}

void checkIds(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids)
{
    for (std::int64_t id : ids)
        if (id < 0 || id >= tokenizer.vocabularySize() || tokenizer.tokenString(id).empty())
            fail("encode gave id " + std::to_string(id) + ", which the vocabulary does not name");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string input = text(data, size);
    if (!input.empty() && input[0] == '{') {
        try {
            const BpeTokenizer tokenizer = BpeTokenizer::fromTokenizerJson(input, "fuzz");
            for (const char* sample :
                 {"the cat sat", "  two  spaces\n", "naïve 日本 🙂 123", "<|endoftext|>"}) {
                try {
                    checkIds(tokenizer, tokenizer.encode(sample));
                } catch (const Error&) {
                    // a symbol missing from a fuzzed vocabulary
                }
            }
        } catch (const Error&) {
        }
        return 0;
    }
    const BpeTokenizer& tokenizer = fixedTokenizer();
    std::vector<std::int64_t> ids;
    try {
        ids = tokenizer.encode(input);
    } catch (const Error&) {
        return 0; // not UTF-8
    }
    checkIds(tokenizer, ids);
    std::string spelled;
    for (std::int64_t id : ids)
        spelled += tokenizer.tokenBytes(id);
    if (spelled != input)
        fail("the tokens' bytes do not spell the text again");
    return 0;
}
