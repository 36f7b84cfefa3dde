// SPDX-License-Identifier: GPL-3.0-or-later
// The forward pass to the logits: ModelRun on tiny GPT-2, LLaMA (grouped-query attention, its own lm_head)
// and Qwen2 (biases, tied embeddings) checkpoints in F32, BF16 and F16, against the plain-loop reference of
// ReferenceModel.h at 1e-9 in float64: logits, top tokens, losses, every kind of head intervention (an
// edited session head among them), head scores, direct logit attribution and the ablation sweep.

#include "AttentionEngine.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "FuzzyCompare.h"
#include "HeadScores.h"
#include "Intervention.h"
#include "ModelRun.h"
#include "ModelSession.h"
#include "ReferenceModel.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace qkv;
using qkv::test::errorOf;
using qkv::test::ReferenceIntervention;
using qkv::test::ReferenceModel;
using qkv::test::ReferenceRun;
using qkv::test::referenceScore;
using qkv::test::Table;
using qkv::test::Tiny;
using Kind = HeadIntervention::Kind;

namespace {

const std::vector<std::int64_t> someIds{5, 17, 3, 3, 39, 0, 22, 5, 17, 3}; // repeats for the scores

/// gpt2; llama: grouped-query attention (4 query heads, 2 key/value heads), no biases, lm_head; qwen2: q/k/v
/// biases, tied embeddings, 4 query heads sharing one key/value head.
Tiny shape(const QString& name, const QString& dtype = QStringLiteral("F32"))
{
    if (name == QLatin1String("mistral")) { // grouped-query, a sliding window shorter than the text
        Tiny tiny = qkv::test::tinyOfFamily(QStringLiteral("llama"), dtype.toStdString(), 2);
        tiny.slidingWindow = 3;
        return tiny;
    }
    return qkv::test::tinyOfFamily(name, dtype.toStdString(), name == QLatin1String("llama") ? 2 : 1);
}

/// A tiny model written into its own folder and opened.
struct Written {
    Tiny tiny;
    QTemporaryDir folder;
    std::shared_ptr<const Model> model;

    Written(const Tiny& t, unsigned seed) : tiny(t)
    {
        qkv::test::writeModel(tiny, folder.path(), seed);
        model = std::make_shared<const Model>(Model::open(folder.path().toStdString()));
    }
    ReferenceModel reference() const { return ReferenceModel(tiny, model->checkpoint()); }
};

Intervention intervention(Index layer, Index head, Kind kind, double factor = 1.0,
                          std::shared_ptr<const Session> session = {})
{
    Intervention i;
    i.layer = layer, i.head = head, i.kind = kind, i.factor = factor, i.session = std::move(session);
    return i;
}

std::vector<ReferenceIntervention> asReference(const std::vector<Intervention>& list)
{
    std::vector<ReferenceIntervention> out;
    for (const Intervention& i : list)
        if (i.enabled)
            out.push_back({int(i.layer), int(i.head), i.kind, i.factor, i.session.get()});
    return out;
}

double largest(const Table& t)
{
    double m = 1.0;
    for (const auto& row : t)
        for (double v : row)
            m = std::max(m, std::abs(v));
    return m;
}

/// "" when `p` is the reference's run to `tolerance` (× the logits' magnitude for logits), else the first
/// difference. `top` is how many tokens p lists.
QString mismatch(const Prediction& p, const ReferenceRun& r, const std::vector<std::int64_t>& ids, Index top,
                 double tolerance)
{
    const std::size_t n = ids.size(), vocabulary = r.logits[0].size();
    const double logitTolerance = tolerance * largest(r.logits);
    if (p.positions.size() != n)
        return QStringLiteral("%1 positions, expected %2").arg(p.positions.size()).arg(n);
    for (std::size_t i = 0; i < n; ++i) {
        const RowVector logits = p.logitsAt(Index(i));
        if (std::size_t(logits.size()) != vocabulary)
            return QStringLiteral("position %1: %2 logits").arg(i).arg(logits.size());
        for (std::size_t v = 0; v < vocabulary; ++v) {
            if (!(std::abs(logits(Index(v)) - r.logits[i][v]) <= logitTolerance))
                return QStringLiteral("logit of %1 at position %2: %3, expected %4 (difference %5)")
                    .arg(v)
                    .arg(i)
                    .arg(logits(Index(v)), 0, 'g', 17)
                    .arg(r.logits[i][v], 0, 'g', 17)
                    .arg(logits(Index(v)) - r.logits[i][v], 0, 'g', 3);
            // Each logProbability computes a whole row of logits: in a large vocabulary, only some ids.
            if (vocabulary > 64 && v % 1000 != 0)
                continue;
            const double lp = p.logProbability(Index(i), std::int64_t(v));
            if (!(std::abs(lp - r.logProbabilities[i][v]) <= logitTolerance))
                return QStringLiteral("ln p(%1) at position %2: %3, expected %4")
                    .arg(v)
                    .arg(i)
                    .arg(lp, 0, 'g', 17)
                    .arg(r.logProbabilities[i][v], 0, 'g', 17);
        }
        for (std::size_t c = 0; c < r.normed[i].size(); ++c)
            if (!(std::abs(p.finalNormed(Index(i), Index(c)) - r.normed[i][c]) <=
                  tolerance * largest(r.normed)))
                return QStringLiteral("final norm (%1, %2): %3, expected %4")
                    .arg(i)
                    .arg(c)
                    .arg(p.finalNormed(Index(i), Index(c)), 0, 'g', 17)
                    .arg(r.normed[i][c], 0, 'g', 17);
        std::vector<std::int64_t> order(vocabulary);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
            return r.logProbabilities[i][std::size_t(a)] > r.logProbabilities[i][std::size_t(b)];
        });
        const PositionPrediction& at = p.positions[i];
        if (at.top.size() != std::min(std::size_t(top), vocabulary))
            return QStringLiteral("position %1: %2 top tokens").arg(i).arg(at.top.size());
        for (std::size_t k = 0; k < at.top.size(); ++k) {
            const double expected = r.logProbabilities[i][std::size_t(order[k])];
            if (at.top[k].id != order[k] ||
                !(std::abs(at.top[k].logProbability - expected) <= logitTolerance) ||
                !(std::abs(at.top[k].probability - std::exp(expected)) <= tolerance))
                return QStringLiteral("position %1, top %2: id %3 p %4, expected id %5 p %6")
                    .arg(i)
                    .arg(k)
                    .arg(at.top[k].id)
                    .arg(at.top[k].probability, 0, 'g', 17)
                    .arg(order[k])
                    .arg(std::exp(expected), 0, 'g', 17);
        }
        const std::int64_t next = i + 1 < n ? ids[i + 1] : -1;
        const double loss = i + 1 < n ? r.losses[i] : 0.0;
        if (at.nextId != next || !(std::abs(at.loss - loss) <= logitTolerance))
            return QStringLiteral("position %1: next %2 loss %3, expected next %4 loss %5")
                .arg(i)
                .arg(at.nextId)
                .arg(at.loss, 0, 'g', 17)
                .arg(next)
                .arg(loss, 0, 'g', 17);
    }
    if (!(std::abs(p.meanLoss - r.meanLoss) <= logitTolerance))
        return QStringLiteral("mean loss %1, expected %2")
            .arg(p.meanLoss, 0, 'g', 17)
            .arg(r.meanLoss, 0, 'g', 17);
    return {};
}

enum class Edit {
    None,
    WeightsBiasesTau,
    Sparsemax,
    Entmax,
    ConstantScalePaintedMask,
    CosineBidirectional,
    Rope
};

/// The session of (layer, head) as from-model makes it, with `edit` made to it.
std::shared_ptr<const Session> editedSession(const Model& model, Index layer, Index head,
                                             const std::vector<std::int64_t>& ids, Edit edit)
{
    ModelHeadRequest request;
    request.layer = layer, request.heads = {head}, request.ids = ids;
    Session s = sessionFromModel(model, request);
    Head& h = s.heads.front();
    const Index dk = h.W_Q.cols(), n = Index(ids.size());
    switch (edit) {
    case Edit::None:
        break;
    case Edit::WeightsBiasesTau:
        h.W_Q(0, 0) += 0.8, h.W_K(3, 1) -= 0.5, h.W_V(2, 2) *= -1.5;
        h.b_Q = Vector::LinSpaced(dk, -0.4, 0.3);
        h.b_K = Vector::Constant(dk, 0.25);
        h.b_V = Vector::LinSpaced(h.W_V.cols(), 0.5, -0.5);
        s.temperature = 0.6;
        break;
    case Edit::Sparsemax:
        s.normalizer = {NormalizerType::Sparsemax, 1.5};
        s.temperature = 0.5;
        break;
    case Edit::Entmax:
        s.normalizer = {NormalizerType::Entmax, 1.5};
        s.temperature = 0.7;
        break;
    case Edit::ConstantScalePaintedMask:
        s.scale = {Scale::Kind::Constant, 2.5};
        s.mask.type = MaskType::Custom;
        s.mask.allowed = MaskMatrix::Zero(n, n);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j <= i; ++j)
                s.mask.allowed(i, j) = i != 3 && !(j + 1 == i && i % 2 == 0); // row 3 left empty
        break;
    case Edit::CosineBidirectional:
        s.score = ScoreFunction::Cosine;
        s.scale = {Scale::Kind::None, 1.0};
        s.mask.type = MaskType::None;
        break;
    case Edit::Rope:
        s.positions.type = PositionType::Rope;
        s.positions.base = 100.0;
        s.positions.pairing = RopePairing::Interleaved;
        break;
    }
    return std::make_shared<const Session>(std::move(s));
}

} // namespace

class TestPrediction : public QObject {
    Q_OBJECT
private slots:
    void matchesTheReference_data();
    void matchesTheReference();
    void sessionHeads_data();
    void sessionHeads();
    void ablationSweep_data();
    void ablationSweep();
    void huggingFaceCheckpoint();
    void cancellation();
    void concurrentUse();
    void float32_data();
    void float32();
    void overflowInFloat32();
    void tiesByIdAndOneToken();
    void headScoreDefinitions();
    void interventionSpecs();
    void refusals();
};

void TestPrediction::matchesTheReference_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("dtype");
    for (const char* name : {"gpt2", "llama", "qwen2"})
        for (const char* dtype : {"F32", "BF16", "F16"})
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(name), QLatin1String(dtype))))
                << QString::fromLatin1(name) << QString::fromLatin1(dtype);
    QTest::newRow("mistral sliding window F32") << QStringLiteral("mistral") << QStringLiteral("F32");
}

// The unmodified run, interventions one at a time and several at once in different layers (under grouped-
// query attention on one query head of a group only), scores and attribution, all against the reference.
void TestPrediction::matchesTheReference()
{
    QFETCH(QString, name);
    QFETCH(QString, dtype);
    const Written w(shape(name, dtype), 23);
    const ReferenceModel reference = w.reference();
    const ModelRun run(w.model, someIds, Precision::Float64);
    const ReferenceRun clean = reference.run(someIds);
    // Where it overlaps the forward pass to a layer, the reference is that pass.
    const Matrix residual = residualBeforeLayer(*w.model, someIds, w.tiny.layers);
    for (std::size_t i = 0; i < someIds.size(); ++i)
        for (std::size_t c = 0; c < std::size_t(w.tiny.d); ++c)
            QVERIFY(std::abs(residual(Index(i), Index(c)) - clean.residual[i][c]) <=
                    1e-9 * largest(clean.residual));
    QString problem = mismatch(run.clean(), clean, someIds, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("clean: ") + problem));

    for (HeadScore score : allHeadScores) {
        const Matrix& grid = run.scores()[score];
        QCOMPARE(grid.rows(), Index(w.tiny.layers));
        QCOMPARE(grid.cols(), Index(w.tiny.heads));
        for (int l = 0; l < w.tiny.layers; ++l)
            for (int h = 0; h < w.tiny.heads; ++h) {
                const double expected = referenceScore(score, clean.weights[l][h], someIds);
                QVERIFY2(std::abs(grid(l, h) - expected) <= 1e-9,
                         qPrintable(QStringLiteral("%1 of L%2.H%3: %4, expected %5")
                                        .arg(QLatin1String(toString(score)))
                                        .arg(l)
                                        .arg(h)
                                        .arg(grid(l, h), 0, 'g', 17)
                                        .arg(expected, 0, 'g', 17)));
            }
    }

    const std::size_t last = someIds.size() - 1;
    const std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>> attributions{
        {0, someIds[1], -1}, {4, 9, 31}, {last, 7, -1}, {last, 11, 2}};
    for (const auto& [position, token, minus] : attributions) {
        const Matrix grid = run.directLogitAttribution(Index(position), token, minus);
        QCOMPARE(grid.rows(), Index(w.tiny.layers));
        QCOMPARE(grid.cols(), Index(w.tiny.heads));
        for (int l = 0; l < w.tiny.layers; ++l)
            for (int h = 0; h < w.tiny.heads; ++h) {
                const double expected = reference.directLogitAttribution(clean, l, h, position, token, minus);
                QVERIFY2(std::abs(grid(l, h) - expected) <= 1e-9 * std::max(1.0, std::abs(expected)),
                         qPrintable(QStringLiteral("attribution of L%1.H%2 at %3 to %4 − %5: %6, expected %7")
                                        .arg(l)
                                        .arg(h)
                                        .arg(position)
                                        .arg(token)
                                        .arg(minus)
                                        .arg(grid(l, h), 0, 'g', 17)
                                        .arg(expected, 0, 'g', 17)));
            }
    }

    const std::vector<std::vector<Intervention>> cases{
        {intervention(0, 1, Kind::Zero)},
        {intervention(1, 0, Kind::Mean)},
        {intervention(2, 1, Kind::Scale, -1.75)},
        {intervention(0, 0, Kind::Zero), intervention(1, 1, Kind::Mean),
         intervention(2, 0, Kind::Scale, 3.0)},
        {intervention(2, 1, Kind::Scale, 0.5), intervention(0, 1, Kind::Mean)}, // given top layer first
    };
    for (std::size_t c = 0; c < cases.size(); ++c) {
        PredictOptions options;
        options.top = 7;
        const Prediction p = run.predict(cases[c], options);
        problem = mismatch(p, reference.run(someIds, asReference(cases[c])), someIds, 7, 1e-9);
        QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("case %1: ").arg(c) + problem));
        QVERIFY2(std::abs(p.meanLoss - clean.meanLoss) > 1e-6, "an intervention that changes nothing");
    }
    // A disabled intervention, and none, leave the unmodified prediction.
    Intervention off = intervention(1, 1, Kind::Zero);
    off.enabled = false;
    for (const std::vector<Intervention>& none :
         {std::vector<Intervention>{}, std::vector<Intervention>{off}}) {
        const Prediction same = run.predict(none);
        QCOMPARE(same.positions.size(), someIds.size());
        for (std::size_t i = 0; i < someIds.size(); ++i)
            QKV_COMPARE_NEAR(same.logitsAt(Index(i)), run.clean().logitsAt(Index(i)), 1e-12);
        QKV_COMPARE_NEAR(same.meanLoss, run.clean().meanLoss, 1e-12);
    }
}

void TestPrediction::sessionHeads_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("edit");
    const std::vector<std::pair<const char*, Edit>> edits{
        {"unedited", Edit::None},
        {"W_Q W_K W_V, biases, tau", Edit::WeightsBiasesTau},
        {"sparsemax", Edit::Sparsemax},
        {"entmax 1.5", Edit::Entmax},
        {"constant scale, painted mask", Edit::ConstantScalePaintedMask},
        {"cosine, no scale, bidirectional", Edit::CosineBidirectional},
        {"interleaved RoPE base 100", Edit::Rope},
    };
    for (const char* name : {"gpt2", "llama", "qwen2"})
        for (const auto& [label, edit] : edits)
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(name), QLatin1String(label))))
                << QString::fromLatin1(name) << int(edit);
}

// A session's head in place of a model head: alone, and above an intervention in a lower layer (so its
// input is the intervened forward pass's). Unedited, it is the model's own head.
void TestPrediction::sessionHeads()
{
    QFETCH(QString, name);
    QFETCH(int, edit);
    const Written w(shape(name), 29);
    const ReferenceModel reference = w.reference();
    const ModelRun run(w.model, someIds, Precision::Float64);
    const auto session = editedSession(*w.model, 2, 1, someIds, Edit(edit));
    // The reference's head is the engine's on the session's own X.
    Table x(std::size_t(session->n()), std::vector<double>(std::size_t(session->dModel())));
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t c = 0; c < x[i].size(); ++c)
            x[i][c] = session->X(Index(i), Index(c));
    Table weights, z;
    qkv::test::sessionHead(*session, x, weights, z);
    const HeadResult engine = computeAttention(*session).heads.front();
    for (std::size_t i = 0; i < x.size(); ++i) {
        for (std::size_t j = 0; j < x.size(); ++j)
            QVERIFY(std::abs(engine.weights(Index(i), Index(j)) - weights[i][j]) <= 1e-12);
        for (std::size_t c = 0; c < z[i].size(); ++c)
            QVERIFY(std::abs(engine.output(Index(i), Index(c)) - z[i][c]) <= 1e-12);
    }
    const std::vector<Intervention> alone{intervention(2, 1, Kind::Session, 1.0, session)};
    const Prediction p = run.predict(alone);
    QString problem = mismatch(p, reference.run(someIds, asReference(alone)), someIds, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    if (Edit(edit) == Edit::None) {
        problem = mismatch(p, reference.run(someIds), someIds, 10, 1e-9);
        QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("unedited: ") + problem));
    } else {
        QVERIFY(std::abs(p.meanLoss - run.clean().meanLoss) > 1e-9);
    }
    const std::vector<Intervention> stacked{
        intervention(0, 1, Kind::Zero), alone.front(),
        intervention(1, 0, Kind::Session, 1.0, editedSession(*w.model, 1, 0, someIds, Edit(edit)))};
    problem = mismatch(run.predict(stacked), reference.run(someIds, asReference(stacked)), someIds, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("stacked: ") + problem));
}

void TestPrediction::ablationSweep_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("metric");
    for (const char* name : {"gpt2", "llama"})
        for (const Kind kind : {Kind::Zero, Kind::Mean})
            for (const auto metric : {SweepMetric::Kind::Loss, SweepMetric::Kind::LogitDifference})
                QTest::newRow(
                    qPrintable(QStringLiteral("%1 %2 %3")
                                   .arg(QLatin1String(name), QLatin1String(toString(kind)),
                                        metric == SweepMetric::Kind::Loss ? QStringLiteral("loss")
                                                                          : QStringLiteral("logit diff"))))
                    << QString::fromLatin1(name) << int(kind) << int(metric);
}

// Each cell of the sweep is predict() with that one ablation minus the unmodified metric, and the
// reference's.
void TestPrediction::ablationSweep()
{
    QFETCH(QString, name);
    QFETCH(int, kind);
    QFETCH(int, metric);
    const Written w(shape(name), 31);
    const ReferenceModel reference = w.reference();
    const ModelRun run(w.model, someIds, Precision::Float64);
    SweepMetric m;
    m.kind = SweepMetric::Kind(metric);
    m.position = 4, m.tokenA = 7, m.tokenB = 9;
    const auto referenceMetric = [&](const ReferenceRun& r) {
        return m.kind == SweepMetric::Kind::Loss ? r.meanLoss : r.logits[4][7] - r.logits[4][9];
    };
    const double cleanMetric = ModelRun::measure(run.clean(), m);
    const ReferenceRun clean = reference.run(someIds);
    const double tolerance = 1e-9 * largest(clean.logits);
    QVERIFY(std::abs(cleanMetric - referenceMetric(clean)) <= tolerance);
    std::vector<std::pair<Index, Index>> told;
    const Matrix sweep = run.ablationSweep(Kind(kind), m, [&](Index done, Index total) {
        told.emplace_back(done, total);
        return true;
    });
    const Index heads = w.tiny.layers * w.tiny.heads;
    QCOMPARE(sweep.rows(), Index(w.tiny.layers));
    QCOMPARE(sweep.cols(), Index(w.tiny.heads));
    QVERIFY(!told.empty());
    QCOMPARE(told.back(), std::make_pair(heads, heads));
    for (std::size_t k = 1; k < told.size(); ++k)
        QVERIFY(told[k].first >= told[k - 1].first && told[k].second == heads);
    for (int l = 0; l < w.tiny.layers; ++l)
        for (int h = 0; h < w.tiny.heads; ++h) {
            const std::vector<Intervention> one{intervention(l, h, Kind(kind))};
            const double single = ModelRun::measure(run.predict(one), m) - cleanMetric;
            const double expected =
                referenceMetric(reference.run(someIds, asReference(one))) - referenceMetric(clean);
            const QString cell = QStringLiteral("L%1.H%2: sweep %3, predict %4, reference %5")
                                     .arg(l)
                                     .arg(h)
                                     .arg(sweep(l, h), 0, 'g', 17)
                                     .arg(single, 0, 'g', 17)
                                     .arg(expected, 0, 'g', 17);
            QVERIFY2(std::abs(sweep(l, h) - single) <= 1e-12, qPrintable(cell));
            QVERIFY2(std::abs(sweep(l, h) - expected) <= tolerance, qPrintable(cell));
        }
    // The last position by default (−1).
    SweepMetric lastPosition = m;
    lastPosition.position = -1;
    const double lastValue = ModelRun::measure(run.clean(), lastPosition);
    const std::size_t last = someIds.size() - 1;
    if (m.kind == SweepMetric::Kind::LogitDifference)
        QVERIFY(std::abs(lastValue - (clean.logits[last][7] - clean.logits[last][9])) <= tolerance);
}

// GPT2LMHeadModel's own files (tests/data/hf-gpt2-1layer: 1 layer, d_model 2, GPT-2's whole vocabulary and
// tokenizer, "transformer."-prefixed names): its prediction on a text, and with its one head ablated.
void TestPrediction::huggingFaceCheckpoint()
{
    const auto model =
        std::make_shared<const Model>(Model::open(QKV_SOURCE_DIR "/tests/data/hf-gpt2-1layer"));
    QVERIFY(model->tokenizer());
    const std::vector<std::int64_t> ids = model->tokenizer()->encode("The cat sat on the mat.");
    Tiny tiny;
    tiny.d = 2, tiny.heads = 1, tiny.kvHeads = 1, tiny.layers = 1, tiny.inner = 8;
    tiny.vocab = 50257, tiny.positions = 1024;
    tiny.namePrefix = "transformer.";
    const ReferenceModel reference(tiny, model->checkpoint());
    const ModelRun run(model, ids, Precision::Float64);
    const ReferenceRun clean = reference.run(ids);
    QString problem = mismatch(run.clean(), clean, ids, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    const std::vector<Intervention> mean{intervention(0, 0, Kind::Mean)};
    problem = mismatch(run.predict(mean), reference.run(ids, asReference(mean)), ids, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    const std::int64_t mat = ids[5];
    const double expected = reference.directLogitAttribution(clean, 0, 0, 4, mat, ids[1]);
    QVERIFY(std::abs(run.directLogitAttribution(4, mat, ids[1])(0, 0) - expected) <=
            1e-9 * std::max(1.0, std::abs(expected)));
}

void TestPrediction::cancellation()
{
    const Written w(shape(QStringLiteral("llama")), 37);
    const auto stopAfter = [](int calls, int& count) {
        return [calls, &count](Index, Index) { return ++count < calls; };
    };
    int count = 0;
    bool cancelled = false;
    try {
        ModelRun(w.model, someIds, Precision::Float64, stopAfter(1, count));
    } catch (const Cancelled&) {
        cancelled = true;
    }
    QVERIFY2(cancelled && count == 1, "the unmodified run goes on after its progress said stop");
    const ModelRun run(w.model, someIds, Precision::Float64);
    count = 0, cancelled = false;
    try {
        run.ablationSweep(Kind::Zero, SweepMetric{}, stopAfter(3, count));
    } catch (const Cancelled&) {
        cancelled = true;
    }
    QVERIFY2(cancelled && count == 3, "the sweep goes on after its progress said stop");
    count = 0, cancelled = false;
    try {
        run.predict({intervention(0, 1, Kind::Zero)}, {}, stopAfter(1, count));
    } catch (const Cancelled&) {
        cancelled = true;
    }
    QVERIFY2(cancelled && count == 1, "predict goes on after its progress said stop");
    // The run is as it was after the stops.
    const QString problem = mismatch(run.clean(), w.reference().run(someIds), someIds, 10, 1e-9);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
}

// A const ModelRun serves several threads at once: each gets what it gets alone.
void TestPrediction::concurrentUse()
{
    const Written w(shape(QStringLiteral("qwen2")), 61);
    const ModelRun run(w.model, someIds, Precision::Float64);
    const auto session = editedSession(*w.model, 1, 2, someIds, Edit::Sparsemax);
    const std::vector<std::vector<Intervention>> lists{
        {intervention(0, 1, Kind::Zero)},
        {intervention(2, 3, Kind::Scale, 2.0)},
        {intervention(1, 2, Kind::Session, 1.0, session)},
        {intervention(0, 0, Kind::Mean), intervention(2, 1, Kind::Zero)}};
    std::vector<Prediction> alone, together(lists.size());
    for (const auto& list : lists)
        alone.push_back(run.predict(list));
    const Matrix sweep = run.ablationSweep(Kind::Mean, SweepMetric{});
    Matrix sweepTogether;
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < lists.size(); ++k)
        threads.emplace_back([&, k] { together[k] = run.predict(lists[k]); });
    threads.emplace_back([&] { sweepTogether = run.ablationSweep(Kind::Mean, SweepMetric{}); });
    for (std::thread& t : threads)
        t.join();
    for (std::size_t k = 0; k < lists.size(); ++k)
        for (Index i = 0; i < Index(someIds.size()); ++i)
            QKV_COMPARE_NEAR(together[k].logitsAt(i), alone[k].logitsAt(i), 0.0);
    QKV_COMPARE_NEAR(sweepTogether, sweep, 0.0);
}

void TestPrediction::float32_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("dtype");
    QTest::newRow("gpt2 F32") << QStringLiteral("gpt2") << QStringLiteral("F32");
    QTest::newRow("llama BF16") << QStringLiteral("llama") << QStringLiteral("BF16");
    QTest::newRow("qwen2 F16") << QStringLiteral("qwen2") << QStringLiteral("F16");
}

// A float32 run is close to the float64 reference and finite everywhere, with and without interventions.
void TestPrediction::float32()
{
    QFETCH(QString, name);
    QFETCH(QString, dtype);
    const Written w(shape(name, dtype), 41);
    const ReferenceModel reference = w.reference();
    const ModelRun run(w.model, someIds, Precision::Float32);
    QCOMPARE(run.precision(), Precision::Float32);
    const std::vector<Intervention> list{
        intervention(0, 1, Kind::Zero), intervention(1, 2 % w.tiny.heads, Kind::Mean),
        intervention(2, 0, Kind::Session, 1.0,
                     editedSession(*w.model, 2, 0, someIds, Edit::WeightsBiasesTau))};
    const std::vector<std::pair<Prediction, ReferenceRun>> runs{
        {run.clean(), reference.run(someIds)},
        {run.predict(list), reference.run(someIds, asReference(list))}};
    for (const auto& [p, r] : runs) {
        QVERIFY(p.finalNormed.allFinite());
        QVERIFY(std::isfinite(p.meanLoss));
        for (std::size_t i = 0; i < someIds.size(); ++i) {
            const RowVector logits = p.logitsAt(Index(i));
            QVERIFY(logits.allFinite());
            for (std::size_t v = 0; v < r.logits[i].size(); ++v)
                QVERIFY2(std::abs(logits(Index(v)) - r.logits[i][v]) <= 1e-4 * largest(r.logits),
                         qPrintable(QStringLiteral("logit %1 at %2: %3, float64 %4")
                                        .arg(v)
                                        .arg(i)
                                        .arg(logits(Index(v)), 0, 'g', 9)
                                        .arg(r.logits[i][v], 0, 'g', 17)));
            for (const TokenProbability& t : p.positions[i].top)
                QVERIFY(std::isfinite(t.probability) && std::isfinite(t.logProbability));
        }
        QVERIFY(std::abs(p.meanLoss - r.meanLoss) <= 1e-4 * std::max(1.0, r.meanLoss));
    }
    const Matrix sweep = run.ablationSweep(Kind::Zero, SweepMetric{});
    QVERIFY(sweep.allFinite());
    const Matrix attribution = run.directLogitAttribution(3, 8);
    QVERIFY(attribution.allFinite());
    for (HeadScore score : allHeadScores)
        QVERIFY(run.scores()[score].allFinite());
}

// Layer 0's MLP makes the residual stream about 1e40: finite in float64, refused in float32 naming the layer.
void TestPrediction::overflowInFloat32()
{
    Tiny tiny = shape(QStringLiteral("gpt2"));
    tiny.scaledTensors = {{"h.0.mlp.c_fc.weight", 1e20}, {"h.0.mlp.c_proj.weight", 1e20}};
    const Written w(tiny, 59);
    const ModelRun wide(w.model, someIds, Precision::Float64);
    QVERIFY(wide.clean().finalNormed.allFinite() && std::isfinite(wide.clean().meanLoss));
    const QString message = errorOf([&] { ModelRun(w.model, someIds, Precision::Float32); });
    QVERIFY2(message.contains(QStringLiteral("layer 0")) && !message.contains(QLatin1Char('\n')),
             qPrintable(message));
}

// Two tokens with the same unembedding row have equal logits everywhere: listed by id, the smaller first.
// One token: no next token, no loss.
void TestPrediction::tiesByIdAndOneToken()
{
    Tiny tiny = shape(QStringLiteral("gpt2"));
    tiny.repeatedRow = 12;
    const Written w(tiny, 43);
    const ModelRun run(w.model, {1, 2, 3, 12, 13, 4}, Precision::Float64);
    PredictOptions everything;
    everything.top = tiny.vocab;
    const Prediction p = run.predict({}, everything);
    for (std::size_t i = 0; i < p.positions.size(); ++i) {
        const RowVector logits = p.logitsAt(Index(i));
        QVERIFY2(logits(12) == logits(13), qPrintable(QStringLiteral("position %1: logits %2 and %3 differ")
                                                          .arg(i)
                                                          .arg(logits(12), 0, 'g', 17)
                                                          .arg(logits(13), 0, 'g', 17)));
        const auto& top = p.positions[i].top;
        QCOMPARE(top.size(), std::size_t(tiny.vocab));
        const auto at = [&](std::int64_t id) {
            return std::find_if(top.begin(), top.end(),
                                [id](const TokenProbability& t) { return t.id == id; }) -
                   top.begin();
        };
        QCOMPARE(at(13), at(12) + 1);
        for (std::size_t k = 1; k < top.size(); ++k)
            QVERIFY(top[k - 1].probability > top[k].probability ||
                    (top[k - 1].probability == top[k].probability && top[k - 1].id < top[k].id));
    }
    const ModelRun one(w.model, {7}, Precision::Float64);
    QCOMPARE(one.clean().positions.size(), std::size_t(1));
    QCOMPARE(one.clean().positions[0].nextId, std::int64_t(-1));
    QCOMPARE(one.clean().positions[0].loss, 0.0);
    QCOMPARE(one.clean().meanLoss, 0.0);
    QCOMPARE(one.scores()[HeadScore::PreviousToken](0, 0), 0.0);
    QCOMPARE(one.scores()[HeadScore::Self](0, 0), 1.0);
}

void TestPrediction::headScoreDefinitions()
{
    Matrix a(3, 3);
    a << 1.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.2, 0.3, 0.5;
    const std::vector<std::int64_t> ids{1, 2, 1};
    const double entropy =
        (std::log(2.0) - (0.2 * std::log(0.2) + 0.3 * std::log(0.3) + 0.5 * std::log(0.5))) / 3.0;
    QKV_COMPARE_NEAR(headScore(HeadScore::PreviousToken, a, ids), 0.4, 1e-15);
    QKV_COMPARE_NEAR(headScore(HeadScore::DuplicateToken, a, ids), 0.2, 1e-15); // row 2 only
    QKV_COMPARE_NEAR(headScore(HeadScore::Induction, a, ids), 0.3, 1e-15);      // row 2, key 1 (after a 1)
    QKV_COMPARE_NEAR(headScore(HeadScore::FirstToken, a, ids), 1.7 / 3.0, 1e-15);
    QKV_COMPARE_NEAR(headScore(HeadScore::Self, a, ids), 2.0 / 3.0, 1e-15);
    QKV_COMPARE_NEAR(headScore(HeadScore::Entropy, a, ids), entropy, 1e-15);
    // No row with an earlier equal token, or with a token after one equal to it: 0.
    QCOMPARE(headScore(HeadScore::DuplicateToken, a, {1, 2, 3}), 0.0);
    QCOMPARE(headScore(HeadScore::Induction, a, {1, 2, 3}), 0.0);
    // A repeated token counts its own position for induction: ids[i − 1] = ids[i].
    QKV_COMPARE_NEAR(headScore(HeadScore::Induction, a, {4, 4, 5}), 0.5, 1e-15);
    QCOMPARE(headScore(HeadScore::PreviousToken, Matrix::Ones(1, 1), {3}), 0.0);
    for (HeadScore score : allHeadScores)
        QVERIFY(std::string(toString(score)).size() > 0 && std::string(formula(score)).size() > 0);
    QCOMPARE(std::string(toString(HeadScore::PreviousToken)), std::string("previous_token"));
    QCOMPARE(std::string(toString(HeadScore::Entropy)), std::string("entropy"));

    const std::vector<std::int64_t> probe = repeatedRandomTokens(6, 40, 7);
    QCOMPARE(probe.size(), std::size_t(12));
    QVERIFY(std::equal(probe.begin(), probe.begin() + 6, probe.begin() + 6));
    QVERIFY(std::all_of(probe.begin(), probe.end(), [](std::int64_t id) { return id >= 0 && id < 40; }));
    QCOMPARE(repeatedRandomTokens(6, 40, 7), probe);
    QVERIFY(repeatedRandomTokens(6, 40, 8) != probe);
}

void TestPrediction::interventionSpecs()
{
    const Intervention zero = parseIntervention("2.1=zero");
    QCOMPARE(zero.layer, Index(2));
    QCOMPARE(zero.head, Index(1));
    QCOMPARE(zero.kind, Kind::Zero);
    QCOMPARE(parseIntervention("0.3=mean").kind, Kind::Mean);
    const Intervention scale = parseIntervention("1.0=scale:-2.5");
    QCOMPARE(scale.kind, Kind::Scale);
    QCOMPARE(scale.factor, -2.5);
    QCOMPARE(interventionKindFromString("session"), std::optional<Kind>(Kind::Session));
    QCOMPARE(std::string(toString(Kind::Mean)), std::string("mean"));
    for (const char* bad : {"1=zero", "1.x=zero", "1.0=boost", "1.0=scale:inf", "1.0=scale:nan", "1.0=scale:",
                            "1.0=scale:2x", "-1.0=zero", "1.0=session:/nonexistent/head.qkv.json"}) {
        const QString message = errorOf([&] { parseIntervention(bad); });
        QVERIFY2(message.contains(QString::fromLatin1(bad)) && !message.contains(QLatin1Char('\n')),
                 qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(bad), message)));
    }
}

void TestPrediction::refusals()
{
    const Written w(shape(QStringLiteral("llama")), 47);
    const ModelRun run(w.model, someIds, Precision::Float64);
    // Sessions that do not fit: d_model one more than the model's, a head size two more.
    Session wide = *editedSession(*w.model, 1, 0, someIds, Edit::None), narrow = wide;
    const Index d = wide.dModel(), dk = wide.dK();
    wide.X.conservativeResize(Eigen::NoChange, d + 1);
    wide.X.col(d).setZero();
    for (Matrix* m : {&wide.heads[0].W_Q, &wide.heads[0].W_K, &wide.heads[0].W_V})
        m->conservativeResize(d + 1, Eigen::NoChange), m->row(d).setZero();
    for (Matrix* m : {&narrow.heads[0].W_Q, &narrow.heads[0].W_K, &narrow.heads[0].W_V})
        m->conservativeResize(Eigen::NoChange, dk + 2), m->rightCols(2).setZero();
    for (Vector* b : {&narrow.heads[0].b_Q, &narrow.heads[0].b_K, &narrow.heads[0].b_V})
        if (b->size())
            b->conservativeResize(dk + 2), b->tail(2).setZero();
    for (Session* s : {&wide, &narrow}) {
        s->W_O.reset(), s->b_O = Vector();
        QVERIFY2(validate(*s).empty(), validate(*s).c_str());
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::pair<Intervention, std::vector<const char*>>> refused{
        {intervention(3, 0, Kind::Zero), {"layer 3", "out of range"}},
        {intervention(0, 4, Kind::Mean), {"head 4", "out of range"}},
        {intervention(-1, 0, Kind::Zero), {"layer -1"}},
        {intervention(0, 0, Kind::Scale, nan), {"finite"}},
        {intervention(0, 0, Kind::Scale, HUGE_VAL), {"finite"}},
        {intervention(0, 0, Kind::Scale, -HUGE_VAL), {"finite"}},
        {intervention(0, 0, Kind::Session), {"session"}}, // none given
        {intervention(1, 0, Kind::Session, 1.0, std::make_shared<const Session>(wide)), {"d_model"}},
        {intervention(1, 0, Kind::Session, 1.0, std::make_shared<const Session>(narrow)), {"d_k"}},
    };
    for (const auto& [change, words] : refused) {
        const QString message = errorOf([&, &change = change] {
            run.predict({intervention(0, 0, Kind::Zero), change});
        });
        QVERIFY(!interventionProblem(change, w.model->config()).empty());
        for (const char* word : words)
            QVERIFY2(
                message.contains(QLatin1String(word)) && !message.contains(QLatin1Char('\n')),
                qPrintable(QStringLiteral("\"%1\" does not say \"%2\"").arg(message, QLatin1String(word))));
    }
    QVERIFY(interventionProblem(intervention(2, 3, Kind::Zero), w.model->config()).empty());

    // Token ids: too many, none, outside the vocabulary.
    const auto runProblem = [&](const std::vector<std::int64_t>& ids) {
        return errorOf([&] { ModelRun(w.model, ids, Precision::Float64); });
    };
    QVERIFY2(runProblem(std::vector<std::int64_t>(25, 1)).contains(QStringLiteral("24 positions")),
             qPrintable(runProblem(std::vector<std::int64_t>(25, 1))));
    QVERIFY2(runProblem({}) != QStringLiteral("(no error)"), "no ids accepted");
    QVERIFY2(runProblem({1, 40}).contains(QStringLiteral("token id 40")), qPrintable(runProblem({1, 40})));

    // A folder without the final norm.
    for (const char* name : {"gpt2", "qwen2"}) {
        Tiny tiny = shape(QString::fromLatin1(name));
        tiny.withFinalNorm = false;
        QTemporaryDir folder;
        qkv::test::writeModel(tiny, folder.path(), 53);
        const QString missing = errorOf([&] {
            ModelRun(std::make_shared<const Model>(Model::open(folder.path().toStdString())), {1, 2},
                     Precision::Float64);
        });
        const QString norm = tiny.llama ? QStringLiteral("model.norm") : QStringLiteral("ln_f");
        QVERIFY2(missing.contains(norm) && !missing.contains(QLatin1Char('\n')), qPrintable(missing));
    }
}

QKV_TEST_GUILESS_MAIN(TestPrediction)
#include "tst_prediction.moc"
