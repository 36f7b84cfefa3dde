// SPDX-License-Identifier: GPL-3.0-or-later
#include "SaturationView.h"

#include "BarPanels.h"
#include "LabelText.h"

#include "Document.h"
#include "OnScreenRefresh.h"
#include "PlotFigure.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {

namespace {

constexpr int sliderSteps = 300;         // 0.1 … 100: 100 steps a decade
constexpr double sliderLowExponent = -1; // 10^-1
constexpr double sliderDecades = 3;
constexpr int panelCount = 4;

double factorOfPosition(int position)
{
    return std::pow(10.0, sliderLowExponent + sliderDecades * position / sliderSteps);
}

int positionOfFactor(double factor)
{
    const double position = (std::log10(factor) - sliderLowExponent) / sliderDecades * sliderSteps;
    return std::clamp(static_cast<int>(std::lround(position)), 0, sliderSteps);
}

QString factorText(double factor)
{
    return QString::number(factor, 'g', 3);
}

// A saturated weight reads as how far it is from 1 ("1 − 1.3e-10"), not as a percentage rounded to a hundred.
QString percentText(double weight)
{
    if (weight >= 0.9995 && weight < 1.0)
        return QStringLiteral("1 − %1").arg(QString::number(1.0 - weight, 'g', 2));
    return QStringLiteral("%1%").arg(weight * 100.0, 0, 'f', 1);
}

} // namespace

SaturationView::SaturationView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_slider(new QSlider(Qt::Horizontal, this)),
      m_sliderValue(new QLabel(this)), m_normalizer(new QComboBox(this)), m_upstream(new QComboBox(this)),
      m_plot(new QCustomPlot(this)), m_titleElement(nullptr), m_footnote(nullptr), m_grid(nullptr)
{
    setObjectName(QStringLiteral("saturationView"));
    m_plot->setObjectName(QStringLiteral("saturationPlot"));

    m_slider->setObjectName(QStringLiteral("saturationFactor"));
    m_slider->setRange(0, sliderSteps);
    m_slider->setPageStep(25);
    m_slider->setValue(positionOfFactor(1.0));
    m_slider->setToolTip(tr("The factor c of the first panel, 0.1 to 100 on a logarithmic scale: the row's "
                            "scores are multiplied by c before normalizing (view only; the session is "
                            "unchanged)"));
    m_sliderValue->setMinimumWidth(
        m_sliderValue->fontMetrics().horizontalAdvance(QStringLiteral("c = 100.0")));
    const double defaults[] = {defaultSaturationFactors[0], defaultSaturationFactors[1],
                               defaultSaturationFactors[2]};
    for (int k = 0; k < 3; ++k) {
        auto* box = new QDoubleSpinBox(this);
        box->setObjectName(QStringLiteral("saturationPanelFactor%1").arg(k + 1));
        box->setDecimals(3);
        box->setRange(0.001, 1000.0);
        box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        box->setValue(defaults[k]);
        box->setToolTip(tr("The factor c of panel %1 (the article's code uses 1, 5 and 20)").arg(k + 2));
        m_factors[static_cast<std::size_t>(k)] = box;
    }
    m_normalizer->setObjectName(QStringLiteral("saturationNormalizer"));
    m_normalizer->addItem(tr("Session's normalizer"), static_cast<int>(NormalizerChoice::Session));
    m_normalizer->addItem(tr("Softmax"), static_cast<int>(NormalizerChoice::Softmax));
    m_normalizer->addItem(tr("Sparsemax"), static_cast<int>(NormalizerChoice::Sparsemax));
    m_normalizer->addItem(tr("α-entmax"), static_cast<int>(NormalizerChoice::Entmax));
    m_normalizer->setToolTip(tr("The normalizer of the panels: the session's, or another one to compare "
                                "(α-entmax uses the session's α when it is entmax, else 1.5)"));
    m_upstream->setObjectName(QStringLiteral("saturationUpstream"));
    m_upstream->addItem(tr("More weight on the top key"), static_cast<int>(Upstream::TopKey));
    m_upstream->addItem(tr("More weight on the selected key"), static_cast<int>(Upstream::SelectedKey));
    m_upstream->setToolTip(tr("The unit upstream signal ∂L/∂p = e_k whose gradient the lower bars show"));

    // Two short rows rather than one long one: the bottom docks share the window's width.
    auto* sliderRow = new QHBoxLayout;
    sliderRow->setContentsMargins(4, 2, 4, 0);
    sliderRow->addWidget(new QLabel(tr("c:"), this));
    sliderRow->addWidget(m_slider, 1);
    sliderRow->addWidget(m_sliderValue);
    sliderRow->addWidget(m_normalizer);
    auto* factorRow = new QHBoxLayout;
    factorRow->setContentsMargins(4, 0, 4, 0);
    factorRow->addWidget(new QLabel(tr("panels at c ="), this));
    for (QDoubleSpinBox* box : m_factors)
        factorRow->addWidget(box);
    factorRow->addWidget(m_upstream);
    factorRow->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(sliderRow);
    layout->addLayout(factorRow);
    layout->addWidget(m_plot, 1);

    m_titleElement = setUpPlot(m_plot, QSize(360, 180));
    m_grid = replaceWithPanelGrid(m_plot);
    auto* columnGroup = new QCPMarginGroup(m_plot);
    for (int k = 0; k < panelCount; ++k) {
        m_captions[static_cast<std::size_t>(k)] = addCaption(m_plot, m_grid, 0, k);
        QCPAxisRect* weights = addPanel(m_plot, m_grid, 1, k, columnGroup);
        QCPAxisRect* gradient = addPanel(m_plot, m_grid, 2, k, columnGroup);
        weights->axis(QCPAxis::atLeft)->setRange(0.0, 1.05);
        weights->axis(QCPAxis::atLeft)->setSubTicks(false);
        if (k == 0) {
            weights->axis(QCPAxis::atLeft)->setLabel(tr("weight"));
            gradient->axis(QCPAxis::atLeft)->setLabel(tr("∂L/∂z"));
        }
        m_weightRects[static_cast<std::size_t>(k)] = weights;
        m_gradientRects[static_cast<std::size_t>(k)] = gradient;
    }
    m_grid->setRowStretchFactor(0, 0.001);
    m_footnote = new QCPTextElement(m_plot, QString(), m_plot->font());
    m_plot->plotLayout()->addElement(2, 0, m_footnote);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);

    connect(m_slider, &QSlider::valueChanged, this, [this] {
        showSliderFactor();
        m_refresh->request();
    });
    for (QDoubleSpinBox* box : m_factors)
        connect(box, &QDoubleSpinBox::valueChanged, this, [this] { m_refresh->request(); });
    connect(m_normalizer, &QComboBox::currentIndexChanged, this, [this] { m_refresh->request(); });
    connect(m_upstream, &QComboBox::currentIndexChanged, this, [this] { m_refresh->request(); });
    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    showSliderFactor();
    refresh();
}

SaturationView::~SaturationView() = default;

double SaturationView::sliderFactor() const
{
    return factorOfPosition(m_slider->value());
}

void SaturationView::setSliderFactor(double factor)
{
    m_slider->setValue(positionOfFactor(factor));
}

std::array<double, 3> SaturationView::panelFactors() const
{
    return {m_factors[0]->value(), m_factors[1]->value(), m_factors[2]->value()};
}

void SaturationView::setPanelFactors(const std::array<double, 3>& factors)
{
    for (std::size_t k = 0; k < 3; ++k)
        m_factors[k]->setValue(factors[k]);
}

void SaturationView::setNormalizerChoice(NormalizerChoice choice)
{
    m_normalizer->setCurrentIndex(m_normalizer->findData(static_cast<int>(choice)));
}

void SaturationView::setUpstream(Upstream upstream)
{
    m_upstream->setCurrentIndex(m_upstream->findData(static_cast<int>(upstream)));
}

void SaturationView::showSliderFactor()
{
    m_sliderValue->setText(tr("c = %1").arg(factorText(sliderFactor())));
}

void SaturationView::clearPlot(const QString& title)
{
    m_plot->clearPlottables();
    m_panels.clear();
    m_title = title;
    m_titleElement->setText(title);
    for (QCPTextElement* caption : m_captions)
        caption->setText(QString());
    m_footnote->setText(QString());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SaturationView::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current) {
        clearPlot(current.error);
        return;
    }
    const Session& session = m_document->session();
    const int head = current.index, headCount = current.count;
    const HeadResult& r = *current.head;
    const Index row = m_document->selectedQuery();
    if (row < 0 || row >= r.scaled.rows()) {
        clearPlot(tr("Row %1: waiting for the result").arg(row));
        return;
    }
    const Index m = r.scaled.cols();
    std::vector<double> scaled(static_cast<std::size_t>(m));
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(m));
    for (Index j = 0; j < m; ++j) {
        scaled[static_cast<std::size_t>(j)] = r.scaled(row, j);
        allowed[static_cast<std::size_t>(j)] = r.allowed(row, j);
    }

    const auto choice = static_cast<NormalizerChoice>(m_normalizer->currentData().toInt());
    m_spec = session.normalizer;
    if (choice == NormalizerChoice::Softmax)
        m_spec = {NormalizerType::Softmax, 1.5};
    else if (choice == NormalizerChoice::Sparsemax)
        m_spec = {NormalizerType::Sparsemax, 1.5};
    else if (choice == NormalizerChoice::Entmax)
        m_spec = {NormalizerType::Entmax,
                  session.normalizer.type == NormalizerType::Entmax ? session.normalizer.alpha : 1.5};
    const bool selectedKey =
        static_cast<Upstream>(m_upstream->currentData().toInt()) == Upstream::SelectedKey;
    const Index upstreamKey = selectedKey ? std::clamp<Index>(m_document->selectedKey(), 0, m - 1) : -1;

    const std::array<double, 3> fixed = panelFactors();
    const double factors[panelCount] = {sliderFactor(), fixed[0], fixed[1], fixed[2]};
    m_panels.clear();
    try {
        for (double c : factors)
            m_panels.push_back(saturateRow(m_spec, scaled, allowed, session.temperature, c, upstreamKey));
    } catch (const std::exception& error) {
        clearPlot(tr("Cannot show the saturation: %1").arg(QString::fromUtf8(error.what())));
        return;
    }

    const std::vector<std::string>& keyTokens = session.keyTokens();
    const bool tokensMatch = static_cast<Index>(keyTokens.size()) == m;
    QStringList labels;
    for (Index j = 0; j < m; ++j)
        labels.append(elidedLabel(tokensMatch ? tokenLabel(keyTokens, j) : QString::number(j), 10));
    // One gradient scale for every panel: a vanishing gradient is a short bar beside a long one.
    double largest = 0.0;
    for (const SaturationPanel& panel : m_panels)
        for (double g : panel.gradient)
            largest = std::max(largest, std::abs(g));
    const double reach = largest > 0.0 ? largest * 1.1 : 1.0;

    m_plot->clearPlottables();
    bool clamped = false;
    for (int k = 0; k < panelCount; ++k) {
        const SaturationPanel& panel = m_panels[static_cast<std::size_t>(k)];
        clamped = clamped || panel.clamped;
        QCPAxisRect* weights = m_weightRects[static_cast<std::size_t>(k)];
        QCPAxisRect* gradient = m_gradientRects[static_cast<std::size_t>(k)];
        std::vector<double> top(panel.weights.size(), 0.0);
        std::vector<double> rest = panel.weights;
        if (panel.topKey >= 0) {
            top[static_cast<std::size_t>(panel.topKey)] = panel.topWeight;
            rest[static_cast<std::size_t>(panel.topKey)] = 0.0;
        }
        addBars(weights, rest, seriesColor(0));
        addBars(weights, top, seriesColor(1));
        addBars(gradient, panel.gradient, seriesColor(3));
        setKeyTicks(weights->axis(QCPAxis::atBottom), labels);
        setKeyTicks(gradient->axis(QCPAxis::atBottom), labels);
        weights->axis(QCPAxis::atBottom)->setTickLabels(false);
        gradient->axis(QCPAxis::atLeft)->setRange(-reach, reach);
        gradient->axis(QCPAxis::atBottom)
            ->setLabel(tr("‖∂L/∂z‖ = %1\nH = %2 nats")
                           .arg(QString::number(panel.gradientNorm, 'g', 3),
                                QString::number(panel.entropy, 'f', 2)));
        const QString topLabel = panel.topKey >= 0 ? labels.value(static_cast<int>(panel.topKey)) : QString();
        m_captions[static_cast<std::size_t>(k)]->setText(
            panel.topKey >= 0 ? tr("c = %1%2: ‘%3’ %4")
                                    .arg(factorText(panel.factor), k == 0 ? tr(" (slider)") : QString(),
                                         topLabel, percentText(panel.topWeight))
                              : tr("c = %1: no allowed key").arg(factorText(panel.factor)));
    }

    const QString query = static_cast<Index>(session.tokens.size()) == r.scaled.rows()
                              ? tokenLabel(session.tokens, row)
                              : QString::number(row);
    const QString normalizerName = m_spec.type == NormalizerType::Entmax
                                       ? tr("%1-entmax").arg(QString::number(m_spec.alpha, 'g', 4))
                                       : QString::fromLatin1(toString(m_spec.type));
    m_title = tr("Saturation of row ‘%1’ (%2): weights of c · S'/τ and the gradient reaching each score")
                  .arg(query, normalizerName);
    if (headCount > 1)
        m_title += tr(" — head %1 of %2").arg(head + 1).arg(headCount);
    m_titleElement->setText(m_title);
    const Index key = m_panels.front().upstreamKey;
    m_footnote->setText(
        tr("Upstream ∂L/∂p = e_k with k = ‘%1’ (%2); gradient = row k of the Jacobian ∂p/∂z.%3")
            .arg(key >= 0 ? labels.value(static_cast<int>(key)) : tr("none"),
                 selectedKey ? tr("the selected key") : tr("the top key"),
                 clamped ? tr(" Scores beyond ±1e300 were clamped.") : QString()));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString SaturationView::figureTitle() const
{
    m_refresh->flush();
    return m_title;
}

void SaturationView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    m_refresh->flush();
    renderPlot(m_plot, device, size);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
