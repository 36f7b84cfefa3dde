// SPDX-License-Identifier: GPL-3.0-or-later
// Patching and the logit lens (Patching.h, LogitLens.h) on tiny GPT-2, LLaMA (grouped-query attention, no
// biases, lm_head) and Qwen2 (q/k/v biases, tied) checkpoints in float64: every exact grid equals the plain-
// loop reference (ReferenceModel.h) run with the site's activation copied from the clean run, at 1e-9; every
// attribution grid equals m_corrupt plus the reference's central difference along (a_clean − a_corrupt); the
// lens equals the reference's streams read through the final norm and W_U; refusals name what is wrong;
// a stopped grid stops and keeps the cells done.

#include "Error.h"
#include "FuzzyCompare.h"
#include "LogitLens.h"
#include "Model.h"
#include "ModelRun.h"
#include "Patching.h"
#include "ReferenceModel.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace qkv;
using qkv::test::ReferenceModel;
using qkv::test::ReferenceRun;
using qkv::test::Table;
using qkv::test::Tiny;

namespace {

const std::vector<std::int64_t> cleanIds{5, 17, 3, 3, 39, 0, 22, 5, 17};
const std::vector<std::int64_t> corruptIds{5, 17, 3, 8, 39, 0, 22, 11, 17};
constexpr std::int64_t answer = 3, wrong = 22;

Tiny shape(const QString& name)
{
    const bool mistral = name == QLatin1String("mistral"); // a sliding window shorter than the prompts
    Tiny tiny = qkv::test::tinyOfFamily(mistral ? QStringLiteral("llama") : name, "F64", 2);
    tiny.layers = 2;
    tiny.slidingWindow = mistral ? 4 : 0;
    return tiny;
}

struct Written {
    Tiny tiny;
    QTemporaryDir folder;
    std::unique_ptr<Model> model;
    Written(const QString& name, unsigned seed) : tiny(shape(name))
    {
        qkv::test::writeModel(tiny, folder.path(), seed);
        model = std::make_unique<Model>(Model::open(folder.path().toStdString()));
    }
};

double metricOf(const ReferenceRun& run)
{
    const auto& last = run.logits.back();
    return last[std::size_t(answer)] - last[std::size_t(wrong)];
}

/// What one cell replaces, for the reference's edit: its hook, layer, head (−1: all) and row (−1: all).
struct ReferenceCell {
    const char* hook;
    int layer, head, row;
};

ReferenceCell referenceCell(PatchSite site, int layer, int col, int k, const PatchGrid& grid)
{
    const int first = int(grid.firstPosition);
    switch (site) {
    case PatchSite::ResidPre:
        return {"resid_pre", layer, -1, first + col};
    case PatchSite::AttnOut:
        return {"attn_out", layer, -1, first + col};
    case PatchSite::MlpOut:
        return {"mlp_out", layer, -1, first + col};
    case PatchSite::HeadOut:
        return {"z", layer, col, -1};
    case PatchSite::HeadOutPos:
        return {"z", layer, col, first + k};
    case PatchSite::HeadPattern:
        return {"pattern", layer, col, -1};
    case PatchSite::HeadQ:
        return {"q", layer, col, -1};
    case PatchSite::HeadK:
        return {"k", layer, col, -1};
    case PatchSite::HeadV:
        return {"v", layer, col, -1};
    }
    return {"", 0, 0, 0};
}

/// The clean run's value of a reference hook (whole tables; one head's table for pattern and z).
const Table& cleanValue(const ReferenceRun& clean, const ReferenceCell& cell)
{
    const auto l = std::size_t(cell.layer);
    const std::string hook = cell.hook;
    if (hook == "resid_pre")
        return clean.residPre[l];
    if (hook == "attn_out")
        return clean.attnOut[l];
    if (hook == "mlp_out")
        return clean.mlpOut[l];
    if (hook == "z")
        return clean.z[l][std::size_t(cell.head)];
    if (hook == "pattern")
        return clean.weights[l][std::size_t(cell.head)];
    return hook == "q" ? clean.q[l] : hook == "k" ? clean.k[l] : clean.v[l];
}

/// The reference's metric with the cell's entries moved to corrupt + t·(clean − corrupt) (t = 1: patched).
double referencePatched(const ReferenceModel& reference, const ReferenceRun& clean, const ReferenceCell& cell,
                        double t, std::size_t headDim)
{
    const Table& from = cleanValue(clean, cell);
    const bool perHeadTable = std::string(cell.hook) == "z" || std::string(cell.hook) == "pattern";
    const auto edit = [&](const std::string& hook, int layer, int head, Table& value) {
        if (hook != cell.hook || layer != cell.layer || (perHeadTable && head != cell.head))
            return;
        for (std::size_t i = 0; i < value.size(); ++i) {
            if (cell.row >= 0 && int(i) != cell.row)
                continue;
            for (std::size_t c = 0; c < value[i].size(); ++c) {
                const bool inHead =
                    perHeadTable || cell.head < 0 ||
                    (c >= std::size_t(cell.head) * headDim && c < std::size_t(cell.head + 1) * headDim);
                if (inHead)
                    value[i][c] += t * (from[i][c] - value[i][c]);
            }
        }
    };
    return metricOf(reference.run(corruptIds, {}, edit));
}

void addModelsAndSites()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("site");
    for (const char* model : {"gpt2", "llama", "qwen2", "mistral"})
        for (PatchSite site : allPatchSites())
            QTest::newRow((std::string(model) + " " + patchSiteName(site)).c_str())
                << QString::fromLatin1(model) << int(site);
}

} // namespace

class TestPatching : public QObject {
    Q_OBJECT

private slots:
    void exactEqualsTheReference_data() { addModelsAndSites(); }
    void exactEqualsTheReference()
    {
        QFETCH(QString, model);
        QFETCH(int, site);
        const Written m(model, 57);
        const ReferenceModel reference(m.tiny, m.model->checkpoint());
        const ReferenceRun clean = reference.run(cleanIds), corrupt = reference.run(corruptIds);
        PatchingRun run(*m.model, {cleanIds, corruptIds, answer, wrong});
        QVERIFY(std::abs(run.cleanMetric() - metricOf(clean)) < 1e-9);
        QVERIFY(std::abs(run.corruptMetric() - metricOf(corrupt)) < 1e-9);
        const auto kind = PatchSite(site);
        const PatchGrid grid = run.patch(kind, PatchMethod::Exact, 2, 7);
        QCOMPARE(grid.done, grid.cells());
        const std::size_t headDim = std::size_t(m.tiny.headDim());
        double largest = 0.0;
        for (Index row = 0; row < grid.rows; ++row)
            for (Index col = 0; col < grid.cols; ++col)
                for (Index k = 0; k < grid.depth; ++k) {
                    const ReferenceCell cell = referenceCell(kind, int(row), int(col), int(k), grid);
                    const double expected = referencePatched(reference, clean, cell, 1.0, headDim);
                    largest = std::max(largest, std::abs(grid.value(row, col, k) - expected));
                    const double normalized =
                        (expected - metricOf(corrupt)) / (metricOf(clean) - metricOf(corrupt));
                    QVERIFY2(std::abs(grid.normalizedValue(row, col, k) - normalized) < 1e-9,
                             qPrintable(QStringLiteral("cell %1 %2 %3").arg(row).arg(col).arg(k)));
                }
        QVERIFY2(largest < 1e-9, qPrintable(QString::number(largest)));
        qInfo("largest difference from the reference %.3g", largest);
    }

    void attributionIsTheFirstOrderEstimate_data() { addModelsAndSites(); }
    /// Σ Δa·∂m/∂a against (m(corrupt + hΔ) − m(corrupt − hΔ)) / 2h on the reference.
    void attributionIsTheFirstOrderEstimate()
    {
        QFETCH(QString, model);
        QFETCH(int, site);
        const Written m(model, 61);
        const ReferenceModel reference(m.tiny, m.model->checkpoint());
        const ReferenceRun clean = reference.run(cleanIds);
        PatchingRun run(*m.model, {cleanIds, corruptIds, answer, wrong});
        const auto kind = PatchSite(site);
        const PatchGrid grid = run.patch(kind, PatchMethod::Attribution);
        const std::size_t headDim = std::size_t(m.tiny.headDim());
        const double h = 1e-5;
        double largest = 0.0;
        for (Index row = 0; row < grid.rows; ++row)
            for (Index col = 0; col < grid.cols; ++col)
                for (Index k = 0; k < grid.depth; k += std::max<Index>(1, grid.depth / 3)) {
                    const ReferenceCell cell = referenceCell(kind, int(row), int(col), int(k), grid);
                    const double slope = (referencePatched(reference, clean, cell, h, headDim) -
                                          referencePatched(reference, clean, cell, -h, headDim)) /
                                         (2 * h);
                    const double expected = run.corruptMetric() + slope;
                    largest = std::max(largest, std::abs(grid.value(row, col, k) - expected));
                }
        QVERIFY2(largest < 1e-7, qPrintable(QString::number(largest)));
        qInfo("largest difference from central differences %.3g", largest);
    }

    void float32AgreesWithFloat64()
    {
        const Written m(QStringLiteral("llama"), 67);
        PatchingRun exact(*m.model, {cleanIds, corruptIds, answer, wrong});
        PatchingRun single(*m.model, {cleanIds, corruptIds, answer, wrong}, Precision::Float32);
        for (PatchMethod method : {PatchMethod::Exact, PatchMethod::Attribution}) {
            const PatchGrid a = exact.patch(PatchSite::HeadOut, method);
            const PatchGrid b = single.patch(PatchSite::HeadOut, method);
            for (std::size_t i = 0; i < a.values.size(); ++i)
                QVERIFY(std::abs(a.values[i] - b.values[i]) < 1e-4 * std::max(1.0, std::abs(a.values[i])));
        }
    }

    void stopKeepsTheCellsDone()
    {
        const Written m(QStringLiteral("gpt2"), 71);
        PatchingRun run(*m.model, {cleanIds, corruptIds, answer, wrong});
        PatchGrid partial;
        Index calls = 0;
        const auto stopAtThree = [&](Index done, Index total) {
            ++calls;
            if (total != partial.cells() || done != partial.done)
                return true; // checked below: progress sees the grid it counts
            return done < 3;
        };
        QVERIFY_THROWS_EXCEPTION(
            Cancelled, run.patch(PatchSite::HeadOutPos, PatchMethod::Exact, 0, -1, stopAtThree, &partial));
        QCOMPARE(partial.done, Index(3));
        QVERIFY2(calls > 3, "asked between the layers of a cell too");
        const PatchGrid whole = run.patch(PatchSite::HeadOutPos, PatchMethod::Exact);
        for (Index i = 0; i < 3; ++i)
            QCOMPARE(partial.values[std::size_t(i)], whole.values[std::size_t(i)]);
        // A stop asked for during the first cell stops it.
        QVERIFY_THROWS_EXCEPTION(Cancelled, run.patch(
                                                PatchSite::ResidPre, PatchMethod::Exact, 0, -1,
                                                [](Index, Index) { return false; }, &partial));
        QCOMPARE(partial.done, Index(0));
    }

    void refusals_data()
    {
        QTest::addColumn<std::vector<std::int64_t>>("corrupt");
        QTest::addColumn<qint64>("answerId");
        QTest::addColumn<qint64>("wrongId");
        QTest::addColumn<QString>("message");
        QTest::newRow("different lengths")
            << std::vector<std::int64_t>{5, 17} << qint64(answer) << qint64(wrong)
            << "the clean prompt has 9 tokens and the corrupted one 2";
        QTest::newRow("same prompts") << cleanIds << qint64(answer) << qint64(wrong)
                                      << "clean and corrupted give the same logit difference";
        QTest::newRow("answer is wrong") << corruptIds << qint64(answer) << qint64(answer)
                                         << "the answer and the wrong token are the same token (id 3)";
        QTest::newRow("outside the vocabulary") << corruptIds << qint64(answer) << qint64(1000)
                                                << "the wrong token id 1000 is outside the vocabulary";
        QTest::newRow("bad corrupted id")
            << std::vector<std::int64_t>{5, 17, 3, 3, 39, 0, 22, 5, -2} << qint64(answer) << qint64(wrong)
            << "the corrupted prompt's token 8 (id -2) is outside the vocabulary";
    }
    void refusals()
    {
        QFETCH(std::vector<std::int64_t>, corrupt);
        QFETCH(qint64, answerId);
        QFETCH(qint64, wrongId);
        QFETCH(QString, message);
        const Written m(QStringLiteral("gpt2"), 73);
        try {
            PatchingRun run(*m.model, {cleanIds, corrupt, answerId, wrongId});
            QFAIL("not refused");
        } catch (const Error& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(message), e.what());
        }
    }

    void positionsOutOfRangeAreRefused()
    {
        const Written m(QStringLiteral("gpt2"), 79);
        PatchingRun run(*m.model, {cleanIds, corruptIds, answer, wrong});
        for (const auto& [first, last] : {std::pair<Index, Index>{3, 9}, {5, 4}, {-1, 2}}) {
            try {
                run.patch(PatchSite::ResidPre, PatchMethod::Exact, first, last);
                QFAIL("not refused");
            } catch (const Error& e) {
                QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("9 tokens")), e.what());
            }
        }
    }

    void lensEqualsTheReference_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("gpt2") << QStringLiteral("gpt2");
        QTest::newRow("llama grouped query") << QStringLiteral("llama");
        QTest::newRow("qwen2 biases") << QStringLiteral("qwen2");
    }
    void lensEqualsTheReference()
    {
        QFETCH(QString, model);
        const Written m(model, 83);
        const ReferenceModel reference(m.tiny, m.model->checkpoint());
        const ReferenceRun ref = reference.run(cleanIds);
        LensOptions options;
        options.top = 5;
        options.answer = answer;
        const LogitLens lens = logitLens(*m.model, cleanIds, options);
        QCOMPARE(Index(lens.layers.size()), Index(m.tiny.layers + 1));
        const Table unembedding = reference.unembedding();
        const std::vector<double> bias = m.tiny.llama ? std::vector<double>() : reference.vec("ln_f.bias");
        double largest = 0.0;
        for (int l = 0; l <= m.tiny.layers; ++l) {
            const Table& stream = l < m.tiny.layers ? ref.residPre[std::size_t(l)] : ref.residual;
            const Table normed =
                qkv::test::normalized(stream, reference.finalGain(), bias, m.tiny.epsilon, m.tiny.llama);
            const Table logits = qkv::test::linear(normed, unembedding, {}, true);
            for (std::size_t i = 0; i < cleanIds.size(); ++i) {
                const LensCell& cell = lens.layers[std::size_t(l)][i];
                double max = logits[i][0], sum = 0.0;
                for (double v : logits[i])
                    max = std::max(max, v);
                for (double v : logits[i])
                    sum += std::exp(v - max);
                Index rank = 1;
                for (std::size_t v = 0; v < logits[i].size(); ++v)
                    rank += logits[i][v] > logits[i][std::size_t(answer)];
                QCOMPARE(cell.answerRank, rank);
                QCOMPARE(Index(cell.top.size()), Index(5));
                for (const TokenProbability& token : cell.top) {
                    const double p = std::exp(logits[i][std::size_t(token.id)] - max) / sum;
                    largest = std::max(largest, std::abs(token.probability - p));
                }
                const double answerP = std::exp(logits[i][std::size_t(answer)] - max) / sum;
                largest = std::max(largest, std::abs(cell.answerProbability - answerP));
                for (std::size_t t = 1; t < cell.top.size(); ++t)
                    QVERIFY(cell.top[t - 1].probability >= cell.top[t].probability);
            }
        }
        QVERIFY2(largest < 1e-9, qPrintable(QString::number(largest)));
        // The last row is the model's own prediction.
        const ModelRun predicted(std::shared_ptr<const Model>(m.model.get(), [](const Model*) {}), cleanIds,
                                 Precision::Float64);
        for (std::size_t i = 0; i < cleanIds.size(); ++i)
            for (std::size_t t = 0; t < 5; ++t) {
                QCOMPARE(lens.layers.back()[i].top[t].id, predicted.clean().positions[i].top[t].id);
                QVERIFY(std::abs(lens.layers.back()[i].top[t].probability -
                                 predicted.clean().positions[i].top[t].probability) < 1e-9);
            }
    }

    void lensRefusesBadInput()
    {
        const Written m(QStringLiteral("qwen2"), 89);
        LensOptions options;
        options.answer = 1000;
        QVERIFY_THROWS_EXCEPTION(Error, logitLens(*m.model, cleanIds, options));
        QVERIFY_THROWS_EXCEPTION(Error, logitLens(*m.model, {}, LensOptions{}));
        QVERIFY_THROWS_EXCEPTION(Error, logitLens(*m.model, {1, 2, 77777}, LensOptions{}));
        const LogitLens one = logitLens(*m.model, {7}, LensOptions{});
        QCOMPARE(one.layers.front().size(), std::size_t(1));
    }
};

QKV_TEST_MAIN(TestPatching)
#include "tst_patching.moc"
