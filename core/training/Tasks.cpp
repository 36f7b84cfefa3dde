// SPDX-License-Identifier: GPL-3.0-or-later
#include "Tasks.h"

#include "BpeTokenizer.h"
#include "Error.h"
#include "FileReading.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

namespace qkv::training {

namespace {

constexpr std::uint64_t trainingStream = 1, validationStream = 2;

std::mt19937_64 generator(std::uint64_t seed, std::uint64_t stream, std::uint64_t index)
{
    std::seed_seq sequence{std::uint32_t(seed), std::uint32_t(seed >> 32), std::uint32_t(stream),
                           std::uint32_t(index), std::uint32_t(index >> 32)};
    return std::mt19937_64(sequence);
}

/// A whole number from low to high, the generator's output reduced by hand: std::uniform_int_distribution
/// differs between standard libraries, and a seed must give the same data everywhere.
std::int64_t uniform(std::mt19937_64& random, std::int64_t low, std::int64_t high)
{
    return low + std::int64_t(random() % std::uint64_t(high - low + 1));
}

} // namespace

const char* toString(TaskKind kind)
{
    switch (kind) {
    case TaskKind::Induction:
        return "induction";
    case TaskKind::Copy:
        return "copy";
    case TaskKind::Reverse:
        return "reverse";
    case TaskKind::Sort:
        return "sort";
    case TaskKind::AssociativeRecall:
        return "associative-recall";
    case TaskKind::Text:
        return "text";
    }
    return "";
}

TaskKind taskKind(const std::string& name)
{
    for (TaskKind kind : {TaskKind::Induction, TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort,
                          TaskKind::AssociativeRecall, TaskKind::Text})
        if (name == toString(kind))
            return kind;
    throw Error("--task " + name + ": expected induction, copy, reverse, sort, associative-recall or text");
}

std::vector<std::string> utf8Characters(const std::string& bytes, const std::string& name)
{
    if (bytes.empty())
        throw Error(name + ": the text file is empty");
    std::vector<std::string> characters;
    std::size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        std::size_t length = 0;
        std::uint32_t code = 0;
        if (lead < 0x80) {
            length = 1;
            code = lead;
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
            code = lead & 0x1F;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3;
            code = lead & 0x0F;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4;
            code = lead & 0x07;
        }
        const auto invalid = [&] {
            return Error(name + ": not UTF-8 text (an invalid byte sequence at byte " + std::to_string(i) +
                         ")");
        };
        if (length == 0 || i + length > bytes.size())
            throw invalid();
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(bytes[i + k]);
            if ((next & 0xC0) != 0x80)
                throw invalid();
            code = (code << 6) | (next & 0x3F);
        }
        if ((length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
            (length == 4 && (code < 0x10000 || code > 0x10FFFF)))
            throw invalid();
        if (code < 0x20 && code != '\t' && code != '\n' && code != '\r')
            throw Error(name + ": a binary file, not text (control byte " + std::to_string(code) +
                        " at byte " + std::to_string(i) + ")");
        characters.push_back(bytes.substr(i, length));
        i += length;
    }
    return characters;
}

Task::Task(TaskSettings settings) : m_settings(std::move(settings))
{
    TaskSettings& s = m_settings;
    const auto positive = [](Index value, const char* option, Index low, Index high) {
        if (value < low || value > high)
            throw Error(std::string(option) + " " + std::to_string(value) + ": expected " +
                        std::to_string(low) + " to " + std::to_string(high));
    };
    switch (s.kind) {
    case TaskKind::Induction:
        s.vocab = s.vocab > 0 ? s.vocab : 64;
        s.length = s.length > 0 ? s.length : 48;
        s.minPeriod = s.minPeriod > 0 ? s.minPeriod : 8;
        positive(s.vocab, "--task-vocab", 2, 1'000'000);
        positive(s.length, "--task-length", 4, 100'000);
        positive(s.minPeriod, "--task-min-period", 1, s.length / 2);
        m_modelVocab = s.vocab;
        break;
    case TaskKind::Copy:
    case TaskKind::Reverse:
    case TaskKind::Sort:
        s.vocab = s.vocab > 0 ? s.vocab : 16;
        s.length = s.length > 0 ? s.length : 17;
        positive(s.vocab, "--task-vocab", 2, 1'000'000);
        positive(s.length, "--task-length", 3, 100'001);
        if (s.length % 2 == 0)
            throw Error("--task-length " + std::to_string(s.length) +
                        ": expected an odd length (the items, a separator, the answer)");
        m_modelVocab = s.vocab + 1; // the separator is token `vocab`
        break;
    case TaskKind::AssociativeRecall:
        s.vocab = s.vocab > 0 ? s.vocab : 16;
        s.length = s.length > 0 ? s.length : 14;
        positive(s.vocab, "--task-vocab", 2, 500'000);
        positive(s.length, "--task-length", 4, 2 * s.vocab + 2);
        if (s.length % 2 != 0)
            throw Error("--task-length " + std::to_string(s.length) +
                        ": expected an even length (key-value pairs, then a key and its value)");
        m_modelVocab = 2 * s.vocab; // keys 0 … V − 1, values V … 2V − 1
        break;
    case TaskKind::Text: {
        s.length = s.length > 0 ? s.length : 64;
        positive(s.length, "--task-length", 2, 100'000);
        if (s.textFile.empty())
            throw Error("--task text needs --text-file FILE");
        const std::string bytes = readRegularFile(s.textFile, std::uint64_t(1) << 30, "the text file");
        // Either way the file is checked here, so an empty, binary or invalid one is refused by its name.
        const std::vector<std::string> characters = utf8Characters(bytes, s.textFile);
        if (!s.tokenizer.empty()) {
            try {
                const BpeTokenizer tokenizer = BpeTokenizer::fromDirectory(s.tokenizer);
                m_text = tokenizer.encode(bytes);
                m_modelVocab = Index(tokenizer.vocabularySize());
            } catch (const Error& e) {
                throw Error("--text-tokenizer: " + std::string(e.what()));
            }
        } else {
            std::map<std::string, std::int64_t> ids;
            for (const std::string& c : characters)
                ids.emplace(c, 0);
            for (auto& [c, id] : ids) {
                id = std::int64_t(m_characters.size());
                m_characters.push_back(c);
            }
            m_text.reserve(characters.size());
            for (const std::string& c : characters)
                m_text.push_back(ids[c]);
            m_modelVocab = std::max<Index>(2, Index(m_characters.size()));
        }
        m_validationStart = Index(m_text.size()) * 9 / 10;
        if (m_validationStart < s.length || Index(m_text.size()) - m_validationStart < s.length)
            throw Error(s.textFile + ": " + std::to_string(m_text.size()) +
                        (s.tokenizer.empty() ? " characters" : " tokens") +
                        " are too few for --task-length " + std::to_string(s.length) + " (at least " +
                        std::to_string(10 * s.length) + ")");
        break;
    }
    }
}

std::vector<std::int64_t> Task::draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                     bool validation) const
{
    const TaskSettings& s = m_settings;
    std::mt19937_64 random = generator(seed, stream, index);
    const Index n = s.length;
    std::vector<std::int64_t> x(static_cast<std::size_t>(n));
    const auto token = [&] { return uniform(random, 0, s.vocab - 1); };
    switch (s.kind) {
    case TaskKind::Induction: {
        const Index period = uniform(random, s.minPeriod, n / 2);
        for (Index i = 0; i < n; ++i)
            x[std::size_t(i)] = i < period ? token() : x[std::size_t(i - period)];
        break;
    }
    case TaskKind::Copy:
    case TaskKind::Reverse:
    case TaskKind::Sort: {
        const Index items = n / 2;
        for (Index i = 0; i < items; ++i)
            x[std::size_t(i)] = token();
        x[std::size_t(items)] = s.vocab;
        std::vector<std::int64_t> answer(x.begin(), x.begin() + items);
        if (s.kind == TaskKind::Reverse)
            std::reverse(answer.begin(), answer.end());
        else if (s.kind == TaskKind::Sort)
            std::sort(answer.begin(), answer.end());
        std::copy(answer.begin(), answer.end(), x.begin() + items + 1);
        break;
    }
    case TaskKind::AssociativeRecall: {
        const Index pairs = (n - 2) / 2;
        std::vector<std::int64_t> keys(std::size_t(s.vocab));
        std::iota(keys.begin(), keys.end(), 0);
        for (Index i = 0; i < pairs; ++i) // a partial shuffle: distinct keys
            std::swap(keys[std::size_t(i)], keys[std::size_t(uniform(random, i, s.vocab - 1))]);
        std::vector<std::int64_t> values(static_cast<std::size_t>(pairs));
        for (Index i = 0; i < pairs; ++i) {
            values[std::size_t(i)] = s.vocab + token();
            x[std::size_t(2 * i)] = keys[std::size_t(i)];
            x[std::size_t(2 * i + 1)] = values[std::size_t(i)];
        }
        const Index asked = uniform(random, 0, pairs - 1);
        x[std::size_t(n - 2)] = keys[std::size_t(asked)];
        x[std::size_t(n - 1)] = values[std::size_t(asked)];
        break;
    }
    case TaskKind::Text: {
        const Index first = validation ? m_validationStart : 0;
        const Index last = validation ? Index(m_text.size()) - n : m_validationStart - n;
        const Index start = uniform(random, first, last);
        std::copy(m_text.begin() + start, m_text.begin() + start + n, x.begin());
        break;
    }
    }
    return x;
}

std::vector<std::int64_t> Task::trainingSequence(std::uint64_t seed, std::int64_t step, Index index) const
{
    return draw(seed, trainingStream, (std::uint64_t(step) << 24) + std::uint64_t(index), false);
}

std::vector<std::int64_t> Task::validationSequence(std::uint64_t seed, Index index) const
{
    return draw(seed, validationStream, std::uint64_t(index), true);
}

std::vector<std::uint8_t> Task::scoredPositions(const std::vector<std::int64_t>& sequence) const
{
    const Index n = Index(sequence.size());
    std::vector<std::uint8_t> mask(std::size_t(std::max<Index>(0, n - 1)), 0);
    for (Index i = 0; i + 1 < n; ++i) {
        const Index target = i + 1;
        bool scored = true;
        switch (m_settings.kind) {
        case TaskKind::Induction:
            scored = target >= n / 2;
            break;
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort:
            scored = target > n / 2;
            break;
        case TaskKind::AssociativeRecall:
            scored = target == n - 1;
            break;
        case TaskKind::Text:
            break;
        }
        mask[std::size_t(i)] = scored ? 1 : 0;
    }
    return mask;
}

} // namespace qkv::training
