// SPDX-License-Identifier: GPL-3.0-or-later
#include "TestHooks.h"

#include "Document.h"
#include "Error.h"
#include "FileWriting.h"
#include "MainWindow.h"
#include "SessionFile.h"
#include "TokenModel.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <iostream>

namespace qkv::app {

std::optional<int> runTestHooks(ui::MainWindow& window)
{
    ui::Document* document = window.document();
    const QString edit = qEnvironmentVariable("QKV_TEST_EDIT");
    if (edit == QLatin1String("append-token")) {
        ui::TokenModel tokens(document, Side::Query);
        tokens.appendToken();
    } else if (!edit.isEmpty()) {
        std::cerr << "qkvlab: QKV_TEST_EDIT=" << edit.toStdString() << " is not append-token\n";
        return 2;
    }

    const QString report = qEnvironmentVariable("QKV_TEST_REPORT");
    if (report.isEmpty())
        return std::nullopt;
    const QJsonObject state{{QStringLiteral("modified"), document->isModified()},
                            {QStringLiteral("filePath"), document->filePath()},
                            {QStringLiteral("title"), document->displayName()}};
    try {
        saveSession(document->session(), QFile::encodeName(report).toStdString());
        writeFileAtomically(QFile::encodeName(report + QStringLiteral(".state.json")).toStdString(),
                            QJsonDocument(state).toJson().toStdString());
    } catch (const Error& e) {
        std::cerr << "qkvlab: " << e.what() << "\n";
        return 2;
    }
    return 0;
}

} // namespace qkv::app
