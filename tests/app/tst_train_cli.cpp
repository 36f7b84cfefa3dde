// SPDX-License-Identifier: GPL-3.0-or-later
// `qkvlab train` run as the real executable: a short run whose folder `from-model`, `predict` and `heads`
// open, a resumed run, refusals that name the option or file, and a loss that stops being finite.

#include "QkvlabProcess.h"
#include "TestMain.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

constexpr int timeoutMs = 120000;

using Run = qkv::test::QkvlabRun;

Run qkvlab(const QStringList& arguments)
{
    return qkv::test::runQkvlabWith(qkv::test::offscreenEnvironment(), arguments, {}, timeoutMs);
}

QJsonObject readObject(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

const QStringList smallRun = {QStringLiteral("train"),     QStringLiteral("--task"),
                              QStringLiteral("induction"), QStringLiteral("--task-vocab"),
                              QStringLiteral("10"),        QStringLiteral("--task-length"),
                              QStringLiteral("12"),        QStringLiteral("--task-min-period"),
                              QStringLiteral("3"),         QStringLiteral("--batch"),
                              QStringLiteral("4"),         QStringLiteral("--eval-every"),
                              QStringLiteral("5")};

} // namespace

class TestTrainCli : public QObject {
    Q_OBJECT

private slots:
    void trainedFolderOpens()
    {
        QTemporaryDir folder;
        const QString out = folder.filePath(QStringLiteral("model"));
        const Run run = qkvlab(smallRun + QStringList{QStringLiteral("--steps"), QStringLiteral("12"),
                                                      QStringLiteral("--out"), out});
        QVERIFY_RUN(run, run.exitCode == 0);
        QVERIFY(run.err.contains("step 12/12"));
        QVERIFY(run.err.contains("steps/s"));
        QVERIFY(run.err.contains("left"));
        for (const char* name :
             {"config.json", "model.safetensors", "training.json", "optimizer.safetensors"})
            QVERIFY2(QFile::exists(out + QLatin1Char('/') + QLatin1String(name)), name);
        const QJsonObject log = readObject(out + QStringLiteral("/training.json"));
        const QJsonArray steps = log.value(QStringLiteral("steps")).toArray();
        QCOMPARE(steps.size(), 12);
        QCOMPARE(steps.at(0).toObject().value(QStringLiteral("step")).toInt(), 1);
        QVERIFY(steps.at(0).toObject().value(QStringLiteral("loss")).toDouble() > 0.0);
        const QJsonObject scores = steps.at(4).toObject().value(QStringLiteral("head_scores")).toObject();
        QCOMPARE(scores.value(QStringLiteral("induction")).toArray().size(), 2);

        const QString ids = QStringLiteral("1,2,3,4,5,1,2,3,4,5");
        const Run session = qkvlab({QStringLiteral("from-model"), out, QStringLiteral("--layer"),
                                    QStringLiteral("1"), QStringLiteral("--ids"), ids});
        QVERIFY_RUN(session, session.exitCode == 0 && session.out.contains("\"heads\""));
        const Run predict = qkvlab({QStringLiteral("predict"), out, QStringLiteral("--ids"), ids});
        QVERIFY_RUN(predict, predict.exitCode == 0);
        QVERIFY(QJsonDocument::fromJson(predict.out).object().value(QStringLiteral("loss")).toDouble() > 0.0);
        const Run heads = qkvlab({QStringLiteral("heads"), out, QStringLiteral("--ids"), ids});
        QVERIFY_RUN(heads, heads.exitCode == 0);
        QCOMPARE(QJsonDocument::fromJson(heads.out).object().value(QStringLiteral("layers")).toInt(), 2);

        const QString resumed = folder.filePath(QStringLiteral("resumed"));
        const Run more = qkvlab(
            {QStringLiteral("train"), QStringLiteral("--resume"), out, QStringLiteral("--task"),
             QStringLiteral("induction"), QStringLiteral("--task-vocab"), QStringLiteral("10"),
             QStringLiteral("--task-length"), QStringLiteral("12"), QStringLiteral("--task-min-period"),
             QStringLiteral("3"), QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--batch"),
             QStringLiteral("4"), QStringLiteral("--quiet"), QStringLiteral("--out"), resumed});
        QVERIFY_RUN(more, more.exitCode == 0 && more.err.isEmpty());
        const QJsonArray all =
            readObject(resumed + QStringLiteral("/training.json")).value(QStringLiteral("steps")).toArray();
        QCOMPARE(all.size(), 15);
        QCOMPARE(all.at(14).toObject().value(QStringLiteral("step")).toInt(), 15);
    }

    void refusals_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("named");
        const QString task = QStringLiteral("--task"), induction = QStringLiteral("induction");
        QTest::newRow("zero rate") << QStringList{task, induction, QStringLiteral("--lr"),
                                                  QStringLiteral("0")}
                                   << QStringLiteral("--lr");
        QTest::newRow("negative rate")
            << QStringList{task, induction, QStringLiteral("--lr"), QStringLiteral("-1e-3")}
            << QStringLiteral("--lr");
        QTest::newRow("heads") << QStringList{task,
                                              induction,
                                              QStringLiteral("--heads"),
                                              QStringLiteral("40"),
                                              QStringLiteral("--d-model"),
                                              QStringLiteral("32")}
                               << QStringLiteral("--heads");
        QTest::newRow("heads not dividing")
            << QStringList{task, induction, QStringLiteral("--heads"), QStringLiteral("3")}
            << QStringLiteral("--heads");
        QTest::newRow("length") << QStringList{task,
                                               induction,
                                               QStringLiteral("--task-length"),
                                               QStringLiteral("40"),
                                               QStringLiteral("--max-positions"),
                                               QStringLiteral("32")}
                                << QStringLiteral("--task-length");
        QTest::newRow("task") << QStringList{task, QStringLiteral("parity")} << QStringLiteral("--task");
        QTest::newRow("no data") << QStringList{QStringLiteral("--steps"), QStringLiteral("3")}
                                 << QStringLiteral("--task");
        QTest::newRow("steps") << QStringList{task, induction, QStringLiteral("--steps"), QStringLiteral("0")}
                               << QStringLiteral("--steps");
        QTest::newRow("optimizer") << QStringList{task, induction, QStringLiteral("--optimizer"),
                                                  QStringLiteral("adam")}
                                   << QStringLiteral("--optimizer");
        QTest::newRow("tokenizer without text")
            << QStringList{task, induction, QStringLiteral("--text-tokenizer"), QStringLiteral(".")}
            << QStringLiteral("--text-tokenizer");
        QTest::newRow("tokenizer missing") << QStringList{task,
                                                          QStringLiteral("text"),
                                                          QStringLiteral("--text-file"),
                                                          QStringLiteral(QKV_SOURCE_DIR "/README.md"),
                                                          QStringLiteral("--text-tokenizer"),
                                                          QStringLiteral(QKV_SOURCE_DIR "/docs")}
                                           << QStringLiteral("--text-tokenizer");
        QTest::newRow("unknown") << QStringList{task, induction, QStringLiteral("--epochs"),
                                                QStringLiteral("3")}
                                 << QStringLiteral("--epochs");
    }

    void refusals()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, named);
        QTemporaryDir folder;
        const Run run = qkvlab(QStringList{QStringLiteral("train")} + arguments +
                               QStringList{QStringLiteral("--out"), folder.filePath(QStringLiteral("m"))});
        QVERIFY_RUN(run, run.exitCode == 2 && run.err.startsWith("qkvlab train: ") &&
                             run.err.contains(named.toUtf8()) && run.err.count('\n') == 1);
        QVERIFY(!QFile::exists(folder.filePath(QStringLiteral("m"))));
    }

    void badTextFiles()
    {
        QTemporaryDir folder;
        const QList<QPair<QString, QByteArray>> files = {
            {QStringLiteral("empty.txt"), QByteArray()},
            {QStringLiteral("binary.dat"), QByteArray("ab\0cd", 5)},
            {QStringLiteral("latin1.txt"), QByteArray("caf\xe9")}};
        for (const auto& [name, bytes] : files) {
            const QString path = folder.filePath(name);
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(bytes);
            file.close();
            const Run run = qkvlab({QStringLiteral("train"), QStringLiteral("--task"), QStringLiteral("text"),
                                    QStringLiteral("--text-file"), path, QStringLiteral("--out"),
                                    folder.filePath(QStringLiteral("m"))});
            QVERIFY_RUN(run, run.exitCode == 2 && run.err.contains(path.toUtf8()));
        }
    }

    void divergenceStopsTheRun()
    {
        QTemporaryDir folder;
        const QString out = folder.filePath(QStringLiteral("m"));
        const Run run = qkvlab(
            smallRun +
            QStringList{QStringLiteral("--optimizer"), QStringLiteral("sgd"), QStringLiteral("--lr"),
                        QStringLiteral("100"), QStringLiteral("--positions"), QStringLiteral("learned"),
                        QStringLiteral("--warmup"), QStringLiteral("0"), QStringLiteral("--steps"),
                        QStringLiteral("300"), QStringLiteral("--quiet"), QStringLiteral("--out"), out});
        QVERIFY_RUN(run,
                    run.exitCode == 1 && run.err.contains("not finite at step") && run.err.contains("--lr"));
        QVERIFY(QFile::exists(out + QStringLiteral("/model.safetensors")));
    }

    void help()
    {
        const Run run = qkvlab({QStringLiteral("train"), QStringLiteral("--help")});
        QVERIFY_RUN(run, run.exitCode == 0 && run.out.contains("--task-min-period") &&
                             run.out.contains("--resume"));
        const Run general = qkvlab({QStringLiteral("--help")});
        QVERIFY_RUN(general, general.exitCode == 0 && general.out.contains("qkvlab train"));
    }
};

QKV_TEST_GUILESS_MAIN(TestTrainCli)
#include "tst_train_cli.moc"
