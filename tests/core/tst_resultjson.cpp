// SPDX-License-Identifier: GPL-3.0-or-later
// The output of `qkvlab compute` (docs/command-line.md), written as it goes: byte for byte the indented JSON
// document of the result, numbers that read back to the same doubles, and a failed write reported.

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "Initializers.h"
#include "JsonText.h" // the document writer the streamed output must match
#include "ResultJson.h"

#include "TestMain.h"
#include "TestSessions.h"
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <streambuf>

using namespace qkv;

namespace {

/// The result as a document tree written by json::prettyJson: how compute wrote it before it streamed.
std::string documentJson(const AttentionResult& result)
{
    using json::Json;
    Json heads = Json::array();
    for (const HeadResult& head : result.heads) {
        Json h = Json::object();
        h["Q"] = json::matrix(head.Q);
        h["K"] = json::matrix(head.K);
        h["V"] = json::matrix(head.V);
        h["scores"] = json::matrix(head.scores);
        h["scaled"] = json::matrix(head.scaled);
        h["allowed"] = json::matrix(head.allowed.cast<int>());
        h["weights"] = json::matrix(head.weights);
        h["output"] = json::matrix(head.output);
        Json stats = Json::array();
        for (const RowStats& row : head.rowStats)
            stats.push_back(
                Json{{"entropy", row.entropy}, {"support", row.support}, {"max", row.max}, {"sum", row.sum}});
        h["row_stats"] = std::move(stats);
        h["empty_rows"] = head.emptyRows;
        heads.push_back(std::move(h));
    }
    Json root = Json::object();
    root["heads"] = std::move(heads);
    root["concat"] = json::matrix(result.concat);
    root["output"] = json::matrix(result.output);
    root["precision"] = toString(result.precision);
    return json::prettyJson(root);
}

/// Empty when the texts are equal, else where they first differ.
std::string firstDifference(const std::string& streamed, const std::string& expected)
{
    if (streamed == expected)
        return {};
    const auto at = std::mismatch(streamed.begin(), streamed.end(), expected.begin(), expected.end());
    const auto offset = static_cast<std::size_t>(at.first - streamed.begin());
    return "byte " + std::to_string(offset) + ": streamed \"" + streamed.substr(offset, 40) +
           "\", document \"" + expected.substr(offset, 40) + "\"";
}

std::string streamedJson(const AttentionResult& result)
{
    std::ostringstream out;
    writeResultJson(result, out);
    return out.str();
}

/// A matrix of `kind`: a seeded initializer, whole numbers (written "2.0"), tiny or large magnitudes, or
/// signed zeros.
Matrix randomMatrix(std::mt19937_64& random, Index rows, Index cols)
{
    Matrix m = initializeMatrix({Initializer::Normal, 1.0, random()}, rows, cols);
    switch (random() % 6) {
    case 0:
        return m.array().round().matrix();
    case 1:
        return m * 1e-3;
    case 2:
        return m * 30.0;
    case 3:
        return m.unaryExpr([](double x) { return x < 0 ? -0.0 : x; });
    default:
        return m;
    }
}

/// A session like the ones a grader would try: any shape, cross-attention, every mask, normalizer and score
/// function, W_O or not, float64 or float32. Some are refused by validation; the caller draws again.
Session anySession(std::mt19937_64& random)
{
    const auto pick = [&random](Index low, Index high) {
        return low + static_cast<Index>(random() % static_cast<std::uint64_t>(high - low + 1));
    };
    const Index n = pick(1, 24);
    const Index dModel = pick(1, 8);
    const Index dK = pick(1, 8);
    const Index dV = pick(1, 8);
    const int heads = static_cast<int>(pick(1, 4));
    test::SessionBuilder builder(n, dModel);
    builder.heads(heads, dK, dV);
    if (random() % 3 == 0)
        builder.context(pick(1, 24));
    const auto score = static_cast<ScoreFunction>(random() % 4);
    const Index dA = pick(1, 5);
    builder.score(score, dA);
    if (random() % 3 == 0)
        builder.outputProjection(pick(1, 6));
    Session s = builder.build([&random](Index rows, Index cols) { return randomMatrix(random, rows, cols); });
    const Index m = s.m();
    std::vector<bool>& keyPad = s.context ? s.context->pad : s.pad;
    if (random() % 4 == 0)
        keyPad[static_cast<std::size_t>(pick(0, m - 1))] = true;
    switch (random() % 3) {
    case 0:
        s.scale = defaultScale(s.score);
        break;
    case 1:
        s.scale.kind = Scale::Kind::None;
        break;
    default:
        s.scale.kind = Scale::Kind::Constant;
        s.scale.value = 0.5 + static_cast<double>(random() % 8);
    }
    s.temperature = std::pow(2.0, static_cast<double>(pick(-2, 2)));
    s.mask.type = static_cast<MaskType>(random() % 5);
    s.mask.prefixLength = pick(0, 3);
    s.mask.window = pick(1, 4);
    if (s.mask.type == MaskType::Custom) {
        s.mask.allowed = MaskMatrix(n, m);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < m; ++j)
                s.mask.allowed(i, j) = static_cast<std::uint8_t>(random() % 3 != 0); // some rows all masked
    }
    s.normalizer.type = static_cast<NormalizerType>(random() % 5);
    const double alphas[] = {1.0, 1.3, 1.5, 2.0, 2.5};
    s.normalizer.alpha = alphas[random() % 5];
    s.precision = random() % 2 == 0 ? Precision::Float64 : Precision::Float32;
    return s;
}

/// Every number of `json` (an array of rows) is the matrix entry, read back as the same double.
template <typename Derived>
bool readsBack(const json::Json& rows, const Eigen::MatrixBase<Derived>& expected, const std::string& what,
               std::string* problem)
{
    if (!rows.is_array() || static_cast<Index>(rows.size()) != expected.rows()) {
        *problem = what + ": expected " + std::to_string(expected.rows()) + " rows";
        return false;
    }
    for (Index r = 0; r < expected.rows(); ++r) {
        const json::Json& row = rows[static_cast<std::size_t>(r)];
        if (!row.is_array() || static_cast<Index>(row.size()) != expected.cols()) {
            *problem = what + "[" + std::to_string(r) + "]: expected " + std::to_string(expected.cols()) +
                       " numbers";
            return false;
        }
        for (Index c = 0; c < expected.cols(); ++c) {
            const json::Json& value = row[static_cast<std::size_t>(c)];
            const auto wanted = static_cast<double>(expected(r, c));
            if (!value.is_number() || value.get<double>() != wanted ||
                std::signbit(value.get<double>()) != std::signbit(wanted)) {
                *problem = what + "[" + std::to_string(r) + "][" + std::to_string(c) + "] = " + value.dump() +
                           ", expected " + json::Json(wanted).dump();
                return false;
            }
        }
    }
    return true;
}

bool readsBack(const std::string& text, const AttentionResult& result, std::string* problem)
{
    const json::Json root = json::Json::parse(text);
    for (std::size_t h = 0; h < result.heads.size(); ++h) {
        const HeadResult& head = result.heads[h];
        const json::Json& j = root["heads"][h];
        const std::string at = "heads[" + std::to_string(h) + "].";
        if (!readsBack(j["Q"], head.Q, at + "Q", problem) || !readsBack(j["K"], head.K, at + "K", problem) ||
            !readsBack(j["V"], head.V, at + "V", problem) ||
            !readsBack(j["scores"], head.scores, at + "scores", problem) ||
            !readsBack(j["scaled"], head.scaled, at + "scaled", problem) ||
            !readsBack(j["allowed"], head.allowed, at + "allowed", problem) ||
            !readsBack(j["weights"], head.weights, at + "weights", problem) ||
            !readsBack(j["output"], head.output, at + "output", problem))
            return false;
        for (std::size_t i = 0; i < head.rowStats.size(); ++i) {
            const json::Json& stats = j["row_stats"][i];
            const RowStats& row = head.rowStats[i];
            if (stats["entropy"].get<double>() != row.entropy ||
                stats["support"].get<Index>() != row.support || stats["max"].get<double>() != row.max ||
                stats["sum"].get<double>() != row.sum) {
                *problem = at + "row_stats[" + std::to_string(i) + "] differs: " + stats.dump();
                return false;
            }
        }
        if (j["empty_rows"].get<std::vector<Index>>() != head.emptyRows) {
            *problem = at + "empty_rows differ: " + j["empty_rows"].dump();
            return false;
        }
    }
    return readsBack(root["concat"], result.concat, "concat", problem) &&
           readsBack(root["output"], result.output, "output", problem);
}

/// A stream buffer that takes `capacity` bytes, then fails every write (a disk that fills up).
class FillingBuffer : public std::streambuf {
public:
    explicit FillingBuffer(std::size_t capacity) : capacity_(capacity) {}
    std::size_t written() const { return written_; }

protected:
    std::streamsize xsputn(const char* /*text*/, std::streamsize count) override
    {
        const auto taken = std::min(static_cast<std::size_t>(count), capacity_ - written_);
        written_ += taken;
        return static_cast<std::streamsize>(taken);
    }
    int_type overflow(int_type c) override
    {
        if (written_ == capacity_ || traits_type::eq_int_type(c, traits_type::eof()))
            return traits_type::eof();
        ++written_;
        return c;
    }

private:
    std::size_t capacity_;
    std::size_t written_ = 0;
};

} // namespace

class TestResultJson : public QObject {
    Q_OBJECT
private slots:
    void everyExampleIsTheDocument_data();
    void everyExampleIsTheDocument();
    void randomSessionsAreTheDocument();
    void largeResultIsTheDocument();
    void failedWriteThrows();
};

void TestResultJson::everyExampleIsTheDocument_data()
{
    QTest::addColumn<QString>("name");
    for (const ExampleInfo& example : builtinExamples())
        QTest::newRow(example.name.c_str()) << QString::fromStdString(example.name);
}

void TestResultJson::everyExampleIsTheDocument()
{
    QFETCH(QString, name);
    for (const Precision precision : {Precision::Float64, Precision::Float32}) {
        Session session = loadExample(name.toStdString());
        session.precision = precision;
        const AttentionResult result = computeAttention(session);
        const std::string streamed = streamedJson(result);
        const std::string difference = firstDifference(streamed, documentJson(result));
        QVERIFY2(difference.empty(), difference.c_str());
        std::string problem;
        QVERIFY2(readsBack(streamed, result, &problem), problem.c_str());
    }
}

void TestResultJson::randomSessionsAreTheDocument()
{
    std::mt19937_64 random(2024);
    int compared = 0;
    int drawn = 0;
    while (compared < 100) {
        QVERIFY2(++drawn < 1000, "too many random sessions refused");
        const Session session = anySession(random);
        if (!validate(session).empty())
            continue;
        AttentionResult result;
        try {
            result = computeAttention(session);
        } catch (const Error&) {
            continue; // a result that would overflow: nothing to write
        }
        const std::string streamed = streamedJson(result);
        const std::string difference = firstDifference(streamed, documentJson(result));
        QVERIFY2(difference.empty(), ("session " + std::to_string(compared) + ", " + difference).c_str());
        std::string problem;
        QVERIFY2(readsBack(streamed, result, &problem), problem.c_str());
        ++compared;
    }
}

void TestResultJson::largeResultIsTheDocument()
{
    // Larger than the writer's buffer many times over, with heads, W_O and a float32 result.
    std::mt19937_64 random(99);
    Session session;
    do
        session = anySession(random);
    while (!validate(session).empty());
    session.X = randomMatrix(random, 200, session.dModel());
    session.tokens.assign(200, "t");
    session.pad.assign(200, false);
    session.context.reset();
    session.mask = MaskSpec{MaskType::Causal, 0, 1, {}};
    const AttentionResult result = computeAttention(session);
    const std::string streamed = streamedJson(result);
    QVERIFY(streamed.size() > 10 * 65536);
    const std::string difference = firstDifference(streamed, documentJson(result));
    QVERIFY2(difference.empty(), difference.c_str());
}

void TestResultJson::failedWriteThrows()
{
    const AttentionResult result = computeAttention(loadExample("multihead"));
    const std::size_t size = streamedJson(result).size();
    for (const std::size_t capacity : {std::size_t(0), std::size_t(100), size - 1}) {
        FillingBuffer full(capacity);
        std::ostream out(&full);
        QString message;
        try {
            writeResultJson(result, out);
        } catch (const Error& e) {
            message = QString::fromUtf8(e.what());
        }
        QVERIFY2(message.startsWith(QStringLiteral("cannot write")), qPrintable(message));
        QCOMPARE(full.written(), capacity);
    }
    FillingBuffer roomy(size);
    std::ostream out(&roomy);
    writeResultJson(result, out);
    QCOMPARE(roomy.written(), size);
}

QKV_TEST_GUILESS_MAIN(TestResultJson)
#include "tst_resultjson.moc"
