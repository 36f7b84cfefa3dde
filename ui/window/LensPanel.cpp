// SPDX-License-Identifier: GPL-3.0-or-later
#include "LensPanel.h"

#include "Error.h"
#include "LensView.h"
#include "ModelLoading.h"
#include "ModelRunner.h"
#include "OnScreenRefresh.h"
#include "PredictionPanel.h"
#include "ProgressControls.h"

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace qkv::ui {

LensPanel::LensPanel(ModelRunner* runner, ModelLoading* loading, QWidget* parent)
    : QWidget(parent), m_runner(runner), m_loading(loading), m_answer(new QLineEdit(this)),
      m_status(new QLabel(this)), m_progress(new QProgressBar(this)), m_stop(new QToolButton(this)),
      m_view(new LensView(this)), m_figure(*ModelFigures::find(QStringLiteral("lens"))), m_job(this)
{
    setObjectName(QStringLiteral("lensPanel"));
    m_answer->setObjectName(QStringLiteral("lensAnswer"));
    m_answer->setClearButtonEnabled(true);
    m_answer->setPlaceholderText(tr("token or #id"));
    m_answer->setMaximumWidth(160);
    m_answer->setToolTip(
        tr("Colour each cell by this token's probability instead of the top token's: its text "
           "(one token of the model's tokenizer; mind the leading space, as in “ Paris”) or #id"));
    QAction* stop = setUpProgressControls(QStringLiteral("lens"), m_status, m_progress, m_stop,
                                          tr("Stop computing the logit lens"));

    auto* row = new QHBoxLayout;
    row->setContentsMargins(4, 2, 4, 0);
    auto* answerLabel = new QLabel(tr("&Answer:"), this);
    answerLabel->setBuddy(m_answer);
    row->addWidget(answerLabel);
    row->addWidget(m_answer);
    row->addSpacing(12);
    row->addWidget(m_progress);
    row->addWidget(m_stop);
    row->addWidget(m_status, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(row);
    layout->addWidget(m_view, 1);
    m_view->setWhatsThis(tr(
        "<h3>Logit Lens</h3><p>What the model would predict if it stopped early: the residual stream "
        "entering "
        "each layer (bottom row: the embeddings; top row: the output after the last layer), at every "
        "position of "
        "the Prediction panel's text, read through the final norm (with its own statistics there) and the "
        "unembedding. Each cell names the most probable next token and is coloured by its probability, or by "
        "the answer's probability when an answer token is typed above. Hover a cell for its five most "
        "probable "
        "tokens and the answer's rank. Long texts scroll sideways.</p>"));

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(stop, &QAction::triggered, this, &LensPanel::stop);
    connect(m_answer, &QLineEdit::editingFinished, this, &LensPanel::parseAnswer);
    connect(m_runner, &ModelRunner::runChanged, this, &LensPanel::parseAnswer);
    parseAnswer();
}

LensPanel::~LensPanel()
{
    if (m_cancel)
        m_cancel->store(true); // the job in flight ends at its next layer
}

void LensPanel::setAnswer(const QString& text)
{
    m_answer->setText(text);
    parseAnswer();
}

void LensPanel::parseAnswer()
{
    m_answerId.reset();
    m_answerError.clear();
    if (const std::shared_ptr<const ModelRun> run = m_runner->run()) {
        QString error;
        m_answerId = parseTokenPick(run->model(), m_answer->text(), &error);
        if (!error.isEmpty())
            m_answerError = tr("Answer: %1").arg(error);
    }
    m_status->setText(m_answerError);
    m_refresh->request();
}

void LensPanel::stop()
{
    if (m_cancel)
        m_cancel->store(true);
}

void LensPanel::showMessage(const QString& message)
{
    if (m_cancel)
        m_cancel->store(true);
    m_requested.reset();
    LensDisplay display;
    display.message = message;
    m_view->setDisplay(display);
    ++m_displays;
}

void LensPanel::setBusy(bool busy)
{
    m_progress->setVisible(busy);
    m_stop->setVisible(busy);
    if (busy)
        m_progress->setRange(0, 0);
}

void LensPanel::refresh()
{
    const std::shared_ptr<const ModelRun> run = m_runner->run();
    if (!run) {
        showMessage(m_runner->isBuilding() ? tr("Running the model…")
                    : m_runner->runError().isEmpty()
                        ? tr("Open a model (File ▸ Open Model…) to see its logit lens.")
                        : tr("Cannot run the model: %1").arg(m_runner->runError()));
        return;
    }
    const Request request{run.get(), m_answerId};
    if (m_requested == request)
        return; // shown already, or on its way
    if (m_cancel)
        m_cancel->store(true); // the newest request wins: the older one stops at its next layer
    m_requested = request;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    ModelFigureInput input = ModelFigureInput::forRun(
        run,
        QString::fromStdString(modelInputTitle(run->model(), m_loading->request().text, run->ids().size())));
    input.answer = m_answerId;
    const QPointer<LensPanel> panel(this);
    input.progress = [cancel = m_cancel, panel](Index done, Index total) {
        if (cancel->load())
            return false;
        QMetaObject::invokeMethod(
            panel.data(),
            [panel, cancel, done, total] {
                if (panel && !cancel->load()) {
                    panel->m_progress->setRange(0, int(total));
                    panel->m_progress->setValue(int(done));
                }
            },
            Qt::QueuedConnection);
        return true;
    };
    setBusy(true);
    m_job.run(
        true,
        [compute = m_figure.compute, input]() -> Outcome {
            try {
                return {compute(input), QString(), false};
            } catch (const Cancelled&) {
                return {LensDisplay(), QString(), true};
            } catch (const Error& e) {
                return {LensDisplay(), QString::fromStdString(e.what()), false};
            } catch (const std::bad_alloc&) {
                return {LensDisplay(), tr("not enough memory for the logit lens of this text"), false};
            }
        },
        [this](Outcome outcome) { finish(std::move(outcome)); });
}

void LensPanel::finish(Outcome outcome)
{
    setBusy(false);
    ++m_displays;
    if (outcome.stopped || !outcome.error.isEmpty()) {
        m_requested.reset(); // asked again, it is computed again
        LensDisplay display;
        display.message = outcome.stopped
                              ? tr("Stopped. Press Enter in the Answer field to compute the logit "
                                   "lens again.")
                              : tr("Cannot compute the logit lens: %1").arg(outcome.error);
        m_view->setDisplay(display);
        return;
    }
    m_figure.show(m_view, outcome.content);
}

} // namespace qkv::ui
