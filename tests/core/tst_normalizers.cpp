// SPDX-License-Identifier: GPL-3.0-or-later
// The row normalizers (docs/semantics.md) against published values, long-double references and their
// mathematical properties, including the extremes of the score and temperature range.

#include "Normalizers.h"

#include "FuzzyCompare.h"
#include "TestMain.h"

#include <QtTest>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace qkv;

namespace {

using Row = std::vector<double>;
using Mask = std::vector<std::uint8_t>;
using LongRow = std::vector<long double>;

NormalizerSpec specOf(int type, double alpha = 1.5)
{
    NormalizerSpec spec;
    spec.type = static_cast<NormalizerType>(type);
    spec.alpha = alpha;
    return spec;
}

const int softmaxType = static_cast<int>(NormalizerType::Softmax);
const int sparsemaxType = static_cast<int>(NormalizerType::Sparsemax);
const int entmaxType = static_cast<int>(NormalizerType::Entmax);
const int sigmoidType = static_cast<int>(NormalizerType::Sigmoid);
const int hardmaxType = static_cast<int>(NormalizerType::Hardmax);

QByteArray nameOf(int type, double alpha)
{
    const NormalizerSpec spec = specOf(type, alpha);
    QByteArray name = toString(spec.type);
    if (spec.type == NormalizerType::Entmax)
        name += '(' + QByteArray::number(alpha, 'g', 6) + ')';
    return name;
}

/// Every normalizer, with entmax at several α (including its exact special cases and both solver regimes).
std::vector<std::pair<int, double>> allNormalizers()
{
    std::vector<std::pair<int, double>> list = {
        {softmaxType, 1.5}, {sparsemaxType, 1.5}, {sigmoidType, 1.5}, {hardmaxType, 1.5}};
    for (double alpha : {1.0, 1.0001, 1.01, 1.33, 1.5, 1.7, 2.0, 2.5, 3.0, 10.0})
        list.emplace_back(entmaxType, alpha);
    return list;
}

/// Normalizers whose rows sum to 1 (all but sigmoid).
std::vector<std::pair<int, double>> distributionNormalizers()
{
    auto list = allNormalizers();
    list.erase(std::remove_if(list.begin(), list.end(), [](const auto& n) { return n.first == sigmoidType; }),
               list.end());
    return list;
}

/// Deterministic random numbers: std::mt19937_64 with our own conversions (the standard distributions are
/// not reproducible across library implementations).
class Random {
public:
    explicit Random(std::uint64_t seed) : m_engine(seed) {}
    double uniform() { return static_cast<double>(m_engine() >> 11) * 0x1.0p-53; } // [0, 1)
    double normal()
    {
        const double u1 = 1.0 - uniform(); // (0, 1]
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    Row normalRow(std::size_t m, double scale)
    {
        Row row(m);
        for (double& x : row)
            x = scale * normal();
        return row;
    }
    /// Each entry allowed with probability 1/2, and at least one allowed.
    Mask mask(std::size_t m)
    {
        Mask allowed(m);
        for (auto& a : allowed)
            a = uniform() < 0.5 ? 1 : 0;
        allowed[static_cast<std::size_t>(uniform() * static_cast<double>(m))] = 1;
        return allowed;
    }

private:
    std::mt19937_64 m_engine;
};

Row run(const NormalizerSpec& spec, const Row& scaled, double temperature = 1.0, const Mask& allowed = {})
{
    return normalize(spec, scaled, temperature, allowed);
}

NormalizerTrace trace(const NormalizerSpec& spec, const Row& scaled, double temperature = 1.0,
                      Mask allowed = {})
{
    if (allowed.empty())
        allowed.assign(scaled.size(), 1);
    return traceRow(spec, scaled.data(), allowed.data(), static_cast<Index>(scaled.size()), temperature);
}

double sum(const Row& p)
{
    double total = 0.0;
    for (double x : p)
        total += x;
    return total;
}

QString describe(const Row& row)
{
    QStringList parts;
    for (double x : row)
        parts << QString::number(x, 'g', 17);
    return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

// ---- long-double references, written independently of Normalizers.cpp ----

/// Logits of the allowed entries shifted so that their maximum is 0, in long double.
LongRow shiftedLogits(const Row& scaled, const Mask& allowed, double temperature)
{
    long double max = -std::numeric_limits<long double>::infinity();
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            max = std::max(max, static_cast<long double>(scaled[j]));
    LongRow z(scaled.size(), 0.0L);
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            z[j] = (static_cast<long double>(scaled[j]) - max) / static_cast<long double>(temperature);
    return z;
}

LongRow referenceSoftmax(const Row& scaled, const Mask& allowed, double temperature)
{
    const LongRow z = shiftedLogits(scaled, allowed, temperature);
    LongRow p(z.size(), 0.0L);
    long double total = 0.0L;
    for (std::size_t j = 0; j < z.size(); ++j)
        if (allowed[j])
            total += (p[j] = std::exp(z[j]));
    for (auto& x : p)
        x /= total;
    return p;
}

/// Sort-based sparsemax (Martins & Astudillo 2016, algorithm 1).
LongRow referenceSparsemax(const Row& scaled, const Mask& allowed, double temperature)
{
    const LongRow z = shiftedLogits(scaled, allowed, temperature);
    LongRow sorted;
    for (std::size_t j = 0; j < z.size(); ++j)
        if (allowed[j])
            sorted.push_back(z[j]);
    std::sort(sorted.begin(), sorted.end(), std::greater<long double>());
    long double cumulative = 0.0L;
    long double threshold = 0.0L;
    for (std::size_t k = 0; k < sorted.size(); ++k) {
        cumulative += sorted[k];
        if (1.0L + static_cast<long double>(k + 1) * sorted[k] > cumulative)
            threshold = (cumulative - 1.0L) / static_cast<long double>(k + 1);
    }
    LongRow p(z.size(), 0.0L);
    for (std::size_t j = 0; j < z.size(); ++j)
        if (allowed[j])
            p[j] = std::max(z[j] - threshold, 0.0L);
    return p;
}

/// The logits the implementation works on: z = (S' − max)/τ over the allowed entries, in double.
Row doubleLogits(const Row& scaled, const Mask& allowed, double temperature)
{
    double max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            max = std::max(max, scaled[j]);
    Row z(scaled.size(), 0.0);
    for (std::size_t j = 0; j < scaled.size(); ++j)
        if (allowed[j])
            z[j] = scaled[j] == max ? 0.0 : (scaled[j] - max) / temperature;
    return z;
}

/// α-entmax of the double logits, in long double. For α > 2 the weights near the threshold are arbitrarily
/// sensitive to y = (α−1)z and t (dp/dy ∝ p^{2−α}), so the reference must be exact for the same logits, and
/// t must not be rounded near y: with y sorted in descending order, the support is the top k where k is the
/// largest with Σ_{i≤k} (y_i − y_k)^q < 1, and t = y_k − δ with δ found by bisection, so that every
/// d_i = (y_i − y_k) + δ keeps its relative precision however small it is. (y = (α−1)z is exact in long
/// double when α − 1 has at most 11 significant bits, as for α = 1.5, 2.5, 3 and 10.)
LongRow referenceEntmax(const Row& scaled, const Mask& allowed, double temperature, double alpha)
{
    if (alpha == 1.0)
        return referenceSoftmax(scaled, allowed, temperature);
    const Row z = doubleLogits(scaled, allowed, temperature);
    const long double eps = static_cast<long double>(alpha) - 1.0L;
    const long double q = 1.0L / eps;
    LongRow y;
    for (std::size_t j = 0; j < z.size(); ++j)
        if (allowed[j])
            y.push_back(eps * static_cast<long double>(z[j]));
    std::sort(y.begin(), y.end(), std::greater<long double>());
    const auto massAbove = [&](std::size_t k, long double delta) { // Σ_{i<k} ((y_i − y_{k−1}) + δ)^q
        long double total = 0.0L;
        for (std::size_t i = 0; i < k; ++i)
            total += std::pow((y[i] - y[k - 1]) + delta, q);
        return total;
    };
    // The mass at t = y_k grows with k: binary search for the last k where it is < 1.
    std::size_t k = 1;
    std::size_t last = y.size();
    while (k < last) {
        const std::size_t middle = (k + last + 1) / 2;
        if (massAbove(middle, 0.0L) < 1.0L)
            k = middle;
        else
            last = middle - 1;
    }
    long double lo = 0.0L;                                                      // mass < 1
    long double hi = y[k - 1] - (k < y.size() ? std::max(y[k], -1.0L) : -1.0L); // mass ≥ 1
    for (int i = 0; i < 20000; ++i) {
        const long double mid = 0.5L * (lo + hi);
        if (mid <= lo || mid >= hi)
            break;
        (massAbove(k, mid) < 1.0L ? lo : hi) = mid;
    }
    const long double delta = hi;
    LongRow p(z.size(), 0.0L);
    long double total = 0.0L;
    for (std::size_t j = 0; j < z.size(); ++j) {
        if (!allowed[j])
            continue;
        const long double yj = eps * static_cast<long double>(z[j]);
        if (yj >= y[k - 1]) // the top k
            total += (p[j] = std::pow((yj - y[k - 1]) + delta, q));
    }
    for (auto& x : p)
        x /= total;
    return p;
}

LongRow reference(const NormalizerSpec& spec, const Row& scaled, const Mask& allowed, double temperature)
{
    switch (spec.type) {
    case NormalizerType::Softmax:
        return referenceSoftmax(scaled, allowed, temperature);
    case NormalizerType::Sparsemax:
        return referenceSparsemax(scaled, allowed, temperature);
    case NormalizerType::Entmax:
        return referenceEntmax(scaled, allowed, temperature, spec.alpha);
    default:
        break;
    }
    return {};
}

Mask allAllowed(std::size_t m)
{
    return Mask(m, 1);
}

} // namespace

class TestNormalizers : public QObject {
    Q_OBJECT
private slots:
    void publishedValues_data();
    void publishedValues();
    void hardmaxTies();
    void sigmoidValues();
    void matchesReference_data();
    void matchesReference();
    void sparsemaxAdversarialForFiltering();
    void maskedEqualsSubvector_data();
    void maskedEqualsSubvector();
    void sumsToOne_data();
    void sumsToOne();
    void sparsemaxOptimality_data();
    void sparsemaxOptimality();
    void thresholdReproducesWeights_data();
    void thresholdReproducesWeights();
    void shiftInvariance_data();
    void shiftInvariance();
    void zeroTemperatureIsHardmax_data();
    void zeroTemperatureIsHardmax();
    void infiniteTemperatureIsUniform_data();
    void infiniteTemperatureIsUniform();
    void entmaxSpecialAlphas();
    void entmaxContinuousInAlpha();
    void extremes_data();
    void extremes();
    void hugeAlpha();
    void fullyMaskedRow_data();
    void fullyMaskedRow();
    void singleAllowedEntry_data();
    void singleAllowedEntry();
    void traceValues();
    void convenienceFunction();
    void scratchReuseAndInPlace();
};

void TestNormalizers::publishedValues_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<Row>("scores");
    QTest::addColumn<Row>("expected");
    // The entmax library's README and tests.
    const Row z = {-2.0, 0.0, 0.5};
    QTest::newRow("softmax") << softmaxType << 1.5 << z << Row{0.0486, 0.3592, 0.5922};
    QTest::newRow("sparsemax") << sparsemaxType << 1.5 << z << Row{0.0, 0.25, 0.75};
    QTest::newRow("entmax 1.5") << entmaxType << 1.5 << z << Row{0.0, 0.3260, 0.6740};
    QTest::newRow("entmax 1.33 a") << entmaxType << 1.33 << Row{-1.0, 0.0, 0.5}
                                   << Row{0.0460, 0.3276, 0.6264};
    QTest::newRow("entmax 1.33 b") << entmaxType << 1.33 << Row{1.0, 2.0, 3.5} << Row{0.0026, 0.1012, 0.8963};
}

void TestNormalizers::publishedValues()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    QFETCH(Row, scores);
    QFETCH(Row, expected);
    QKV_COMPARE_NEAR(run(specOf(type, alpha), scores), expected, 5e-5);
}

void TestNormalizers::hardmaxTies()
{
    const NormalizerSpec hardmax = specOf(hardmaxType);
    QCOMPARE(run(hardmax, {1.0, 3.0, 3.0, 0.0}), (Row{0.0, 0.5, 0.5, 0.0}));
    QCOMPARE(run(hardmax, {1.0, 3.0, 3.0, 0.0}, 1.0, {1, 1, 0, 1}), (Row{0.0, 1.0, 0.0, 0.0}));
    QCOMPARE(run(hardmax, {2.0, 2.0, 2.0}), (Row{1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0}));
    // Scores within a few units in the last place of the maximum are ties (cosine gives
    // 0.9999999999999999 for 1; a matrix product rounds identical rows differently), at any temperature.
    QCOMPARE(run(hardmax, {1.0, std::nextafter(1.0, 0.0)}, 1e300), (Row{0.5, 0.5}));
    QCOMPARE(run(hardmax, {1.0, 1.0, 0.9999999999999999}), (Row{1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0}));
    double fourUlpsBelow = -3e5;
    for (int step = 0; step < 4; ++step)
        fourUlpsBelow = std::nextafter(fourUlpsBelow, -1e6);
    QCOMPARE(run(hardmax, {-3e5, fourUlpsBelow, -3e5}), (Row{1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0}));
    // ... and no further: a real difference, however small against the scores, still decides.
    QCOMPARE(run(hardmax, {1.0, 1.0 - 64 * DBL_EPSILON}), (Row{1.0, 0.0}));
    QCOMPARE(run(hardmax, {1e-300, 0.0}), (Row{1.0, 0.0}));
}

void TestNormalizers::sigmoidValues()
{
    const NormalizerSpec sigmoid = specOf(sigmoidType);
    const Row scores = {-800.0, -40.0, -3.0, -1e-9, 0.0, 0.25, 2.0, 40.0, 800.0, 1e300, -1e300};
    for (double temperature : {0.5, 1.0, 4.0}) {
        const Row p = run(sigmoid, scores, temperature);
        for (std::size_t j = 0; j < scores.size(); ++j) {
            const long double x = static_cast<long double>(scores[j]) / temperature;
            const long double expected =
                x >= 0 ? 1.0L / (1.0L + std::exp(-x)) : std::exp(x) / (1.0L + std::exp(x));
            QVERIFY2(
                std::fabs(p[j] - expected) <= 1e-15L * std::max(expected, 1e-300L) + 1e-300L,
                qPrintable(QStringLiteral("σ(%1) = %2").arg(static_cast<double>(x)).arg(p[j], 0, 'g', 17)));
        }
    }
    // Not shift-invariant, and σ(x) + σ(−x) = 1.
    const Row a = run(sigmoid, {0.3, -1.7, 5.0});
    const Row b = run(sigmoid, {-0.3, 1.7, -5.0});
    for (std::size_t j = 0; j < a.size(); ++j)
        QKV_COMPARE_NEAR(a[j] + b[j], 1.0, 1e-15);
    QCOMPARE(run(sigmoid, {0.0, 0.0}), (Row{0.5, 0.5}));
}

void TestNormalizers::matchesReference_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<int>("length");
    QTest::addColumn<double>("scale");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<bool>("masked");
    QTest::addColumn<quint64>("seed");
    std::vector<std::pair<int, double>> list = {{softmaxType, 1.5}, {sparsemaxType, 1.5}};
    for (double alpha : {1.0, 1.0001, 1.01, 1.1, 1.33, 1.5, 1.7, 1.999, 2.0, 2.001, 2.5, 3.0, 10.0})
        list.emplace_back(entmaxType, alpha);
    quint64 seed = 1000;
    for (const auto& [type, alpha] : list)
        for (int length : {2, 7, 60, 700})
            for (double scale : {0.1, 1.0, 4.0})
                for (double temperature : {0.5, 1.0, 30.0}) {
                    const bool masked = (seed % 3) == 0;
                    QTest::addRow("%s m=%d scale=%g tau=%g%s", nameOf(type, alpha).constData(), length, scale,
                                  temperature, masked ? " masked" : "")
                        << type << alpha << length << scale << temperature << masked << ++seed;
                }
}

void TestNormalizers::matchesReference()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    QFETCH(int, length);
    QFETCH(double, scale);
    QFETCH(double, temperature);
    QFETCH(bool, masked);
    QFETCH(quint64, seed);
    Random random(seed);
    const auto m = static_cast<std::size_t>(length);
    const Row scores = random.normalRow(m, scale);
    const Mask allowed = masked ? random.mask(m) : allAllowed(m);
    const NormalizerSpec spec = specOf(type, alpha);
    const Row p = run(spec, scores, temperature, allowed);
    const LongRow expected = reference(spec, scores, allowed, temperature);
    QKV_COMPARE_NEAR(p, expected, 1e-12L);
}

void TestNormalizers::sparsemaxAdversarialForFiltering()
{
    // Each new entry sits just below the threshold of the entries above it, so a filtering algorithm drops
    // one entry per pass: the implementation must fall back to sorting and still be exact.
    Row scores(10, 0.0);
    for (int k = 0; k < 150; ++k) {
        double total = 0.0;
        for (double x : scores)
            total += x;
        scores.push_back((total - 1.0) / static_cast<double>(scores.size()) - 1e-4);
    }
    std::reverse(scores.begin(), scores.end());
    const Mask allowed = allAllowed(scores.size());
    for (const NormalizerSpec& spec : {specOf(sparsemaxType), specOf(entmaxType, 2.0)}) {
        const Row p = run(spec, scores);
        QKV_COMPARE_NEAR(p, referenceSparsemax(scores, allowed, 1.0), 1e-13L);
        QCOMPARE(trace(spec, scores).support, Index(10));
    }
    for (double alpha : {1.5, 1.9, 2.2}) {
        const Row p = run(specOf(entmaxType, alpha), scores);
        QKV_COMPARE_NEAR(p, referenceEntmax(scores, allowed, 1.0, alpha), 1e-12L);
    }
}

void TestNormalizers::maskedEqualsSubvector_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : allNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::maskedEqualsSubvector()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    Random random(77);
    for (int trial = 0; trial < 40; ++trial) {
        const std::size_t m = 1 + static_cast<std::size_t>(random.uniform() * 40.0);
        const Row scores = random.normalRow(m, trial % 2 ? 3.0 : 0.7);
        Mask allowed = random.mask(m);
        if (trial % 5 == 0) { // all but one allowed
            allowed.assign(m, 1);
            allowed[m - 1] = m > 1 ? 0 : 1;
        }
        const double temperature = trial % 3 ? 1.0 : 0.3;
        const Row p = run(spec, scores, temperature, allowed);
        Row sub;
        for (std::size_t j = 0; j < m; ++j)
            if (allowed[j])
                sub.push_back(scores[j]);
        const Row expectedSub = run(spec, sub, temperature);
        std::size_t next = 0;
        for (std::size_t j = 0; j < m; ++j) {
            if (allowed[j]) {
                QVERIFY2(std::fabs(p[j] - expectedSub[next]) <= 1e-15,
                         qPrintable(QStringLiteral("trial %1 entry %2").arg(trial).arg(j)));
                ++next;
            } else {
                QVERIFY(p[j] == 0.0 && !std::signbit(p[j]));
            }
        }
    }
}

void TestNormalizers::sumsToOne_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : distributionNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::sumsToOne()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    Random random(4242);
    NormalizerScratch scratch;
    for (std::size_t m : {1u, 2u, 3u, 10u, 100u, 1000u, 4096u})
        for (double scale : {0.01, 1.0, 10.0, 1000.0})
            for (double temperature : {0.1, 1.0, 100.0}) {
                const Row scores = random.normalRow(m, scale);
                const Mask allowed = random.mask(m);
                Row p(m, -1.0);
                normalizeRow(spec, scores.data(), allowed.data(), static_cast<Index>(m), temperature,
                             p.data(), scratch);
                for (std::size_t j = 0; j < m; ++j) {
                    QVERIFY(p[j] >= 0.0 && p[j] <= 1.0);
                    if (!allowed[j])
                        QVERIFY(p[j] == 0.0);
                }
                QVERIFY2(std::fabs(sum(p) - 1.0) <= 1e-12,
                         qPrintable(QStringLiteral("m=%1 scale=%2 τ=%3: Σp − 1 = %4")
                                        .arg(m)
                                        .arg(scale)
                                        .arg(temperature)
                                        .arg(sum(p) - 1.0)));
            }
}

void TestNormalizers::sparsemaxOptimality_data()
{
    QTest::addColumn<int>("length");
    QTest::addColumn<double>("scale");
    QTest::addColumn<double>("temperature");
    for (int length : {1, 2, 5, 50, 500, 3000})
        for (double scale : {0.05, 1.0, 20.0})
            for (double temperature : {0.5, 1.0, 8.0})
                QTest::addRow("m=%d scale=%g tau=%g", length, scale, temperature)
                    << length << scale << temperature;
}

void TestNormalizers::sparsemaxOptimality()
{
    // KKT conditions of min ‖p − z‖² over the simplex: there is t with p_j = z_j − t where p_j > 0 and z_j ≤
    // t where p_j = 0; traceRow reports that t for z = S'/τ.
    QFETCH(int, length);
    QFETCH(double, scale);
    QFETCH(double, temperature);
    Random random(static_cast<std::uint64_t>(length) * 31 +
                  static_cast<std::uint64_t>(scale * 7 + temperature));
    const auto m = static_cast<std::size_t>(length);
    const Row scores = random.normalRow(m, scale);
    const NormalizerSpec spec = specOf(sparsemaxType);
    const Row p = run(spec, scores, temperature);
    const NormalizerTrace info = trace(spec, scores, temperature);
    const double tolerance = 1e-12 * std::max(1.0, std::fabs(info.threshold));
    Index support = 0;
    for (std::size_t j = 0; j < m; ++j) {
        const double z = scores[j] / temperature;
        if (p[j] > 0.0) {
            ++support;
            QVERIFY2(std::fabs(p[j] - (z - info.threshold)) <= tolerance,
                     qPrintable(QStringLiteral("p=%1 z−t=%2").arg(p[j]).arg(z - info.threshold)));
        } else {
            QVERIFY(z <= info.threshold + tolerance);
        }
    }
    QCOMPARE(info.support, support);
    QKV_COMPARE_NEAR(sum(p), 1.0, 1e-12);
}

void TestNormalizers::thresholdReproducesWeights_data()
{
    QTest::addColumn<double>("alpha");
    for (double alpha : {1.0001, 1.2, 1.33, 1.5, 1.8, 2.0, 2.5, 4.0})
        QTest::addRow("alpha=%g", alpha) << alpha;
}

void TestNormalizers::thresholdReproducesWeights()
{
    // p_j = [(α−1) z_j − t]₊^{1/(α−1)} with the reported t and z = S'/τ.
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(entmaxType, alpha);
    Random random(9);
    for (int trial = 0; trial < 20; ++trial) {
        const Row scores = random.normalRow(30, 1.5);
        const double temperature = trial % 2 ? 0.7 : 1.0;
        const Row p = run(spec, scores, temperature);
        const NormalizerTrace info = trace(spec, scores, temperature);
        Index support = 0;
        for (std::size_t j = 0; j < p.size(); ++j) {
            const long double d =
                static_cast<long double>(alpha - 1.0) * (scores[j] / temperature) - info.threshold;
            const long double expected =
                d > 0 ? std::pow(d, 1.0L / static_cast<long double>(alpha - 1.0)) : 0.0L;
            QVERIFY2(std::fabs(p[j] - expected) <= 1e-9L,
                     qPrintable(QStringLiteral("trial %1 entry %2: %3 vs %4")
                                    .arg(trial)
                                    .arg(j)
                                    .arg(p[j], 0, 'g', 17)
                                    .arg(static_cast<double>(expected), 0, 'g', 17)));
            support += p[j] > 0.0 ? 1 : 0;
        }
        QCOMPARE(info.support, support);
        QVERIFY(info.expSum == 0.0);
    }
}

void TestNormalizers::shiftInvariance_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : distributionNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::shiftInvariance()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    Random random(5);
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t m = 2 + static_cast<std::size_t>(random.uniform() * 100.0);
        const Mask allowed = random.mask(m);
        // Scores on a grid of 2^-10 and shifts for which every sum is exact: identical results.
        Row grid(m);
        for (double& x : grid)
            x = std::round(random.normal() * 2048.0) / 1024.0;
        const Row base = run(spec, grid, 1.0, allowed);
        for (double shift : {-1024.0, -0.5, 3.0, 1000.25}) {
            Row shifted = grid;
            for (double& x : shifted)
                x += shift;
            QKV_COMPARE_NEAR(run(spec, shifted, 1.0, allowed), base, 0.0L);
        }
        // Arbitrary scores and shifts: equal up to the rounding of the shifted scores.
        const Row scores = random.normalRow(m, 2.0);
        const Row expected = run(spec, scores, 0.8, allowed);
        for (double shift : {-37.3, 0.1, 6.02, 99.9}) {
            Row shifted = scores;
            for (double& x : shifted)
                x += shift;
            QKV_COMPARE_NEAR(run(spec, shifted, 0.8, allowed), expected, 1e-12L);
        }
    }
}

void TestNormalizers::zeroTemperatureIsHardmax_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : distributionNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::zeroTemperatureIsHardmax()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    const NormalizerSpec hardmax = specOf(hardmaxType);
    Random random(11);
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t m = 1 + static_cast<std::size_t>(random.uniform() * 30.0);
        Row scores = random.normalRow(m, 1.0);
        if (trial % 2 && m > 2) { // ties for the maximum
            const double top = *std::max_element(scores.begin(), scores.end());
            scores[0] = top;
            scores[m / 2] = top;
        }
        const Mask allowed = trial % 3 ? allAllowed(m) : random.mask(m);
        for (double temperature : {1e-300, 1e-200}) {
            const Row p = run(spec, scores, temperature, allowed);
            QKV_COMPARE_NEAR(p, run(hardmax, scores, temperature, allowed), 1e-15L);
        }
    }
}

void TestNormalizers::infiniteTemperatureIsUniform_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : distributionNormalizers())
        if (type != hardmaxType)
            QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::infiniteTemperatureIsUniform()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    Random random(12);
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t m = 1 + static_cast<std::size_t>(random.uniform() * 300.0);
        const Row scores = random.normalRow(m, trial % 2 ? 1.0 : 1000.0);
        const Mask allowed = trial % 3 ? allAllowed(m) : random.mask(m);
        const double share = 1.0 / static_cast<double>(std::count(allowed.begin(), allowed.end(), 1));
        for (double temperature : {1e300, 1e200}) {
            const Row p = run(spec, scores, temperature, allowed);
            for (std::size_t j = 0; j < m; ++j)
                QVERIFY2(std::fabs(p[j] - (allowed[j] ? share : 0.0)) <= 1e-12,
                         qPrintable(QStringLiteral("%1 vs %2").arg(p[j]).arg(share)));
        }
    }
}

void TestNormalizers::entmaxSpecialAlphas()
{
    Random random(13);
    for (int trial = 0; trial < 30; ++trial) {
        const std::size_t m = 1 + static_cast<std::size_t>(random.uniform() * 200.0);
        const Row scores = random.normalRow(m, 2.0);
        const Mask allowed = random.mask(m);
        const double temperature = trial % 2 ? 1.0 : 0.4;
        QCOMPARE(run(specOf(entmaxType, 1.0), scores, temperature, allowed),
                 run(specOf(softmaxType), scores, temperature, allowed));
        QCOMPARE(run(specOf(entmaxType, 2.0), scores, temperature, allowed),
                 run(specOf(sparsemaxType), scores, temperature, allowed));
        const NormalizerTrace a = trace(specOf(entmaxType, 1.0), scores, temperature, allowed);
        const NormalizerTrace b = trace(specOf(softmaxType), scores, temperature, allowed);
        QVERIFY(a.expSum == b.expSum && a.threshold == 0.0);
        const NormalizerTrace c = trace(specOf(entmaxType, 2.0), scores, temperature, allowed);
        const NormalizerTrace d = trace(specOf(sparsemaxType), scores, temperature, allowed);
        QVERIFY(c.threshold == d.threshold && c.expSum == 0.0);
        QCOMPARE(c.support, d.support);
    }
}

void TestNormalizers::entmaxContinuousInAlpha()
{
    // Near α = 1 entmax approaches softmax, near α = 2 sparsemax, and 1.5 is continuous with its neighbours:
    // the generic solver and the exact special cases agree.
    Random random(14);
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t m = 2 + static_cast<std::size_t>(random.uniform() * 100.0);
        const Row scores = random.normalRow(m, 1.5);
        const Row softmax = run(specOf(softmaxType), scores);
        const Row sparsemax = run(specOf(sparsemaxType), scores);
        const Row entmax15 = run(specOf(entmaxType, 1.5), scores);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, 1.0 + 1e-9), scores), softmax, 1e-7L);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, std::nextafter(1.0, 2.0)), scores), softmax, 1e-13L);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, 2.0 - 1e-9), scores), sparsemax, 1e-7L);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, 2.0 + 1e-9), scores), sparsemax, 1e-7L);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, 1.5 + 1e-12), scores), entmax15, 1e-10L);
        QKV_COMPARE_NEAR(run(specOf(entmaxType, 1.5 - 1e-12), scores), entmax15, 1e-10L);
    }
}

void TestNormalizers::extremes_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<double>("temperature");
    auto list = allNormalizers();
    list.emplace_back(entmaxType, 1.0 + DBL_EPSILON);
    list.emplace_back(entmaxType, 1e6);
    for (const auto& [type, alpha] : list)
        for (double temperature : {1e-300, 1e-10, 1.0, 1e10, 1e300})
            QTest::addRow("%s tau=%g", nameOf(type, alpha).constData(), temperature)
                << type << alpha << temperature;
}

void TestNormalizers::extremes()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    QFETCH(double, temperature);
    const NormalizerSpec spec = specOf(type, alpha);
    const double big = 1e300;
    const std::vector<Row> rows = {
        {big, 0.0, -big},
        {-big, 0.0, big, big, -big, 1.0},
        {0.0, -big, -big},
        {-big, -big},
        {big, big},
        {0.0, 1e-300, -1e-300, 5e-324},
        {DBL_MAX, -DBL_MAX, 0.0, DBL_MAX},
        {-DBL_MAX, -DBL_MAX, 1.0},
        {1e300, 1e300 * (1 - 1e-15), 1e299, -1e300},
        {3.0, 1e-300, 2.9999999999999996, -7.0},
    };
    for (const Row& scores : rows) {
        for (int masking = 0; masking < 2; ++masking) {
            Mask allowed = allAllowed(scores.size());
            if (masking)
                allowed[0] = 0;
            const Row p = run(spec, scores, temperature, allowed);
            for (std::size_t j = 0; j < p.size(); ++j) {
                QVERIFY2(std::isfinite(p[j]) && p[j] >= 0.0 && p[j] <= 1.0,
                         qPrintable(describe(scores) + QStringLiteral(" → ") + describe(p)));
                if (!allowed[j])
                    QVERIFY(p[j] == 0.0);
            }
            if (spec.type != NormalizerType::Sigmoid)
                QVERIFY2(std::fabs(sum(p) - 1.0) <= 1e-12,
                         qPrintable(describe(scores) + QStringLiteral(" → ") + describe(p)));
            const NormalizerTrace info = trace(spec, scores, temperature, allowed);
            QVERIFY(std::isfinite(info.threshold) && std::isfinite(info.expSum));
            QCOMPARE(info.support,
                     Index(std::count_if(p.begin(), p.end(), [](double x) { return x > 0.0; })));
        }
    }
    // Only the maximum survives when the others are 1e300 below it at τ = 1.
    if (spec.type != NormalizerType::Sigmoid && temperature == 1.0)
        QCOMPARE(run(spec, {big, 0.0, -big}, temperature), (Row{1.0, 0.0, 0.0}));
}

void TestNormalizers::hugeAlpha()
{
    // Any finite α ≥ 1 is valid; for huge α entmax tends to the arg-max with ties shared.
    Random random(15);
    for (double alpha : {50.0, 1e3, 1e8, 1e300, DBL_MAX}) {
        const NormalizerSpec spec = specOf(entmaxType, alpha);
        QKV_COMPARE_NEAR(run(spec, {1.0, 3.0, 3.0, 0.0}), (Row{0.0, 0.5, 0.5, 0.0}), 1e-12L);
        for (int trial = 0; trial < 10; ++trial) {
            const Row scores = random.normalRow(50, trial % 2 ? 1e-3 : 1.0);
            const Row p = run(spec, scores);
            for (double x : p)
                QVERIFY(std::isfinite(x) && x >= 0.0 && x <= 1.0);
            QKV_COMPARE_NEAR(sum(p), 1.0, 1e-12);
        }
    }
}

void TestNormalizers::fullyMaskedRow_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : allNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::fullyMaskedRow()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    const Row scores = {0.5, -1.0, 3.0, 1e300};
    const Mask none(scores.size(), 0);
    const Row p = run(spec, scores, 1.0, none);
    for (double x : p)
        QVERIFY(x == 0.0 && !std::signbit(x));
    const NormalizerTrace info = trace(spec, scores, 1.0, none);
    QCOMPARE(info.support, Index(0));
    QVERIFY(info.threshold == 0.0 && info.expSum == 0.0);
    // An empty row is fine too.
    QVERIFY(run(spec, {}).empty());
}

void TestNormalizers::singleAllowedEntry_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<double>("alpha");
    for (const auto& [type, alpha] : allNormalizers())
        QTest::newRow(nameOf(type, alpha).constData()) << type << alpha;
}

void TestNormalizers::singleAllowedEntry()
{
    QFETCH(int, type);
    QFETCH(double, alpha);
    const NormalizerSpec spec = specOf(type, alpha);
    for (double score : {-1e300, -3.0, 0.0, 0.7, 1e300})
        for (double temperature : {1e-300, 0.5, 1e300}) {
            QCOMPARE(run(spec, {score}, temperature).size(), std::size_t(1));
            const Row p = run(spec, {2.0, score, -5.0}, temperature, {0, 1, 0});
            double expected = 1.0;
            if (spec.type == NormalizerType::Sigmoid) {
                const double x = score / temperature;
                expected = x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
            }
            QCOMPARE(p, (Row{0.0, expected, 0.0}));
            QCOMPARE(trace(spec, {2.0, score, -5.0}, temperature, {0, 1, 0}).support,
                     Index(expected > 0 ? 1 : 0));
        }
}

void TestNormalizers::traceValues()
{
    const Row z = {-2.0, 0.0, 0.5};

    const NormalizerTrace softmax = trace(specOf(softmaxType), z);
    QKV_COMPARE_NEAR(softmax.expSum, (std::exp(-2.5) + std::exp(-0.5) + 1.0), 1e-15);
    QVERIFY(softmax.threshold == 0.0);
    QCOMPARE(softmax.support, Index(3));
    // Σ exp(z − max z): still finite when exp(z) itself would overflow.
    const NormalizerTrace hot = trace(specOf(softmaxType), {1000.0, 999.0}, 1.0);
    QKV_COMPARE_NEAR(hot.expSum, (1.0 + std::exp(-1.0)), 1e-15);
    QVERIFY(std::fabs(trace(specOf(softmaxType), z, 2.0).expSum -
                      (std::exp(-1.25) + std::exp(-0.25) + 1.0)) <= 1e-15);

    const NormalizerTrace sparsemax = trace(specOf(sparsemaxType), z);
    QKV_COMPARE_NEAR(sparsemax.threshold, (-0.25), 1e-15);
    QCOMPARE(sparsemax.support, Index(2));
    QVERIFY(sparsemax.expSum == 0.0);
    // With τ = 2, z = S'/2 = [−1, 0, 0.25] and p = [0, 0.375, 0.625].
    const NormalizerTrace warm = trace(specOf(sparsemaxType), z, 2.0);
    QKV_COMPARE_NEAR(warm.threshold, (-0.375), 1e-15);

    // 1.5-entmax: p = [z/2 − t]₊², p = [0, 0.3260, 0.6740] ⇒ t = −sqrt(0.3260...).
    const Row p15 = run(specOf(entmaxType, 1.5), z);
    const NormalizerTrace entmax15 = trace(specOf(entmaxType, 1.5), z);
    QKV_COMPARE_NEAR(entmax15.threshold, (0.0 - std::sqrt(p15[1])), 1e-14);
    QKV_COMPARE_NEAR(entmax15.threshold, (0.25 - std::sqrt(p15[2])), 1e-14);
    QCOMPARE(entmax15.support, Index(2));

    // Hardmax and sigmoid report only the support.
    const NormalizerTrace hardmax = trace(specOf(hardmaxType), {1.0, 3.0, 3.0, 0.0});
    QCOMPARE(hardmax.support, Index(2));
    QVERIFY(hardmax.threshold == 0.0 && hardmax.expSum == 0.0);
    const NormalizerTrace sigmoid = trace(specOf(sigmoidType), {1.0, -1000.0, 0.0});
    QCOMPARE(sigmoid.support, Index(2)); // σ(−1000) underflows to 0
    QVERIFY(sigmoid.threshold == 0.0 && sigmoid.expSum == 0.0);

    // A huge shift stays finite (clamped) in the reported threshold.
    const NormalizerTrace far = trace(specOf(sparsemaxType), {1e300, 0.0}, 1e-300);
    QVERIFY(std::isfinite(far.threshold) && far.threshold > 0.0);
    QCOMPARE(far.support, Index(1));
}

void TestNormalizers::convenienceFunction()
{
    const NormalizerSpec spec = specOf(entmaxType, 1.33);
    const Row scores = {0.3, -1.2, 2.0, 0.9, 0.9};
    const Mask allowed = {1, 0, 1, 1, 0};
    // An empty mask means every entry is allowed.
    QCOMPARE(run(spec, scores), run(spec, scores, 1.0, allAllowed(scores.size())));
    // A mask is the same as normalizeRow with it.
    Row direct(scores.size(), -1.0);
    NormalizerScratch scratch;
    normalizeRow(spec, scores.data(), allowed.data(), Index(5), 0.5, direct.data(), scratch);
    QCOMPARE(run(spec, scores, 0.5, allowed), direct);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, run(spec, scores, 1.0, {1, 1}));
}

void TestNormalizers::scratchReuseAndInPlace()
{
    // One scratch over rows of changing length and normalizer gives what a fresh scratch gives, and
    // normalizeRow may write over its input.
    Random random(16);
    NormalizerScratch shared;
    const auto list = allNormalizers();
    for (int trial = 0; trial < 60; ++trial) {
        const auto& [type, alpha] = list[static_cast<std::size_t>(trial) % list.size()];
        const NormalizerSpec spec = specOf(type, alpha);
        const std::size_t m = 1 + static_cast<std::size_t>(random.uniform() * (trial % 2 ? 500.0 : 20.0));
        Row scores = random.normalRow(m, 1.0 + trial % 4);
        const Mask allowed = random.mask(m);
        const Row expected = run(spec, scores, 0.9, allowed);
        Row out(m, -1.0);
        normalizeRow(spec, scores.data(), allowed.data(), static_cast<Index>(m), 0.9, out.data(), shared);
        QCOMPARE(out, expected);
        normalizeRow(spec, scores.data(), allowed.data(), static_cast<Index>(m), 0.9, scores.data(), shared);
        QCOMPARE(scores, expected);
    }
}

QKV_TEST_APPLESS_MAIN(TestNormalizers)
#include "tst_normalizers.moc"
