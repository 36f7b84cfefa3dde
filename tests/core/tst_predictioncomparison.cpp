// SPDX-License-Identifier: GPL-3.0-or-later
// The numbers behind the Prediction view (PredictionComparison.h) on a tiny GPT-2-shaped model: the top
// tokens are the run's, each change of log-probability is the change the run's own log-probabilities show,
// losses and logit differences follow the predictions, positions are clamped and bad tokens refused. Also the
// head grid's CSV (HeadGridCsv.h).

#include "DelimitedText.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "FuzzyCompare.h"
#include "HeadGridCsv.h"
#include "ModelRun.h"
#include "PredictionComparison.h"
#include "TestMain.h"
#include "TinyModels.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>
#include <vector>

using namespace qkv;

Q_DECLARE_METATYPE(qkv::HeadIntervention::Kind)

class TestPredictionComparison : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void unchangedRunShowsNoChange();
    void deltaIsTheChangeOfTheRunsLogProbability_data();
    void deltaIsTheChangeOfTheRunsLogProbability();
    void topTokensAndLossesAreTheRuns();
    void logitDifferenceComparesTwoTokens();
    void positionIsClampedIntoTheText_data();
    void positionIsClampedIntoTheText();
    void badTokensAndMismatchedTextsAreRefused();
    void oneTokenHasNoMeanLoss();
    void headGridCsvReadsBack();

private:
    std::shared_ptr<const ModelRun> runOn(const std::vector<std::int64_t>& ids) const
    {
        return std::make_shared<const ModelRun>(m_model, ids, Precision::Float64);
    }

    QTemporaryDir m_folder;
    std::shared_ptr<const Model> m_model;
    std::shared_ptr<const ModelRun> m_run;
};

void TestPredictionComparison::initTestCase()
{
    QVERIFY(m_folder.isValid());
    test::writeModel(test::Tiny{}, m_folder.path(), 7); // 3 layers, 2 heads, vocabulary 40
    m_model = std::make_shared<const Model>(Model::open(m_folder.path().toStdString()));
    m_run = runOn({4, 8, 15, 16, 23, 4, 8, 15});
}

void TestPredictionComparison::unchangedRunShowsNoChange()
{
    const Prediction& clean = m_run->clean();
    const Prediction again = m_run->predict({}); // a copy of the unmodified prediction
    for (const Prediction* modified : {&clean, &again}) {
        const PredictionComparison comparison = comparePredictions(clean, *modified, 3);
        QCOMPARE(comparison.modified.top.size(), comparison.clean.top.size());
        for (const ComparedToken& token : comparison.modified.top) {
            QVERIFY(token.delta.has_value());
            QKV_COMPARE_NEAR(*token.delta, 0.0, 1e-12);
        }
        for (const ComparedToken& token : comparison.clean.top)
            QVERIFY(!token.delta.has_value()); // the unmodified run is the reference
    }
}

void TestPredictionComparison::deltaIsTheChangeOfTheRunsLogProbability_data()
{
    QTest::addColumn<HeadIntervention::Kind>("kind");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("position");
    QTest::newRow("zero L0.H1 at 7") << HeadIntervention::Kind::Zero << 0 << 7;
    QTest::newRow("mean L1.H0 at 2") << HeadIntervention::Kind::Mean << 1 << 2;
    QTest::newRow("scale L2.H1 at 5") << HeadIntervention::Kind::Scale << 2 << 5;
}

void TestPredictionComparison::deltaIsTheChangeOfTheRunsLogProbability()
{
    QFETCH(HeadIntervention::Kind, kind);
    QFETCH(int, layer);
    QFETCH(int, position);
    Intervention change;
    change.layer = layer;
    change.head = 1 - layer % 2;
    change.kind = kind;
    change.factor = 3.0;
    const Prediction modified = m_run->predict({change});
    const PredictionComparison comparison = comparePredictions(m_run->clean(), modified, position);
    QCOMPARE(comparison.position, Index(position));
    QVERIFY(!comparison.modified.top.empty());
    bool changed = false;
    for (const ComparedToken& token : comparison.modified.top) {
        // What the run itself says each token's log-probability is, in each run.
        const double before = m_run->clean().logProbability(position, token.id);
        const double after = modified.logProbability(position, token.id);
        QKV_COMPARE_NEAR(token.logProbability, after, 1e-12);
        QKV_COMPARE_NEAR(*token.delta, after - before, 1e-12);
        changed = changed || std::abs(*token.delta) > 1e-6;
    }
    QVERIFY2(changed, "the intervention changes the prediction");
}

void TestPredictionComparison::topTokensAndLossesAreTheRuns()
{
    Intervention zero;
    zero.layer = 1;
    zero.kind = HeadIntervention::Kind::Zero;
    const Prediction modified = m_run->predict({zero});
    const PredictionComparison comparison = comparePredictions(m_run->clean(), modified, 4);
    for (const auto& [run, prediction] :
         {std::pair{&comparison.clean, &m_run->clean()}, std::pair{&comparison.modified, &modified}}) {
        const std::vector<TokenProbability>& top = prediction->positions[4].top;
        QCOMPARE(run->top.size(), top.size());
        for (std::size_t k = 0; k < top.size(); ++k) {
            QCOMPARE(run->top[k].id, top[k].id);
            QCOMPARE(run->top[k].probability, top[k].probability);
            if (k > 0)
                QVERIFY(run->top[k].probability <= run->top[k - 1].probability);
        }
        QCOMPARE(run->loss.size(), prediction->positions.size());
        for (std::size_t i = 0; i + 1 < run->loss.size(); ++i)
            QCOMPARE(run->loss[i], prediction->positions[i].loss);
        QVERIFY(std::isnan(run->loss.back())); // no next token after the last
        QVERIFY(run->meanLoss.has_value());
        QCOMPARE(*run->meanLoss, prediction->meanLoss);
        QVERIFY(!run->logitDifference.has_value()); // no pair given
    }
    QVERIFY(*comparison.modified.meanLoss != *comparison.clean.meanLoss);
}

void TestPredictionComparison::logitDifferenceComparesTwoTokens()
{
    const Prediction& clean = m_run->clean();
    const Index at = 6;
    const auto difference = [&](std::int64_t a, std::int64_t b) {
        return *comparePredictions(clean, clean, at, TokenPair{a, b}).clean.logitDifference;
    };
    QCOMPARE(difference(9, 9), 0.0);
    QKV_COMPARE_NEAR(difference(3, 17), -difference(17, 3), 1e-12);
    // The normalizer cancels: a logit difference is a difference of log-probabilities.
    QKV_COMPARE_NEAR(difference(3, 17), clean.logProbability(at, 3) - clean.logProbability(at, 17), 1e-9);
    Intervention zero;
    zero.layer = 2;
    zero.kind = HeadIntervention::Kind::Zero;
    const Prediction modified = m_run->predict({zero});
    const PredictionComparison both = comparePredictions(clean, modified, at, TokenPair{3, 17});
    QKV_COMPARE_NEAR(*both.modified.logitDifference,
                     modified.logProbability(at, 3) - modified.logProbability(at, 17), 1e-9);
    QCOMPARE(*both.clean.logitDifference, difference(3, 17));
}

void TestPredictionComparison::positionIsClampedIntoTheText_data()
{
    QTest::addColumn<int>("asked");
    QTest::addColumn<int>("shown");
    QTest::newRow("before the first") << -4 << 0;
    QTest::newRow("first") << 0 << 0;
    QTest::newRow("last") << 7 << 7;
    QTest::newRow("beyond the last") << 30 << 7;
}

void TestPredictionComparison::positionIsClampedIntoTheText()
{
    QFETCH(int, asked);
    QFETCH(int, shown);
    const PredictionComparison comparison = comparePredictions(m_run->clean(), m_run->clean(), asked);
    QCOMPARE(comparison.position, Index(shown));
    QCOMPARE(comparison.clean.top.front().id, m_run->clean().positions[std::size_t(shown)].top.front().id);
}

void TestPredictionComparison::badTokensAndMismatchedTextsAreRefused()
{
    const Prediction& clean = m_run->clean();
    const auto refused = [&](const Prediction& modified, std::optional<TokenPair> pair, const char* message) {
        const QString error = test::errorOf([&] { comparePredictions(clean, modified, 0, pair); });
        QVERIFY2(error.contains(QLatin1String(message)), qPrintable(error));
    };
    refused(clean, TokenPair{3, 40}, "token id 40 is outside the vocabulary (0 to 39)");
    refused(clean, TokenPair{-1, 3}, "token id -1 is outside the vocabulary");
    const std::shared_ptr<const ModelRun> shorter = runOn({4, 8, 15});
    refused(shorter->clean(), std::nullopt, "not of the same text (8 and 3 positions)");
}

void TestPredictionComparison::oneTokenHasNoMeanLoss()
{
    const std::shared_ptr<const ModelRun> one = runOn({11});
    const PredictionComparison comparison = comparePredictions(one->clean(), one->clean(), 0);
    QVERIFY(!comparison.clean.meanLoss.has_value());
    QCOMPARE(comparison.clean.loss.size(), std::size_t(1));
    QVERIFY(std::isnan(comparison.clean.loss.front()));
}

void TestPredictionComparison::headGridCsvReadsBack()
{
    Matrix grid(3, 2);
    grid << 0.1, -2.5e-7, 1.0 / 3.0, 0.0, -1e300, 42.0;
    const std::string csv = headGridCsv(grid);
    const std::size_t firstLineEnd = csv.find('\n');
    QCOMPARE(QString::fromStdString(csv.substr(0, firstLineEnd)), QStringLiteral("layer,H0,H1"));
    const Matrix rows = parseDelimited(csv.substr(firstLineEnd + 1));
    QCOMPARE(rows.rows(), Index(3));
    QCOMPARE(rows.cols(), Index(3));
    for (Index l = 0; l < 3; ++l) {
        QCOMPARE(rows(l, 0), double(l));
        for (Index h = 0; h < 2; ++h)
            QCOMPARE(rows(l, h + 1), grid(l, h)); // every digit kept
    }
    QCOMPARE(QString::fromStdString(headGridCsv(Matrix(0, 0))), QStringLiteral("layer\n"));
}

QKV_TEST_MAIN(TestPredictionComparison)
#include "tst_predictioncomparison.moc"
