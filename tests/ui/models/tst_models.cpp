// SPDX-License-Identifier: GPL-3.0-or-later
// The table models: every edit is one undo step that changes the session and the result as expected, and
// undo and redo give back exactly what was there (tests/ui/editors/tst_editors.cpp tests the editors on top).

#include "AttentionResult.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "MaskModel.h"
#include "MatrixModel.h"
#include "SessionEdits.h"
#include "TokenModel.h"

#include "FuzzyCompare.h"
#include "TestMain.h"
#include <QAbstractItemModelTester>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QUndoStack>

#include <QtTest>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

using namespace qkv;
using namespace qkv::ui;

namespace {

template <typename A> QByteArray describe(const Eigen::DenseBase<A>& m)
{
    std::ostringstream out;
    out << m.rows() << " x " << m.cols() << "\n" << m.derived().template cast<double>();
    return QByteArray::fromStdString(out.str());
}

#define QCOMPARE_MATRIX(actual, expected)                                                                    \
    QVERIFY2(sameMatrix(actual, expected),                                                                   \
             QByteArray(QByteArray("\nactual:   ") + describe(actual) + "\nexpected: " + describe(expected)) \
                 .constData())

using Edit = std::function<bool(Document&)>;
/// Checks the document after the edit against the session and result before it.
using Check =
    std::function<void(const Session& before, const AttentionResult& resultBefore, const Document& after)>;

void openExample(Document& document, const QString& name)
{
    QString error;
    QVERIFY2(document.open(QStringLiteral("example:") + name, &error), qPrintable(error));
}

std::vector<std::string> strings(std::initializer_list<const char*> items)
{
    return {items.begin(), items.end()};
}

/// Every model of the document, each watched by QAbstractItemModelTester for as long as it lives.
struct WatchedModels {
    explicit WatchedModels(Document* document)
    {
        for (const MatrixRef ref :
             {MatrixRef{MatrixKind::X}, MatrixRef{MatrixKind::Z}, MatrixRef{MatrixKind::W_Q},
              MatrixRef{MatrixKind::v_a}, MatrixRef{MatrixKind::W_O}}) {
            auto model = std::make_unique<MatrixModel>(document, ref);
            model->setFollowsCurrentHead(true);
            watch(std::move(model));
        }
        watch(std::make_unique<TokenModel>(document, Side::Query));
        watch(std::make_unique<TokenModel>(document, Side::Context));
        watch(std::make_unique<MaskModel>(document));
    }
    void watch(std::unique_ptr<QAbstractItemModel> model)
    {
        testers.push_back(std::make_unique<QAbstractItemModelTester>(
            model.get(), QAbstractItemModelTester::FailureReportingMode::QtTest));
        models.push_back(std::move(model));
    }
    std::vector<std::unique_ptr<QAbstractItemModel>> models;
    std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
};

} // namespace

Q_DECLARE_METATYPE(Edit)
Q_DECLARE_METATYPE(Check)

class TestModels : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();

    void modelTester_data();
    void modelTester();

    void editRoundTrip_data();
    void editRoundTrip();

    void matrixModelShowsTheMatrix();
    void badCellInput_data();
    void badCellInput();
    void goodCellInput_data();
    void goodCellInput();
    void unchangedValuePushesNothing();
    void followsCurrentHead();

    void copyText();
    void pasteRefused_data();
    void pasteRefused();

    void removingEveryTokenRefused();
    void contextSideWithoutContext();
    void maskPaddingCellRefused();
    void maskShowsEffectivePattern();
    void maskAnnouncesOnlyWhatChanged();
    void matrixAnnouncesOnlyCellsThatChanged();

    void dimensionNamesInHeaders();
};

void TestModels::initTestCase()
{
    QCOMPARE(QGuiApplication::platformName(), QStringLiteral("offscreen"));
}

// -------------------------------------------------------------------------------------------------
// QAbstractItemModelTester on one model while a scripted run of edits, undos, redos and resets happens.

void TestModels::modelTester_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<QString>("model"); // what to build
    QTest::newRow("X") << QStringLiteral("love") << QStringLiteral("X");
    QTest::newRow("W_Q") << QStringLiteral("love") << QStringLiteral("W_Q");
    QTest::newRow("W_Q, multi-head") << QStringLiteral("multihead") << QStringLiteral("W_Q");
    QTest::newRow("W_O") << QStringLiteral("multihead") << QStringLiteral("W_O");
    QTest::newRow("Z, cross-attention") << QStringLiteral("translation") << QStringLiteral("Z");
    QTest::newRow("v_a, additive") << QStringLiteral("love") << QStringLiteral("v_a");
    QTest::newRow("tokens, query") << QStringLiteral("love") << QStringLiteral("tokens_query");
    QTest::newRow("tokens, context") << QStringLiteral("translation") << QStringLiteral("tokens_context");
    QTest::newRow("tokens, context in self-attention")
        << QStringLiteral("love") << QStringLiteral("tokens_context");
    QTest::newRow("mask") << QStringLiteral("love") << QStringLiteral("mask");
    QTest::newRow("mask, cross-attention") << QStringLiteral("translation") << QStringLiteral("mask");
}

void TestModels::modelTester()
{
    QFETCH(QString, example);
    QFETCH(QString, model);
    Document document;
    openExample(document, example);
    if (model == QLatin1String("v_a")) {
        pushEdit(&document, QStringLiteral("additive"), Document::Shape | Document::Options,
                 [&document](Session& s) {
                     s.score = ScoreFunction::Additive;
                     s.scale = defaultScale(s.score);
                     ensureScoreParameters(s, document.initializer());
                 });
    }

    std::unique_ptr<QAbstractItemModel> subject;
    if (model.startsWith(QLatin1String("tokens_")))
        subject = std::make_unique<TokenModel>(
            &document, model.endsWith(QLatin1String("query")) ? Side::Query : Side::Context);
    else if (model == QLatin1String("mask"))
        subject = std::make_unique<MaskModel>(&document);
    else {
        const std::map<QString, MatrixKind> kinds = {{QStringLiteral("X"), MatrixKind::X},
                                                     {QStringLiteral("Z"), MatrixKind::Z},
                                                     {QStringLiteral("W_Q"), MatrixKind::W_Q},
                                                     {QStringLiteral("W_O"), MatrixKind::W_O},
                                                     {QStringLiteral("v_a"), MatrixKind::v_a}};
        auto matrixModel = std::make_unique<MatrixModel>(&document, MatrixRef{kinds.at(model)});
        matrixModel->setFollowsCurrentHead(true);
        subject = std::move(matrixModel);
    }
    QAbstractItemModelTester tester(subject.get(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const bool cross = document.session().context.has_value();

    // Edits through other models of every kind, so this one sees every kind of change.
    MatrixModel x(&document, MatrixRef{MatrixKind::X});
    MatrixModel wq(&document, MatrixRef{MatrixKind::W_Q});
    TokenModel queries(&document, Side::Query);
    TokenModel keys(&document, Side::Context);
    MaskModel mask(&document);
    QVERIFY(x.setData(x.index(0, 0), QStringLiteral("7.25")));
    QVERIFY(wq.setData(wq.index(1, 1), 0.5));
    QVERIFY(wq.pasteText(wq.index(0, 0), QStringLiteral("1\t2\n3\t4\n"), nullptr));
    QVERIFY(queries.setData(queries.index(1, TokenModel::TokenColumn), QStringLiteral("renamed")));
    QVERIFY(queries.setData(queries.index(2, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(mask.toggle(mask.index(0, 1)));
    QVERIFY(queries.appendToken());
    QVERIFY(queries.insertToken(0));
    QVERIFY(queries.moveToken(0, 3));
    QVERIFY(queries.removeTokens({1, 2}));
    if (cross) {
        QVERIFY(keys.appendToken());
        QVERIFY(keys.moveToken(0, 2));
        QVERIFY(keys.removeTokens({1}));
        QVERIFY(keys.setData(keys.index(0, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    }
    pushEdit(&document, QStringLiteral("cross-attention"), Document::Shape,
             [cross](Session& s) { setCrossAttention(s, !cross); });
    pushEdit(&document, QStringLiteral("d_k"), Document::Shape,
             [&document](Session& s) { resizeDK(s, s.dK() + 2, document.initializer()); });
    pushEdit(&document, QStringLiteral("heads"), Document::Shape,
             [&document](Session& s) { setHeadCount(s, s.headCount() + 1, document.initializer()); });
    document.setCurrentHead(document.session().headCount() - 1);
    QVERIFY(wq.setData(wq.index(0, 0), -1.0));

    QUndoStack* stack = document.undoStack();
    while (stack->canUndo())
        stack->undo();
    while (stack->canRedo())
        stack->redo();
    stack->setIndex(stack->count() / 2);
    document.setCurrentHead(0);
    openExample(document, QStringLiteral("multihead"));
    openExample(document, example);
}

// -------------------------------------------------------------------------------------------------
// Each kind of edit: one undo step; session and result change as expected; undo and redo are exact.

void TestModels::editRoundTrip_data()
{
    QTest::addColumn<QString>("example");
    QTest::addColumn<Edit>("setup");
    QTest::addColumn<Edit>("edit");
    QTest::addColumn<bool>("resultChanges");
    QTest::addColumn<Check>("check");

    const auto love = QStringLiteral("love");
    const auto translation = QStringLiteral("translation");
    const Edit noSetup;

    QTest::newRow("cell W_Q[0][0] = 3") << love << noSetup << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::W_Q, 0});
        return model.setData(model.index(0, 0), QStringLiteral("3"));
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        QCOMPARE(before.heads[0].W_Q(0, 0), 1.0);
        QCOMPARE(d.session().heads[0].W_Q(0, 0), 3.0);
        QCOMPARE(r0.heads[0].Q(0, 0), 2.0);
        QCOMPARE(d.result()->heads[0].Q(0, 0), 4.0);                 // x_0 = [1 0 1 0]: 3·1 + 1·1
        QCOMPARE(d.result()->heads[0].Q(1, 0), r0.heads[0].Q(1, 0)); // x_1 has a 0 in d0
        QVERIFY(d.result()->heads[0].weights.row(0) != r0.heads[0].weights.row(0));
        QCOMPARE_MATRIX(d.result()->heads[0].weights.row(1), r0.heads[0].weights.row(1));
    });

    QTest::newRow("cell X[1][3] = 2.5 (a double)") << love << noSetup << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::X});
        return model.setData(model.index(1, 3), 2.5);
    }) << true << Check([](const Session&, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().X(1, 3), 2.5);
        // W_Q row 3 is [0 1 1]: Q(1, 1) and Q(1, 2) grow by 1.5.
        QCOMPARE(d.result()->heads[0].Q(1, 1), r0.heads[0].Q(1, 1) + 1.5);
        QCOMPARE(d.result()->heads[0].Q(1, 0), r0.heads[0].Q(1, 0));
    });

    QTest::newRow("cell v_a[1], additive score") << love << Edit([](Document& d) {
        pushEdit(&d, QStringLiteral("additive"), Document::Shape | Document::Options, [&d](Session& s) {
            s.score = ScoreFunction::Additive;
            s.scale = defaultScale(s.score);
            ensureScoreParameters(s, d.initializer());
        });
        return true;
    }) << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::v_a, 0});
        return model.rowCount() == 1 && model.setData(model.index(0, 1), QStringLiteral("-4"));
    }) << true << Check([](const Session&, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().heads[0].v_a(1), -4.0);
        QVERIFY(d.result()->heads[0].scores != r0.heads[0].scores);
        QCOMPARE_MATRIX(d.result()->heads[0].Q, r0.heads[0].Q);
    });

    QTest::newRow("cell Z[3][0], cross-attention") << translation << noSetup << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::Z});
        return model.setData(model.index(3, 0), QStringLiteral("1e-3"));
    }) << true << Check([](const Session&, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().context->Z(3, 0), 1e-3);
        QCOMPARE_MATRIX(d.result()->heads[0].Q, r0.heads[0].Q);
        QVERIFY(d.result()->heads[0].K.row(3) != r0.heads[0].K.row(3));
        QCOMPARE_MATRIX(d.result()->heads[0].K.row(2), r0.heads[0].K.row(2));
    });

    QTest::newRow("token text") << love << noSetup << Edit([](Document& d) {
        TokenModel model(&d, Side::Query);
        return model.setData(model.index(1, TokenModel::TokenColumn), QStringLiteral("adore"));
    }) << false << Check([](const Session&, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"I", "adore", "AI"}));
    });

    QTest::newRow("context token text") << translation << noSetup << Edit([](Document& d) {
        TokenModel model(&d, Side::Context);
        return model.setData(model.index(3, TokenModel::TokenColumn), QStringLiteral("sleeps"));
    }) << false << Check([](const Session&, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().context->tokens, strings({"the", "cat", "is", "sleeps"}));
        QCOMPARE(d.session().tokens, strings({"le", "chat", "dort"}));
    });

    QTest::newRow("padding flag") << love << noSetup << Edit([](Document& d) {
        TokenModel model(&d, Side::Query);
        return model.setData(model.index(2, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole);
    }) << true << Check([](const Session&, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().pad, std::vector<bool>({false, false, true}));
        const HeadResult& head = d.result()->heads[0];
        QCOMPARE(head.emptyRows, std::vector<Index>({2}));
        QVERIFY(head.weights.row(2).isZero(0));
        QVERIFY(head.weights.col(2).isZero(0));
        QKV_COMPARE_NEAR(head.weights.row(0).sum(), 1.0, 1e-12);
    });

    QTest::newRow("context padding flag") << translation << noSetup << Edit([](Document& d) {
        TokenModel model(&d, Side::Context);
        return model.setData(model.index(0, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole);
    }) << true << Check([](const Session&, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().context->pad, std::vector<bool>({true, false, false, false}));
        QVERIFY(d.result()->heads[0].weights.col(0).isZero(0));
        QVERIFY(d.result()->heads[0].emptyRows.empty());
    });

    QTest::newRow("add token") << love << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Query).appendToken();
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"I", "love", "AI", "tok3"}));
        QCOMPARE(d.session().X.rows(), Index(4));
        QCOMPARE_MATRIX(d.session().X.topRows(3), before.X);
        QCOMPARE(d.session().pad.size(), std::size_t(4));
        QCOMPARE(d.result()->heads[0].weights.rows(), Index(4));
        QCOMPARE(d.result()->heads[0].weights.cols(), Index(4));
    });

    QTest::newRow("insert token") << love << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Query).insertToken(1);
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"I", "tok3", "love", "AI"}));
        QCOMPARE_MATRIX(d.session().X.row(0), before.X.row(0));
        QCOMPARE_MATRIX(d.session().X.row(2), before.X.row(1));
        QCOMPARE_MATRIX(d.session().X.row(3), before.X.row(2));
        QCOMPARE_MATRIX(d.result()->heads[0].Q.row(2), r0.heads[0].Q.row(1));
    });

    QTest::newRow("insert context token") << translation << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Context).insertToken(2);
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().context->tokens, strings({"the", "cat", "tok4", "is", "sleeping"}));
        QCOMPARE(d.session().tokens, before.tokens);
        QCOMPARE(d.result()->heads[0].weights.rows(), Index(3));
        QCOMPARE(d.result()->heads[0].weights.cols(), Index(5));
        QCOMPARE_MATRIX(d.result()->heads[0].K.row(3), r0.heads[0].K.row(2));
    });

    QTest::newRow("remove token") << love << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Query).removeTokens({0});
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"love", "AI"}));
        QCOMPARE_MATRIX(d.session().X, Matrix(before.X.bottomRows(2)));
        QCOMPARE(d.result()->heads[0].weights.rows(), Index(2));
    });

    QTest::newRow("remove two tokens in one step") << love << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Query).removeTokens({2, 0});
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"love"}));
        QCOMPARE_MATRIX(d.session().X, Matrix(before.X.row(1)));
        QCOMPARE(d.result()->heads[0].weights(0, 0), 1.0);
    });

    QTest::newRow("move token") << love << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Query).moveToken(0, 2);
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().tokens, strings({"love", "AI", "I"}));
        QCOMPARE_MATRIX(d.session().X.row(2), before.X.row(0));
        // Self-attention without a mask is permutation-equivariant: new (i, j) = old (p(i), p(j)).
        const int p[] = {1, 2, 0};
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                QKV_COMPARE_NEAR(d.result()->heads[0].weights(i, j), r0.heads[0].weights(p[i], p[j]), 1e-12);
    });

    QTest::newRow("move context token") << translation << noSetup << Edit([](Document& d) {
        return TokenModel(&d, Side::Context).moveToken(3, 0);
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        QCOMPARE(d.session().context->tokens, strings({"sleeping", "the", "cat", "is"}));
        QCOMPARE_MATRIX(d.session().context->Z.row(0), before.context->Z.row(3));
        for (int i = 0; i < 3; ++i)
            QKV_COMPARE_NEAR(d.result()->heads[0].weights(i, 0), r0.heads[0].weights(i, 3), 1e-12);
    });

    QTest::newRow("paste tab-separated into W_K") << love << noSetup << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::W_K, 0});
        QString error;
        const bool ok = model.pasteText(model.index(1, 1), QStringLiteral("5\t6\n7\t8\n"), &error);
        return ok && error.isEmpty();
    }) << true << Check([](const Session& before, const AttentionResult& r0, const Document& d) {
        Matrix expected = before.heads[0].W_K;
        expected.block(1, 1, 2, 2) << 5, 6, 7, 8;
        QCOMPARE_MATRIX(d.session().heads[0].W_K, expected);
        QVERIFY(d.result()->heads[0].K != r0.heads[0].K);
        QCOMPARE_MATRIX(d.result()->heads[0].Q, r0.heads[0].Q);
    });

    QTest::newRow("paste comma-separated into X") << love << noSetup << Edit([](Document& d) {
        MatrixModel model(&d, MatrixRef{MatrixKind::X});
        return model.pasteText(model.index(0, 2), QStringLiteral("0.5,0.25\r\n-1,2e-3"), nullptr);
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        Matrix expected = before.X;
        expected.block(0, 2, 2, 2) << 0.5, 0.25, -1, 2e-3;
        QCOMPARE_MATRIX(d.session().X, expected);
    });

    QTest::newRow("mask toggle: none becomes custom") << love << noSetup << Edit([](Document& d) {
        MaskModel model(&d);
        return model.setData(model.index(0, 2), Qt::Unchecked, Qt::CheckStateRole);
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        QCOMPARE(before.mask.type, MaskType::None);
        QCOMPARE(d.session().mask.type, MaskType::Custom);
        MaskMatrix expected = MaskMatrix::Ones(3, 3);
        expected(0, 2) = 0;
        QCOMPARE_MATRIX(d.session().mask.allowed, expected);
        QCOMPARE(d.result()->heads[0].weights(0, 2), 0.0);
        QCOMPARE(d.result()->heads[0].allowed, expected);
    });

    QTest::newRow("mask toggle: causal keeps its pattern")
        << QStringLiteral("causal") << noSetup << Edit([](Document& d) {
               MaskModel model(&d);
               return model.toggle(model.index(0, 3));
           })
        << true << Check([](const Session&, const AttentionResult&, const Document& d) {
               QCOMPARE(d.session().mask.type, MaskType::Custom);
               MaskMatrix expected(6, 6);
               for (Index i = 0; i < 6; ++i)
                   for (Index j = 0; j < 6; ++j)
                       expected(i, j) = j <= i ? 1 : 0;
               expected(0, 3) = 1;
               QCOMPARE_MATRIX(d.session().mask.allowed, expected);
               QVERIFY(d.result()->heads[0].weights(0, 3) > 0.0);
           });

    QTest::newRow("mask toggle: custom again, cross-attention") << translation << Edit([](Document& d) {
        MaskModel model(&d);
        return model.toggle(model.index(2, 3));
    }) << Edit([](Document& d) {
        MaskModel model(&d);
        return model.toggle(model.index(1, 0));
    }) << true << Check([](const Session& before, const AttentionResult&, const Document& d) {
        QCOMPARE(before.mask.type, MaskType::Custom);
        MaskMatrix expected = MaskMatrix::Ones(3, 4);
        expected(2, 3) = 0;
        expected(1, 0) = 0;
        QCOMPARE_MATRIX(d.session().mask.allowed, expected);
    });
}

void TestModels::editRoundTrip()
{
    QFETCH(QString, example);
    QFETCH(Edit, setup);
    QFETCH(Edit, edit);
    QFETCH(bool, resultChanges);
    QFETCH(Check, check);

    Document document;
    openExample(document, example);
    if (setup)
        QVERIFY(setup(document));
    WatchedModels watched(&document); // every model stays consistent through the edit, undo and redo
    document.waitForResult();
    const Session before = document.session();
    const std::shared_ptr<const AttentionResult> resultBefore = document.result();
    QVERIFY(resultBefore);
    const int count = document.undoStack()->count();

    QVERIFY(edit(document));
    QCOMPARE(document.undoStack()->count(), count + 1);
    document.waitForResult();
    const Session after = document.session();
    const std::shared_ptr<const AttentionResult> resultAfter = document.result();
    QVERIFY2(resultAfter, qPrintable(document.resultError()));
    QVERIFY(!(after == before));
    QCOMPARE(!(*resultBefore == *resultAfter), resultChanges);
    check(before, *resultBefore, document);
    if (QTest::currentTestFailed())
        return;

    document.undoStack()->undo();
    document.waitForResult();
    QVERIFY(document.session() == before);
    QVERIFY(document.result() && *document.result() == *resultBefore);

    document.undoStack()->redo();
    document.waitForResult();
    QVERIFY(document.session() == after);
    QVERIFY(document.result() && *document.result() == *resultAfter);
    check(before, *resultBefore, document);
}

// -------------------------------------------------------------------------------------------------
// MatrixModel

void TestModels::matrixModelShowsTheMatrix()
{
    Document document;
    MatrixModel x(&document, MatrixRef{MatrixKind::X});
    QCOMPARE(x.rowCount(), 3);
    QCOMPARE(x.columnCount(), 4);
    QCOMPARE(x.headerData(1, Qt::Vertical).toString(), QStringLiteral("love"));
    // X's columns are the d_model dimensions: unnamed, they read "d0", "d1", … as W_Q's rows do.
    QCOMPARE(x.headerData(3, Qt::Horizontal).toString(), QStringLiteral("d3"));
    QCOMPARE(x.data(x.index(0, 2)).toString(), QStringLiteral("1"));
    QCOMPARE(x.data(x.index(0, 2), Qt::EditRole).toDouble(), 1.0);
    QCOMPARE(x.data(x.index(0, 2), Qt::ToolTipRole).toString(), QStringLiteral("X[0][2] = 1"));
    QVERIFY(x.flags(x.index(0, 0)) & Qt::ItemIsEditable);

    QVERIFY(x.setData(x.index(0, 0), QStringLiteral("0.1234567890123")));
    QCOMPARE(x.data(x.index(0, 0)).toString(), QStringLiteral("0.1235")); // four significant digits
    QCOMPARE(x.data(x.index(0, 0), Qt::ToolTipRole).toString(), QStringLiteral("X[0][0] = 0.1234567890123"));

    TokenModel tokens(&document, Side::Query);
    QSignalSpy headerSpy(&x, &QAbstractItemModel::headerDataChanged);
    QVERIFY(tokens.setData(tokens.index(1, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    // The token labels (vertical) changed; the dimension names (horizontal) are announced with them.
    QCOMPARE(headerSpy.count(), 2);
    QCOMPARE(headerSpy.at(0).at(0).value<Qt::Orientation>(), Qt::Vertical);
    QCOMPARE(x.headerData(1, Qt::Vertical).toString(), QStringLiteral("love (pad)"));

    MatrixModel wq(&document, MatrixRef{MatrixKind::W_Q, 0});
    QCOMPARE(wq.headerData(2, Qt::Vertical).toString(), QStringLiteral("d2"));
    QCOMPARE(wq.data(wq.index(3, 1), Qt::ToolTipRole).toString(), QStringLiteral("W_Q[3][1] of head 1 = 1"));

    MatrixModel z(&document, MatrixRef{MatrixKind::Z});
    QCOMPARE(z.rowCount(), 0);
    QCOMPARE(z.columnCount(), 0);
    openExample(document, QStringLiteral("translation"));
    QCOMPARE(z.rowCount(), 4);
    QCOMPARE(z.headerData(1, Qt::Vertical).toString(), QStringLiteral("cat"));
    QCOMPARE(x.headerData(1, Qt::Vertical).toString(), QStringLiteral("chat"));
}

void TestModels::badCellInput_data()
{
    QTest::addColumn<QVariant>("input");
    QTest::addColumn<QString>("shown");
    QTest::newRow("abc") << QVariant(QStringLiteral("abc")) << QStringLiteral("abc");
    QTest::newRow("nan") << QVariant(QStringLiteral("nan")) << QStringLiteral("nan");
    QTest::newRow("inf") << QVariant(QStringLiteral("inf")) << QStringLiteral("inf");
    QTest::newRow("-inf") << QVariant(QStringLiteral("-inf")) << QStringLiteral("-inf");
    QTest::newRow("1e999") << QVariant(QStringLiteral("1e999")) << QStringLiteral("1e999");
    QTest::newRow("empty") << QVariant(QString()) << QString();
    QTest::newRow("spaces") << QVariant(QStringLiteral("   ")) << QStringLiteral("   ");
    QTest::newRow("two numbers") << QVariant(QStringLiteral("1 2")) << QStringLiteral("1 2");
    QTest::newRow("grouping") << QVariant(QStringLiteral("1,000,000")) << QStringLiteral("1,000,000");
    QTest::newRow("double NaN") << QVariant(std::numeric_limits<double>::quiet_NaN())
                                << QStringLiteral("nan");
    QTest::newRow("double inf") << QVariant(std::numeric_limits<double>::infinity()) << QStringLiteral("inf");
    QTest::newRow("invalid variant") << QVariant() << QString();
}

void TestModels::badCellInput()
{
    QFETCH(QVariant, input);
    QFETCH(QString, shown);
    Document document;
    document.waitForResult();
    const Session before = document.session();
    const std::shared_ptr<const AttentionResult> result = document.result();
    MatrixModel model(&document, MatrixRef{MatrixKind::W_Q, 0});
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy rejected(&model, &MatrixModel::inputRejected);
    QSignalSpy changed(&document, &Document::sessionChanged);

    QVERIFY(!model.setData(model.index(0, 0), input));
    QCOMPARE(rejected.count(), 1);
    const QString message = rejected.first().first().toString();
    QVERIFY2(message.contains(QStringLiteral("W_Q[0][0]")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("“") + shown + QStringLiteral("”")), qPrintable(message));
    QCOMPARE(document.undoStack()->count(), 0);
    QCOMPARE(changed.count(), 0);
    QVERIFY(document.session() == before);
    QCOMPARE(document.result(), result);
    QCOMPARE(model.data(model.index(0, 0), Qt::EditRole).toDouble(), 1.0);
}

void TestModels::goodCellInput_data()
{
    QTest::addColumn<QVariant>("input");
    QTest::addColumn<double>("expected");
    QTest::newRow("integer text") << QVariant(QStringLiteral("3")) << 3.0;
    QTest::newRow("spaces around") << QVariant(QStringLiteral("  -2.5 ")) << -2.5;
    QTest::newRow("plus sign") << QVariant(QStringLiteral("+0.125")) << 0.125;
    QTest::newRow("exponent") << QVariant(QStringLiteral("1e-300")) << 1e-300;
    QTest::newRow("leading point") << QVariant(QStringLiteral(".5")) << 0.5;
    QTest::newRow("double") << QVariant(0.1) << 0.1;
    QTest::newRow("int") << QVariant(-7) << -7.0;
    QTest::newRow("largest") << QVariant(QStringLiteral("1.7976931348623157e308")) << 1.7976931348623157e308;
}

void TestModels::goodCellInput()
{
    QFETCH(QVariant, input);
    QFETCH(double, expected);
    Document document;
    MatrixModel model(&document, MatrixRef{MatrixKind::X});
    QSignalSpy rejected(&model, &MatrixModel::inputRejected);
    QSignalSpy dataChanged(&model, &QAbstractItemModel::dataChanged);
    QVERIFY(model.setData(model.index(2, 3), input));
    QCOMPARE(rejected.count(), 0);
    QCOMPARE(dataChanged.count(), 1);
    QCOMPARE(document.undoStack()->count(), 1);
    QCOMPARE(document.session().X(2, 3), expected);
    document.undoStack()->undo();
    QCOMPARE(document.session().X(2, 3), 0.0);
}

void TestModels::unchangedValuePushesNothing()
{
    Document document;
    MatrixModel model(&document, MatrixRef{MatrixKind::X});
    TokenModel tokens(&document, Side::Query);
    MaskModel mask(&document);
    QVERIFY(model.setData(model.index(0, 0), QStringLiteral("1.0")));
    QVERIFY(model.pasteText(model.index(0, 0), QStringLiteral("1\t0"), nullptr));
    QVERIFY(tokens.setData(tokens.index(0, TokenModel::TokenColumn), QStringLiteral("I")));
    QVERIFY(tokens.setData(tokens.index(0, TokenModel::PaddingColumn), Qt::Unchecked, Qt::CheckStateRole));
    QVERIFY(tokens.moveToken(1, 1));
    QVERIFY(mask.setData(mask.index(0, 0), Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(document.undoStack()->count(), 0);
    QCOMPARE(document.session().mask.type, MaskType::None);
}

void TestModels::followsCurrentHead()
{
    Document document;
    openExample(document, QStringLiteral("multihead"));
    MatrixModel follower(&document, MatrixRef{MatrixKind::W_K, 0});
    MatrixModel fixed(&document, MatrixRef{MatrixKind::W_K, 0});
    QAbstractItemModelTester tester(&follower, QAbstractItemModelTester::FailureReportingMode::QtTest);
    follower.setFollowsCurrentHead(true);
    QSignalSpy reset(&follower, &QAbstractItemModel::modelReset);

    document.setCurrentHead(1);
    QCOMPARE(reset.count(), 1);
    QCOMPARE(follower.matrixRef().head, 1);
    QCOMPARE(fixed.matrixRef().head, 0);
    const Session& s = document.session();
    QCOMPARE(follower.data(follower.index(2, 1), Qt::EditRole).toDouble(), s.heads[1].W_K(2, 1));
    QCOMPARE(fixed.data(fixed.index(2, 1), Qt::EditRole).toDouble(), s.heads[0].W_K(2, 1));

    // An edit goes to the head shown.
    QVERIFY(follower.setData(follower.index(0, 0), 42.0));
    QCOMPARE(document.session().heads[1].W_K(0, 0), 42.0);
    QVERIFY(document.session().heads[0].W_K(0, 0) != 42.0);

    // Fewer heads: the document's current head is clamped and the model follows.
    pushEdit(&document, QStringLiteral("one head"), Document::Shape,
             [&document](Session& session) { setHeadCount(session, 1, document.initializer()); });
    QCOMPARE(follower.matrixRef().head, 0);
    QCOMPARE(follower.rowCount(), static_cast<int>(document.session().dModel()));

    // Not following: a head that is gone shows nothing.
    MatrixModel gone(&document, MatrixRef{MatrixKind::W_K, 1});
    QCOMPARE(gone.rowCount(), 0);
    document.undoStack()->undo();
    QCOMPARE(gone.rowCount(), static_cast<int>(document.session().dModel()));
}

void TestModels::copyText()
{
    Document document;
    MatrixModel model(&document, MatrixRef{MatrixKind::W_Q, 0});
    // W_Q rows: [1 0 1], [0 1 0], [1 0 0], [0 1 1]. The block covers the selection's bounding rectangle.
    QCOMPARE(model.copyText({model.index(0, 0), model.index(1, 2)}), QStringLiteral("1\t0\t1\n0\t1\t0\n"));
    QCOMPARE(model.copyText({model.index(3, 2)}), QStringLiteral("1\n"));
    QCOMPARE(model.copyText({}), QString());

    QVERIFY(model.setData(model.index(2, 1), QStringLiteral("0.1")));
    QVERIFY(model.setData(model.index(3, 0), QStringLiteral("-1e-300")));
    const QString all = model.copyText({model.index(0, 0), model.index(3, 2)});
    QCOMPARE(all, QStringLiteral("1\t0\t1\n0\t1\t0\n1\t0.1\t0\n-1e-300\t1\t1\n"));

    // Pasting it back into another matrix gives exactly the same doubles.
    MatrixModel wk(&document, MatrixRef{MatrixKind::W_K, 0});
    QVERIFY(wk.pasteText(QModelIndex(), all, nullptr));
    QCOMPARE_MATRIX(document.session().heads[0].W_K, document.session().heads[0].W_Q);
}

void TestModels::pasteRefused_data()
{
    QTest::addColumn<int>("row");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected"); // part of the message
    // W_Q is 4 × 3.
    QTest::newRow("too wide") << 0 << 0 << QStringLiteral("1\t2\t3\t4") << QStringLiteral("1 × 4");
    QTest::newRow("too wide from column 2") << 0 << 2 << QStringLiteral("1\t2") << QStringLiteral("1 × 2");
    QTest::newRow("too tall") << 3 << 0 << QStringLiteral("1\n2") << QStringLiteral("2 × 1");
    QTest::newRow("not numeric") << 0 << 0 << QStringLiteral("1\tx") << QStringLiteral("line 1, column 2");
    QTest::newRow("ragged") << 0 << 0 << QStringLiteral("1\t2\n3") << QStringLiteral("line 2");
    QTest::newRow("nan") << 0 << 0 << QStringLiteral("nan") << QStringLiteral("line 1, column 1");
    QTest::newRow("overflow") << 0 << 0 << QStringLiteral("1e999") << QStringLiteral("line 1, column 1");
    QTest::newRow("empty") << 0 << 0 << QString() << QStringLiteral("W_Q");
}

void TestModels::pasteRefused()
{
    QFETCH(int, row);
    QFETCH(int, column);
    QFETCH(QString, text);
    QFETCH(QString, expected);
    Document document;
    const Session before = document.session();
    MatrixModel model(&document, MatrixRef{MatrixKind::W_Q, 0});
    QSignalSpy changed(&document, &Document::sessionChanged);
    QString error;
    QVERIFY(!model.pasteText(model.index(row, column), text, &error));
    QVERIFY2(error.contains(expected), qPrintable(error));
    QCOMPARE(document.undoStack()->count(), 0);
    QCOMPARE(changed.count(), 0);
    QVERIFY(document.session() == before);

    // Nowhere to paste: Z without cross-attention.
    MatrixModel z(&document, MatrixRef{MatrixKind::Z});
    QVERIFY(!z.pasteText(QModelIndex(), QStringLiteral("1"), &error));
    QCOMPARE(document.undoStack()->count(), 0);
}

// -------------------------------------------------------------------------------------------------
// TokenModel and MaskModel refusals

void TestModels::removingEveryTokenRefused()
{
    Document document;
    TokenModel model(&document, Side::Query);
    QSignalSpy rejected(&model, &TokenModel::inputRejected);

    QVERIFY(!model.removeTokens({0, 1, 2}));
    QCOMPARE(rejected.count(), 1);
    QCOMPARE(document.undoStack()->count(), 0);
    QVERIFY(!model.removeTokens({}));
    QVERIFY(!model.removeTokens({3}));
    QVERIFY(!model.moveToken(0, 3));
    QVERIFY(!model.insertToken(4));
    QCOMPARE(rejected.count(), 5);
    QCOMPARE(document.undoStack()->count(), 0);

    QVERIFY(model.removeTokens({1, 2}));
    QCOMPARE(model.rowCount(), 1);
    const Session one = document.session();
    QVERIFY(!model.removeTokens({0}));
    QCOMPARE(rejected.count(), 6);
    QVERIFY2(rejected.last().first().toString().contains(QStringLiteral("last")),
             qPrintable(rejected.last().first().toString()));
    QCOMPARE(document.undoStack()->count(), 1);
    QVERIFY(document.session() == one);
}

void TestModels::contextSideWithoutContext()
{
    Document document;
    TokenModel model(&document, Side::Context);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy rejected(&model, &TokenModel::inputRejected);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.appendToken());
    QVERIFY(!model.removeTokens({0}));
    QVERIFY(!model.moveToken(0, 1));
    QCOMPARE(rejected.count(), 3);
    QCOMPARE(document.undoStack()->count(), 0);

    pushEdit(&document, QStringLiteral("cross"), Document::Shape,
             [](Session& s) { setCrossAttention(s, true); });
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.data(model.index(2, TokenModel::TokenColumn)).toString(), QStringLiteral("AI"));
    document.undoStack()->undo();
    QCOMPARE(model.rowCount(), 0);
}

void TestModels::maskPaddingCellRefused()
{
    Document document;
    TokenModel tokens(&document, Side::Query);
    QVERIFY(tokens.setData(tokens.index(1, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    MaskModel mask(&document);
    QSignalSpy rejected(&mask, &MaskModel::inputRejected);
    const Session before = document.session();
    QVERIFY(!(mask.flags(mask.index(1, 0)) & Qt::ItemIsUserCheckable));
    QVERIFY(!(mask.flags(mask.index(0, 1)) & Qt::ItemIsUserCheckable));
    QVERIFY(mask.flags(mask.index(0, 0)) & Qt::ItemIsUserCheckable);
    QVERIFY(!mask.setData(mask.index(0, 1), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(!mask.toggle(mask.index(1, 2)));
    QCOMPARE(rejected.count(), 2);
    QCOMPARE(document.undoStack()->count(), 1);
    QVERIFY(document.session() == before);
}

void TestModels::maskShowsEffectivePattern()
{
    Document document;
    openExample(document, QStringLiteral("causal"));
    MaskModel mask(&document);
    QAbstractItemModelTester tester(&mask, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(mask.rowCount(), 6);
    QCOMPARE(mask.columnCount(), 6);
    QCOMPARE(mask.headerData(1, Qt::Vertical).toString(), QStringLiteral("cat"));
    QCOMPARE(mask.headerData(5, Qt::Horizontal).toString(), QStringLiteral("mat"));
    QCOMPARE(mask.data(mask.index(2, 1)).toString(), QStringLiteral("1"));
    QCOMPARE(mask.data(mask.index(1, 2)).toString(), QStringLiteral("0"));
    QCOMPARE(mask.data(mask.index(2, 1), Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QCOMPARE(mask.data(mask.index(1, 2), Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    const QBrush allowed = mask.data(mask.index(2, 1), Qt::BackgroundRole).value<QBrush>();
    const QBrush masked = mask.data(mask.index(1, 2), Qt::BackgroundRole).value<QBrush>();
    QVERIFY(allowed != masked);

    // The effective pattern: a padding key's column and a padding query's row are masked.
    TokenModel tokens(&document, Side::Query);
    QVERIFY(tokens.setData(tokens.index(0, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(mask.data(mask.index(3, 0)).toString(), QStringLiteral("0"));
    QCOMPARE(mask.data(mask.index(0, 0)).toString(), QStringLiteral("0"));
    QCOMPARE(mask.data(mask.index(3, 1)).toString(), QStringLiteral("1"));
    QVERIFY(mask.data(mask.index(3, 0), Qt::BackgroundRole).value<QBrush>() != allowed);
    QCOMPARE(mask.headerData(0, Qt::Vertical).toString(), QStringLiteral("The (pad)"));
    QCOMPARE(document.result()->heads[0].allowed(3, 0), std::uint8_t(0));

    // Same as the engine, cell for cell, after a token move.
    QVERIFY(tokens.moveToken(0, 4));
    document.waitForResult();
    for (int i = 0; i < mask.rowCount(); ++i)
        for (int j = 0; j < mask.columnCount(); ++j)
            QCOMPARE(mask.data(mask.index(i, j)).toString() == QLatin1String("1"),
                     document.result()->heads[0].allowed(i, j) != 0);
}

// An edit of a matrix's numbers leaves the mask as it was: nothing announced (its headers, announced as new,
// had the mask editor measure every section again on each edit). Options change its cells; tokens its
// headers too.
void TestModels::maskAnnouncesOnlyWhatChanged()
{
    Document document;
    openExample(document, QStringLiteral("causal"));
    MaskModel mask(&document);
    QSignalSpy cells(&mask, &QAbstractItemModel::dataChanged);
    QSignalSpy headers(&mask, &QAbstractItemModel::headerDataChanged);
    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 0, 0, 0.5));
    document.push(makeCellCommand(&document, {MatrixKind::X}, 1, 1, 0.5));
    QCOMPARE(cells.count(), 0);
    QCOMPARE(headers.count(), 0);

    pushEdit(&document, QStringLiteral("No mask"), Document::Options,
             [](Session& s) { s.mask.type = MaskType::None; });
    QCOMPARE(cells.count(), 1);
    QCOMPARE(headers.count(), 0);
    QCOMPARE(mask.data(mask.index(1, 2)).toString(), QStringLiteral("1")); // causal no more

    TokenModel tokens(&document, Side::Query);
    QVERIFY(tokens.setData(tokens.index(0, TokenModel::PaddingColumn), Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(cells.count(), 2);
    QCOMPARE(headers.count(), 2);
    QCOMPARE(mask.headerData(0, Qt::Vertical).toString(), QStringLiteral("The (pad)"));
    document.undoStack()->undo(); // undo and redo announce as their edit did
    QCOMPARE(mask.headerData(0, Qt::Vertical).toString(), QStringLiteral("The"));
    document.undoStack()->undo();
    QCOMPARE(mask.data(mask.index(1, 2)).toString(), QStringLiteral("0"));
}

void TestModels::matrixAnnouncesOnlyCellsThatChanged()
{
    // Views repaint and editors measure columns for what a model announces: an edit of another matrix is
    // nothing here, an edit of this one the rectangle of cells it changed.
    Document document;
    openExample(document, QStringLiteral("causal"));
    MatrixModel x(&document, MatrixRef{MatrixKind::X});
    MatrixModel query(&document, MatrixRef{MatrixKind::W_Q, 0});
    QSignalSpy xCells(&x, &QAbstractItemModel::dataChanged);
    QSignalSpy queryCells(&query, &QAbstractItemModel::dataChanged);
    const auto rectangle = [](const QSignalSpy& spy, int at) {
        const auto topLeft = spy.at(at).at(0).value<QModelIndex>();
        const auto bottomRight = spy.at(at).at(1).value<QModelIndex>();
        return QRect(QPoint(topLeft.column(), topLeft.row()),
                     QPoint(bottomRight.column(), bottomRight.row()));
    };

    document.push(makeCellCommand(&document, {MatrixKind::W_Q, 0}, 1, 2, 0.5));
    QCOMPARE(xCells.count(), 0);
    QCOMPARE(queryCells.count(), 1);
    QCOMPARE(rectangle(queryCells, 0), QRect(QPoint(2, 1), QPoint(2, 1)));

    document.push(makeCellCommand(&document, {MatrixKind::X}, 0, 3, 0.0));
    QVERIFY(x.pasteText(x.index(1, 0), QStringLiteral("9\t8\n7\t6"))); // rows 1-2, columns 0-1
    QCOMPARE(queryCells.count(), 1);
    QCOMPARE(xCells.count(), 2);
    QCOMPARE(rectangle(xCells, 0), QRect(QPoint(3, 0), QPoint(3, 0)));
    QCOMPARE(rectangle(xCells, 1), QRect(QPoint(0, 1), QPoint(1, 2)));
    QCOMPARE(x.data(x.index(2, 1)).toDouble(), 6.0);

    document.push(makeCellCommand(&document, {MatrixKind::X}, 0, 3, -0.0)); // == 0, yet another value
    QCOMPARE(xCells.count(), 3);
    QCOMPARE(rectangle(xCells, 2), QRect(QPoint(3, 0), QPoint(3, 0)));
    QVERIFY(std::signbit(x.data(x.index(0, 3), Qt::EditRole).toDouble()));

    document.undoStack()->undo(); // undo announces what it changes back
    document.undoStack()->undo();
    QCOMPARE(xCells.count(), 5);
    QCOMPARE(rectangle(xCells, 4), QRect(QPoint(0, 1), QPoint(1, 2)));
    QVERIFY(!std::signbit(x.data(x.index(0, 3), Qt::EditRole).toDouble()));
    QCOMPARE(queryCells.count(), 1);

    TokenModel tokens(&document, Side::Query); // a token's name is in every tooltip: all cells
    QVERIFY(tokens.setData(tokens.index(0, TokenModel::TokenColumn), QStringLiteral("A")));
    QCOMPARE(xCells.count(), 6);
    QCOMPARE(rectangle(xCells, 5), QRect(QPoint(0, 0), QPoint(x.columnCount() - 1, x.rowCount() - 1)));
}

void TestModels::dimensionNamesInHeaders()
{
    // "The cat sat" names its d_model dimensions: X's columns and W_Q's, W_K's and W_V's rows show them.
    Document document;
    openExample(document, QStringLiteral("the-cat-sat"));
    const QStringList names{QStringLiteral("determiner"), QStringLiteral("noun"), QStringLiteral("verb"),
                            QStringLiteral("animacy")};
    MatrixModel x(&document, MatrixRef{MatrixKind::X});
    QAbstractItemModelTester tester(&x, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (int j = 0; j < 4; ++j)
        QCOMPARE(x.headerData(j, Qt::Horizontal).toString(), names.at(j));
    for (const MatrixKind kind : {MatrixKind::W_Q, MatrixKind::W_K, MatrixKind::W_V}) {
        MatrixModel w(&document, MatrixRef{kind, 0});
        for (int i = 0; i < 4; ++i)
            QCOMPARE(w.headerData(i, Qt::Vertical).toString(), names.at(i));
        QVERIFY(!w.setHeaderData(0, Qt::Horizontal, QStringLiteral("x"))); // only X and Z name dimensions
    }
    // Resizing d_model keeps the names; a new column has its default label.
    const InitializerSpec init = document.initializer();
    pushEdit(&document, QStringLiteral("d_model 5"), Document::Shape,
             [init](Session& s) { resizeDModel(s, 5, init); });
    QCOMPARE(x.columnCount(), 5);
    QCOMPARE(x.headerData(1, Qt::Horizontal).toString(), QStringLiteral("noun"));
    QCOMPARE(x.headerData(4, Qt::Horizontal).toString(), QStringLiteral("d4"));
    MatrixModel wq(&document, MatrixRef{MatrixKind::W_Q, 0});
    QCOMPARE(wq.headerData(3, Qt::Vertical).toString(), QStringLiteral("animacy"));
    QCOMPARE(wq.headerData(4, Qt::Vertical).toString(), QStringLiteral("d4"));
}

QKV_TEST_MAIN(TestModels)
#include "tst_models.moc"
