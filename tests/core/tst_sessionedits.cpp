// SPDX-License-Identifier: GPL-3.0-or-later
// Structural edits of a session (core/SessionEdits): every matrix follows the edit and stays consistent.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "Initializers.h"
#include "NumpyRandom.h"
#include "SessionEdits.h"

#include "TestMain.h"
#include <QtTest>

#include <algorithm>
#include <functional>
#include <random>

using namespace qkv;

namespace {

/// The shape of a hand-built session.
struct Config {
    const char* name;
    Index n;
    Index m; ///< 0: self-attention
    Index dModel, dK, dV;
    int heads;
    bool outputProjection; ///< W_O with 5 columns
    ScoreFunction score;
    Index dA; ///< additive only
    bool customMask;
};

const Config configs[] = {
    {"dot", 4, 0, 4, 3, 2, 1, false, ScoreFunction::Dot, 0, true},
    {"dot no mask", 4, 0, 3, 2, 2, 1, false, ScoreFunction::Dot, 0, false},
    {"dot W_O 3 heads", 3, 0, 4, 2, 3, 3, true, ScoreFunction::Dot, 0, true},
    {"general 2 heads W_O", 4, 0, 5, 3, 2, 2, true, ScoreFunction::General, 0, true},
    {"additive d_a 5, 2 heads W_O", 3, 0, 4, 3, 2, 2, true, ScoreFunction::Additive, 5, true},
    {"cross general", 3, 5, 4, 2, 3, 2, true, ScoreFunction::General, 0, true},
    {"cross additive", 4, 2, 3, 4, 2, 3, false, ScoreFunction::Additive, 2, true},
};
constexpr int configCount = int(sizeof configs / sizeof configs[0]);

bool maskBit(Index i, Index j)
{
    return (i * 7 + j * 13 + i * j) % 5 < 2;
}

/// Every number in the session is different, so a misplaced row or column shows.
Session build(const Config& c)
{
    double next = 1.0;
    const auto fill = [&](Index rows, Index cols) {
        Matrix m(rows, cols);
        for (Index i = 0; i < m.size(); ++i)
            m.data()[i] = next++ / 8.0;
        return m;
    };
    Session s;
    s.title = c.name;
    s.X = fill(c.n, c.dModel);
    for (Index i = 0; i < c.n; ++i) {
        s.tokens.push_back("q" + std::to_string(i));
        s.pad.push_back(i % 3 == 1);
    }
    if (c.m > 0) {
        Context context;
        context.Z = fill(c.m, c.dModel);
        for (Index j = 0; j < c.m; ++j) {
            context.tokens.push_back("k" + std::to_string(j));
            context.pad.push_back(j % 2 == 0);
        }
        s.context = context;
    }
    for (int h = 0; h < c.heads; ++h) {
        Head head;
        head.W_Q = fill(c.dModel, c.dK);
        head.W_K = fill(c.dModel, c.dK);
        head.W_V = fill(c.dModel, c.dV);
        if (c.score == ScoreFunction::General)
            head.W_S = fill(c.dK, c.dK);
        if (c.score == ScoreFunction::Additive) {
            head.W_a = fill(c.dK, c.dA);
            head.U_a = fill(c.dK, c.dA);
            head.v_a = fill(c.dA, 1).col(0);
        }
        s.heads.push_back(head);
    }
    if (c.outputProjection)
        s.W_O = fill(Index(c.heads) * c.dV, 5);
    s.score = c.score;
    s.scale = defaultScale(c.score);
    if (c.customMask) {
        s.mask.type = MaskType::Custom;
        s.mask.allowed.resize(s.n(), s.m());
        for (Index i = 0; i < s.n(); ++i)
            for (Index j = 0; j < s.m(); ++j)
                s.mask.allowed(i, j) = maskBit(i, j) ? 1 : 0;
    }
    return s;
}

const InitializerSpec xavier{Initializer::XavierNormal, 1.0, 42};
const InitializerSpec zeros{Initializer::Zeros, 1.0, 0};

#define VERIFY_VALID(session)                                                                                \
    do {                                                                                                     \
        const std::string problem_ = validate(session);                                                      \
        QVERIFY2(problem_.empty(), problem_.c_str());                                                        \
    } while (false)

/// New position → old position, or −1 for an inserted token.
using Mapping = std::vector<Index>;

Mapping identity(Index count)
{
    Mapping map(static_cast<std::size_t>(count));
    for (Index k = 0; k < count; ++k)
        map[static_cast<std::size_t>(k)] = k;
    return map;
}

Mapping insertMapping(Index count, Index at)
{
    Mapping map = identity(count);
    map.insert(map.begin() + at, -1);
    return map;
}

Mapping removeMapping(Index count, Index at)
{
    Mapping map = identity(count);
    map.erase(map.begin() + at);
    return map;
}

Mapping moveMapping(Index count, Index from, Index to)
{
    Mapping map = identity(count);
    map.erase(map.begin() + from);
    map.insert(map.begin() + to, from);
    return map;
}

/// Checks a token edit: the edited sequence (embeddings, tokens, pad) follows `map`, inserted tokens have
/// `text`, no padding and a finite embedding, the custom mask's rows (queries) and columns (keys) follow,
/// with new rows and columns allowed, and nothing else changed.
void checkSequenceEdit(const Session& before, const Session& after, Side side, const Mapping& map,
                       const std::string& text)
{
    VERIFY_VALID(after);
    const bool editsContext = side == Side::Context && before.context.has_value();
    const Matrix& e0 = editsContext ? before.context->Z : before.X;
    const Matrix& e1 = editsContext ? after.context->Z : after.X;
    const auto& t0 = editsContext ? before.context->tokens : before.tokens;
    const auto& t1 = editsContext ? after.context->tokens : after.tokens;
    const auto& p0 = editsContext ? before.context->pad : before.pad;
    const auto& p1 = editsContext ? after.context->pad : after.pad;
    QCOMPARE(e1.rows(), Index(map.size()));
    QCOMPARE(e1.cols(), e0.cols());
    QCOMPARE(t1.size(), map.size());
    QCOMPARE(p1.size(), map.size());
    for (std::size_t k = 0; k < map.size(); ++k) {
        const Index old = map[k];
        const auto row = static_cast<Index>(k);
        if (old < 0) {
            QCOMPARE(t1[k], text);
            QCOMPARE(bool(p1[k]), false);
            QVERIFY(e1.row(row).allFinite());
        } else {
            const auto o = static_cast<std::size_t>(old);
            QCOMPARE(t1[k], t0[o]);
            QCOMPARE(bool(p1[k]), bool(p0[o]));
            QVERIFY2(e1.row(row) == e0.row(old), qPrintable(QStringLiteral("row %1 ← %2").arg(row).arg(old)));
        }
    }
    // The other sequence, the heads and the options are untouched.
    if (editsContext) {
        QVERIFY(after.X == before.X);
        QVERIFY(after.tokens == before.tokens);
        QVERIFY(after.pad == before.pad);
    } else if (before.context) {
        QVERIFY(after.context == before.context);
    }
    QVERIFY(after.heads == before.heads);
    QVERIFY(after.W_O == before.W_O);
    QCOMPARE(int(after.mask.type), int(before.mask.type));

    if (before.mask.allowed.size() == 0) {
        QCOMPARE(after.mask.allowed.size(), Index(0));
        return;
    }
    const Mapping rowMap = editsContext ? identity(before.n()) : map;
    const Mapping colMap = (editsContext || !before.context) ? map : identity(before.m());
    QCOMPARE(after.mask.allowed.rows(), Index(rowMap.size()));
    QCOMPARE(after.mask.allowed.cols(), Index(colMap.size()));
    for (std::size_t i = 0; i < rowMap.size(); ++i)
        for (std::size_t j = 0; j < colMap.size(); ++j) {
            const bool fresh = rowMap[i] < 0 || colMap[j] < 0;
            const int expected = fresh ? 1 : before.mask.allowed(rowMap[i], colMap[j]);
            QVERIFY2(after.mask.allowed(Index(i), Index(j)) == expected,
                     qPrintable(QStringLiteral("mask (%1,%2)").arg(i).arg(j)));
        }
}

bool sameTopLeft(const Matrix& a, const Matrix& b)
{
    const Index rows = std::min(a.rows(), b.rows()), cols = std::min(a.cols(), b.cols());
    return a.topLeftCorner(rows, cols) == b.topLeftCorner(rows, cols);
}

void addConfigRows(const char* suffix = "")
{
    for (int c = 0; c < configCount; ++c)
        QTest::addRow("%s%s", configs[c].name, suffix) << c;
}

} // namespace

class TestSessionEdits : public QObject {
    Q_OBJECT
private slots:
    void reinitializeWeightsKeepsShapesAndEmbeddings();
    void numpyReinitializeDrawsOneStream();
    void numpyReinitializeEmbeddings();
    void numpyEditsKeepSeedsInRange();
    void dimensionNamesFollowDModel();
    void renameDimension();
    void blankSessionIsValid();
    void successiveInsertionsDiffer();
    void builtSessionsAreValid_data();
    void builtSessionsAreValid();

    void insertToken_data();
    void insertToken();
    void removeToken_data();
    void removeToken();
    void moveToken_data();
    void moveToken();
    void selfAttentionContextSideIsQuerySide();
    void insertedEmbeddingComesFromInitializer();

    void resize_data();
    void resize();
    void biasesFollowTheirDimensions();
    void biasesOnAndOff();
    void setHeadCount_data();
    void setHeadCount();
    void crossAttention_data();
    void crossAttention();
    void ensureScoreParameters_data();
    void ensureScoreParameters();
    void ensureScoreParametersKeepsSharedDA();
    void resizedMatrix_data();
    void resizedMatrix();

    void sameSeedSameEntries();
    void randomEditsStayValid_data();
    void randomEditsStayValid();

    void scoreFunctionBringsItsScaleAndParameters();
    void maskTypeAndCells();
    void outputProjectionOnAndOff();
    void outputProjectionDOut();
    void slidingWindowStartsWide_data();
    void slidingWindowStartsWide();
    void paddingAndNewTokenNames();
};

void TestSessionEdits::builtSessionsAreValid_data()
{
    QTest::addColumn<int>("config");
    addConfigRows();
}

void TestSessionEdits::builtSessionsAreValid()
{
    QFETCH(int, config);
    VERIFY_VALID(build(configs[config]));
}

// ---------------------------------------------------------------------------------------------------------
// Tokens

namespace {

void addSequenceRows(const std::function<void(int config, Side side, Index count)>& add)
{
    for (int c = 0; c < configCount; ++c)
        for (Side side : {Side::Query, Side::Context}) {
            const Config& config = configs[c];
            if (side == Side::Context && config.m == 0)
                continue; // selfAttentionContextSideIsQuerySide
            add(c, side, side == Side::Query ? config.n : config.m);
        }
}

const char* sideName(Side side)
{
    return side == Side::Query ? "query" : "context";
}

} // namespace

void TestSessionEdits::insertToken_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("at");
    addSequenceRows([](int c, Side side, Index count) {
        for (Index at : {Index(0), Index(1), count})
            QTest::addRow("%s, %s, at %d", configs[c].name, sideName(side), int(at))
                << c << int(side) << int(at);
    });
}

void TestSessionEdits::insertToken()
{
    QFETCH(int, config);
    QFETCH(int, side);
    QFETCH(int, at);
    const Session before = build(configs[config]);
    Session after = before;
    const Index count = Side(side) == Side::Query ? before.n() : before.m();
    qkv::insertToken(after, Side(side), at, "new", xavier);
    checkSequenceEdit(before, after, Side(side), insertMapping(count, at), "new");
}

void TestSessionEdits::removeToken_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("at");
    addSequenceRows([](int c, Side side, Index count) {
        for (Index at : {Index(0), Index(1), count - 1})
            QTest::addRow("%s, %s, at %d", configs[c].name, sideName(side), int(at))
                << c << int(side) << int(at);
    });
}

void TestSessionEdits::removeToken()
{
    QFETCH(int, config);
    QFETCH(int, side);
    QFETCH(int, at);
    const Session before = build(configs[config]);
    Session after = before;
    const Index count = Side(side) == Side::Query ? before.n() : before.m();
    qkv::removeToken(after, Side(side), at);
    checkSequenceEdit(before, after, Side(side), removeMapping(count, at), "");
}

void TestSessionEdits::moveToken_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("from");
    QTest::addColumn<int>("to");
    addSequenceRows([](int c, Side side, Index count) {
        for (Index from = 0; from < count; ++from)
            for (Index to = 0; to < count; ++to)
                QTest::addRow("%s, %s, %d→%d", configs[c].name, sideName(side), int(from), int(to))
                    << c << int(side) << int(from) << int(to);
    });
}

void TestSessionEdits::moveToken()
{
    QFETCH(int, config);
    QFETCH(int, side);
    QFETCH(int, from);
    QFETCH(int, to);
    const Session before = build(configs[config]);
    Session after = before;
    const Index count = Side(side) == Side::Query ? before.n() : before.m();
    qkv::moveToken(after, Side(side), from, to);
    checkSequenceEdit(before, after, Side(side), moveMapping(count, from, to), "");
    if (from == to)
        QVERIFY(after == before);
}

void TestSessionEdits::selfAttentionContextSideIsQuerySide()
{
    // Without a context, the key side is the query sequence: a context-side edit is a query-side edit,
    // and the custom mask's rows and columns both follow.
    const Session before = build(configs[0]);
    QVERIFY(!before.context);
    for (const bool viaContext : {false, true}) {
        const Side side = viaContext ? Side::Context : Side::Query;
        Session after = before;
        qkv::insertToken(after, side, 2, "x", xavier);
        checkSequenceEdit(before, after, Side::Query, insertMapping(before.n(), 2), "x");
        if (QTest::currentTestFailed())
            return;
        after = before;
        qkv::removeToken(after, side, 1);
        checkSequenceEdit(before, after, Side::Query, removeMapping(before.n(), 1), "");
        if (QTest::currentTestFailed())
            return;
        after = before;
        qkv::moveToken(after, side, 0, 3);
        checkSequenceEdit(before, after, Side::Query, moveMapping(before.n(), 0, 3), "");
        if (QTest::currentTestFailed())
            return;
    }
    QVERIFY(!before.context);
}

void TestSessionEdits::insertedEmbeddingComesFromInitializer()
{
    Session s = build(configs[5]);
    qkv::insertToken(s, Side::Query, 1, "zero", zeros);
    QVERIFY(s.X.row(1).isZero(0.0));
    qkv::insertToken(s, Side::Context, 0, "zero", zeros);
    QVERIFY(s.context->Z.row(0).isZero(0.0));
    qkv::insertToken(s, Side::Query, 0, "random", xavier);
    QVERIFY(!s.X.row(0).isZero(0.0));
    VERIFY_VALID(s);
}

// ---------------------------------------------------------------------------------------------------------
// Dimensions and heads

void TestSessionEdits::resize_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("which"); // 0 d_model, 1 d_k, 2 d_v
    QTest::addColumn<int>("size");
    const char* names[] = {"d_model", "d_k", "d_v"};
    for (int c = 0; c < configCount; ++c) {
        const Config& config = configs[c];
        const Index old[] = {config.dModel, config.dK, config.dV};
        for (int which = 0; which < 3; ++which)
            for (Index size : {Index(1), old[which] - 1, old[which], old[which] + 2})
                if (size >= 1)
                    QTest::addRow("%s, %s %d→%d", config.name, names[which], int(old[which]), int(size))
                        << c << which << int(size);
    }
}

void TestSessionEdits::resize()
{
    QFETCH(int, config);
    QFETCH(int, which);
    QFETCH(int, size);
    const Session before = build(configs[config]);
    Session after = before;
    const Index oldDV = before.dV();
    switch (which) {
    case 0:
        resizeDModel(after, size, xavier);
        break;
    case 1:
        resizeDK(after, size, xavier);
        break;
    default:
        resizeDV(after, size, xavier);
        break;
    }
    VERIFY_VALID(after);
    QCOMPARE(after.dModel(), which == 0 ? Index(size) : before.dModel());
    QCOMPARE(after.dK(), which == 1 ? Index(size) : before.dK());
    QCOMPARE(after.dV(), which == 2 ? Index(size) : before.dV());
    QCOMPARE(after.n(), before.n());
    QCOMPARE(after.m(), before.m());
    QCOMPARE(after.headCount(), before.headCount());

    // The kept parts keep their values; what the edit does not touch stays exactly the same.
    QVERIFY(sameTopLeft(after.X, before.X));
    if (before.context)
        QVERIFY(sameTopLeft(after.context->Z, before.context->Z));
    if (which != 0) {
        QVERIFY(after.X == before.X);
        QVERIFY(after.context == before.context);
    }
    QVERIFY(after.tokens == before.tokens);
    QVERIFY(after.pad == before.pad);
    QVERIFY(after.mask == before.mask);
    for (int h = 0; h < before.headCount(); ++h) {
        const Head& b = before.heads[std::size_t(h)];
        const Head& a = after.heads[std::size_t(h)];
        QVERIFY(sameTopLeft(a.W_Q, b.W_Q));
        QVERIFY(sameTopLeft(a.W_K, b.W_K));
        QVERIFY(sameTopLeft(a.W_V, b.W_V));
        QVERIFY(sameTopLeft(a.W_S, b.W_S));
        QVERIFY(sameTopLeft(a.W_a, b.W_a));
        QVERIFY(sameTopLeft(a.U_a, b.U_a));
        QVERIFY(a.v_a == b.v_a); // d_a never changes
        QCOMPARE(a.W_a.cols(), b.W_a.cols());
        if (which != 1) {
            QVERIFY(a.W_S == b.W_S);
            QVERIFY(a.W_a == b.W_a);
            QVERIFY(a.U_a == b.U_a);
        }
        if (which == 1)
            QVERIFY(a.W_V == b.W_V);
        if (which == 2) {
            QVERIFY(a.W_Q == b.W_Q);
            QVERIFY(a.W_K == b.W_K);
        }
    }
    QCOMPARE(after.W_O.has_value(), before.W_O.has_value());
    if (before.W_O) {
        QCOMPARE(after.W_O->cols(), before.W_O->cols());
        if (which != 2) {
            QVERIFY(after.W_O == before.W_O);
        } else {
            // One block of d_v rows per head; each keeps its top rows.
            const Index keep = std::min(oldDV, Index(size));
            for (Index h = 0; h < before.headCount(); ++h)
                QVERIFY2(after.W_O->middleRows(h * size, keep) == before.W_O->middleRows(h * oldDV, keep),
                         qPrintable(QStringLiteral("W_O block of head %1").arg(h)));
        }
    }
}

void TestSessionEdits::setHeadCount_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("heads");
    for (int c = 0; c < configCount; ++c)
        for (int heads : {1, 2, configs[c].heads, 5, 64})
            QTest::addRow("%s, %d→%d", configs[c].name, configs[c].heads, heads) << c << heads;
}

void TestSessionEdits::setHeadCount()
{
    QFETCH(int, config);
    QFETCH(int, heads);
    const Session before = build(configs[config]);
    Session after = before;
    qkv::setHeadCount(after, heads, xavier);
    VERIFY_VALID(after);
    QCOMPARE(after.headCount(), heads);
    QCOMPARE(after.dModel(), before.dModel());
    QCOMPARE(after.dK(), before.dK());
    QCOMPARE(after.dV(), before.dV());
    const int kept = std::min(heads, before.headCount());
    for (int h = 0; h < kept; ++h)
        QVERIFY(after.heads[std::size_t(h)] == before.heads[std::size_t(h)]);
    for (int h = kept; h < heads; ++h) {
        const Head& head = after.heads[std::size_t(h)];
        QCOMPARE(head.W_S.size() > 0, before.score == ScoreFunction::General);
        QCOMPARE(head.W_a.cols(), before.heads[0].W_a.cols());
        for (int other = 0; other < h; ++other) // every new head has entries of its own
            QVERIFY(head.W_Q != after.heads[std::size_t(other)].W_Q);
    }
    QCOMPARE(after.W_O.has_value(), before.W_O.has_value());
    if (before.W_O) {
        QCOMPARE(after.W_O->rows(), Index(heads) * before.dV());
        QCOMPARE(after.W_O->cols(), before.W_O->cols());
        const Index keptRows = Index(kept) * before.dV();
        QVERIFY(after.W_O->topRows(keptRows) == before.W_O->topRows(keptRows));
    }
    QVERIFY(after.X == before.X);
    QVERIFY(after.context == before.context);
    QVERIFY(after.mask == before.mask);
}

void TestSessionEdits::crossAttention_data()
{
    QTest::addColumn<int>("config");
    addConfigRows();
}

void TestSessionEdits::crossAttention()
{
    QFETCH(int, config);
    const Session before = build(configs[config]);
    Session s = before;
    setCrossAttention(s, s.context.has_value()); // no change
    QVERIFY(s == before);

    if (!before.context) {
        setCrossAttention(s, true);
        VERIFY_VALID(s);
        QVERIFY(s.context.has_value());
        QVERIFY(s.context->Z == s.X);
        QVERIFY(s.context->tokens == s.tokens);
        QVERIFY(s.context->pad == s.pad);
        QVERIFY(s.mask == before.mask); // n × m with m = n: the same mask
        // From now on the two sides are separate.
        qkv::insertToken(s, Side::Context, 1, "key", xavier);
        VERIFY_VALID(s);
        QCOMPARE(s.n(), before.n());
        QCOMPARE(s.m(), before.n() + 1);
        qkv::removeToken(s, Side::Query, 0);
        VERIFY_VALID(s);
        QCOMPARE(s.context->Z.rows(), before.n() + 1);
    }
    setCrossAttention(s, false);
    VERIFY_VALID(s);
    QVERIFY(!s.context);
    QCOMPARE(s.m(), s.n());
    if (before.mask.type == MaskType::Custom) {
        QCOMPARE(s.mask.allowed.rows(), s.n());
        QCOMPARE(s.mask.allowed.cols(), s.n());
    }
    QVERIFY(s.heads == before.heads);
    setCrossAttention(s, false); // no change
    VERIFY_VALID(s);
}

void TestSessionEdits::ensureScoreParameters_data()
{
    QTest::addColumn<int>("config");
    QTest::addColumn<int>("score");
    for (int c = 0; c < configCount; ++c)
        for (ScoreFunction score :
             {ScoreFunction::Dot, ScoreFunction::General, ScoreFunction::Additive, ScoreFunction::Cosine})
            QTest::addRow("%s → %s", configs[c].name, toString(score)) << c << int(score);
}

void TestSessionEdits::ensureScoreParameters()
{
    QFETCH(int, config);
    QFETCH(int, score);
    const Session before = build(configs[config]);
    Session s = before;
    s.score = ScoreFunction(score);
    qkv::ensureScoreParameters(s, xavier);
    VERIFY_VALID(s);
    for (int h = 0; h < s.headCount(); ++h) {
        const Head& a = s.heads[std::size_t(h)];
        const Head& b = before.heads[std::size_t(h)];
        QVERIFY(a.W_Q == b.W_Q && a.W_K == b.W_K && a.W_V == b.W_V);
        // What was there is kept; what was missing is created only when the score needs it.
        if (b.W_S.size() > 0 || s.score != ScoreFunction::General)
            QVERIFY(a.W_S == b.W_S);
        else
            QCOMPARE(a.W_S.rows(), s.dK());
        if (b.W_a.size() > 0 || s.score != ScoreFunction::Additive) {
            QVERIFY(a.W_a == b.W_a && a.U_a == b.U_a && a.v_a == b.v_a);
        } else {
            QCOMPARE(a.W_a.rows(), s.dK());
            QCOMPARE(a.W_a.cols(), s.dK()); // d_a = d_k
            QCOMPARE(a.v_a.size(), s.dK());
        }
    }
    QVERIFY(s.X == before.X && s.W_O == before.W_O);

    // Idempotent.
    Session again = s;
    qkv::ensureScoreParameters(again, xavier);
    QVERIFY(again == s);
}

void TestSessionEdits::ensureScoreParametersKeepsSharedDA()
{
    // Additive parameters on some heads only (a file may carry them under another score): the heads that
    // get new ones must use the same d_a, or the session is invalid.
    Session s = build(configs[4]); // additive, d_a = 5 ≠ d_k = 3
    qkv::setHeadCount(s, 3, xavier);
    s.heads[1].W_a.resize(0, 0);
    s.heads[1].U_a.resize(0, 0);
    s.heads[1].v_a.resize(0);
    s.heads[2].v_a.resize(0);
    s.heads[0].U_a.resize(0, 0);
    qkv::ensureScoreParameters(s, xavier);
    VERIFY_VALID(s);
    for (const Head& head : s.heads)
        QCOMPARE(head.W_a.cols(), Index(5));
}

void TestSessionEdits::resizedMatrix_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    for (auto [rows, cols] : {std::pair{3, 4}, std::pair{5, 6}, std::pair{1, 1}, std::pair{2, 7},
                              std::pair{6, 2}, std::pair{3, 1}})
        QTest::addRow("3x4 → %dx%d", rows, cols) << rows << cols;
}

void TestSessionEdits::resizedMatrix()
{
    QFETCH(int, rows);
    QFETCH(int, cols);
    Matrix m(3, 4);
    for (Index i = 0; i < m.size(); ++i)
        m.data()[i] = double(i + 1);
    const Matrix zero = qkv::resizedMatrix(m, rows, cols, zeros);
    QCOMPARE(zero.rows(), Index(rows));
    QCOMPARE(zero.cols(), Index(cols));
    for (Index r = 0; r < rows; ++r)
        for (Index c = 0; c < cols; ++c)
            QCOMPARE(zero(r, c), r < 3 && c < 4 ? m(r, c) : 0.0);

    const Matrix a = qkv::resizedMatrix(m, rows, cols, xavier);
    const Matrix b = qkv::resizedMatrix(m, rows, cols, xavier);
    const Matrix other = qkv::resizedMatrix(m, rows, cols, {Initializer::XavierNormal, 1.0, 43});
    QVERIFY(a == b); // same seed, same new entries
    QVERIFY(sameTopLeft(a, m));
    QVERIFY(a.allFinite());
    const bool grows = rows > 3 || cols > 4;
    QCOMPARE(a != other, grows);
}

// ---------------------------------------------------------------------------------------------------------
// Determinism and a random walk

namespace {

void editAll(Session& s, const InitializerSpec& init)
{
    qkv::insertToken(s, Side::Query, 1, "a", init);
    qkv::insertToken(s, Side::Context, 0, "b", init);
    resizeDModel(s, s.dModel() + 2, init);
    resizeDK(s, s.dK() + 1, init);
    resizeDV(s, s.dV() + 3, init);
    qkv::setHeadCount(s, s.headCount() + 2, init);
    s.score = ScoreFunction::Additive;
    qkv::ensureScoreParameters(s, init);
    s.score = ScoreFunction::General;
    qkv::ensureScoreParameters(s, init);
}

} // namespace

void TestSessionEdits::sameSeedSameEntries()
{
    for (int c = 0; c < configCount; ++c) {
        const Session before = build(configs[c]);
        Session a = before, b = before, other = before;
        editAll(a, xavier);
        editAll(b, xavier);
        editAll(other, {Initializer::XavierNormal, 1.0, 43});
        VERIFY_VALID(a);
        QVERIFY2(a == b, configs[c].name);
        QVERIFY2(!(a == other), configs[c].name);
        // Matrices created together do not share their entries.
        const Head& added = a.heads.back();
        QVERIFY(added.W_Q != added.W_K);
    }
}

void TestSessionEdits::randomEditsStayValid_data()
{
    QTest::addColumn<int>("config"); // −1, −2, −3: built-in examples
    addConfigRows();
    QTest::newRow("example love") << -1;
    QTest::newRow("example translation") << -2;
    QTest::newRow("example multihead") << -3;
}

void TestSessionEdits::randomEditsStayValid()
{
    QFETCH(int, config);
    Session s;
    try {
        s = config >= 0 ? build(configs[config])
                        : loadExample(config == -1   ? "love"
                                      : config == -2 ? "translation"
                                                     : "multihead");
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    for (Head& head : s.heads) { // biases too: every edit must keep them the right size
        head.b_Q = Vector::Constant(head.W_Q.cols(), 0.5);
        head.b_K = Vector::Constant(head.W_K.cols(), -0.5);
        head.b_V = Vector::Constant(head.W_V.cols(), 2.0);
    }
    std::mt19937_64 random(std::uint64_t(config + 100));
    const auto pick = [&](Index low, Index high) { // inclusive
        return low + Index(random() % std::uint64_t(high - low + 1));
    };
    const ScoreFunction scores[] = {ScoreFunction::Dot, ScoreFunction::General, ScoreFunction::Additive,
                                    ScoreFunction::Cosine};
    for (int step = 0; step < 300; ++step) {
        const InitializerSpec init{Initializer::XavierUniform, 1.0, std::uint64_t(step)};
        const Side side = random() % 2 ? Side::Query : Side::Context;
        const Index count = side == Side::Context && s.context ? s.m() : s.n();
        const int op = int(random() % 11);
        QString what;
        switch (op) {
        case 0:
        case 1: {
            const Index at = pick(0, count);
            if (count < 8)
                qkv::insertToken(s, side, at, "t", init);
            what = QStringLiteral("insert %1 at %2").arg(QLatin1String(sideName(side))).arg(at);
            break;
        }
        case 2: {
            const Index at = pick(0, count - 1);
            if (count > 1)
                qkv::removeToken(s, side, at);
            what = QStringLiteral("remove %1 at %2").arg(QLatin1String(sideName(side))).arg(at);
            break;
        }
        case 3: {
            const Index from = pick(0, count - 1), to = pick(0, count - 1);
            qkv::moveToken(s, side, from, to);
            what = QStringLiteral("move %1 %2→%3").arg(QLatin1String(sideName(side))).arg(from).arg(to);
            break;
        }
        case 4:
            resizeDModel(s, pick(1, 6), init);
            what = QStringLiteral("d_model");
            break;
        case 5:
            resizeDK(s, pick(1, 6), init);
            what = QStringLiteral("d_k");
            break;
        case 6:
            resizeDV(s, pick(1, 6), init);
            what = QStringLiteral("d_v");
            break;
        case 7:
            qkv::setHeadCount(s, int(pick(1, 4)), init);
            what = QStringLiteral("heads");
            break;
        case 8:
            setCrossAttention(s, random() % 2 == 0);
            what = QStringLiteral("cross-attention");
            break;
        case 9:
            s.score = scores[random() % 4];
            qkv::ensureScoreParameters(s, init);
            what = QStringLiteral("score %1").arg(QLatin1String(toString(s.score)));
            break;
        default:
            if (s.W_O)
                s.W_O.reset();
            else
                s.W_O = Matrix::Ones(Index(s.headCount()) * s.dV(), 3);
            what = QStringLiteral("W_O");
            break;
        }
        const std::string problem = validate(s);
        QVERIFY2(
            problem.empty(),
            qPrintable(
                QStringLiteral("step %1 (%2): %3").arg(step).arg(what).arg(QString::fromStdString(problem))));
    }
}

void TestSessionEdits::biasesFollowTheirDimensions()
{
    Session s = loadExample("love"); // d_k = d_v = 3, one head
    s.heads[0].b_Q = (Vector(3) << 1, 2, 3).finished();
    s.heads[0].b_V = (Vector(3) << 4, 5, 6).finished();
    s.W_O = Matrix::Ones(3, 2);
    s.b_O = (Vector(2) << 7, 8).finished();

    resizeDK(s, 4, xavier); // kept entries keep their values, new ones are 0
    QCOMPARE(s.heads[0].b_Q, (Vector(4) << 1, 2, 3, 0).finished());
    QCOMPARE(s.heads[0].b_K.size(), Index(0)); // absent stays absent
    resizeDV(s, 2, xavier);
    QCOMPARE(s.heads[0].b_V, (Vector(2) << 4, 5).finished());
    qkv::setHeadCount(s, 2, xavier); // a new head has the first head's biases, at 0
    QCOMPARE(s.heads[1].b_Q, Vector::Zero(4).eval());
    QCOMPARE(s.heads[1].b_K.size(), Index(0));
    QCOMPARE(s.heads[1].b_V, Vector::Zero(2).eval());
    resizeDOut(s, 3, xavier);
    QCOMPARE(s.b_O, (Vector(3) << 7, 8, 0).finished());
    VERIFY_VALID(s);
    setOutputProjection(s, false, xavier); // b_O is W_O's bias: it goes with it
    QCOMPARE(s.b_O.size(), Index(0));
    VERIFY_VALID(s);
}

void TestSessionEdits::biasesOnAndOff()
{
    Session s = loadExample("multihead"); // two heads and W_O
    QVERIFY(s.W_O && s.headCount() == 2);
    QVERIFY(!hasBiases(s));
    s.heads[1].b_K = Vector::Constant(s.dK(), 0.5); // one bias already set: kept
    QVERIFY(hasBiases(s));
    setBiases(s, true);
    for (const Head& head : s.heads) {
        QCOMPARE(head.b_Q.size(), s.dK());
        QCOMPARE(head.b_V.size(), s.dV());
    }
    QCOMPARE(s.heads[0].b_K, Vector::Zero(s.dK()).eval());
    QCOMPARE(s.heads[1].b_K, Vector::Constant(s.dK(), 0.5).eval());
    QCOMPARE(s.b_O, Vector::Zero(s.W_O->cols()).eval());
    VERIFY_VALID(s);
    // Zero biases change nothing the engine computes.
    const Session without = loadExample("multihead");
    Session zero = without;
    setBiases(zero, true);
    QVERIFY(sameMatrix(computeAttention(zero).output, computeAttention(without).output));

    setOutputProjection(s, false, xavier);
    setOutputProjection(s, true, xavier); // a new W_O beside biased heads gets its b_O
    QCOMPARE(s.b_O, Vector::Zero(s.W_O->cols()).eval());
    setBiases(s, false);
    QVERIFY(!hasBiases(s));
    VERIFY_VALID(s);
}

void TestSessionEdits::reinitializeWeightsKeepsShapesAndEmbeddings()
{
    Session s = loadExample("multihead");
    const Session before = s;
    const InitializerSpec init{Initializer::XavierUniform, 1.0, 7};
    reinitializeWeights(s, init);
    QCOMPARE(QString::fromStdString(validate(s)), QString());
    QVERIFY(sameMatrix(s.X, before.X));
    QVERIFY(!sameMatrix(s.heads[0].W_Q, before.heads[0].W_Q));
    QVERIFY(!sameMatrix(s.heads[0].W_Q, s.heads[1].W_Q)); // a distinct seed per matrix
    QVERIFY(!sameMatrix(*s.W_O, *before.W_O));
    Session again = before;
    reinitializeWeights(again, init);
    QVERIFY(again == s); // reproducible
}

void TestSessionEdits::numpyReinitializeDrawsOneStream()
{
    // As the articles write it: np.random.seed(s); then per head W_q = randn(d, dk) * c; W_k = ...; W_v =
    // ...; then W_O, all from the one stream.
    Session s = loadExample("multihead");
    QVERIFY(s.W_O.has_value());
    const Session before = s;
    const InitializerSpec init{Initializer::NumpyLegacy, 0.25, 2024};
    reinitializeWeights(s, init);
    QCOMPARE(QString::fromStdString(validate(s)), QString());
    QVERIFY(sameMatrix(s.X, before.X));
    NumpyRandom random(2024);
    for (const Head& head : s.heads) {
        QVERIFY(sameMatrix(head.W_Q, Matrix(random.randn(s.dModel(), s.dK()) * 0.25)));
        QVERIFY(sameMatrix(head.W_K, Matrix(random.randn(s.dModel(), s.dK()) * 0.25)));
        QVERIFY(sameMatrix(head.W_V, Matrix(random.randn(s.dModel(), s.dV()) * 0.25)));
    }
    QVERIFY(sameMatrix(*s.W_O, Matrix(random.randn(s.W_O->rows(), s.W_O->cols()) * 0.25)));
}

void TestSessionEdits::numpyReinitializeEmbeddings()
{
    // X = randn(n, d_model) * c after the seed, then Z from the same stream; the weights are kept.
    Session s = loadExample("translation");
    QVERIFY(s.context.has_value());
    const Session before = s;
    reinitializeEmbeddings(s, InitializerSpec{Initializer::NumpyLegacy, 2.0, 7});
    QCOMPARE(QString::fromStdString(validate(s)), QString());
    NumpyRandom random(7);
    QVERIFY(sameMatrix(s.X, Matrix(random.randn(before.n(), before.dModel()) * 2.0)));
    QVERIFY(sameMatrix(s.context->Z, Matrix(random.randn(before.m(), before.dModel()) * 2.0)));
    QVERIFY(s.heads == before.heads);
    // Another initializer draws them too, reproducibly, with other numbers.
    Session xavier = before;
    reinitializeEmbeddings(xavier, InitializerSpec{Initializer::XavierNormal, 1.0, 7});
    QVERIFY(!sameMatrix(xavier.X, before.X));
    QVERIFY(!sameMatrix(xavier.X, s.X));
    Session again = before;
    reinitializeEmbeddings(again, InitializerSpec{Initializer::XavierNormal, 1.0, 7});
    QVERIFY(again == xavier);
}

void TestSessionEdits::numpyEditsKeepSeedsInRange()
{
    // Structural edits derive a seed per new matrix; with the NumPy initializer those stay within NumPy's
    // 32-bit range, even from the largest seed.
    for (const std::uint64_t seed :
         {std::uint64_t{0}, std::uint64_t{42}, std::uint64_t{NumpyRandom::maxSeed}}) {
        Session s = loadExample("translation");
        try {
            editAll(s, InitializerSpec{Initializer::NumpyLegacy, 0.5, seed});
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        VERIFY_VALID(s);
    }
}

void TestSessionEdits::dimensionNamesFollowDModel()
{
    Session s = loadExample("love");
    s.dims = {"determiner", "noun", "verb", "animacy"};
    setCrossAttention(s, true); // the context starts as a copy of X, names included
    QCOMPARE(s.context->dims, s.dims);
    s.context->dims[0] = "source";
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 3};
    resizeDModel(s, 6, init); // new columns unnamed: their default labels
    VERIFY_VALID(s);
    QCOMPARE(s.dims, (std::vector<std::string>{"determiner", "noun", "verb", "animacy", "", ""}));
    QCOMPARE(s.context->dims, (std::vector<std::string>{"source", "noun", "verb", "animacy", "", ""}));
    QCOMPARE(dimensionLabel(s.dims, 5), std::string("d5"));
    resizeDModel(s, 2, init); // the kept columns keep their names
    VERIFY_VALID(s);
    QCOMPARE(s.dims, (std::vector<std::string>{"determiner", "noun"}));
    QCOMPARE(s.context->dims, (std::vector<std::string>{"source", "noun"}));

    Session unnamed = loadExample("love");
    resizeDModel(unnamed, 7, init);
    QVERIFY(unnamed.dims.empty()); // nothing named: still nothing
    VERIFY_VALID(unnamed);
}

void TestSessionEdits::renameDimension()
{
    Session s = loadExample("love");
    qkv::renameDimension(s, Side::Query, 2, "verb");
    QCOMPARE(s.dims, (std::vector<std::string>{"", "", "verb", ""}));
    VERIFY_VALID(s);
    qkv::renameDimension(s, Side::Context, 0, "det"); // self-attention: the context side is X
    QCOMPARE(s.dims, (std::vector<std::string>{"det", "", "verb", ""}));
    qkv::renameDimension(s, Side::Query, 0, "");
    qkv::renameDimension(s, Side::Query, 2, "");
    QVERIFY(s.dims.empty()); // every name taken away: none at all
    setCrossAttention(s, true);
    qkv::renameDimension(s, Side::Context, 1, "z-noun");
    QVERIFY(s.dims.empty());
    QCOMPARE(s.context->dims, (std::vector<std::string>{"", "z-noun", "", ""}));
    QCOMPARE(s.keyDims(), s.context->dims);
    const Session before = s;
    QVERIFY_THROWS_EXCEPTION(Error, qkv::renameDimension(s, Side::Query, 4, "x"));
    QVERIFY(s == before);
}

void TestSessionEdits::blankSessionIsValid()
{
    const Session s = blankSession(3, 4, 2, 5, InitializerSpec{});
    QCOMPARE(QString::fromStdString(validate(s)), QString());
    QCOMPARE(s.tokens, (std::vector<std::string>{"tok0", "tok1", "tok2"}));
    QCOMPARE(s.dK(), Index(2));
    QCOMPARE(s.dV(), Index(5));
}

void TestSessionEdits::successiveInsertionsDiffer()
{
    Session s = loadExample("love");
    const InitializerSpec init{Initializer::Normal, 1.0, 3};
    qkv::insertToken(s, Side::Query, 3, "a", init);
    qkv::insertToken(s, Side::Query, 4, "b", init);
    QVERIFY(!sameMatrix(s.X.row(3), s.X.row(4)));
    Session again = loadExample("love");
    qkv::insertToken(again, Side::Query, 3, "a", init);
    QVERIFY(sameMatrix(again.X.row(3), s.X.row(3))); // the same insertion gives the same row
}

void TestSessionEdits::scoreFunctionBringsItsScaleAndParameters()
{
    Session s = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 4};
    setScoreFunction(s, ScoreFunction::Additive, init);
    QVERIFY(s.score == ScoreFunction::Additive);
    QVERIFY(s.scale.kind == Scale::Kind::None);
    QCOMPARE(s.heads[0].W_a.rows(), s.dK());
    QCOMPARE(s.heads[0].v_a.size(), s.heads[0].W_a.cols());
    QCOMPARE(validate(s), std::string());
    setScoreFunction(s, ScoreFunction::Dot, init);
    QVERIFY(s.scale.kind == Scale::Kind::SqrtDk);
    QCOMPARE(s.heads[0].W_a.rows(), s.dK()); // kept, so switching back loses nothing
}

void TestSessionEdits::maskTypeAndCells()
{
    Session s = loadExample("love");
    setMaskType(s, MaskType::Custom);
    QVERIFY(s.mask.allowed == MaskMatrix::Ones(3, 3)); // starts with everything allowed
    s.mask.allowed(0, 2) = 0;
    setMaskType(s, MaskType::Causal);
    setMaskType(s, MaskType::Custom);
    QCOMPARE(int(s.mask.allowed(0, 2)), 0); // a custom mask of the right shape is kept

    // A cell of a pattern mask: the pattern becomes custom, then the cell changes.
    Session causal = loadExample("love");
    setMaskType(causal, MaskType::Causal);
    setMaskCell(causal, 0, 2, true);
    QVERIFY(causal.mask.type == MaskType::Custom);
    MaskMatrix expected(3, 3);
    expected << 1, 0, 1, 1, 1, 0, 1, 1, 1;
    QVERIFY(causal.mask.allowed == expected);
    setMaskCell(causal, 2, 2, false);
    QCOMPARE(int(causal.mask.allowed(2, 2)), 0);
}

void TestSessionEdits::outputProjectionOnAndOff()
{
    Session s = loadExample("love");
    qkv::setHeadCount(s, 2, InitializerSpec{});
    setOutputProjection(s, true, InitializerSpec{Initializer::XavierNormal, 1.0, 9});
    QVERIFY(s.W_O.has_value());
    QCOMPARE(s.W_O->rows(), Index(6));
    QCOMPARE(s.W_O->cols(), s.dModel()); // d_out = d_model, as in Vaswani et al.
    QCOMPARE(validate(s), std::string());
    setOutputProjection(s, false, InitializerSpec{});
    QVERIFY(!s.W_O.has_value());
}

// d_out chosen when W_O is switched on, and changed later keeping W_O's left block.
void TestSessionEdits::outputProjectionDOut()
{
    Session s = loadExample("love");
    const InitializerSpec init{Initializer::XavierNormal, 1.0, 9};
    setOutputProjection(s, true, init, 5);
    QCOMPARE(s.W_O->rows(), Index(s.headCount()) * s.dV());
    QCOMPARE(s.W_O->cols(), Index(5));
    QCOMPARE(validate(s), std::string());
    const Matrix before = *s.W_O;
    resizeDOut(s, 2, init);
    QCOMPARE(s.W_O->cols(), Index(2));
    QVERIFY(sameMatrix(*s.W_O, Matrix(before.leftCols(2))));
    resizeDOut(s, 7, init);
    QCOMPARE(s.W_O->cols(), Index(7));
    QVERIFY(sameMatrix(Matrix(s.W_O->leftCols(2)), Matrix(before.leftCols(2))));
    QCOMPARE(validate(s), std::string());

    Session without = loadExample("love");
    resizeDOut(without, 4, init);
    QVERIFY(!without.W_O.has_value());
}

void TestSessionEdits::slidingWindowStartsWide_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("window");
    QTest::newRow("one token") << 1 << 1;
    QTest::newRow("two tokens") << 2 << 2;
    QTest::newRow("three tokens") << 3 << 3;
    QTest::newRow("eight tokens") << 8 << 3;
}

// A window of 1 would be the identity mask: switching to sliding starts at 3, or n when n < 3.
void TestSessionEdits::slidingWindowStartsWide()
{
    QFETCH(int, n);
    QFETCH(int, window);
    Session s = blankSession(n, 4, 4, 4, InitializerSpec{});
    QCOMPARE(s.mask.window, Index(1));
    setMaskType(s, MaskType::Sliding);
    QCOMPARE(s.mask.window, Index(window));
    QCOMPARE(validate(s), std::string());

    // A width chosen before is kept.
    s.mask.window = 2;
    setMaskType(s, MaskType::Causal);
    setMaskType(s, MaskType::Sliding);
    QCOMPARE(s.mask.window, Index(2));
}

void TestSessionEdits::paddingAndNewTokenNames()
{
    Session s = loadExample("translation");
    setPadding(s, Side::Context, 1, true);
    QCOMPARE(s.context->pad, (std::vector<bool>{false, true, false, false}));
    setPadding(s, Side::Query, 0, true);
    QVERIFY(s.pad[0]);
    Session blank = blankSession(3, 4, 4, 4, InitializerSpec{});
    QCOMPARE(newTokenName(blank, Side::Query), std::string("tok3"));
    blank.tokens[1] = "tok3";
    QCOMPARE(newTokenName(blank, Side::Query), std::string("tok4"));
}

QKV_TEST_APPLESS_MAIN(TestSessionEdits)
#include "tst_sessionedits.moc"
