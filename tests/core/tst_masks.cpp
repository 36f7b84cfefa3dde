// SPDX-License-Identifier: GPL-3.0-or-later
// Every mask type (docs/semantics.md, Masks) against a brute-force rule, with padding and cross-attention.

#include "Masks.h"

#include "TestMain.h"
#include <QtTest>

using namespace qkv;

namespace {

Session sessionOfSize(Index n, Index m)
{
    Session s;
    s.X = Matrix::Ones(n, 2);
    s.tokens.assign(static_cast<std::size_t>(n), "q");
    s.pad.assign(static_cast<std::size_t>(n), false);
    if (m != n) {
        Context c;
        c.Z = Matrix::Ones(m, 2);
        c.tokens.assign(static_cast<std::size_t>(m), "k");
        c.pad.assign(static_cast<std::size_t>(m), false);
        s.context = c;
    }
    return s;
}

// The table of docs/semantics.md, written independently of Masks.cpp.
bool bruteForce(MaskType type, Index i, Index j, Index p, Index w)
{
    switch (type) {
    case MaskType::None:
        return true;
    case MaskType::Causal:
        return !(j > i);
    case MaskType::Prefix:
        return (j < p) || !(j > i);
    case MaskType::Sliding:
        return !(j > i) && (i - j) < w;
    case MaskType::Custom:
        return ((i * 7 + j * 3) % 5) < 3;
    }
    return false;
}

} // namespace

class TestMasks : public QObject {
    Q_OBJECT
private slots:
    void patterns_data();
    void patterns();
    void padding();
    void crossAttentionPadding();
};

void TestMasks::patterns_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("prefix");
    QTest::addColumn<int>("window");
    for (int type = 0; type <= int(MaskType::Custom); ++type)
        for (auto [n, m] :
             {std::pair{1, 1}, std::pair{5, 5}, std::pair{4, 7}, std::pair{7, 3}, std::pair{40, 33}})
            for (int parameter : {0, 1, 2, 9, 100}) {
                if (type == int(MaskType::Sliding) && parameter == 0)
                    continue; // window ≥ 1
                QTest::addRow("%s %dx%d p=%d", toString(MaskType(type)), n, m, parameter)
                    << type << n << m << parameter << parameter;
            }
}

void TestMasks::patterns()
{
    QFETCH(int, type);
    QFETCH(int, n);
    QFETCH(int, m);
    QFETCH(int, prefix);
    QFETCH(int, window);
    Session s = sessionOfSize(n, m);
    s.mask.type = MaskType(type);
    s.mask.prefixLength = prefix;
    s.mask.window = window;
    if (s.mask.type == MaskType::Custom) {
        s.mask.allowed.resize(n, m);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < m; ++j)
                s.mask.allowed(i, j) = bruteForce(MaskType::Custom, i, j, 0, 0) ? 1 : 0;
    }
    MaskMatrix allowed;
    buildMask(s, allowed);
    QCOMPARE(allowed.rows(), Index(n));
    QCOMPARE(allowed.cols(), Index(m));
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < m; ++j) {
            const bool expected = bruteForce(s.mask.type, i, j, prefix, window);
            QVERIFY2(bool(allowed(i, j)) == expected, qPrintable(QStringLiteral("(%1,%2)").arg(i).arg(j)));
            QCOMPARE(patternAllows(s.mask, i, j), expected);
        }
}

void TestMasks::padding()
{
    Session s = sessionOfSize(4, 4);
    s.mask.type = MaskType::Causal;
    s.pad = {false, false, true, false};
    MaskMatrix allowed;
    buildMask(s, allowed);
    QVERIFY(allowed.row(2).isZero()); // a padding query has no row
    QVERIFY(allowed.col(2).isZero()); // a padding key is masked in every row
    QCOMPARE(int(allowed(3, 3)), 1);
    QCOMPARE(int(allowed(3, 1)), 1);
    QCOMPARE(int(allowed(1, 3)), 0);
}

void TestMasks::crossAttentionPadding()
{
    Session s = sessionOfSize(3, 5);
    s.pad = {true, false, false};                        // query padding removes row 0
    s.context->pad = {false, false, false, false, true}; // key padding removes column 4
    MaskMatrix allowed;
    buildMask(s, allowed);
    QVERIFY(allowed.row(0).isZero());
    QVERIFY(allowed.col(4).isZero());
    QCOMPARE(int(allowed.sum()), 2 * 4);
}

QKV_TEST_APPLESS_MAIN(TestMasks)
#include "tst_masks.moc"
