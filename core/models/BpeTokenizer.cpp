// SPDX-License-Identifier: GPL-3.0-or-later
#include "BpeTokenizer.h"

#include "Error.h"
#include "FileReading.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace qkv {

namespace {

using Json = nlohmann::json;

constexpr std::uint64_t maxTokenizerBytes = 200ull << 20; // LLaMA 3's tokenizer.json is 9 MB
constexpr int maxTokenizerNesting = 64;

std::string utf8(char32_t c)
{
    std::string out;
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | (c >> 6));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xE0 | (c >> 12));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
    return out;
}

/// The byte offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates and code
/// points past U+10FFFF included), or npos.
std::size_t invalidUtf8At(const std::string& text)
{
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        std::size_t length = 0;
        char32_t lowest = 0, value = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            length = 2, lowest = 0x80, value = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            length = 3, lowest = 0x800, value = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            length = 4, lowest = 0x10000, value = c & 0x07;
        } else {
            return i;
        }
        if (i + length > n)
            return i;
        for (std::size_t k = 1; k < length; ++k) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            value = (value << 6) | (s[i + k] & 0x3F);
        }
        if (value < lowest || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
            return i;
        i += length;
    }
    return std::string::npos;
}

/// A regular expression compiled by PCRE2 in UTF and Unicode-property mode.
class Pattern {
public:
    enum Kind { Regex, Literal };
    Pattern(const std::string& pattern, const std::string& where, Kind kind = Regex)
    {
        int error = 0;
        PCRE2_SIZE offset = 0;
        m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               PCRE2_UTF | (kind == Literal ? PCRE2_LITERAL : PCRE2_UCP), &error, &offset,
                               nullptr);
        if (!m_code) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            throw Error(where + ": the pattern does not compile (at character " + std::to_string(offset) +
                        ": " + reinterpret_cast<const char*>(message) + ")");
        }
        pcre2_jit_compile(m_code, PCRE2_JIT_COMPLETE); // faster when it works; the interpreter otherwise
    }
    ~Pattern() { pcre2_code_free(m_code); }
    Pattern(const Pattern&) = delete;
    Pattern& operator=(const Pattern&) = delete;

    /// [begin, end) of every non-empty match in valid UTF-8 text, left to right.
    std::vector<std::pair<std::size_t, std::size_t>> matches(const std::string& text) const
    {
        std::vector<std::pair<std::size_t, std::size_t>> found;
        pcre2_match_data* data = pcre2_match_data_create_from_pattern(m_code, nullptr);
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
        std::size_t at = 0;
        while (at < text.size()) {
            const int rc = pcre2_match(m_code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, data, nullptr);
            if (rc < 0)
                break; // no match (errors cannot occur on checked UTF-8 with these patterns' limits)
            const PCRE2_SIZE* vector = pcre2_get_ovector_pointer(data);
            const std::size_t begin = vector[0], end = vector[1];
            if (end > begin) {
                found.emplace_back(begin, end);
                at = end;
            } else { // an empty match: step over one character
                at = begin + 1;
                while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
                    ++at;
            }
        }
        pcre2_match_data_free(data);
        return found;
    }

private:
    pcre2_code* m_code = nullptr;
};

/// One pre-tokenizer step: split every piece by a pattern, keeping the matches (Isolated) or the text
/// between them (Removed); ByteLevel's own step may first put a space before each piece.
struct SplitStep {
    std::shared_ptr<const Pattern> pattern; // none: the piece is kept whole
    bool keepMatches = true;
    bool addPrefixSpace = false;
};

std::vector<std::string> split(const std::vector<std::string>& pieces, const SplitStep& step)
{
    std::vector<std::string> out;
    for (std::string piece : pieces) {
        if (step.addPrefixSpace && (piece.empty() || piece[0] != ' '))
            piece.insert(piece.begin(), ' ');
        if (!step.pattern) {
            out.push_back(std::move(piece));
            continue;
        }
        std::size_t last = 0;
        for (const auto& [begin, end] : step.pattern->matches(piece)) {
            if (begin > last)
                out.push_back(piece.substr(last, begin - last)); // between matches: a piece of its own
            if (step.keepMatches)
                out.push_back(piece.substr(begin, end - begin));
            last = end;
        }
        if (last < piece.size())
            out.push_back(piece.substr(last));
    }
    return out;
}

std::string pairKey(const std::string& left, const std::string& right)
{
    return left + '\0' + right;
}

/// Reads JSON, refusing nesting deeper than any tokenizer has (a hostile file must not overflow the stack).
Json parseJson(const std::string& text, const std::string& source)
{
    try {
        return Json::parse(text, [&source](int depth, Json::parse_event_t, Json&) {
            if (depth > maxTokenizerNesting)
                throw Error(source + ": nested more than " + std::to_string(maxTokenizerNesting) +
                            " levels deep");
            return true;
        });
    } catch (const Json::exception& e) {
        throw Error(source + ": not valid JSON (" + e.what() + ")");
    }
}

std::string typeOf(const Json& value, const std::string& where)
{
    if (!value.is_object() || !value.contains("type") || !value["type"].is_string())
        throw Error(where + ": expected an object with a \"type\"");
    return value["type"].get<std::string>();
}

std::string text(const Json& object, const char* key, const std::string& fallback, const std::string& where)
{
    if (!object.contains(key) || object[key].is_null())
        return fallback;
    if (!object[key].is_string())
        throw Error(where + "." + key + ": expected a string");
    return object[key].get<std::string>();
}

bool boolean(const Json& object, const char* key, bool fallback, const std::string& where)
{
    if (!object.contains(key) || object[key].is_null())
        return fallback;
    if (!object[key].is_boolean())
        throw Error(where + "." + key + ": expected true or false");
    return object[key].get<bool>();
}

std::int64_t tokenId(const Json& value, const std::string& where)
{
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
        value.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
        throw Error(where + ": expected a token id (an integer from 0 to 2147483647)");
    return value.get<std::int64_t>();
}

} // namespace

struct BpeTokenizer::Data {
    std::unordered_map<std::string, std::int64_t> vocabulary;
    std::vector<std::string> tokens; // by id; empty where no token has the id
    std::unordered_map<std::string, std::size_t> mergeRanks;
    std::vector<std::pair<std::string, std::int64_t>> addedTokens; // longest first
    std::vector<SplitStep> steps;
    bool ignoreMerges = false;                // a piece that is a token is that token (LLaMA 3)
    std::vector<std::int64_t> prefix, suffix; // the post-processor's special tokens around a text
    std::string source;

    /// The pre-tokenizer's pieces of a text without added tokens.
    std::vector<std::string> preTokenize(const std::string& text) const
    {
        std::vector<std::string> pieces{text};
        for (const SplitStep& step : steps)
            pieces = split(pieces, step);
        return pieces;
    }

    void addToken(const std::string& token, std::int64_t id)
    {
        vocabulary.emplace(token, id);
        if (tokens.size() <= static_cast<std::size_t>(id))
            tokens.resize(static_cast<std::size_t>(id) + 1);
        if (tokens[static_cast<std::size_t>(id)].empty())
            tokens[static_cast<std::size_t>(id)] = token;
    }

    void addMerge(const std::string& left, const std::string& right, const std::string& where)
    {
        for (const std::string* part : {&left, &right})
            if (!vocabulary.count(*part))
                throw Error(where + ": \"" + *part + "\" is not in the vocabulary");
        if (!vocabulary.count(left + right))
            throw Error(where + ": the merged \"" + left + right + "\" is not in the vocabulary");
        mergeRanks.emplace(pairKey(left, right), mergeRanks.size()); // the first of a duplicate counts
    }

    // The parts of a tokenizer.json, each read and checked (readTokenizerJson); messages start with `source`.
    void readModel(const Json& model);
    void readPreTokenizer(const Json& pre);
    void readPreTokenizerStep(const Json& step, const std::string& where, bool& byteLevel);
    void readAddedTokens(const Json& added);
    void readPostProcessor(const Json& processor, const std::string& where);
};

BpeTokenizer::BpeTokenizer() : m_data(std::make_unique<Data>()) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

const std::vector<std::string>& BpeTokenizer::byteAlphabet()
{
    // GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others (controls, space,
    // 0x7F–0xA0, 0xAD) for U+0100 onwards in byte order.
    static const std::vector<std::string> alphabet = [] {
        std::vector<std::string> characters(256);
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            characters[static_cast<std::size_t>(b)] = utf8(printable ? char32_t(b) : next++);
        }
        return characters;
    }();
    return alphabet;
}

BpeTokenizer BpeTokenizer::fromVocabAndMerges(const std::string& vocabJson, const std::string& mergesText,
                                              const std::string& source)
{
    BpeTokenizer tokenizer;
    Data& data = *tokenizer.m_data;
    data.source = source;
    const Json vocab = parseJson(vocabJson, source + "vocab.json");
    if (!vocab.is_object() || vocab.empty())
        throw Error(source + "vocab.json: expected an object mapping each token to its id");
    for (const auto& [token, id] : vocab.items())
        data.addToken(token, tokenId(id, source + "vocab.json: \"" + token + "\""));
    std::size_t lineNumber = 0, start = 0;
    while (start < mergesText.size()) {
        std::size_t end = mergesText.find('\n', start);
        if (end == std::string::npos)
            end = mergesText.size();
        std::string line = mergesText.substr(start, end - start);
        start = end + 1;
        ++lineNumber;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty() || (lineNumber == 1 && line.rfind("#version", 0) == 0))
            continue;
        const std::size_t space = line.find(' ');
        const std::string where = source + "merges.txt line " + std::to_string(lineNumber);
        if (space == std::string::npos || space == 0 || line.find(' ', space + 1) != std::string::npos ||
            space + 1 == line.size())
            throw Error(where + ": expected two tokens separated by one space");
        data.addMerge(line.substr(0, space), line.substr(space + 1), where);
    }
    // Hugging Face's GPT2Tokenizer, made from these two files, has <|endoftext|> as its special token
    // (unk, bos and eos) and never splits it: "a<|endoftext|>" is [64, 50256], not the pieces of its text.
    const auto endOfText = data.vocabulary.find("<|endoftext|>");
    if (endOfText != data.vocabulary.end())
        data.addedTokens.emplace_back(endOfText->first, endOfText->second);
    data.steps.push_back({std::make_shared<Pattern>(gpt2SplitPattern, "GPT-2's pattern"), true, false});
    return tokenizer;
}

BpeTokenizer BpeTokenizer::fromTokenizerJson(const std::string& json, const std::string& source)
{
    try {
        return readTokenizerJson(json, source);
    } catch (const Json::exception& e) { // a type the checks above missed: still a message, never a crash
        throw Error(source + ": " + e.what());
    }
}

BpeTokenizer BpeTokenizer::readTokenizerJson(const std::string& json, const std::string& source)
{
    BpeTokenizer tokenizer;
    Data& data = *tokenizer.m_data;
    data.source = source;
    const Json root = parseJson(json, source);
    if (!root.is_object() || !root.contains("model"))
        throw Error(source + ": expected a Hugging Face tokenizer (an object with \"model\")");
    data.readModel(root["model"]);
    if (root.contains("normalizer") && !root["normalizer"].is_null()) {
        const std::string type = typeOf(root["normalizer"], source + ": normalizer");
        if (type != "NFC")
            throw Error(source + ": normalizer \"" + type + "\" is not supported (none or NFC)");
    }
    data.readPreTokenizer(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : Json());
    if (root.contains("added_tokens") && !root["added_tokens"].is_null())
        data.readAddedTokens(root["added_tokens"]);
    if (root.contains("post_processor") && !root["post_processor"].is_null())
        data.readPostProcessor(root["post_processor"], source + ": post_processor");
    return tokenizer;
}

void BpeTokenizer::Data::readModel(const Json& model)
{
    if (!model.is_object())
        throw Error(source + ": model: expected an object");
    const std::string modelType = text(model, "type", "BPE", source + ": model");
    if (modelType != "BPE")
        throw Error(source + ": model.type: \"" + modelType +
                    "\" is not supported (only byte-level \"BPE\")");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (model.contains(key) && !model[key].is_null() && model[key] != "")
            throw Error(source + ": model." + key + " is not supported (byte-level BPE has none)");
    if (boolean(model, "byte_fallback", false, source + ": model"))
        throw Error(source +
                    ": model.byte_fallback is not supported (a SentencePiece-style BPE, not byte-level)");
    ignoreMerges = boolean(model, "ignore_merges", false, source + ": model");
    if (!model.contains("vocab") || !model["vocab"].is_object() || model["vocab"].empty())
        throw Error(source + ": model.vocab: expected an object mapping each token to its id");
    for (const auto& [token, id] : model["vocab"].items())
        addToken(token, tokenId(id, source + ": model.vocab[\"" + token + "\"]"));
    if (!model.contains("merges") || !model["merges"].is_array())
        throw Error(source + ": model.merges: expected an array");
    const Json& merges = model["merges"];
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const std::string where = source + ": model.merges[" + std::to_string(i) + "]";
        const Json& merge = merges[i];
        if (merge.is_string()) { // "Ġ t"
            const std::string pair = merge.get<std::string>();
            const std::size_t space = pair.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 == pair.size() ||
                pair.find(' ', space + 1) != std::string::npos)
                throw Error(where + ": expected two tokens separated by one space");
            addMerge(pair.substr(0, space), pair.substr(space + 1), where);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            addMerge(merge[0].get<std::string>(), merge[1].get<std::string>(), where); // ["Ġ", "t"]
        } else {
            throw Error(where + ": expected \"left right\" or [\"left\", \"right\"]");
        }
    }
}

// The pre-tokenizer: ByteLevel alone (GPT-2), or a Sequence of Splits ending in ByteLevel (LLaMA 3, Qwen2).
void BpeTokenizer::Data::readPreTokenizer(const Json& pre)
{
    bool byteLevel = false;
    if (!pre.is_null()) {
        const std::string where = source + ": pre_tokenizer";
        if (typeOf(pre, where) == "Sequence") {
            if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array())
                throw Error(where + ".pretokenizers: expected an array");
            for (std::size_t i = 0; i < pre["pretokenizers"].size(); ++i)
                readPreTokenizerStep(pre["pretokenizers"][i],
                                     where + ".pretokenizers[" + std::to_string(i) + "]", byteLevel);
        } else {
            readPreTokenizerStep(pre, where, byteLevel);
        }
    }
    if (!byteLevel)
        throw Error(source + ": not a byte-level BPE (its pre-tokenizer has no ByteLevel step)");
}

void BpeTokenizer::Data::readPreTokenizerStep(const Json& step, const std::string& where, bool& byteLevel)
{
    const std::string type = typeOf(step, where);
    if (byteLevel)
        throw Error(where + ": a step after ByteLevel is not supported");
    if (type == "ByteLevel") {
        byteLevel = true;
        SplitStep split;
        split.addPrefixSpace = boolean(step, "add_prefix_space", false, where);
        if (boolean(step, "use_regex", true, where))
            split.pattern = std::make_shared<Pattern>(gpt2SplitPattern, "GPT-2's pattern");
        steps.push_back(std::move(split));
    } else if (type == "Split") {
        if (boolean(step, "invert", false, where))
            throw Error(where + ".invert: an inverted Split is not supported");
        const std::string behavior = text(step, "behavior", "", where);
        if (behavior != "Isolated" && behavior != "Removed")
            throw Error(where + ".behavior: \"" + behavior + "\" is not supported (Isolated or Removed)");
        const Json& pattern = step.contains("pattern") ? step["pattern"] : Json();
        SplitStep split;
        split.keepMatches = behavior == "Isolated";
        if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
            split.pattern =
                std::make_shared<Pattern>(pattern["Regex"].get<std::string>(), where + ".pattern");
        } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
            split.pattern = std::make_shared<Pattern>(pattern["String"].get<std::string>(),
                                                      where + ".pattern", Pattern::Literal);
        } else {
            throw Error(where + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
        }
        steps.push_back(std::move(split));
    } else {
        throw Error(where + ": pre-tokenizer \"" + type + "\" is not supported (ByteLevel, Split)");
    }
}

void BpeTokenizer::Data::readAddedTokens(const Json& added)
{
    if (!added.is_array())
        throw Error(source + ": added_tokens: expected an array");
    for (std::size_t i = 0; i < added.size(); ++i) {
        const std::string where = source + ": added_tokens[" + std::to_string(i) + "]";
        if (!added[i].is_object() || !added[i].contains("content") || !added[i]["content"].is_string() ||
            added[i]["content"].get<std::string>().empty() || !added[i].contains("id"))
            throw Error(where + ": expected an object with \"id\" and a non-empty \"content\"");
        const std::string content = added[i]["content"].get<std::string>();
        const std::int64_t id = tokenId(added[i]["id"], where + ".id");
        addedTokens.emplace_back(content, id);
        addToken(content, id);
    }
    std::stable_sort(addedTokens.begin(), addedTokens.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

// The post-processor's special tokens around a single text (LLaMA 3 puts <|begin_of_text|> first).
void BpeTokenizer::Data::readPostProcessor(const Json& processor, const std::string& where)
{
    const std::string type = typeOf(processor, where);
    if (type == "ByteLevel")
        return;
    if (type == "Sequence") {
        if (!processor.contains("processors") || !processor["processors"].is_array())
            throw Error(where + ".processors: expected an array");
        for (std::size_t i = 0; i < processor["processors"].size(); ++i)
            readPostProcessor(processor["processors"][i], where + ".processors[" + std::to_string(i) + "]");
        return;
    }
    if (type != "TemplateProcessing")
        throw Error(where + ": post-processor \"" + type +
                    "\" is not supported (TemplateProcessing, ByteLevel)");
    if (!processor.contains("single") || !processor["single"].is_array())
        throw Error(where + ".single: expected an array");
    bool afterText = false;
    for (const Json& item : processor["single"]) {
        if (item.contains("Sequence")) {
            afterText = true;
        } else if (item.contains("SpecialToken") && item["SpecialToken"].contains("id") &&
                   item["SpecialToken"]["id"].is_string()) {
            const std::string name = item["SpecialToken"]["id"].get<std::string>();
            const auto id = vocabulary.find(name);
            if (id == vocabulary.end())
                throw Error(where + ".single: the special token \"" + name + "\" is not in the vocabulary");
            (afterText ? suffix : prefix).push_back(id->second);
        } else {
            throw Error(where + ".single: expected {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": ...}}");
        }
    }
}

BpeTokenizer BpeTokenizer::fromDirectory(const std::string& directory)
{
    namespace fs = std::filesystem;
    const fs::path folder(directory);
    const std::string name = (folder / "").string();
    std::error_code error;
    if (fs::exists(folder / "tokenizer.json", error))
        return fromTokenizerJson(
            readRegularFile((folder / "tokenizer.json").string(), maxTokenizerBytes, "a tokenizer file"),
            (folder / "tokenizer.json").string());
    if (fs::exists(folder / "vocab.json", error) && fs::exists(folder / "merges.txt", error))
        return fromVocabAndMerges(
            readRegularFile((folder / "vocab.json").string(), maxTokenizerBytes, "a tokenizer file"),
            readRegularFile((folder / "merges.txt").string(), maxTokenizerBytes, "a tokenizer file"), name);
    throw Error(directory +
                ": no tokenizer (tokenizer.json, or vocab.json with merges.txt); give token ids instead");
}

std::vector<std::string> BpeTokenizer::mergedSymbols(const std::string& piece) const
{
    // Each byte as its character of the byte-level alphabet; then merges, lowest rank first and leftmost
    // first among equals, through a queue of candidate pairs (a piece of any length costs n log n).
    const std::vector<std::string>& alphabet = byteAlphabet();
    std::vector<std::string> symbols;
    symbols.reserve(piece.size());
    for (unsigned char byte : piece)
        symbols.push_back(alphabet[byte]);
    if (m_data->ignoreMerges) {
        std::string whole;
        for (const std::string& s : symbols)
            whole += s;
        if (m_data->vocabulary.count(whole))
            return {whole};
    }
    const std::size_t n = symbols.size();
    std::vector<std::ptrdiff_t> previous(n), next(n);
    for (std::size_t i = 0; i < n; ++i) {
        previous[i] = std::ptrdiff_t(i) - 1;
        next[i] = i + 1 < n ? std::ptrdiff_t(i + 1) : -1;
    }
    using Candidate = std::pair<std::size_t, std::size_t>; // (rank, left symbol's position)
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto offer = [&](std::ptrdiff_t left) {
        if (left < 0 || next[std::size_t(left)] < 0)
            return;
        const auto rank = m_data->mergeRanks.find(
            pairKey(symbols[std::size_t(left)], symbols[std::size_t(next[std::size_t(left)])]));
        if (rank != m_data->mergeRanks.end())
            queue.emplace(rank->second, std::size_t(left));
    };
    for (std::size_t i = 0; i + 1 < n; ++i)
        offer(std::ptrdiff_t(i));
    while (!queue.empty()) {
        const auto [rank, left] = queue.top();
        queue.pop();
        const std::ptrdiff_t right = next[left];
        if (symbols[left].empty() || right < 0)
            continue; // merged away since it was offered
        const auto current = m_data->mergeRanks.find(pairKey(symbols[left], symbols[std::size_t(right)]));
        if (current == m_data->mergeRanks.end() || current->second != rank)
            continue; // the pair changed since it was offered
        symbols[left] += symbols[std::size_t(right)];
        symbols[std::size_t(right)].clear();
        next[left] = next[std::size_t(right)];
        if (next[left] >= 0)
            previous[std::size_t(next[left])] = std::ptrdiff_t(left);
        offer(previous[left]);
        offer(std::ptrdiff_t(left));
    }
    std::vector<std::string> merged;
    for (std::string& s : symbols)
        if (!s.empty())
            merged.push_back(std::move(s));
    return merged;
}

namespace {

/// Calls `onText` for each stretch of `text` between added tokens and `onAdded` for each added token, in
/// order (the longest added token that starts at a position wins).
template <typename OnText, typename OnAdded>
void cutAddedTokens(const std::string& text, const std::vector<std::pair<std::string, std::int64_t>>& added,
                    OnText onText, OnAdded onAdded)
{
    std::size_t at = 0, segmentStart = 0;
    while (at < text.size()) {
        const auto token = std::find_if(added.begin(), added.end(), [&](const auto& candidate) {
            return text.compare(at, candidate.first.size(), candidate.first) == 0;
        });
        if (token == added.end()) {
            ++at;
            continue;
        }
        if (at > segmentStart)
            onText(text.substr(segmentStart, at - segmentStart));
        onAdded(*token);
        at += token->first.size();
        segmentStart = at;
    }
    if (segmentStart < text.size())
        onText(text.substr(segmentStart));
}

void requireUtf8(const std::string& text)
{
    if (const std::size_t bad = invalidUtf8At(text); bad != std::string::npos)
        throw Error("the text is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
}

} // namespace

std::vector<std::string> BpeTokenizer::pieces(const std::string& text) const
{
    requireUtf8(text);
    std::vector<std::string> all;
    cutAddedTokens(
        text, m_data->addedTokens,
        [&](const std::string& segment) {
            const std::vector<std::string> cut = m_data->preTokenize(segment);
            all.insert(all.end(), cut.begin(), cut.end());
        },
        [&](const auto& token) { all.push_back(token.first); });
    return all;
}

std::vector<std::int64_t> BpeTokenizer::encode(const std::string& text) const
{
    requireUtf8(text);
    std::vector<std::int64_t> ids = m_data->prefix;
    cutAddedTokens(
        text, m_data->addedTokens,
        [&](const std::string& segment) {
            for (const std::string& piece : m_data->preTokenize(segment))
                for (const std::string& symbol : mergedSymbols(piece)) {
                    const auto id = m_data->vocabulary.find(symbol);
                    if (id == m_data->vocabulary.end())
                        throw Error(m_data->source + ": the symbol \"" + symbol +
                                    "\" is not in the vocabulary");
                    ids.push_back(id->second);
                }
        },
        [&](const auto& token) { ids.push_back(token.second); });
    ids.insert(ids.end(), m_data->suffix.begin(), m_data->suffix.end());
    return ids;
}

std::string BpeTokenizer::tokenString(std::int64_t id) const
{
    if (id < 0 || id >= vocabularySize())
        return {};
    return m_data->tokens[static_cast<std::size_t>(id)];
}

std::string BpeTokenizer::tokenBytes(std::int64_t id) const
{
    // The byte-level alphabet read back; an added token (outside the alphabet) is its own text.
    static const std::unordered_map<std::string, char> byteOf = [] {
        std::unordered_map<std::string, char> map;
        for (int b = 0; b < 256; ++b)
            map.emplace(byteAlphabet()[static_cast<std::size_t>(b)], char(b));
        return map;
    }();
    const std::string token = tokenString(id);
    std::string bytes;
    for (std::size_t i = 0; i < token.size();) {
        std::size_t length = 1;
        const auto c = static_cast<unsigned char>(token[i]);
        length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        const auto byte = byteOf.find(token.substr(i, length));
        if (byte == byteOf.end())
            return token;
        bytes += byte->second;
        i += length;
    }
    return bytes;
}

std::int64_t BpeTokenizer::vocabularySize() const
{
    return static_cast<std::int64_t>(m_data->tokens.size());
}

bool isValidUtf8(const std::string& text)
{
    return invalidUtf8At(text) == std::string::npos;
}

std::string tokenizationJson(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids)
{
    Json tokens = Json::array();
    for (std::int64_t id : ids)
        tokens.push_back(tokenizer.tokenString(id));
    return nlohmann::ordered_json{{"ids", ids}, {"tokens", tokens}}.dump() + "\n";
}

} // namespace qkv
