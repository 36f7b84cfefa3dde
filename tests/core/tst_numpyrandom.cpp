// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of NumPy's legacy random stream (core/session/NumpyRandom.h).
//
// The expected values were computed once with Debian's python3-numpy 1.24 (/usr/bin/python3), as hexadecimal
// floats so they are exact, e.g.
//     import numpy as np
//     np.random.seed(42); print([float(x).hex() for x in np.random.random_sample(5)])
//     np.random.seed(42); print([float(x).hex() for x in np.random.randn(7)])
// The comparisons are exact: the stream must be NumPy's bit for bit.

#include "Error.h"
#include "NumpyRandom.h"

#include "TestMain.h"
#include <QtTest>

#include <cstdint>
#include <vector>

using qkv::Matrix;
using qkv::NumpyRandom;

using Values = std::vector<double>;

Q_DECLARE_METATYPE(std::uint64_t)

namespace {

QString hexText(double value)
{
    return QString::asprintf("%a", value);
}

/// Exact comparison of a drawn sequence; a failure names the first differing draw with both values.
void compareExactly(const Values& actual, const Values& expected)
{
    QCOMPARE(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
        if (actual[i] != expected[i]) {
            QFAIL(qPrintable(QStringLiteral("draw %1: %2, expected %3")
                                 .arg(i)
                                 .arg(hexText(actual[i]), hexText(expected[i]))));
        }
    }
}

} // namespace

class TestNumpyRandom : public QObject {
    Q_OBJECT

private slots:
    void randomSample_data();
    void randomSample();
    void randn_data();
    void randn();
    void oddCountThenMoreNormals_data();
    void oddCountThenMoreNormals();
    void uniformBetweenNormalsKeepsCachedValue();
    void reseedForgetsCachedValue();
    void randnMatrixIsCOrder();
    void seedsOutOfRangeRefused_data();
    void seedsOutOfRangeRefused();
};

void TestNumpyRandom::randomSample_data()
{
    QTest::addColumn<std::uint64_t>("seed");
    QTest::addColumn<Values>("expected");
    // np.random.seed(s); np.random.random_sample(5)
    QTest::newRow("seed 0") << std::uint64_t{0}
                            << Values{0x1.18fe1565f12a8p-1, 0x1.6e2d4cf608733p-1, 0x1.349d66b6e894bp-1,
                                      0x1.16faedb6395f5p-1, 0x1.b1d2904fd0ef6p-2};
    QTest::newRow("seed 42") << std::uint64_t{42}
                             << Values{0x1.7f8771e5f51ecp-2, 0x1.e6c4068bbd654p-1, 0x1.76c7e8f1e6751p-1,
                                       0x1.32835d6632cb0p-1, 0x1.3f86b37222184p-3};
    QTest::newRow("seed 123") << std::uint64_t{123}
                              << Values{0x1.64979beda10f5p-1, 0x1.2501b5b6d822ap-2, 0x1.d0977eb0ddd44p-3,
                                        0x1.1a45edee068f0p-1, 0x1.705e3c9f6e7e1p-1};
    QTest::newRow("seed 2^32-1") << std::uint64_t{4294967295u}
                                 << Values{0x1.8fe69a3924820p-4, 0x1.d323d824032b1p-1, 0x1.93fc6f61af3f9p-1,
                                           0x1.8f5ca1b151c07p-1, 0x1.25ec7244bbf80p-6};
}

void TestNumpyRandom::randomSample()
{
    QFETCH(std::uint64_t, seed);
    QFETCH(Values, expected);
    NumpyRandom random(seed);
    Values actual;
    for (std::size_t i = 0; i < expected.size(); ++i)
        actual.push_back(random.randomSample());
    compareExactly(actual, expected);
}

void TestNumpyRandom::randn_data()
{
    QTest::addColumn<std::uint64_t>("seed");
    QTest::addColumn<Values>("expected");
    // np.random.seed(s); np.random.randn(7)
    QTest::newRow("seed 0") << std::uint64_t{0}
                            << Values{0x1.c398ef3e5cfa5p+0, 0x1.99c2cfacc8953p-2, 0x1.f51d25222c9abp-1,
                                      0x1.1ed5969e3314ep+1, 0x1.de1847cb13ddap+0, -0x1.f45dc42a58c82p-1,
                                      0x1.e671fd33295e9p-1};
    // 0.4967141530112327, -0.13826430117118466, 0.6476885381006925, 1.5230298564080254, ...
    QTest::newRow("seed 42") << std::uint64_t{42}
                             << Values{0x1.fca2a28a9307cp-2, -0x1.1b2a505de052ap-3, 0x1.4b9dd50245e68p-1,
                                       0x1.85e548e01aa2bp+0, -0x1.df8bcdf57a640p-3, -0x1.df8332670db3bp-3,
                                       0x1.94474a8407408p+0};
    QTest::newRow("seed 123") << std::uint64_t{123}
                              << Values{-0x1.15ebe320b670ep+0, 0x1.fea40ff7c8334p-1,  0x1.21c51d8a6b038p-2,
                                        -0x1.819c87c66a773p+0, -0x1.283e4acf530efp-1, 0x1.a6c48b7e40730p+0,
                                        -0x1.369d6cea20acfp+1};
    QTest::newRow("seed 2^32-1") << std::uint64_t{4294967295u}
                                 << Values{0x1.4bfc38c486d8ap-1, 0x1.56b192e507eeep-1, -0x1.149e836f192fdp+0,
                                           0x1.23543dec5a0fcp-2, 0x1.d27bf27c6aaafp-4, 0x1.bc38efd644bd1p-1,
                                           -0x1.68a93f10b89eep-5};
}

void TestNumpyRandom::randn()
{
    QFETCH(std::uint64_t, seed);
    QFETCH(Values, expected);
    NumpyRandom random(seed);
    Values actual;
    for (std::size_t i = 0; i < expected.size(); ++i)
        actual.push_back(random.standardNormal());
    compareExactly(actual, expected);
}

void TestNumpyRandom::oddCountThenMoreNormals_data()
{
    randn_data();
}

void TestNumpyRandom::oddCountThenMoreNormals()
{
    // randn(3) leaves the second value of its last pair cached; randn(4) must start with it, so the seven
    // values are those of one randn(7) (NumPy: np.concatenate([randn(3), randn(4)]) == randn(7) after the
    // same seed).
    QFETCH(std::uint64_t, seed);
    QFETCH(Values, expected);
    NumpyRandom random(seed);
    const Matrix first = random.randn(1, 3);
    const Matrix second = random.randn(1, 4);
    Values actual(first.data(), first.data() + first.size());
    actual.insert(actual.end(), second.data(), second.data() + second.size());
    compareExactly(actual, expected);
}

void TestNumpyRandom::uniformBetweenNormalsKeepsCachedValue()
{
    // np.random.seed(42); randn(3); random_sample(); randn(2): the uniform draws fresh words, the first
    // normal after it is still the cached one.
    NumpyRandom random(42);
    Values actual;
    for (int i = 0; i < 3; ++i)
        actual.push_back(random.standardNormal());
    actual.push_back(random.randomSample());
    actual.push_back(random.standardNormal());
    actual.push_back(random.standardNormal());
    compareExactly(actual, Values{0x1.fca2a28a9307cp-2, -0x1.1b2a505de052ap-3, 0x1.4b9dd50245e68p-1,
                                  0x1.3f86b37222184p-3, 0x1.85e548e01aa2bp+0, 0x1.1dbd0020eec47p-2});
}

void TestNumpyRandom::reseedForgetsCachedValue()
{
    // np.random.seed(7); randn(1); np.random.seed(42); randn(): the first value of seed 42, not seed 7's
    // cached one.
    NumpyRandom random(7);
    random.standardNormal();
    random.seed(42);
    compareExactly(Values{random.standardNormal(), random.standardNormal()},
                   Values{0x1.fca2a28a9307cp-2, -0x1.1b2a505de052ap-3});
}

void TestNumpyRandom::randnMatrixIsCOrder()
{
    // np.random.seed(42); np.random.randn(2, 3).tolist()
    NumpyRandom random(42);
    const Matrix drawn = random.randn(2, 3);
    QCOMPARE(drawn.rows(), qkv::Index{2});
    QCOMPARE(drawn.cols(), qkv::Index{3});
    compareExactly(Values{drawn(0, 0), drawn(0, 1), drawn(0, 2), drawn(1, 0), drawn(1, 1), drawn(1, 2)},
                   Values{0.4967141530112327, -0.13826430117118466, 0.6476885381006925, 1.5230298564080254,
                          -0.23415337472333597, -0.23413695694918055});
}

void TestNumpyRandom::seedsOutOfRangeRefused_data()
{
    QTest::addColumn<std::uint64_t>("seed");
    QTest::newRow("2^32") << std::uint64_t{4294967296u};
    QTest::newRow("2^64-1") << std::uint64_t{UINT64_MAX};
}

void TestNumpyRandom::seedsOutOfRangeRefused()
{
    QFETCH(std::uint64_t, seed);
    QVERIFY_THROWS_EXCEPTION(qkv::Error, NumpyRandom{seed});
    try {
        NumpyRandom refused(seed);
        QFAIL("no exception");
    } catch (const qkv::Error& error) {
        QVERIFY2(QString::fromStdString(error.what()).contains(QStringLiteral("4294967295")), error.what());
    }
    // A refused re-seed changes nothing: the stream goes on where it was.
    NumpyRandom random(42);
    random.standardNormal();
    QVERIFY_THROWS_EXCEPTION(qkv::Error, random.seed(seed));
    QCOMPARE(random.standardNormal(), -0x1.1b2a505de052ap-3);
}

QKV_TEST_APPLESS_MAIN(TestNumpyRandom)
#include "tst_numpyrandom.moc"
