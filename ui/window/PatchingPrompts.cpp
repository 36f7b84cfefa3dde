// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchingPrompts.h"

#include "Error.h"
#include "Model.h"
#include "ModelRun.h"
#include "PredictionPanel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

constexpr int topTokenCount = 10;

} // namespace

PatchingPrompts::PatchingPrompts(QWidget* parent)
    : QWidget(parent), m_cleanEdit(new QLineEdit(this)), m_corruptEdit(new QLineEdit(this)),
      m_tokenStrip(new QLabel(this)), m_stripScroll(new QScrollArea(this)), m_count(new QLabel(this)),
      m_answer(new QComboBox(this)), m_wrong(new QComboBox(this)), m_topJob(this)
{
    setObjectName(QStringLiteral("patchingPrompts"));
    m_cleanEdit->setObjectName(QStringLiteral("patchingClean"));
    m_cleanEdit->setPlaceholderText(tr("e.g. When Mary and John went to the store, John gave a drink to"));
    m_cleanEdit->setToolTip(tr("The clean prompt: the model gets the answer right on it (text, or token ids "
                               "as #4 8 15)"));
    m_cleanEdit->setWhatsThis(
        tr("<p>The <b>clean</b> prompt, on which the model does the behaviour you study "
           "(it prefers the answer to the wrong token). Patching copies its "
           "activations, one site at a time, into the run of the corrupted prompt. "
           "Type text (read with the model's tokenizer) or token ids as #4 8 15.</p>"));
    m_corruptEdit->setObjectName(QStringLiteral("patchingCorrupt"));
    m_corruptEdit->setPlaceholderText(tr("the same with a few tokens changed"));
    m_corruptEdit->setToolTip(tr("The corrupted prompt: as many tokens as the clean one, a few of them "
                                 "changed so that the model prefers the wrong token"));
    m_corruptEdit->setWhatsThis(tr("<p>The <b>corrupted</b> prompt: the clean prompt with a few tokens "
                                   "changed, token for token the same length. A site whose clean activation "
                                   "restores the answer in this run carries the information that "
                                   "changed.</p>"));
    for (QLineEdit* edit : {m_cleanEdit, m_corruptEdit}) {
        edit->setClearButtonEnabled(true);
        connect(edit, &QLineEdit::textChanged, this, &PatchingPrompts::readPrompts);
        connect(edit, &QLineEdit::returnPressed, this, &PatchingPrompts::runRequested);
    }

    m_tokenStrip->setObjectName(QStringLiteral("patchingTokens"));
    m_tokenStrip->setTextFormat(Qt::RichText);
    m_tokenStrip->setToolTip(tr("Both prompts token by token; the tokens that differ are marked"));
    m_tokenStrip->setWhatsThis(tr("<p>The two prompts as the model reads them, position by position: the "
                                  "clean prompt above, the corrupted one below, the positions where they "
                                  "differ marked in colour. A leading space shows as ␣.</p>"));
    m_stripScroll->setObjectName(QStringLiteral("patchingTokenScroll"));
    m_stripScroll->setWidget(m_tokenStrip);
    m_stripScroll->setWidgetResizable(true);
    m_stripScroll->setFrameShape(QFrame::NoFrame);
    m_stripScroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_count->setObjectName(QStringLiteral("patchingTokenCount"));
    m_count->setWordWrap(true);
    m_count->setStyleSheet(QStringLiteral("color: #a40000")); // it only ever tells a problem
    m_count->setToolTip(tr("Patching compares the prompts position by position: they need the same number "
                           "of tokens"));

    auto* layout = new QFormLayout(this);
    layout->setContentsMargins(4, 2, 4, 0);
    layout->setVerticalSpacing(2);
    layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addRow(tr("C&lean:"), m_cleanEdit);
    layout->addRow(tr("C&orrupted:"), m_corruptEdit);
    layout->addRow(m_stripScroll);
    layout->addRow(m_count);
    auto* answerLabel = new QLabel(tr("A&nswer:"), this);
    layout->addRow(answerLabel, createTokenRow());
    answerLabel->setBuddy(m_answer);
    setModel(nullptr, Precision::Float64);
}

// Answer − wrong: the metric's tokens.
QWidget* PatchingPrompts::createTokenRow()
{
    auto* row = new QWidget(this);
    m_answer->setObjectName(QStringLiteral("patchingAnswer"));
    m_wrong->setObjectName(QStringLiteral("patchingWrong"));
    for (QComboBox* combo : {m_answer, m_wrong}) {
        combo->setEditable(true);
        combo->setInsertPolicy(QComboBox::NoInsert);
        combo->setMinimumContentsLength(6);
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->lineEdit()->setPlaceholderText(tr("token or #id"));
        connect(combo, &QComboBox::currentTextChanged, this, &PatchingPrompts::inputChanged);
        connect(combo->lineEdit(), &QLineEdit::returnPressed, this, &PatchingPrompts::runRequested);
    }
    m_answer->setToolTip(tr("The answer: the token the clean prompt should predict; one of the model's most "
                            "probable next tokens after the clean prompt, or typed (mind the leading "
                            "space) or #id"));
    m_wrong->setToolTip(tr("The wrong token: the one the corrupted prompt points to; the metric is "
                           "logit(answer) − logit(wrong) at the last position"));
    const QString metricHelp =
        tr("<p>The metric m = logit(answer) − logit(wrong) at the last position: how much more the model "
           "prefers the answer. Its list holds the ten most probable next tokens after the clean prompt, "
           "with their probabilities; type another token (its text, with its leading space, or #id) if "
           "you like. It must be exactly one token.</p>");
    m_answer->setWhatsThis(metricHelp);
    m_wrong->setWhatsThis(metricHelp);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_answer, 1);
    layout->addWidget(new QLabel(tr("− wrong:"), row));
    layout->addWidget(m_wrong, 1);
    return row;
}

void PatchingPrompts::setModel(std::shared_ptr<const Model> model, Precision precision)
{
    m_model = std::move(model);
    m_precision = precision;
    m_topFor.clear();
    readPrompts();
}

void PatchingPrompts::setPrompts(const QString& clean, const QString& corrupt)
{
    m_cleanEdit->setText(clean);
    m_corruptEdit->setText(corrupt);
}

void PatchingPrompts::setTokens(const QString& answer, const QString& wrong)
{
    m_answer->setEditText(answer);
    m_wrong->setEditText(wrong);
}

QString PatchingPrompts::countMessage() const
{
    return m_count->text();
}

void PatchingPrompts::readPrompts()
{
    m_clean = m_model ? tokenizePrompt(*m_model, m_cleanEdit->text()) : PromptTokens();
    m_corrupt = m_model ? tokenizePrompt(*m_model, m_corruptEdit->text()) : PromptTokens();
    updateTokenStrip();
    requestTopTokens();
    emit inputChanged();
}

void PatchingPrompts::updateTokenStrip()
{
    const QString count = tokenCountProblem(m_clean, m_corrupt);
    m_count->setText(count);
    m_count->setVisible(!count.isEmpty());
    m_marked = differingPositions(m_clean.ids, m_corrupt.ids);
    const std::size_t longer = std::max(m_clean.ids.size(), m_corrupt.ids.size());
    for (std::size_t i = std::min(m_clean.ids.size(), m_corrupt.ids.size()); i < longer; ++i)
        m_marked << int(i); // a token the other prompt lacks differs too
    if (longer == 0) {
        m_tokenStrip->setText(m_model ? QString() : tr("Open a model (File ▸ Open Model…) to patch it."));
        return;
    }
    QString html = QStringLiteral("<table cellspacing=\"0\" cellpadding=\"2\"><tr><td></td>");
    for (std::size_t i = 0; i < longer; ++i)
        html += QStringLiteral("<td align=\"center\"><small>%1</small></td>").arg(i);
    html += QStringLiteral("</tr>");
    for (const auto& [tokens, name] :
         {std::pair{&m_clean, tr("clean")}, std::pair{&m_corrupt, tr("corrupted")}}) {
        html += QStringLiteral("<tr><td><small>%1</small></td>").arg(name);
        for (std::size_t i = 0; i < longer; ++i) {
            const QString text = tokens->labels.value(int(i)).toHtmlEscaped();
            html += m_marked.contains(int(i))
                        ? QStringLiteral("<td align=\"center\" bgcolor=\"#f6c177\"><font "
                                         "color=\"#000000\"><b>%1</b></font></td>")
                              .arg(text)
                        : QStringLiteral("<td align=\"center\">%1</td>").arg(text);
        }
        html += QStringLiteral("</tr>");
    }
    m_tokenStrip->setText(html + QStringLiteral("</table>"));
}

void PatchingPrompts::requestTopTokens()
{
    if (!m_model || m_clean.ids.empty() || m_clean.ids == m_topFor)
        return;
    m_topFor = m_clean.ids;
    // A forward pass of the whole model: on a worker thread, the newest prompt winning.
    m_topJob.run(
        true,
        [model = m_model, ids = m_clean.ids, precision = m_precision]() -> TopTokens {
            TopTokens top;
            try {
                const ModelRun run(model, ids, precision);
                for (const TokenProbability& token : run.clean().positions.back().top) {
                    if (int(top.ids.size()) == topTokenCount)
                        break;
                    top.ids.push_back(token.id);
                    top.probabilities.push_back(token.probability);
                }
                for (const std::string& label : qkv::tokenLabels(*model, top.ids))
                    top.labels << QString::fromStdString(label);
            } catch (const Error&) {
                // The run's problems (too many tokens, …) are told when patching is asked for.
            } catch (const std::bad_alloc&) {
            }
            return top;
        },
        [this](TopTokens top) { showTopTokens(top); });
}

void PatchingPrompts::showTopTokens(const TopTokens& top)
{
    for (auto [combo, fallback] : {std::pair{m_answer, 0}, std::pair{m_wrong, 1}}) {
        // A token picked from the old list stays picked when the new list has it; a typed one stays typed.
        const QString text = combo->currentText();
        const int old = combo->findText(text, Qt::MatchExactly);
        const std::optional<std::int64_t> picked =
            old >= 0 ? std::optional<std::int64_t>(combo->itemData(old).toLongLong()) : std::nullopt;
        const QSignalBlocker blocker(combo);
        combo->clear();
        for (std::size_t k = 0; k < top.ids.size(); ++k)
            combo->addItem(QStringLiteral("%1  %2%")
                               .arg(top.labels.value(int(k)))
                               .arg(100.0 * top.probabilities[k], 0, 'f', 1),
                           QVariant::fromValue<qlonglong>(top.ids[k]));
        if (!text.trimmed().isEmpty() && old < 0) {
            combo->setCurrentIndex(-1);
            combo->setEditText(text);
            continue;
        }
        int index = picked ? combo->findData(QVariant::fromValue<qlonglong>(*picked)) : -1;
        if (index < 0)
            index = std::min(fallback, combo->count() - 1);
        combo->setCurrentIndex(index);
    }
    emit inputChanged();
}

std::optional<std::int64_t> PatchingPrompts::pickedToken(const QComboBox* combo, QString* error) const
{
    const int item = combo->findText(combo->currentText(), Qt::MatchExactly);
    if (item >= 0)
        return combo->itemData(item).toLongLong();
    if (!m_model)
        return std::nullopt;
    return parseTokenPick(*m_model, combo->currentText(), error);
}

PatchingInput PatchingPrompts::input() const
{
    PatchingInput input;
    input.clean = m_clean;
    input.corrupt = m_corrupt;
    input.cleanText = m_cleanEdit->text();
    input.corruptText = m_corruptEdit->text();
    input.answer = pickedToken(m_answer, &input.answerError);
    input.wrong = pickedToken(m_wrong, &input.wrongError);
    if (input.answer)
        input.answerLabel = tokenLabel(*input.answer);
    return input;
}

QString PatchingPrompts::tokenLabel(std::int64_t id) const
{
    if (!m_model)
        return QStringLiteral("#%1").arg(id);
    return QString::fromStdString(qkv::tokenLabels(*m_model, {id}).front());
}

} // namespace qkv::ui
