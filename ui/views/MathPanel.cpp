// SPDX-License-Identifier: GPL-3.0-or-later
#include "MathPanel.h"

#include "Document.h"
#include "Explain.h"
#include "ExplanationText.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"

#include <QAbstractTextDocumentLayout>
#include <QClipboard>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>

namespace qkv::ui {

namespace {

constexpr int figureMargin = 16;
constexpr int naturalFigureWidth = 760;
constexpr double figureTextPoints = 9.5;
constexpr double figureTitlePoints = 11.5;

QFont monospaceFont(double points)
{
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setStyleHint(QFont::TypeWriter);
    font.setPointSizeF(points);
    return font;
}

QFont titleFont()
{
    QFont font = QGuiApplication::font();
    font.setPointSizeF(figureTitlePoints);
    font.setBold(true);
    return font;
}

/// The explanation laid out `width` wide (in the coordinates the painter will use), long lines wrapped under
/// a hanging indent so each step still starts at the left edge.
std::unique_ptr<QTextDocument> layOutText(const QString& text, QPaintDevice* device, double width)
{
    auto document = std::make_unique<QTextDocument>();
    if (device)
        document->documentLayout()->setPaintDevice(device);
    document->setDocumentMargin(0);
    const QFont font = monospaceFont(figureTextPoints);
    document->setDefaultFont(font);
    QTextOption option = document->defaultTextOption();
    option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    document->setDefaultTextOption(option);
    document->setPlainText(text);

    const double indent = QFontMetricsF(font, device).horizontalAdvance(QStringLiteral("    "));
    QTextBlockFormat hanging;
    hanging.setLeftMargin(indent);
    hanging.setTextIndent(-indent);
    QTextCursor cursor(document.get());
    cursor.select(QTextCursor::Document);
    cursor.mergeBlockFormat(hanging);
    document->setTextWidth(width);
    return document;
}

} // namespace

MathPanel::MathPanel(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_refresh(new OnScreenRefresh(this, [this] { refresh(); })),
      m_header(new QLabel(this)), m_text(new QPlainTextEdit(this)),
      m_copyPlain(new QPushButton(tr("Copy text"), this)),
      m_copyLatex(new QPushButton(tr("Copy LaTeX"), this))
{
    setObjectName(QStringLiteral("mathPanel"));
    m_header->setObjectName(QStringLiteral("mathHeader"));
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_header->setWordWrap(true);
    QFont bold = m_header->font();
    bold.setBold(true);
    m_header->setFont(bold);

    m_text->setObjectName(QStringLiteral("mathText"));
    m_text->setReadOnly(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap); // the steps line up; long ones scroll
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setToolTip(tr("The arithmetic behind the selected cell, with the engine's numbers"));

    m_copyPlain->setObjectName(QStringLiteral("copyPlainText"));
    m_copyPlain->setToolTip(tr("Copy the steps as plain text"));
    m_copyLatex->setObjectName(QStringLiteral("copyLatex"));
    m_copyLatex->setToolTip(tr("Copy the steps as a LaTeX align* environment (needs amsmath)"));

    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_copyPlain);
    buttons->addWidget(m_copyLatex);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_header);
    layout->addWidget(m_text, 1);
    layout->addLayout(buttons);

    connect(m_copyPlain, &QPushButton::clicked, this, &MathPanel::copyPlainText);
    connect(m_copyLatex, &QPushButton::clicked, this, &MathPanel::copyLatex);
    // Every edit publishes a new result (or the engine's refusal), so the result is the one signal to follow
    // for the session; the selection and the head are view state and change without a new result.
    // Only while on screen: hidden, it catches up when shown (OnScreenRefresh).
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    refresh();
}

void MathPanel::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    const Session& session = m_document->session();
    m_cellLatex.clear();
    int comparedHead = -1;
    if (!current) {
        m_headerText = tr("No result");
        m_cellPlain = current.error;
    } else {
        const AttentionResult* result = current.result.get();
        const int head = current.index, headCount = current.count;
        const Index i = m_document->selectedQuery(), j = m_document->selectedKey();
        try {
            const CellExplanation explanation = explainCell(session, *result, head, i, j);
            m_cellPlain = QString::fromStdString(toPlainText(explanation));
            m_cellLatex = QString::fromStdString(toLatex(explanation));
            m_headerText = tr("Query ‘%1’ (i = %2) → key ‘%3’ (j = %4)")
                               .arg(QString::fromStdString(explanation.queryToken))
                               .arg(i)
                               .arg(QString::fromStdString(explanation.keyToken))
                               .arg(j);
            if (headCount > 1)
                m_headerText += tr(" · head %1 of %2").arg(head + 1).arg(headCount);
            if (result->precision == Precision::Float32) {
                m_headerText += tr(" · float32");
                if (!m_document->isComputing())
                    comparedHead = head;
            }
        } catch (const std::exception& error) {
            // A result of an older session (the newer one is still computing): its own resultChanged follows.
            m_headerText = tr("Cell (%1, %2)").arg(i).arg(j);
            m_cellPlain =
                m_document->isComputing()
                    ? tr("Computing the newest edit: the arithmetic follows when its result is ready.")
                    : tr("Cannot explain this cell: %1").arg(QString::fromUtf8(error.what()));
        }
    }
    m_header->setText(m_headerText);
    compareRow(comparedHead);
}

void MathPanel::compareRow(int head)
{
    m_precisionPlain.clear();
    m_precisionLatex.clear();
    const auto keep = [this](std::optional<PrecisionComparison> comparison) {
        m_precisionPlain = comparison ? QString::fromStdString(toPlainText(*comparison)) : QString();
        m_precisionLatex = comparison ? QString::fromStdString(toLatex(*comparison)) : QString();
        showText();
    };
    if (head < 0) {
        // Still run, so that a comparison of an earlier state running in the background is never shown.
        m_comparison.run(
            false, [] { return std::optional<PrecisionComparison>(); }, keep);
        return;
    }
    // The float64 row needs K = Z W_K again: a worker thread does it for large sessions, on copies it owns.
    const Session& session = m_document->session();
    const bool heavy = precisionComparisonWork(session) >= Document::synchronousWorkLimit;
    const std::shared_ptr<const Session> snapshot =
        heavy ? std::make_shared<const Session>(session) : nullptr;
    const Session* compared = heavy ? snapshot.get() : &session;
    if (heavy) {
        m_precisionPlain =
            tr("Precision: computing row %1 again in float64…").arg(m_document->selectedQuery());
        showText();
    }
    m_comparison.run(
        heavy,
        [snapshot, compared, result = m_document->result(), head, i = m_document->selectedQuery(),
         j = m_document->selectedKey()]() -> std::optional<PrecisionComparison> {
            try {
                return comparePrecision(*compared, *result, head, i, j);
            } catch (const std::exception&) {
                return std::nullopt; // shapes of an older result: the next refresh follows
            }
        },
        keep);
}

void MathPanel::showText()
{
    m_plain = m_cellPlain;
    m_latex = m_cellLatex;
    if (!m_precisionPlain.isEmpty())
        m_plain += QStringLiteral("\n") + m_precisionPlain;
    if (!m_latex.isEmpty() && !m_precisionLatex.isEmpty())
        m_latex += m_precisionLatex;
    m_text->setPlainText(m_plain);
    m_copyLatex->setEnabled(!m_latex.isEmpty());
}

void MathPanel::copyPlainText() const
{
    QGuiApplication::clipboard()->setText(m_plain);
}

void MathPanel::copyLatex() const
{
    QGuiApplication::clipboard()->setText(m_latex);
}

QSize MathPanel::defaultFigureSize() const
{
    finishComparison();
    const double width = naturalFigureWidth - 2 * figureMargin;
    const auto text = layOutText(m_plain, nullptr, width);
    const QRectF title =
        QFontMetricsF(titleFont()).boundingRect(QRectF(0, 0, width, 1e6), Qt::TextWordWrap, m_headerText);
    const double height = 2 * figureMargin + title.height() + figureMargin / 2.0 + text->size().height();
    return {naturalFigureWidth, std::max(240, static_cast<int>(std::ceil(height)))};
}

QString MathPanel::figureTitle() const
{
    m_refresh->flush();
    return m_headerText;
}

void MathPanel::renderFigure(QPaintDevice* device, const QSize& size) const
{
    m_refresh->flush();
    finishComparison();
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;
    painter.setPen(Qt::black);

    const double width = std::max(1, size.width() - 2 * figureMargin);
    painter.setFont(titleFont());
    const QRectF titleBox(figureMargin, figureMargin, width, size.height() - 2.0 * figureMargin);
    const QRectF title = painter.boundingRect(titleBox, Qt::TextWordWrap, m_headerText);
    painter.drawText(titleBox, Qt::TextWordWrap, m_headerText);

    // Shrinks the text (re-wrapping it wider) until it fits under the title: nothing is cut off.
    const double top = title.bottom() + figureMargin / 2.0;
    const double available = std::max(1.0, size.height() - figureMargin - top);
    double scale = 1.0;
    std::unique_ptr<QTextDocument> text = layOutText(m_plain, device, width);
    for (int pass = 0; pass < 6 && text->size().height() * scale > available; ++pass) {
        scale *= std::max(0.5, std::sqrt(available / (text->size().height() * scale)));
        text = layOutText(m_plain, device, width / scale);
    }
    if (text->size().height() * scale > available)
        scale = available / text->size().height();
    painter.translate(figureMargin, top);
    painter.scale(scale, scale);
    QAbstractTextDocumentLayout::PaintContext context;
    context.palette.setColor(QPalette::Text, Qt::black);
    text->documentLayout()->draw(&painter, context);
    painter.end();
}

} // namespace qkv::ui
