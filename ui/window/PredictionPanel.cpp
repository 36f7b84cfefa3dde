// SPDX-License-Identifier: GPL-3.0-or-later
#include "PredictionPanel.h"

#include "Document.h"
#include "Error.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "OnScreenRefresh.h"
#include "ProgressControls.h"

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>
#include <string>

namespace qkv::ui {

std::optional<std::int64_t> parseTokenPick(const Model& model, const QString& text, QString* error)
{
    if (text.trimmed().isEmpty())
        return std::nullopt;
    const std::int64_t vocabulary = std::int64_t(model.config().vocabSize);
    if (text.trimmed().startsWith(QLatin1Char('#'))) {
        bool ok = false;
        const qlonglong id = text.trimmed().mid(1).toLongLong(&ok);
        if (!ok || id < 0 || id >= vocabulary) {
            *error = PredictionPanel::tr("%1 is not a token id of this model (0 to %2)")
                         .arg(text.trimmed())
                         .arg(vocabulary - 1);
            return std::nullopt;
        }
        return std::int64_t(id);
    }
    if (!model.tokenizer()) {
        *error = PredictionPanel::tr("this model has no tokenizer: give the token as #id");
        return std::nullopt;
    }
    try {
        const std::vector<std::int64_t> ids = model.tokenizer()->encode(text.toStdString());
        if (ids.size() != 1) {
            *error =
                PredictionPanel::tr("“%1” is %2 tokens; give one token (or #id)").arg(text).arg(ids.size());
            return std::nullopt;
        }
        return ids.front();
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

PredictionPanel::PredictionPanel(ModelRunner* runner, ModelLoading* loading, Document* document,
                                 QWidget* parent)
    : QWidget(parent), m_runner(runner), m_loading(loading), m_document(document),
      m_position(new QSpinBox(this)), m_tokenA(new QLineEdit(this)), m_tokenB(new QLineEdit(this)),
      m_status(new QLabel(this)), m_progress(new QProgressBar(this)), m_stop(new QToolButton(this)),
      m_view(new PredictionView(this)), m_figure(*ModelFigures::find(QStringLiteral("prediction"))),
      m_job(this)
{
    setObjectName(QStringLiteral("predictionPanel"));
    m_position->setObjectName(QStringLiteral("predictionPosition"));
    m_position->setRange(0, 0);
    m_position->setToolTip(tr("The position whose next token is shown; follows the selected query row"));
    m_position->setWhatsThis(tr("The query position i: the bars show the model's distribution for the token "
                                "after token i. Selecting a query row in any view, or clicking the loss "
                                "strip, moves it."));
    for (auto [edit, name] :
         {std::pair{m_tokenA, "predictionTokenA"}, std::pair{m_tokenB, "predictionTokenB"}}) {
        edit->setObjectName(QLatin1String(name));
        edit->setClearButtonEnabled(true);
        edit->setPlaceholderText(tr("token or #id"));
        edit->setMaximumWidth(140);
        edit->setToolTip(tr("A token for the logit difference A − B: its text (one token of the model's "
                            "tokenizer; mind the leading space, as in “ Mary”) or #id"));
        edit->setWhatsThis(tr("<p>The logit difference logit(A) − logit(B) at the position shown, for the "
                              "unmodified model and with the interventions: how much more the model "
                              "prefers A to B (for example “ Mary” − “ John” in indirect-object "
                              "identification). Type the token's text, with its leading space, or "
                              "#id.</p>"));
    }
    QAction* stop = setUpProgressControls(QStringLiteral("prediction"), m_status, m_progress, m_stop,
                                          tr("Stop the model's forward pass"));

    auto* row = new QHBoxLayout;
    row->setContentsMargins(4, 2, 4, 0);
    auto* positionLabel = new QLabel(tr("&Position:"), this);
    positionLabel->setBuddy(m_position);
    row->addWidget(positionLabel);
    row->addWidget(m_position);
    row->addSpacing(12);
    auto* logitLabel = new QLabel(tr("&Logit difference:"), this);
    logitLabel->setBuddy(m_tokenA);
    row->addWidget(logitLabel);
    row->addWidget(m_tokenA);
    row->addWidget(new QLabel(QStringLiteral("−"), this));
    row->addWidget(m_tokenB);
    row->addSpacing(12);
    row->addWidget(m_progress);
    row->addWidget(m_stop);
    row->addWidget(m_status, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(row);
    layout->addWidget(m_view, 1);
    m_view->setToolTip(QString());
    m_view->setWhatsThis(tr(
        "<h3>Prediction</h3><p>What the whole model predicts after the position chosen: on the left the "
        "unmodified model's most probable next tokens, on the right the model with the interventions of the "
        "Model workspace (the open head with every edit, ablated or scaled heads), each bar labelled with "
        "its probability and Δ log p, the change of its log-probability against the unmodified model. Under "
        "them, the loss −ln p(next token) at every position of the text for both runs (darker is lower; "
        "click a cell to show that position), and the mean loss of each. A logit difference between two "
        "tokens is shown for both runs when a pair is typed above. Every edit of the open head (W_Q, τ, "
        "the normalizer, the mask…) updates this view in the background; the newest edit wins.</p>"));

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(stop, &QAction::triggered, m_runner, &ModelRunner::stopBuilding);
    connect(m_runner, &ModelRunner::runChanged, this, &PredictionPanel::onRunChanged);
    connect(m_runner, &ModelRunner::buildProgress, this, [this](int done, int total) {
        m_progress->setRange(0, total);
        m_progress->setValue(done);
    });
    connect(m_runner, &ModelRunner::predictionChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_position, &QSpinBox::valueChanged, m_refresh, &OnScreenRefresh::request);
    for (QLineEdit* edit : {m_tokenA, m_tokenB})
        connect(edit, &QLineEdit::editingFinished, this, &PredictionPanel::parsePicks);
    connect(m_position, &QSpinBox::valueChanged, this, &PredictionPanel::pickChanged);
    connect(m_document, &Document::selectionChanged, this, [this](Index query) {
        if (query <= m_position->maximum())
            m_position->setValue(int(query));
    });
    connect(m_view, &PredictionView::positionClicked, this, &PredictionPanel::setPosition);
    onRunChanged();
}

int PredictionPanel::position() const
{
    return m_position->value();
}

void PredictionPanel::setPosition(int position)
{
    m_position->setValue(position);
}

void PredictionPanel::setTokenPair(const QString& a, const QString& b)
{
    m_tokenA->setText(a);
    m_tokenB->setText(b);
    parsePicks();
}

void PredictionPanel::parsePicks()
{
    m_pickA.reset();
    m_pickB.reset();
    m_tokenError.clear();
    if (const std::shared_ptr<const ModelRun> run = m_runner->run()) {
        QString errorA, errorB;
        m_pickA = parseTokenPick(run->model(), m_tokenA->text(), &errorA);
        m_pickB = parseTokenPick(run->model(), m_tokenB->text(), &errorB);
        if (!errorA.isEmpty() || !errorB.isEmpty())
            m_tokenError = tr("Logit difference: %1").arg(!errorA.isEmpty() ? errorA : errorB);
    }
    updateStatus();
    emit pickChanged();
    m_refresh->request();
}

void PredictionPanel::onRunChanged()
{
    const bool building = m_runner->isBuilding();
    m_progress->setVisible(building);
    m_stop->setVisible(building);
    if (building) {
        m_progress->setRange(0, 0);
        PredictionDisplay waiting;
        waiting.message = tr("Running the model to its prediction…");
        m_view->setDisplay(waiting);
    }
    if (const std::shared_ptr<const ModelRun> run = m_runner->run()) {
        m_position->setMaximum(int(run->tokens()) - 1);
        const Index selected = m_document->selectedQuery();
        m_position->setValue(selected < run->tokens() ? int(selected) : int(run->tokens()) - 1);
    }
    parsePicks();
}

void PredictionPanel::updateStatus()
{
    QString status;
    if (m_runner->linkMismatch())
        status = tr("The session's interventions are for another model or text: none applied.");
    if (!m_tokenError.isEmpty())
        status = (status.isEmpty() ? QString() : status + QLatin1Char(' ')) + m_tokenError;
    m_status->setText(status);
}

void PredictionPanel::refresh()
{
    const std::shared_ptr<const ModelRun> run = m_runner->run();
    if (!run) {
        if (m_runner->isBuilding())
            return;
        PredictionDisplay empty;
        empty.message = m_runner->runError().isEmpty()
                            ? tr("Open a model (File ▸ Open Model…) to see what it predicts.")
                            : tr("Cannot run the model: %1").arg(m_runner->runError());
        m_view->setDisplay(empty);
        return;
    }
    ModelFigureInput in = ModelFigureInput::forRun(
        run,
        QString::fromStdString(modelInputTitle(run->model(), m_loading->request().text, run->ids().size())));
    in.modified = m_runner->prediction();
    in.modifiedError = m_runner->predictionError();
    in.position = std::clamp(m_position->value(), 0, int(run->tokens()) - 1);
    in.tokenA = m_pickA;
    in.tokenB = m_pickB;
    QStringList applied;
    for (const Intervention& intervention : m_runner->appliedInterventions())
        if (intervention.enabled)
            applied << QString::fromStdString(describe(intervention));
    in.interventions = applied.join(QStringLiteral(", "));
    if (!in.modified && in.modifiedError.isEmpty())
        return; // the first prediction is on its way
    // A row of logits and the token labels: on a worker thread.
    m_job.run(
        true,
        [compute = m_figure.compute, in, cleanRow = m_cleanRow]() mutable -> Shown {
            try {
                if (cleanRow.run.lock() != in.run || cleanRow.position != in.position) {
                    cleanRow = {in.run, in.position,
                                std::make_shared<const RowVector>(in.run->clean().logitsAt(in.position))};
                }
                in.cleanLogits = cleanRow.logits;
                return {compute(in), cleanRow};
            } catch (const Error& e) {
                PredictionDisplay failed;
                failed.message = tr("Cannot show the prediction: %1").arg(QString::fromStdString(e.what()));
                return {failed, cleanRow};
            }
        },
        [this](Shown shown) {
            ++m_displays;
            m_cleanRow = shown.cleanRow;
            m_figure.show(m_view, shown.content);
        });
}

} // namespace qkv::ui
