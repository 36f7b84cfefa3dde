// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingPlots.h"

#include "ModelView.h"
#include "TrainingCurveView.h"
#include "TrainingProbeView.h"

#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

namespace {

// What a plot needs to stay readable: below this page height the plots go one per tab; a plot of the
// curves' row needs this width.
constexpr int groupedPageHeight = 240;
constexpr int onePageHeight = 460;
constexpr int groupedWidth = 3 * 240;
constexpr int tabBarAllowance = 30; // the tab bar above the pages, about a line of text and its frame

QString headName(int layer, int head)
{
    return TrainingPlots::tr("L%1 H%2").arg(layer).arg(head);
}

QSplitter* newSplitter(Qt::Orientation orientation, const char* name, QWidget* parent)
{
    auto* split = new QSplitter(orientation, parent);
    split->setObjectName(QLatin1String(name));
    split->setChildrenCollapsible(false);
    split->hide();
    return split;
}

/// Series `index` of `view`, named for its head the first time.
void addScore(TrainingCurveView* view, int index, int layer, int head, double step, double value)
{
    if (view->seriesName(index).isEmpty())
        view->setSeries(index, headName(layer, head));
    view->addPoint(index, step, value);
}

} // namespace

TrainingPlots::TrainingPlots(QWidget* extraPage, const QString& extraTitle, QWidget* parent)
    : QWidget(parent), m_loss(new TrainingCurveView(QStringLiteral("lossPlot"),
                                                    {tr("Loss"), tr("step"), tr("cross-entropy"), true})),
      m_previous(new TrainingCurveView(QStringLiteral("previousPlot"),
                                       {tr("Previous-token score"), tr("step"), tr("score"), false, 0, 1})),
      m_induction(new TrainingCurveView(QStringLiteral("inductionPlot"),
                                        {tr("Induction score"), tr("step"), tr("score"), false, 0, 1})),
      m_probe(new TrainingProbeView), m_thumbnails(new ModelView), m_extraPage(extraPage),
      m_extraTitle(extraTitle), m_tabs(new QTabWidget)
{
    setObjectName(QStringLiteral("trainingPlots"));
    m_loss->setToolTip(
        tr("Training loss of every step and validation loss on held-out sequences (log scale)"));
    m_loss->setWhatsThis(tr("<h3>Loss</h3><p>The cross-entropy of every step's batch (thin) and, every few "
                            "steps, of held-out validation sequences (thick), on a log axis. For induction, "
                            "a sudden drop is the phase change: the induction head has formed.</p>"));
    m_previous->setToolTip(tr("Previous-token score of every head, on repeated random tokens"));
    m_previous->setWhatsThis(
        tr("<h3>Previous-token score</h3><p>For every head: the mean attention a token pays to the token "
           "just before it. An induction head needs a head in an earlier layer that does this.</p>"));
    m_induction->setToolTip(
        tr("Induction score of every head in layer 1 and above, on repeated random tokens"));
    m_induction->setWhatsThis(
        tr("<h3>Induction score</h3><p>For every head of layer 1 and above: the attention a token of the "
           "repeated half pays to the token after its earlier copy, on repeated random tokens. A line "
           "rising towards 1 is an induction head forming.</p>"));
    m_probe->setToolTip(tr("The loss of predicting each next token of the probe sequence; the positions the "
                           "task determines are orange"));
    m_probe->setWhatsThis(
        tr("<h3>Loss per position</h3><p>One probe sequence, drawn once for the run, at the newest "
           "evaluated step: each bar is the loss of predicting the token after that position. Orange bars "
           "are the positions the task determines (for induction, the repeated half); they can only be "
           "predicted by looking back, so they fall when the induction head forms.</p>"));
    m_thumbnails->setObjectName(QStringLiteral("trainingThumbnails"));
    m_thumbnails->setToolTip(tr("The probe sequence's attention in every layer (rows) and head (columns); "
                                "click one to open it once the run has ended"));
    m_thumbnails->setWhatsThis(
        tr("<h3>Attention of the probe</h3><p>The attention weights of every layer (rows) and head "
           "(columns) on the probe sequence, at the newest evaluated step: queries down, keys across, "
           "masked cells grey. On the induction task a layer-0 head forms a diagonal just below the main "
           "one (it attends to the previous token), then a layer-1 head a diagonal half a sequence back "
           "(it attends to the token after the earlier copy). Once the run has ended, clicking a head "
           "opens it as the session, on the probe sequence.</p>"));
    m_thumbnails->setThumbnailHint(
        tr("the probe's attention; once the run has ended, click to open this head"));
    m_tabs->setObjectName(QStringLiteral("trainingTabs"));
    m_tabs->setDocumentMode(true);
    m_curves = newSplitter(Qt::Horizontal, "trainingCurves", this);
    m_probeRow = newSplitter(Qt::Horizontal, "trainingProbe", this);
    m_onePage = newSplitter(Qt::Vertical, "trainingOnePage", this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tabs);
    arrange(Arrangement::OnePerTab);
    clear();
}

TrainingPlots::Arrangement TrainingPlots::arrangementFor(const QSize& size)
{
    const int page = size.height() - tabBarAllowance;
    if (size.width() < groupedWidth || page < groupedPageHeight)
        return Arrangement::OnePerTab;
    return page < onePageHeight ? Arrangement::Grouped : Arrangement::OnePage;
}

void TrainingPlots::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    arrange(arrangementFor(size()));
}

void TrainingPlots::arrange(Arrangement arrangement)
{
    if (arrangement == m_arrangement && m_tabs->count() > 0)
        return;
    QWidget* shown = m_tabs->currentWidget();
    m_arrangement = arrangement;
    m_tabs->clear(); // the pages stay, hidden
    const QList<QWidget*> curves{m_loss, m_previous, m_induction};
    const QList<QWidget*> probe{m_probe, m_thumbnails};
    if (arrangement == Arrangement::OnePerTab) {
        m_tabs->addTab(m_loss, tr("Loss"));
        m_tabs->addTab(m_previous, tr("Previous token"));
        m_tabs->addTab(m_induction, tr("Induction"));
        m_tabs->addTab(m_probe, probeTabTitle()); // a low plot has no title row: the tab names the step
        m_tabs->addTab(m_thumbnails, tr("Probe attention"));
    } else {
        for (QWidget* plot : curves)
            m_curves->addWidget(plot);
        for (QWidget* plot : probe)
            m_probeRow->addWidget(plot);
        for (QWidget* plot : curves + probe)
            plot->show();                       // a page taken off the tabs was hidden
        m_curves->setSizes({1000, 1000, 1000}); // equal widths, whatever the plots' size hints
        m_probeRow->setSizes({1000, 1000});
        if (arrangement == Arrangement::Grouped) {
            m_tabs->addTab(m_curves, tr("Loss and scores"));
            m_tabs->addTab(m_probeRow, tr("Probe"));
        } else {
            m_onePage->addWidget(m_curves);
            m_onePage->addWidget(m_probeRow);
            m_curves->show();
            m_probeRow->show();
            m_onePage->setSizes({1000, 1000});
            m_tabs->addTab(m_onePage, tr("Plots"));
        }
    }
    m_tabs->addTab(m_extraPage, m_extraTitle);
    for (int i = 0; i < m_tabs->count(); ++i)
        m_tabs->setTabToolTip(i, m_tabs->widget(i)->toolTip());
    if (shown)
        showPlot(shown);
}

QString TrainingPlots::probeTabTitle() const
{
    return m_probeStep > 0 ? tr("Probe loss, step %1").arg(m_probeStep) : tr("Probe loss");
}

void TrainingPlots::showPlot(QWidget* plot)
{
    for (int i = 0; i < m_tabs->count(); ++i)
        if (m_tabs->widget(i) == plot || m_tabs->widget(i)->isAncestorOf(plot) ||
            plot->isAncestorOf(m_tabs->widget(i))) {
            m_tabs->setCurrentIndex(i);
            return;
        }
}

void TrainingPlots::clear()
{
    for (TrainingCurveView* view : {m_loss, m_previous, m_induction})
        view->clear();
    m_loss->setSeries(0, tr("train"), 1.0);
    m_loss->setSeries(1, tr("validation"), 2.0);
    m_probe->clear(tr("Loss per position"));
    m_probeStep = 0;
    if (const int tab = m_tabs->indexOf(m_probe); tab >= 0)
        m_tabs->setTabText(tab, probeTabTitle());
    m_thumbnails->clear(
        tr("The probe sequence's attention in every layer and head appears here while a model trains."));
}

void TrainingPlots::add(const std::vector<training::StepReport>& reports)
{
    if (reports.empty())
        return;
    for (const training::StepReport& r : reports) {
        const double step = double(r.step);
        m_loss->addPoint(0, step, r.loss);
        if (!r.evaluated)
            continue;
        m_loss->addPoint(1, step, r.validationLoss);
        const Matrix& previous = r.scores.previousToken;
        const Matrix& induction = r.scores.induction;
        for (int layer = 0; layer < previous.rows(); ++layer)
            for (int head = 0; head < previous.cols(); ++head)
                addScore(m_previous, layer * int(previous.cols()) + head, layer, head, step,
                         previous(layer, head));
        // Layer 0 has no earlier layer to copy from: its induction score says nothing.
        for (int layer = 1; layer < induction.rows(); ++layer)
            for (int head = 0; head < induction.cols(); ++head)
                addScore(m_induction, (layer - 1) * int(induction.cols()) + head, layer, head, step,
                         induction(layer, head));
    }
    const double last = double(std::max<std::int64_t>(1, reports.back().lastStep));
    for (TrainingCurveView* view : {m_loss, m_previous, m_induction})
        view->setLastStep(last);
}

void TrainingPlots::setProbe(const training::ProbeReport& probe, std::int64_t step, int heads)
{
    m_probe->setLosses(probe.losses, probe.scored, tr("Loss per position, step %1").arg(step));
    m_probeStep = step;
    if (const int tab = m_tabs->indexOf(m_probe); tab >= 0)
        m_tabs->setTabText(tab, probeTabTitle());
    const std::size_t perLayer = std::size_t(std::max(1, heads));
    std::vector<std::vector<Matrix>> weights(probe.attention.size() / perLayer);
    for (std::size_t i = 0; i < weights.size() * perLayer; ++i)
        weights[i / perLayer].push_back(probe.attention[i]);
    const int selectedLayer = m_thumbnails->selectedLayer(), selectedHead = m_thumbnails->selectedHead();
    m_thumbnails->setAttention(weights, tr("Probe attention, step %1").arg(step));
    m_thumbnails->setSelected(selectedLayer, selectedHead);
}

} // namespace qkv::ui
