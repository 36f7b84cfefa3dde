#include "MainWindow.h"

#include "AttentionEngine.h"
#include "Error.h"
#include "Examples.h"
#include "SessionFile.h"

#include <QFontDatabase>
#include <QMessageBox>
#include <QPlainTextEdit>

namespace qkv::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), m_text(new QPlainTextEdit(this))
{
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setCentralWidget(m_text);
    resize(900, 600);
}

bool MainWindow::openSession(const QString& source)
{
    try {
        const QString name = source.isEmpty() ? QStringLiteral("example:love") : source;
        const std::string prefix = examplePrefix;
        const std::string text = name.toStdString();
        const Session session =
            text.rfind(prefix, 0) == 0 ? loadExample(text.substr(prefix.size())) : loadSession(text);
        const AttentionResult result = computeAttention(session);
        QString report = QString::fromStdString(session.title) + QStringLiteral("\n\nweights (head 0):\n");
        const Matrix& w = result.heads.front().weights;
        for (Index i = 0; i < w.rows(); ++i) {
            for (Index j = 0; j < w.cols(); ++j)
                report += QString::number(w(i, j), 'f', 3) + QLatin1Char(' ');
            report += QLatin1Char('\n');
        }
        m_text->setPlainText(report);
        setWindowTitle(QString::fromStdString(session.title) + QStringLiteral(" — QKV Lab"));
        return true;
    } catch (const Error& e) {
        QMessageBox::warning(this, tr("Cannot open session"), QString::fromStdString(e.what()));
        return false;
    }
}

} // namespace qkv::ui
