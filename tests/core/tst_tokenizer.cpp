// SPDX-License-Identifier: GPL-3.0-or-later
// Byte-level BPE: GPT-2's split pattern against Python's `regex` module (the reference implementation's
// library), the merges against a plain port of GPT-2's encoder.py, both file formats, the special tokens
// LLaMA 3's post-processor adds, and every refusal with its message.

#include "BpeTokenizer.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "TestMain.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace qkv;
using qkv::test::errorOf;

namespace {

using Json = nlohmann::ordered_json;
using Strings = std::vector<std::string>;
using Ids = std::vector<std::int64_t>;

/// The merges of the test vocabulary, lowest rank first. Its ids: the 256 byte characters in byte order,
/// then each merge's result in merge order.
const std::vector<std::pair<std::string, std::string>>& testMerges()
{
    static const std::vector<std::pair<std::string, std::string>> merges = {
        {"Ġ", "t"}, {"h", "e"},   {"Ġt", "he"},  {"t", "he"},  {"a", "t"}, {"Ġ", "c"},   {"Ġc", "at"},
        {"Ġ", "s"}, {"Ġs", "at"}, {"i", "n"},    {"'", "s"},   {"1", "2"}, {"12", "3"},  {"Ã", "©"},
        {"c", "a"}, {"ca", "f"},  {"caf", "Ã©"}, {"Ġ", "caf"}, {"a", "a"}, {"aa", "aa"}, {"Ġ", "Ġ"}};
    return merges;
}

Json testVocabulary()
{
    Json vocabulary = Json::object();
    for (int b = 0; b < 256; ++b)
        vocabulary[BpeTokenizer::byteAlphabet()[std::size_t(b)]] = b;
    int next = 256;
    for (const auto& [left, right] : testMerges())
        if (!vocabulary.contains(left + right))
            vocabulary[left + right] = next++;
    return vocabulary;
}

std::string mergesText()
{
    std::string text = "#version: 0.2\n";
    for (const auto& [left, right] : testMerges())
        text += left + " " + right + "\n";
    return text;
}

Json tokenizerJson(const Json& preTokenizer, bool mergesAsPairs = false)
{
    Json merges = Json::array();
    for (const auto& [left, right] : testMerges())
        merges.push_back(mergesAsPairs ? Json::array({left, right}) : Json(left + " " + right));
    Json root;
    root["version"] = "1.0";
    root["added_tokens"] = Json::array({Json{{"id", 400}, {"content", "<|endoftext|>"}, {"special", true}}});
    root["normalizer"] = nullptr;
    root["pre_tokenizer"] = preTokenizer;
    root["post_processor"] = nullptr;
    root["model"] = Json{{"type", "BPE"}, {"vocab", testVocabulary()}, {"merges", merges}};
    return root;
}

const Json gpt2PreTokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};

/// GPT-2's encoder.py, bpe() and encode(), as plainly as it is written there: find the lowest-ranked pair,
/// merge every occurrence of it left to right, repeat.
Strings referenceBpe(const std::string& piece)
{
    Strings word;
    for (unsigned char byte : piece)
        word.push_back(BpeTokenizer::byteAlphabet()[byte]);
    std::map<std::pair<std::string, std::string>, std::size_t> ranks;
    for (std::size_t r = 0; r < testMerges().size(); ++r)
        ranks.emplace(testMerges()[r], r);
    while (word.size() > 1) {
        std::size_t best = std::numeric_limits<std::size_t>::max();
        std::pair<std::string, std::string> bigram;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            const auto rank = ranks.find({word[i], word[i + 1]});
            if (rank != ranks.end() && rank->second < best)
                best = rank->second, bigram = rank->first;
        }
        if (best == std::numeric_limits<std::size_t>::max())
            break;
        Strings merged;
        for (std::size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == bigram.first && word[i + 1] == bigram.second) {
                merged.push_back(bigram.first + bigram.second);
                i += 2;
            } else {
                merged.push_back(word[i++]);
            }
        }
        word = merged;
    }
    return word;
}

Ids referenceEncode(const BpeTokenizer& tokenizer, const std::string& text)
{
    const Json vocabulary = testVocabulary();
    Ids ids;
    for (const std::string& piece : tokenizer.pieces(text)) {
        if (piece == "<|endoftext|>") {
            ids.push_back(400);
            continue;
        }
        for (const std::string& symbol : referenceBpe(piece))
            ids.push_back(vocabulary.at(symbol).get<std::int64_t>());
    }
    return ids;
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT
private slots:
    void byteAlphabet();
    void gpt2PatternSplitsAsPythonRegex_data();
    void gpt2PatternSplitsAsPythonRegex();
    void mergesAsGpt2Reference_data();
    void mergesAsGpt2Reference();
    void bothFileFormatsAgree();
    void splitSequenceAndSpecialTokens();
    void ignoreMergesAndPrefixSpace();
    void tokenStringsAndBytes();
    void longPiece();
    void refusals_data();
    void refusals();
    void refusesText();
    void directory();
    void realGpt2Tokenizer_data();
    void realGpt2Tokenizer();
};

void TestTokenizer::byteAlphabet()
{
    const Strings& alphabet = BpeTokenizer::byteAlphabet();
    QCOMPARE(alphabet.size(), std::size_t(256));
    QCOMPARE(alphabet[' '], std::string("Ġ"));  // U+0120
    QCOMPARE(alphabet['\n'], std::string("Ċ")); // U+010A
    QCOMPARE(alphabet['!'], std::string("!"));
    QCOMPARE(alphabet[0xA9], std::string("©"));
    QCOMPARE(alphabet[0xAD], std::string("Ń")); // the soft hyphen is not printable: U+0143
    QCOMPARE(alphabet[0], std::string("Ā"));    // U+0100
    Strings sorted = alphabet;
    std::sort(sorted.begin(), sorted.end());
    QVERIFY(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()); // 256 distinct characters
}

void TestTokenizer::gpt2PatternSplitsAsPythonRegex_data()
{
    // What Python's `regex` module (2026.5.9) finds for GPT-2's pattern, as encoder.py uses it.
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("pieces");
    const auto row = [](const char* text, std::initializer_list<const char*> pieces) {
        QStringList list;
        for (const char* piece : pieces)
            list << QString::fromUtf8(piece);
        QTest::newRow(text) << QString::fromUtf8(text) << list;
    };
    row("Hello world", {"Hello", " world"});
    row("I'm here, they'll go.", {"I", "'m", " here", ",", " they", "'ll", " go", "."});
    row("  two  spaces  ", {" ", " two", " ", " spaces", "  "});
    row("price: $3.50!!", {"price", ":", " $", "3", ".", "50", "!!"});
    row("naïve café 日本語 テスト", {"naïve", " café", " 日本語", " テスト"});
    row("emoji 🙂🙂 ok", {"emoji", " 🙂🙂", " ok"});
    row("tab\tand\nnewline\n\n", {"tab", "\t", "and", "\n", "newline", "\n\n"});
    row("x²+y³ = z", {"x", "²", "+", "y", "³", " =", " z"});
    row("don't STOP'S", {"don", "'t", " STOP", "'", "S"});
    row("   ", {"   "});
    row("ÀB 123456 ١٢٣", {"ÀB", " 123456", " ١٢٣"});
    row("end<|endoftext|>next", {"end", "<|endoftext|>", "next"}); // an added token is cut out first
}

void TestTokenizer::gpt2PatternSplitsAsPythonRegex()
{
    QFETCH(QString, text);
    QFETCH(QStringList, pieces);
    const BpeTokenizer tokenizer =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    QStringList found;
    for (const std::string& piece : tokenizer.pieces(text.toStdString()))
        found << QString::fromStdString(piece);
    QCOMPARE(found, pieces);
}

void TestTokenizer::mergesAsGpt2Reference_data()
{
    QTest::addColumn<QString>("text");
    for (const char* text : {"the cat sat", "the cat's hat in the cathedral", "123 1234 12 3",
                             "café cafés Café", "aaaaaaa aaaa", "   spaces   before and after   ",
                             "日本語 and 🙂", "<|endoftext|>the end<|endoftext|>", "x", ""})
        QTest::newRow(text) << QString::fromUtf8(text);
}

void TestTokenizer::mergesAsGpt2Reference()
{
    QFETCH(QString, text);
    const BpeTokenizer tokenizer =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    const std::string utf8 = text.toStdString();
    QCOMPARE(tokenizer.encode(utf8), referenceEncode(tokenizer, utf8));
}

void TestTokenizer::bothFileFormatsAgree()
{
    // Worked by hand from the merges: "the" is t·he (h e, then t he); " cat" is Ġ·c·at, then Ġc·at.
    const Json vocabulary = testVocabulary();
    const auto id = [&](const char* token) { return vocabulary.at(token).get<std::int64_t>(); };
    const Ids expected{id("the"), id("Ġcat"), id("Ġsat")};
    const BpeTokenizer fromJson =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    const BpeTokenizer fromPairs =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer, true).dump(), "t");
    const BpeTokenizer fromFiles =
        BpeTokenizer::fromVocabAndMerges(testVocabulary().dump(), mergesText(), "t/");
    for (const BpeTokenizer* tokenizer : {&fromJson, &fromPairs, &fromFiles})
        QCOMPARE(tokenizer->encode("the cat sat"), expected);
    const std::string text = "The café's 123 cats\r\nsat in the hat";
    QCOMPARE(fromFiles.encode(text), fromJson.encode(text));
    QCOMPARE(fromPairs.encode(text), fromJson.encode(text));
}

void TestTokenizer::splitSequenceAndSpecialTokens()
{
    // LLaMA 3's form: a Split by its own pattern (numbers in groups of up to three digits), then ByteLevel
    // without a pattern; <|begin_of_text|> before every text by the post-processor.
    const Json pre = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array(
             {Json{
                  {"type", "Split"},
                  {"pattern",
                   {{"Regex",
                     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                  {"behavior", "Isolated"},
                  {"invert", false}},
              Json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    Json root = tokenizerJson(pre);
    root["added_tokens"].push_back(Json{{"id", 401}, {"content", "<|begin_of_text|>"}, {"special", true}});
    root["post_processor"] = {
        {"type", "Sequence"},
        {"processors",
         Json::array({Json{{"type", "ByteLevel"}},
                      Json{{"type", "TemplateProcessing"},
                           {"single", Json::array({Json{{"SpecialToken",
                                                         {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                                   Json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}})}};
    const BpeTokenizer tokenizer = BpeTokenizer::fromTokenizerJson(root.dump(), "llama3");
    Strings pieces = tokenizer.pieces("STOP'S 1234567 ok");
    QCOMPARE(pieces, (Strings{"STOP", "'S", " ", "123", "456", "7", " ok"})); // case-insensitive 's here
    const Ids ids = tokenizer.encode("12 the");
    QCOMPARE(ids.front(), std::int64_t(401));
    QCOMPARE(ids.size(), std::size_t(3)); // <|begin_of_text|>, "12", " the"
    QCOMPARE(tokenizer.tokenString(ids[1]), std::string("12"));
    QCOMPARE(tokenizer.tokenString(ids[2]), std::string("Ġthe"));
}

void TestTokenizer::ignoreMergesAndPrefixSpace()
{
    // A Split by a String pattern takes it literally ("." is a dot, "\\E" two characters).
    const Json literal = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array({Json{{"type", "Split"}, {"pattern", {{"String", "a.\\E"}}}, {"behavior", "Isolated"}},
                      Json{{"type", "ByteLevel"}, {"use_regex", false}}})}};
    QCOMPARE(BpeTokenizer::fromTokenizerJson(tokenizerJson(literal).dump(), "t").pieces("xa.\\Eyab\\E"),
             (Strings{"x", "a.\\E", "yab\\E"}));

    // ignore_merges: a piece that is a token is that token, even where the merges would not make it.
    Json root = tokenizerJson(gpt2PreTokenizer);
    root["model"]["vocab"]["Ġhat"] = 500;
    QCOMPARE(BpeTokenizer::fromTokenizerJson(root.dump(), "t").encode(" hat").size(), std::size_t(3));
    root["model"]["ignore_merges"] = true;
    QCOMPARE(BpeTokenizer::fromTokenizerJson(root.dump(), "t").encode(" hat"), Ids{500});
    // add_prefix_space: "the" is read as " the".
    Json spaced = tokenizerJson({{"type", "ByteLevel"}, {"add_prefix_space", true}});
    const BpeTokenizer tokenizer = BpeTokenizer::fromTokenizerJson(spaced.dump(), "t");
    QCOMPARE(tokenizer.encode("the"), Ids{testVocabulary().at("Ġthe").get<std::int64_t>()});
}

void TestTokenizer::tokenStringsAndBytes()
{
    const BpeTokenizer tokenizer =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    // "café": Ã·© first (rank 13), then c·a, ca·f, caf·Ã©. " café" starts with Ġ·c (rank 5), and then no
    // merge takes Ġc·a.
    const Ids ids = tokenizer.encode("café\n");
    QCOMPARE(ids.size(), std::size_t(2));
    QCOMPARE(tokenizer.tokenString(ids[0]), std::string("cafÃ©"));
    QCOMPARE(tokenizer.tokenBytes(ids[0]), std::string("café"));
    QCOMPARE(tokenizer.encode(" café").size(), std::size_t(4)); // Ġc, a, f, Ã©
    QCOMPARE(tokenizer.tokenBytes(ids[1]), std::string("\n"));
    QCOMPARE(tokenizer.tokenBytes(400), std::string("<|endoftext|>"));
    // Half of "é": one byte, not valid UTF-8 alone.
    const Ids half = tokenizer.encode("日");
    QCOMPARE(half.size(), std::size_t(3));
    QCOMPARE(tokenizer.tokenBytes(half[0]), std::string("\xE6"));
    QCOMPARE(tokenizer.tokenString(-1), std::string());
    QCOMPARE(tokenizer.tokenString(100000), std::string());
    QCOMPARE(tokenizer.vocabularySize(), std::int64_t(401));
}

void TestTokenizer::longPiece()
{
    // One piece of 200,000 letters: the merges take n log n, not n² (this would not finish otherwise).
    const BpeTokenizer tokenizer =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    const Ids ids = tokenizer.encode(std::string(200'000, 'a'));
    QCOMPARE(ids.size(), std::size_t(50'000));
    QCOMPARE(tokenizer.tokenString(ids.front()), std::string("aaaa"));
}

void TestTokenizer::refusals_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    const auto row = [](const char* name, const Json& json, const char* message) {
        QTest::newRow(name) << QString::fromStdString(json.dump()) << QString::fromUtf8(message);
    };
    const Json good = tokenizerJson(gpt2PreTokenizer);
    Json j = good;
    j["model"]["type"] = "WordPiece";
    row("model type", j, "tok: model.type: \"WordPiece\" is not supported");
    j = good;
    j["model"]["byte_fallback"] = true;
    row("byte fallback", j, "model.byte_fallback is not supported");
    j = good;
    j["model"]["merges"].push_back("Ġ zzz");
    row("merge outside vocabulary", j, "model.merges[21]: \"zzz\" is not in the vocabulary");
    j = good;
    j["model"]["merges"].push_back("onlyone");
    row("merge with one token", j, "model.merges[21]: expected two tokens separated by one space");
    j = good;
    j["model"]["vocab"]["x"] = -3;
    row("negative id", j, "model.vocab[\"x\"]: expected a token id");
    j = good;
    j["pre_tokenizer"] = {{"type", "Metaspace"}};
    row("metaspace", j, "pre_tokenizer: pre-tokenizer \"Metaspace\" is not supported");
    j = good;
    j["pre_tokenizer"] = nullptr;
    row("not byte level", j, "not a byte-level BPE");
    j = good;
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    row("bad pattern", j, "pre_tokenizer.pattern: the pattern does not compile");
    j = good;
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Contiguous"}};
    row("split behavior", j, "\"Contiguous\" is not supported");
    j = good;
    j["normalizer"] = {{"type", "Lowercase"}};
    row("normalizer", j, "normalizer \"Lowercase\" is not supported");
    j = good;
    j["added_tokens"] = Json::array({Json{{"id", 5}}});
    row("added token", j, "added_tokens[0]: expected an object with \"id\" and a non-empty \"content\"");
    j = good;
    j["post_processor"] = {{"type", "BertProcessing"}};
    row("post processor", j, "post-processor \"BertProcessing\" is not supported");
    QTest::newRow("not json") << QStringLiteral("{\"model\": ") << QStringLiteral("tok: not valid JSON");
    QTest::newRow("deep") << QString(100'000, u'[') << QStringLiteral("tok: nested more than 64 levels deep");
    QTest::newRow("no model") << QStringLiteral("[1, 2]")
                              << QStringLiteral("expected a Hugging Face tokenizer");
}

void TestTokenizer::refusals()
{
    QFETCH(QString, json);
    QFETCH(QString, message);
    const QString what = errorOf([&] { BpeTokenizer::fromTokenizerJson(json.toStdString(), "tok"); });
    QVERIFY2(what.contains(message), qPrintable(what));
}

void TestTokenizer::refusesText()
{
    const BpeTokenizer tokenizer =
        BpeTokenizer::fromTokenizerJson(tokenizerJson(gpt2PreTokenizer).dump(), "t");
    QCOMPARE(errorOf([&] { tokenizer.encode("ok \xC3\x28 no"); }),
             QStringLiteral("the text is not valid UTF-8 (at byte 3)"));
    QCOMPARE(errorOf([&] { tokenizer.encode("\xED\xA0\x80"); }), // a surrogate
             QStringLiteral("the text is not valid UTF-8 (at byte 0)"));
    // A vocabulary without the byte "z" cannot spell it.
    Json vocabulary = testVocabulary();
    vocabulary.erase("z");
    const BpeTokenizer partial = BpeTokenizer::fromVocabAndMerges(vocabulary.dump(), mergesText(), "small/");
    QCOMPARE(errorOf([&] { partial.encode("zoo"); }),
             QStringLiteral("small/: the symbol \"z\" is not in the vocabulary"));
    QVERIFY(errorOf([&] {
                BpeTokenizer::fromVocabAndMerges(testVocabulary().dump(), "#version: 0.2\na\n", "g/");
            }).contains(QStringLiteral("g/merges.txt line 2: expected two tokens separated by one space")));
}

void TestTokenizer::directory()
{
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const std::string path = folder.path().toStdString();
    QVERIFY(errorOf([&] { BpeTokenizer::fromDirectory(path); }).contains(QStringLiteral("no tokenizer")));
    const auto write = [&](const char* name, const std::string& text) {
        QFile file(folder.filePath(QString::fromLatin1(name)));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(text.data(), qint64(text.size()));
    };
    write("vocab.json", testVocabulary().dump());
    write("merges.txt", mergesText());
    const Ids fromFiles = BpeTokenizer::fromDirectory(path).encode("the cat");
    write("tokenizer.json", tokenizerJson(gpt2PreTokenizer).dump());
    QCOMPARE(BpeTokenizer::fromDirectory(path).encode("the cat"), fromFiles); // tokenizer.json first
    write("tokenizer.json", "{ broken");
    QVERIFY(errorOf([&] {
                BpeTokenizer::fromDirectory(path);
            }).contains(QStringLiteral("tokenizer.json: not valid JSON")));
}

// GPT-2's real tokenizer files (tests/data/gpt2-tokenizer: OpenAI's vocab.json and merges.txt, checked
// against tiktoken's hashes; tests/data/hf-gpt2-1layer: a tokenizer.json saved by transformers) against ids
// published in the tests of tiktoken, GPT-3-Encoder and rust-tokenizers (reference_ids.json names each
// source). "hello <|endoftext|>" is [31373, 220, 50256] as in Hugging Face, where <|endoftext|> is special.
void TestTokenizer::realGpt2Tokenizer_data()
{
    QTest::addColumn<QString>("folder");
    QTest::newRow("vocab.json + merges.txt") << QStringLiteral(QKV_SOURCE_DIR "/tests/data/gpt2-tokenizer");
    QTest::newRow("tokenizer.json") << QStringLiteral(QKV_SOURCE_DIR "/tests/data/hf-gpt2-1layer");
}

void TestTokenizer::realGpt2Tokenizer()
{
    QFETCH(QString, folder);
    const BpeTokenizer tokenizer = BpeTokenizer::fromDirectory(folder.toStdString());
    QCOMPARE(tokenizer.vocabularySize(), std::int64_t(50257));
    QFile file(QStringLiteral(QKV_SOURCE_DIR "/tests/data/gpt2-tokenizer/reference_ids.json"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const Json references = Json::parse(file.readAll().toStdString());
    QCOMPARE(references.size(), std::size_t(20));
    for (const Json& reference : references) {
        const std::string text = reference["text"].get<std::string>();
        const Ids expected = reference["ids"].get<Ids>();
        const Ids ids = tokenizer.encode(text);
        QVERIFY2(ids == expected, qPrintable(QStringLiteral("%1: %2 ids, first %3; expected %4 ids, first %5")
                                                 .arg(QString::fromStdString(text))
                                                 .arg(ids.size())
                                                 .arg(ids.empty() ? -1 : ids[0])
                                                 .arg(expected.size())
                                                 .arg(expected[0])));
    }
    QCOMPARE(tokenizer.tokenString(18435), std::string("ĠHello"));
    QCOMPARE(tokenizer.tokenBytes(18435), std::string(" Hello"));
}

QKV_TEST_GUILESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
