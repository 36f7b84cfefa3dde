// SPDX-License-Identifier: GPL-3.0-or-later
// The QK and OV circuits, composition scores and a score's decomposition (Circuits.h, Composition.h,
// Decompose.h) on tiny GPT-2, LLaMA (grouped-query attention, lm_head) and Qwen2 (q/k/v biases, tied)
// checkpoints in float64, against a reference that reads the checkpoint's tensors by their Hugging Face
// names, folds the norms, forms every d × d and V × V matrix the factored code avoids and takes its SVD and
// eigenvalues directly: at 1e-9. A session's head: its QK table is the engine's Q·Kᵀ.

#include "AttentionEngine.h"
#include "Circuits.h"
#include "Composition.h"
#include "Decompose.h"
#include "Error.h"
#include "Examples.h"
#include "Model.h"
#include "ReferenceModel.h"
#include "TestMain.h"
#include "TinyModels.h"
#include "TrainingModel.h"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

using namespace qkv;
using qkv::test::matrixOf;
using qkv::test::ReferenceModel;
using qkv::test::Table;
using qkv::test::Tiny;

namespace {

const std::vector<std::int64_t> ids{5, 17, 3, 3, 39, 0, 22, 5, 17};

RowVector rowOf(const std::vector<double>& v)
{
    return Eigen::Map<const RowVector>(v.data(), Index(v.size()));
}

struct Written {
    Tiny tiny;
    QTemporaryDir folder;
    std::unique_ptr<Model> model;
    std::unique_ptr<ReferenceModel> reference;
    Written(const QString& family, unsigned seed) : tiny(qkv::test::tinyOfFamily(family, "F64", 2))
    {
        qkv::test::writeModel(tiny, folder.path(), seed);
        model = std::make_unique<Model>(Model::open(folder.path().toStdString()));
        reference = std::make_unique<ReferenceModel>(tiny, model->checkpoint());
    }
};

/// A head's unfolded matrices read by the checkpoint's names, as the conventions table reads them.
struct ReferenceHead {
    Matrix wq, wk, wv, wo; // d × d_h, d × d_h, d × d_h, d_h × d
    RowVector gain, shift; // the layer's input norm (shift empty for RMSNorm)
    RowVector bq, bk;      // empty without biases
};

ReferenceHead referenceHead(const Written& w, int layer, int head)
{
    const Tiny& t = w.tiny;
    const ReferenceModel& r = *w.reference;
    const int dh = t.headDim(), g = head / (t.heads / t.kvHeads);
    ReferenceHead h;
    if (!t.llama) {
        const std::string p = "h." + std::to_string(layer) + ".";
        const Matrix qkv = matrixOf(r.table(p + "attn.c_attn.weight"));
        h.wq = qkv.middleCols(head * dh, dh);
        h.wk = qkv.middleCols(t.d + head * dh, dh);
        h.wv = qkv.middleCols(2 * t.d + head * dh, dh);
        h.wo = matrixOf(r.table(p + "attn.c_proj.weight")).middleRows(head * dh, dh);
        h.gain = rowOf(r.vec(p + "ln_1.weight"));
        h.shift = rowOf(r.vec(p + "ln_1.bias"));
        const RowVector b = rowOf(r.vec(p + "attn.c_attn.bias"));
        h.bq = b.segment(head * dh, dh);
        h.bk = b.segment(t.d + head * dh, dh);
    } else {
        const std::string p = "model.layers." + std::to_string(layer) + ".";
        h.wq = matrixOf(r.table(p + "self_attn.q_proj.weight")).middleRows(head * dh, dh).transpose();
        h.wk = matrixOf(r.table(p + "self_attn.k_proj.weight")).middleRows(g * dh, dh).transpose();
        h.wv = matrixOf(r.table(p + "self_attn.v_proj.weight")).middleRows(g * dh, dh).transpose();
        h.wo = matrixOf(r.table(p + "self_attn.o_proj.weight")).middleCols(head * dh, dh).transpose();
        h.gain = rowOf(r.vec(p + "input_layernorm.weight"));
        if (t.qkvBias) {
            h.bq = rowOf(r.vec(p + "self_attn.q_proj.bias")).segment(head * dh, dh);
            h.bk = rowOf(r.vec(p + "self_attn.k_proj.bias")).segment(g * dh, dh);
        }
    }
    return h;
}

Matrix folded(const ReferenceHead& h, const Matrix& side)
{
    return h.gain.transpose().asDiagonal() * side;
}

Matrix embedding(const Written& w)
{
    return matrixOf(w.reference->table(w.tiny.llama ? "model.embed_tokens.weight" : "wte.weight"));
}

/// W̃_U: d × V.
Matrix foldedUnembedding(const Written& w)
{
    return rowOf(w.reference->finalGain()).transpose().asDiagonal() *
           matrixOf(w.reference->unembedding()).transpose();
}

Matrix dense(const ReferenceHead& h, bool qk)
{
    return qk ? Matrix(folded(h, h.wq) * folded(h, h.wk).transpose()) : Matrix(folded(h, h.wv) * h.wo);
}

std::vector<double> singularValues(const Matrix& m, Index count)
{
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(m);
    const Eigen::VectorXd s = svd.singularValues().head(count);
    return {s.data(), s.data() + s.size()};
}

/// The `count` eigenvalues of largest modulus, sorted as the code sorts them.
Eigenvalues largestEigenvalues(const Matrix& m, Index count)
{
    const Eigen::ComplexEigenSolver<Eigen::MatrixXcd> solver(m.cast<std::complex<double>>());
    Eigenvalues values(solver.eigenvalues().begin(), solver.eigenvalues().end());
    std::sort(values.begin(), values.end(),
              [](std::complex<double> a, std::complex<double> b) { return std::abs(a) > std::abs(b); });
    values.resize(std::size_t(count));
    return values;
}

/// Compares eigenvalues as multisets: each expected one has a match within `tolerance`.
void compareEigenvalues(const Eigenvalues& actual, const Eigenvalues& expected, double tolerance)
{
    QCOMPARE(actual.size(), expected.size());
    std::vector<bool> used(actual.size(), false);
    for (const std::complex<double>& e : expected) {
        bool found = false;
        for (std::size_t i = 0; i < actual.size() && !found; ++i)
            if (!used[i] && std::abs(actual[i] - e) <= tolerance) {
                used[i] = true;
                found = true;
            }
        QVERIFY2(found,
                 qPrintable(QStringLiteral("eigenvalue %1 + %2i has no match").arg(e.real()).arg(e.imag())));
    }
    for (std::size_t i = 1; i < actual.size(); ++i) // listed by modulus, descending
        QVERIFY(std::abs(actual[i]) <= std::abs(actual[i - 1]) + 1e-12);
}

void compareValues(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance)
{
    QCOMPARE(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i)
        QVERIFY2(std::abs(actual[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i])),
                 qPrintable(QStringLiteral("%1: %2 against %3")
                                .arg(i)
                                .arg(actual[i], 0, 'g', 17)
                                .arg(expected[i], 0, 'g', 17)));
}

/// Entry by entry within `tolerance` of the larger of 1 and b's largest entry.
bool closeMatrices(const Matrix& a, const Matrix& b, double tolerance)
{
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           (a - b).cwiseAbs().maxCoeff() <= tolerance * std::max(1.0, b.cwiseAbs().maxCoeff());
}

double compositionReference(const Matrix& left, const Matrix& right)
{
    return (left * right).norm() / (left.norm() * right.norm());
}

void addFamilies()
{
    QTest::addColumn<QString>("family");
    for (const char* family : {"gpt2", "llama", "qwen2"})
        QTest::newRow(family) << QString::fromLatin1(family);
}

} // namespace

class TestCircuits : public QObject {
    Q_OBJECT

private slots:
    void spectraAndFullCircuits_data() { addFamilies(); }
    void spectraAndFullCircuits()
    {
        QFETCH(QString, family);
        const Written w(family, 31);
        const ModelCircuits circuits(*w.model);
        const Matrix embed = embedding(w), unembed = foldedUnembedding(w);
        const Index dh = w.tiny.headDim();
        for (int layer = 0; layer < w.tiny.layers; ++layer)
            for (int head = 0; head < w.tiny.heads; ++head) {
                const ReferenceHead h = referenceHead(w, layer, head);
                const CircuitSpectra spectra = circuitSpectra(circuits.head(layer, head));
                const Matrix qk = dense(h, true), ov = dense(h, false);
                compareValues(spectra.qk.singularValues, singularValues(qk, dh), 1e-9);
                compareValues({spectra.qk.frobenius}, {qk.norm()}, 1e-9);
                QVERIFY(spectra.ov);
                compareValues(spectra.ov->singularValues, singularValues(ov, dh), 1e-9);
                compareValues({spectra.ov->frobenius}, {ov.norm()}, 1e-9);
                compareEigenvalues(spectra.ovEigenvalues, largestEigenvalues(ov, dh), 1e-9);
                // The full OV circuit, V × V, formed here and nowhere in the code.
                const Matrix fullOv = embed * ov * unembed;
                const FullOvCircuit full = circuits.fullOv(layer, head);
                const Eigenvalues expected = largestEigenvalues(fullOv, dh);
                compareEigenvalues(full.eigenvalues, expected, 1e-9 * std::abs(expected.front()));
                compareValues({full.copyingScore}, {copyingScore(expected)}, 1e-9);
                // The token tables of a prompt and the top tokens over the vocabulary.
                Matrix rows(Index(ids.size()), w.tiny.d);
                for (std::size_t i = 0; i < ids.size(); ++i)
                    rows.row(Index(i)) = embed.row(Index(ids[i]));
                QVERIFY(
                    closeMatrices(circuits.tokenQk(layer, head, ids), rows * qk * rows.transpose(), 1e-9));
                const auto tops = circuits.ovTop(layer, head, ids, 5);
                const Matrix written = rows * ov * unembed;
                for (std::size_t i = 0; i < ids.size(); ++i) {
                    const std::vector<TokenValue> expectedTop = largestEntries(written.row(Index(i)), 5);
                    QCOMPARE(tops[i].size(), std::size_t(5));
                    for (std::size_t k = 0; k < 5; ++k) {
                        QCOMPARE(tops[i][k].id, expectedTop[k].id);
                        compareValues({tops[i][k].value}, {expectedTop[k].value}, 1e-9);
                    }
                }
                const std::vector<TokenValue> keys = circuits.topKeys(layer, head, ids[2], 4);
                const RowVector sought = embed.row(Index(ids[2])) * qk * embed.transpose();
                for (std::size_t k = 0; k < keys.size(); ++k) {
                    QCOMPARE(keys[k].value, sought(keys[k].id));
                    QVERIFY(k == 0 || keys[k].value <= keys[k - 1].value);
                }
                QCOMPARE(keys.front().value, sought.maxCoeff());
            }
    }

    void compositionScores_data() { addFamilies(); }
    void compositionScores()
    {
        QFETCH(QString, family);
        const Written w(family, 32);
        const auto weights = training::sharedWeights<double>(*w.model);
        const CompositionScores all = qkv::compositionScores(*weights);
        const CompositionScores all32 = qkv::compositionScores(*training::sharedWeights<float>(*w.model));
        const int layers = w.tiny.layers, heads = w.tiny.heads;
        for (int l2 = 0; l2 < layers; ++l2)
            for (int h2 = 0; h2 < heads; ++h2) {
                const ReferenceHead later = referenceHead(w, l2, h2);
                const CompositionScores one = qkv::compositionScores(*weights, l2, h2);
                for (int l1 = 0; l1 < layers; ++l1)
                    for (int h1 = 0; h1 < heads; ++h1) {
                        const bool earlier = l1 < l2;
                        const Matrix ov = dense(referenceHead(w, l1, h1), false);
                        const double q = earlier ? compositionReference(ov, dense(later, true)) : 0.0;
                        const double k =
                            earlier ? compositionReference(ov, dense(later, true).transpose()) : 0.0;
                        const double v = earlier ? compositionReference(ov, dense(later, false)) : 0.0;
                        for (const CompositionScores* scores : {&all, &one}) {
                            compareValues({scores->at(CompositionKind::Query, l1, h1, l2, h2)}, {q}, 1e-9);
                            compareValues({scores->at(CompositionKind::Key, l1, h1, l2, h2)}, {k}, 1e-9);
                            compareValues({scores->at(CompositionKind::Value, l1, h1, l2, h2)}, {v}, 1e-9);
                        }
                        compareValues({all32.at(CompositionKind::Query, l1, h1, l2, h2)}, {q}, 1e-5);
                        compareValues({all32.at(CompositionKind::Value, l1, h1, l2, h2)}, {v}, 1e-5);
                    }
            }
        const Matrix into = all.into(CompositionKind::Key, 2, 1);
        QCOMPARE(into.rows(), Index(2));
        QCOMPARE(into(1, 0), all.at(CompositionKind::Key, 1, 0, 2, 1));
    }

    void decomposition_data() { addFamilies(); }
    void decomposition()
    {
        QFETCH(QString, family);
        const Written w(family, 33);
        const Tiny& t = w.tiny;
        const qkv::test::ReferenceRun run = w.reference->run(ids, {});
        const int dh = t.headDim();
        for (int layer = 0; layer < t.layers; ++layer)
            for (const auto& [query, key] : {std::pair{7, 2}, std::pair{3, 3}, std::pair{2, 6}}) {
                const int head = (layer + 1) % t.heads;
                const ScoreDecomposition d = decomposeScore(*w.model, {layer, head, ids, query, key});
                // The components, from the reference run, sum to the stream entering the layer.
                double streamMismatch = 0;
                const auto componentRows = [&](int position) {
                    std::vector<RowVector> rows{rowOf(run.embed[std::size_t(position)])};
                    if (!t.llama)
                        rows.push_back(rowOf(run.posEmbed[std::size_t(position)]));
                    for (int l = 0; l < layer; ++l) {
                        const Matrix wo = matrixOf(w.reference->outputProjection(l));
                        for (int h = 0; h < t.heads; ++h)
                            rows.push_back(
                                rowOf(run.z[std::size_t(l)][std::size_t(h)][std::size_t(position)]) *
                                wo.middleRows(h * dh, dh));
                        if (!t.llama)
                            rows.push_back(
                                rowOf(w.reference->vec("h." + std::to_string(l) + ".attn.c_proj.bias")));
                        rows.push_back(rowOf(run.mlpOut[std::size_t(l)][std::size_t(position)]));
                    }
                    RowVector sum = RowVector::Zero(t.d);
                    for (const RowVector& r : rows)
                        sum += r;
                    const RowVector stream = rowOf(run.residPre[std::size_t(layer)][std::size_t(position)]);
                    streamMismatch = std::max(streamMismatch, (sum - stream).norm() / stream.norm());
                    return std::pair{rows, stream};
                };
                const ReferenceHead h = referenceHead(w, layer, head);
                const auto parts = [&](int position, const Matrix& weight, const RowVector& bias) {
                    const auto [rows, stream] = componentRows(position);
                    const double mean = t.llama ? 0.0 : stream.mean();
                    const double divisor = std::sqrt((stream.array() - mean).square().mean() + t.epsilon);
                    Matrix out(Index(rows.size()) + 1, dh);
                    for (std::size_t c = 0; c < rows.size(); ++c) {
                        const RowVector centred =
                            t.llama ? rows[c] : RowVector(rows[c].array() - rows[c].mean());
                        out.row(Index(c)) = (centred / divisor).cwiseProduct(h.gain) * weight;
                    }
                    out.row(Index(rows.size())).setZero();
                    if (h.shift.size() > 0)
                        out.row(Index(rows.size())) += h.shift * weight;
                    if (bias.size() > 0)
                        out.row(Index(rows.size())) += bias;
                    if (t.llama)
                        for (Index c = 0; c < out.rows(); ++c) {
                            Table rotated = qkv::test::zeros(std::size_t(position) + 1, std::size_t(dh));
                            for (int k = 0; k < dh; ++k)
                                rotated.back()[std::size_t(k)] = out(c, k);
                            qkv::test::rotate(rotated, t.theta, RopePairing::Half);
                            out.row(c) = rowOf(rotated.back());
                        }
                    return out;
                };
                const Matrix terms =
                    parts(query, h.wq, h.bq) * parts(key, h.wk, h.bk).transpose() / std::sqrt(double(dh));
                QVERIFY(streamMismatch <= 1e-12);
                QCOMPARE(d.terms.rows(), terms.rows());
                QCOMPARE(Index(d.components.size()), terms.rows());
                QCOMPARE(d.components.front(), std::string("embed"));
                QCOMPARE(d.components.back(), std::string("bias"));
                QVERIFY(closeMatrices(d.terms, terms, 1e-9));
                // The terms sum to the engine's own score.
                compareValues({d.terms.sum()}, {d.score}, 1e-9);
                compareValues({std::accumulate(d.query.begin(), d.query.end(), 0.0)}, {d.score}, 1e-9);
                compareValues({std::accumulate(d.key.begin(), d.key.end(), 0.0)}, {d.score}, 1e-9);
            }
    }

    void namesTheComponents()
    {
        const Written w(QStringLiteral("gpt2"), 34);
        const ScoreDecomposition d = decomposeScore(*w.model, {2, 1, ids, 4, 1});
        const std::vector<std::string> expected{"embed", "pos",  "L0H0",   "L0H1",   "L0.b_O", "L0.mlp",
                                                "L1H0",  "L1H1", "L1.b_O", "L1.mlp", "bias"};
        QCOMPARE(d.components, expected);
        const Written llama(QStringLiteral("llama"), 35);
        QCOMPARE(decomposeScore(*llama.model, {1, 3, ids, 4, 1}).components,
                 (std::vector<std::string>{"embed", "L0H0", "L0H1", "L0H2", "L0H3", "L0.mlp", "bias"}));
    }

    void refusals()
    {
        const Written w(QStringLiteral("llama"), 36);
        const ModelCircuits circuits(*w.model);
        const auto refused = [](const std::function<void()>& call, const QString& words) {
            try {
                call();
            } catch (const Error& e) {
                QVERIFY2(QString::fromStdString(e.what()).contains(words), e.what());
                return;
            }
            QFAIL("not refused");
        };
        refused([&] { circuits.head(3, 0); },
                QStringLiteral("layer 3 is out of range: the model has layers 0 to 2"));
        refused([&] { circuits.head(0, 4); },
                QStringLiteral("head 4 is out of range: the model has heads 0 to 3"));
        refused(
            [&] {
                circuits.tokenQk(0, 0, {1, 40});
            },
            QStringLiteral("token 1 (id 40) is outside the vocabulary"));
        refused([&] { qkv::compositionScores(*training::sharedWeights<double>(*w.model), 5); },
                QStringLiteral("layer 5 is out of range"));
        refused(
            [&] {
                decomposeScore(*w.model, {0, 0, ids, 9, 0});
            },
            QStringLiteral("the query position 9 is out of range: the text has positions 0 to 8"));
        refused([&] { decomposeScore(*w.model, {0, 0, {}, 0, 0}); }, QStringLiteral("no tokens"));
        bool stopped = false;
        try {
            qkv::compositionScores(*training::sharedWeights<double>(*w.model), -1, -1,
                                   [](Index done, Index) { return done < 1; });
        } catch (const Cancelled&) {
            stopped = true;
        }
        QVERIFY(stopped);
    }

    /// A session's head, nothing folded: X·W_QK·Xᵀ is Q·Kᵀ before the scale, as the engine computes it.
    void sessionHead()
    {
        const Session session = loadExample("love");
        const AttentionResult result = computeAttention(session);
        const HeadFactors factors = sessionHeadFactors(session, 0);
        const CircuitSpectra spectra = circuitSpectra(factors);
        const Matrix qk = factors.query * factors.key.transpose();
        QVERIFY(closeMatrices(session.X * qk * session.X.transpose(), result.heads[0].scores, 1e-12));
        compareValues(spectra.qk.singularValues, singularValues(qk, std::min(session.dModel(), session.dK())),
                      1e-12);
        QCOMPARE(bool(spectra.ov), session.W_O.has_value());
    }
};

QKV_TEST_MAIN(TestCircuits)
#include "tst_circuits.moc"
