// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A tokenizer.json small enough to read, written beside a tiny model (TinyModels.h) by the command-line
// suites that give texts rather than ids.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QtTest>

namespace qkv::test {

/// A byte-level BPE tokenizer of 40 tokens: the letters (0 … 25), "Ġ" (26) and the merges below, so that
/// "a cat sat on" is [0, 29, 34, 38], "a dog sat on" [0, 32, 34, 38] and " mat" one token (36).
inline void writeTinyTokenizer(const QString& folder)
{
    QJsonObject vocabulary;
    for (int letter = 0; letter < 26; ++letter)
        vocabulary.insert(QString(QChar(u'a' + letter)), letter);
    vocabulary.insert(QStringLiteral("Ġ"), 26);
    const QStringList merges = {QStringLiteral("a t"),   QStringLiteral("Ġ c"),   QStringLiteral("Ġc at"),
                                QStringLiteral("Ġ d"),   QStringLiteral("o g"),   QStringLiteral("Ġd og"),
                                QStringLiteral("Ġ s"),   QStringLiteral("Ġs at"), QStringLiteral("Ġ m"),
                                QStringLiteral("Ġm at"), QStringLiteral("Ġ o"),   QStringLiteral("Ġo n")};
    int next = 27;
    for (const QString& merge : merges)
        vocabulary.insert(QString(merge).remove(QLatin1Char(' ')), next++);
    const QJsonObject model{{QStringLiteral("type"), QStringLiteral("BPE")},
                            {QStringLiteral("vocab"), vocabulary},
                            {QStringLiteral("merges"), QJsonArray::fromStringList(merges)}};
    const QJsonObject preTokenizer{{QStringLiteral("type"), QStringLiteral("ByteLevel")},
                                   {QStringLiteral("add_prefix_space"), false},
                                   {QStringLiteral("use_regex"), true}};
    const QJsonObject root{{QStringLiteral("version"), QStringLiteral("1.0")},
                           {QStringLiteral("added_tokens"), QJsonArray()},
                           {QStringLiteral("pre_tokenizer"), preTokenizer},
                           {QStringLiteral("model"), model}};
    QFile file(folder + QStringLiteral("/tokenizer.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(root).toJson());
}

} // namespace qkv::test
