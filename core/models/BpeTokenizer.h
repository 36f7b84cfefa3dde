// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Byte-level BPE tokenizers (GPT-2, LLaMA 3, Qwen2 and the other byte-level BPE models), read from a
/// Hugging Face `tokenizer.json` or from GPT-2's `vocab.json` + `merges.txt`, giving the ids the reference
/// implementations give (OpenAI's GPT-2 `encoder.py` and Hugging Face's `tokenizers`).
///
/// How a text becomes ids: the added tokens (`<|endoftext|>` and the like) are cut out first and become
/// their ids; the rest is split into pieces by the pre-tokenizer's regular expression (GPT-2's by default,
/// or a tokenizer.json `Split` pattern) with PCRE2 in Unicode mode (\p{L}, \p{N} and lookahead as the
/// reference's regex library reads them); each piece's UTF-8 bytes are written in the byte-level alphabet
/// (each byte one printable character, a space as "Ġ"), and the merges are applied lowest rank first, every
/// occurrence of the chosen pair left to right, until none applies; each resulting symbol is looked up in
/// the vocabulary.
///
/// What is not supported is refused with a message when the tokenizer is read (a model then still opens
/// with ids given directly): models other than BPE, pre-tokenizers other than ByteLevel and Split
/// (Isolated or Removed, not inverted), and normalizers other than none and NFC (NFC is not applied: the text
/// is taken as given, which is the same for text already in NFC, as typed text almost always is).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qkv {

/// GPT-2's pre-tokenizer pattern (also Hugging Face's ByteLevel with use_regex).
inline constexpr const char* gpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class BpeTokenizer {
public:
    /// From the text of a tokenizer.json; `source` names it in messages. Throws qkv::Error.
    static BpeTokenizer fromTokenizerJson(const std::string& json, const std::string& source);
    /// From the texts of GPT-2's vocab.json and merges.txt. Throws qkv::Error.
    static BpeTokenizer fromVocabAndMerges(const std::string& vocabJson, const std::string& mergesText,
                                           const std::string& source);
    /// From a model directory: its tokenizer.json, else its vocab.json and merges.txt.
    static BpeTokenizer fromDirectory(const std::string& directory);

    BpeTokenizer(BpeTokenizer&&) noexcept;
    BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
    ~BpeTokenizer();

    /// The ids of a UTF-8 text. Throws qkv::Error when the text is not valid UTF-8 (naming the byte) or a
    /// symbol is missing from the vocabulary.
    std::vector<std::int64_t> encode(const std::string& text) const;
    /// The pieces the pre-tokenizer cuts a text into, before the merges (an added token is a piece of its
    /// own); the same checks as encode().
    std::vector<std::string> pieces(const std::string& text) const;
    /// A token's entry in the vocabulary, in the byte-level alphabet ("Ġsat"), as Hugging Face's
    /// convert_ids_to_tokens gives it; empty for an id outside the vocabulary.
    std::string tokenString(std::int64_t id) const;
    /// The bytes a token stands for (" sat"); may be part of a UTF-8 character.
    std::string tokenBytes(std::int64_t id) const;
    /// One more than the largest id.
    std::int64_t vocabularySize() const;

    /// The byte-level alphabet: the character (UTF-8) that stands for each byte.
    static const std::vector<std::string>& byteAlphabet();

private:
    BpeTokenizer();
    static BpeTokenizer readTokenizerJson(const std::string& json, const std::string& source);
    struct Data;
    std::unique_ptr<Data> m_data;

    std::vector<std::string> mergedSymbols(const std::string& piece) const;
};

/// Whether `text` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool isValidUtf8(const std::string& text);

/// What `qkvlab tokenize` prints (docs/command-line.md): {"ids": [...], "tokens": [...]} on one line, the
/// tokens as their vocabulary entries (byte-level alphabet: "Ġsat", as Hugging Face's tokenize() gives them).
std::string tokenizationJson(const BpeTokenizer& tokenizer, const std::vector<std::int64_t>& ids);

} // namespace qkv
