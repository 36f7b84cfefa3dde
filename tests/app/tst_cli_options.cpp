// SPDX-License-Identifier: GPL-3.0-or-later
// What every command of qkvlab shares because one parser reads one list of options per command: `--help`
// lists every option, and an unknown option, a missing value, a value given to a flag, an option given twice
// and a bad number are each refused with exit status 2 and one line naming the option.

#include "QkvlabProcess.h"
#include "TestMain.h"

#include <QDir>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

namespace {

constexpr int timeoutMs = 30000;

using Run = qkv::test::QkvlabRun;

/// Runs qkvlab as on a machine without a display (export's help picks the offscreen platform itself).
Run qkvlab(const QStringList& arguments)
{
    return qkv::test::runQkvlabWith(qkv::test::headlessEnvironment(), arguments, {}, timeoutMs);
}

struct DeclaredOption {
    QString command; ///< "window" for the window's own options
    QString option;  ///< "--view"
    QString value;   ///< "NAME", or empty for a flag
};

/// Every option the program declares, from its hidden `--list-options`.
QList<DeclaredOption> declaredOptions()
{
    const Run run = qkvlab({QStringLiteral("--list-options")});
    QList<DeclaredOption> options;
    if (!run.finished || run.exitCode != 0)
        return options;
    for (const QString& line : QString::fromUtf8(run.out).split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QStringList fields = line.split(QLatin1Char(' '));
        options.append({fields.value(0), fields.value(1), fields.value(2)});
    }
    return options;
}

QStringList commands()
{
    QStringList names;
    for (const DeclaredOption& option : declaredOptions())
        if (!names.contains(option.command))
            names.append(option.command);
    return names;
}

/// The arguments that start `command` ("window": none).
QStringList commandArguments(const QString& command)
{
    return command == QLatin1String("window") ? QStringList() : QStringList{command};
}

/// The line prefix of `command`'s messages.
QByteArray messagePrefix(const QString& command)
{
    return command == QLatin1String("window") ? QByteArray("qkvlab: ") : "qkvlab " + command.toUtf8() + ": ";
}

/// The lines of `err` from qkvlab itself (the platform may add notices of its own).
QList<QByteArray> messages(const QByteArray& err, const QString& command)
{
    QList<QByteArray> lines;
    for (const QByteArray& line : err.split('\n'))
        if (line.startsWith(messagePrefix(command)))
            lines.append(line);
    return lines;
}

} // namespace

class TestCliOptions : public QObject {
    Q_OBJECT

private slots:
    void everyCommandDeclaresOptions()
    {
        const QStringList names = commands();
        for (const char* command :
             {"window", "compute", "export", "tokenize", "from-model", "predict", "heads", "train"})
            QVERIFY2(names.contains(QLatin1String(command)), command);
    }

    void helpListsEveryOption_data()
    {
        QTest::addColumn<QString>("command");
        for (const QString& command : commands())
            QTest::newRow(qPrintable(command)) << command;
    }

    void helpListsEveryOption()
    {
        QFETCH(QString, command);
        for (const char* help : {"--help", "-h"}) {
            const Run run = qkvlab(commandArguments(command) << QLatin1String(help));
            QVERIFY_RUN(run, run.exitCode == 0 && messages(run.err, command).isEmpty());
            const QString out = QString::fromUtf8(run.out);
            for (const DeclaredOption& option : declaredOptions()) {
                if (option.command != command)
                    continue;
                // The option as a whole word: --text is not found in --text-file.
                const QRegularExpression named(QRegularExpression::escape(option.option) +
                                               QStringLiteral("(?![a-z-])"));
                QVERIFY2(out.contains(named), qPrintable(command + QLatin1Char(' ') + option.option));
            }
        }
    }

    void unknownOptionIsRefused_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("argument");
        for (const QString& command : commands()) {
            QTest::newRow(qPrintable(command + QStringLiteral(" long")))
                << command << QStringLiteral("--colour");
            QTest::newRow(qPrintable(command + QStringLiteral(" short"))) << command << QStringLiteral("-x");
        }
    }

    void unknownOptionIsRefused()
    {
        QFETCH(QString, command);
        QFETCH(QString, argument);
        const Run run = qkvlab(commandArguments(command) << argument << QStringLiteral("--another-unknown"));
        QVERIFY_RUN(run, run.exitCode == 2 && run.out.isEmpty());
        const QList<QByteArray> lines = messages(run.err, command);
        QVERIFY_RUN(run, lines.size() == 1);
        // The first unknown option is named, as it was typed.
        QVERIFY_RUN(run,
                    lines.front().startsWith(messagePrefix(command) + "unknown option " + argument.toUtf8()));
        if (command != QLatin1String("window")) // the window's usage errors print the usage too
            QVERIFY_RUN(run, run.err.count('\n') == 1);
    }

    void missingValueIsRefused_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("option");
        for (const DeclaredOption& option : declaredOptions())
            if (!option.value.isEmpty())
                QTest::newRow(qPrintable(option.command + QLatin1Char(' ') + option.option))
                    << option.command << option.option;
    }

    void missingValueIsRefused()
    {
        QFETCH(QString, command);
        QFETCH(QString, option);
        const Run run = qkvlab(commandArguments(command) << option);
        QVERIFY_RUN(run, run.exitCode == 2 && run.out.isEmpty() && run.err.count('\n') == 1);
        QVERIFY_RUN(run, run.err.startsWith(messagePrefix(command) + option.toUtf8() + " needs a value"));
    }

    void flagWithValueIsRefused()
    {
        const Run run = qkvlab({QStringLiteral("train"), QStringLiteral("--quiet=yes")});
        QVERIFY_RUN(run, run.exitCode == 2 && run.err == "qkvlab train: --quiet takes no value (see qkvlab "
                                                         "train --help)\n");
    }

    void optionGivenTwiceIsRefused_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("message");
        QTest::newRow("from-model --layer")
            << QStringList{QStringLiteral("from-model"), QStringLiteral("m"), QStringLiteral("--layer"),
                           QStringLiteral("1"), QStringLiteral("--layer=2")}
            << QByteArray("qkvlab from-model: --layer is given twice");
        QTest::newRow("export --view")
            << QStringList{QStringLiteral("export"), QStringLiteral("example:love"), QStringLiteral("--view"),
                           QStringLiteral("Q"),      QStringLiteral("--view"),       QStringLiteral("K")}
            << QByteArray("qkvlab export: --view is given twice");
        QTest::newRow("tokenize --text")
            << QStringList{QStringLiteral("tokenize"), QStringLiteral("m"),      QStringLiteral("--text"),
                           QStringLiteral("a"),        QStringLiteral("--text"), QStringLiteral("b")}
            << QByteArray("qkvlab tokenize: --text is given twice");
    }

    void optionGivenTwiceIsRefused()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, message);
        const Run run = qkvlab(arguments);
        QVERIFY_RUN(run, run.exitCode == 2 && run.err.startsWith(message) && run.err.count('\n') == 1);
    }

    void badNumberNamesTheOptionAndValue_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("message");
        const QString love = QStringLiteral("example:love");
        QTest::newRow("compute --max-memory")
            << QStringList{QStringLiteral("compute"), QStringLiteral("--max-memory"), QStringLiteral("lots"),
                           love}
            << QByteArray("qkvlab compute: bad --max-memory 'lots'");
        const QStringList exportWeights{QStringLiteral("export"), love,
                                        QStringLiteral("--view"), QStringLiteral("weights"),
                                        QStringLiteral("--out"),  QStringLiteral("%OUT")};
        QTest::newRow("export --width")
            << (exportWeights + QStringList{QStringLiteral("--width"), QStringLiteral("wide")})
            << QByteArray("qkvlab export: bad --width 'wide'");
        QTest::newRow("export --scale") << (exportWeights + QStringList{QStringLiteral("--scale=9")})
                                        << QByteArray("qkvlab export: bad --scale '9'");
        QTest::newRow("export --head")
            << (exportWeights + QStringList{QStringLiteral("--head"), QStringLiteral("-1")})
            << QByteArray("qkvlab export: bad --head '-1'");
        QTest::newRow("predict --top")
            << QStringList{QStringLiteral("predict"), QStringLiteral("%OUT"),  QStringLiteral("--ids"),
                           QStringLiteral("1"),       QStringLiteral("--top"), QStringLiteral("many")}
            << QByteArray("qkvlab predict: bad --top 'many'");
        const QStringList train{QStringLiteral("train"), QStringLiteral("--task"),
                                QStringLiteral("induction"), QStringLiteral("--out"), QStringLiteral("%OUT")};
        QTest::newRow("train --steps")
            << (train + QStringList{QStringLiteral("--steps"), QStringLiteral("1.5")})
            << QByteArray("qkvlab train: bad --steps '1.5'");
        QTest::newRow("train --layers")
            << (train + QStringList{QStringLiteral("--layers"), QStringLiteral("65")})
            << QByteArray("qkvlab train: bad --layers '65': expected a whole "
                          "number from 1 to 64");
        QTest::newRow("train --entmax-alpha")
            << (train + QStringList{QStringLiteral("--entmax-alpha"), QStringLiteral("nan")})
            << QByteArray("qkvlab train: bad --entmax-alpha 'nan'");
        QTest::newRow("train --lr") << (train + QStringList{QStringLiteral("--lr"), QStringLiteral("fast")})
                                    << QByteArray("qkvlab train: bad --lr 'fast': expected a number");
        QTest::newRow("train --optimizer")
            << (train + QStringList{QStringLiteral("--optimizer"), QStringLiteral("adam")})
            << QByteArray("qkvlab train: bad --optimizer 'adam': expected adamw or sgd");
    }

    void badNumberNamesTheOptionAndValue()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, message);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString out = dir.filePath(QStringLiteral("out.png"));
        for (QString& argument : arguments)
            argument.replace(QStringLiteral("%OUT"), out);
        const Run run = qkvlab(arguments);
        QVERIFY_RUN(run, run.exitCode == 2 && run.out.isEmpty());
        QVERIFY_RUN(run, run.err.startsWith(message) && run.err.count('\n') == 1);
        QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList());
    }

    void valueMayFollowEquals()
    {
        // --name=VALUE and --name VALUE are the same option; a value may start with a dash.
        const Run run = qkvlab(
            {QStringLiteral("compute"), QStringLiteral("--max-memory=-5"), QStringLiteral("example:love")});
        QVERIFY_RUN(run, run.exitCode == 2 && run.err.startsWith("qkvlab compute: bad --max-memory '-5'"));
        const Run ok = qkvlab({QStringLiteral("compute"), QStringLiteral("example:love"),
                               QStringLiteral("--max-memory"), QStringLiteral("1G")});
        QVERIFY_RUN(ok, ok.exitCode == 0 && ok.out.startsWith("{"));
    }
};

QKV_TEST_GUILESS_MAIN(TestCliOptions)
#include "tst_cli_options.moc"
