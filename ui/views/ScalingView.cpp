// SPDX-License-Identifier: GPL-3.0-or-later
#include "ScalingView.h"

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
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {

namespace {

constexpr double sessionTemperature = 0.0; // the τ spin box's special value

ScalingSetting settingOf(const QComboBox* scale, const QDoubleSpinBox* constant, const QDoubleSpinBox* tau,
                         double sessionTau)
{
    ScalingSetting setting;
    setting.scale.kind = static_cast<Scale::Kind>(scale->currentData().toInt());
    setting.scale.value = constant->value();
    setting.temperature = tau->value() == sessionTemperature ? sessionTau : tau->value();
    return setting;
}

} // namespace

ScalingView::ScalingView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_plot(new QCustomPlot(this)), m_titleElement(nullptr),
      m_grid(nullptr)
{
    setObjectName(QStringLiteral("scalingView"));
    m_plot->setObjectName(QStringLiteral("scalingPlot"));
    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(4, 2, 4, 0);
    const char* sides[] = {"A", "B"};
    for (int k = 0; k < 2; ++k) {
        auto* scale = new QComboBox(this);
        scale->setObjectName(QStringLiteral("scalingScale%1").arg(QLatin1String(sides[k])));
        scale->addItem(tr("÷√d_k"), static_cast<int>(Scale::Kind::SqrtDk));
        scale->addItem(tr("÷1 (unscaled)"), static_cast<int>(Scale::Kind::None));
        scale->addItem(tr("÷ constant"), static_cast<int>(Scale::Kind::Constant));
        scale->setCurrentIndex(k == 0 ? 0 : 1);
        scale->setToolTip(tr("What setting %1 divides the scores by").arg(QLatin1String(sides[k])));
        auto* constant = new QDoubleSpinBox(this);
        constant->setObjectName(QStringLiteral("scalingConstant%1").arg(QLatin1String(sides[k])));
        constant->setDecimals(4);
        constant->setRange(1e-4, 1e6);
        constant->setValue(1.0);
        constant->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        constant->setToolTip(tr("The constant divisor (used when the scale is ÷ constant)"));
        auto* tau = new QDoubleSpinBox(this);
        tau->setObjectName(QStringLiteral("scalingTemperature%1").arg(QLatin1String(sides[k])));
        tau->setDecimals(4);
        tau->setRange(sessionTemperature, 1e6);
        tau->setSpecialValueText(tr("session's τ"));
        tau->setPrefix(tr("τ = "));
        tau->setValue(sessionTemperature);
        tau->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        tau->setToolTip(
            tr("The temperature of setting %1 (lowest: the session's τ)").arg(QLatin1String(sides[k])));
        m_scale[static_cast<std::size_t>(k)] = scale;
        m_constant[static_cast<std::size_t>(k)] = constant;
        m_temperature[static_cast<std::size_t>(k)] = tau;
        controls->addWidget(new QLabel(tr("%1:").arg(QLatin1String(sides[k])), this));
        controls->addWidget(scale);
        controls->addWidget(constant);
        controls->addWidget(tau);
        controls->addSpacing(12);
        // The constant only matters (and takes room) when the scale is a constant.
        constant->setVisible(false); // A starts ÷√d_k, B unscaled
        connect(scale, &QComboBox::currentIndexChanged, this, [this, scale, constant] {
            constant->setVisible(static_cast<Scale::Kind>(scale->currentData().toInt()) ==
                                 Scale::Kind::Constant);
            m_refresh->request();
        });
        connect(constant, &QDoubleSpinBox::valueChanged, this, [this] { m_refresh->request(); });
        connect(tau, &QDoubleSpinBox::valueChanged, this, [this] { m_refresh->request(); });
    }
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(controls);
    layout->addWidget(m_plot, 1);

    m_titleElement = setUpPlot(m_plot, QSize(360, 160));
    m_grid = replaceWithPanelGrid(m_plot);
    for (int k = 0; k < 3; ++k) {
        m_captions[static_cast<std::size_t>(k)] = addCaption(m_plot, m_grid, 0, k);
        QCPAxisRect* rect = addPanel(m_plot, m_grid, 1, k, nullptr);
        rect->axis(QCPAxis::atLeft)->setLabel(k < 2 ? tr("weight") : tr("row entropy (nats)"));
        rect->axis(QCPAxis::atBottom)->setLabel(k < 2 ? tr("key") : tr("query"));
        m_rects[static_cast<std::size_t>(k)] = rect;
    }
    m_grid->setRowStretchFactor(0, 0.001);
    // The default axis rect (and its legend) went with replaceWithPanelGrid(): a legend in a row of its own
    // under the panels, so it never hides a bar.
    auto* legend = new QCPLegend;
    m_plot->plotLayout()->addElement(2, 0, legend);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
    legend->setLayer(QStringLiteral("legend"));
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    m_plot->legend = legend;

    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::selectionChanged, m_refresh, &OnScreenRefresh::request);
    refresh();
}

ScalingView::~ScalingView() = default;

void ScalingView::setSetting(int side, Scale scale, double temperature)
{
    const auto k = static_cast<std::size_t>(std::clamp(side, 0, 1));
    m_constant[k]->setValue(scale.value);
    m_temperature[k]->setValue(temperature);
    m_scale[k]->setCurrentIndex(m_scale[k]->findData(static_cast<int>(scale.kind)));
}

std::array<ScalingSetting, 2> ScalingView::settings() const
{
    const double tau = m_document->session().temperature;
    return {settingOf(m_scale[0], m_constant[0], m_temperature[0], tau),
            settingOf(m_scale[1], m_constant[1], m_temperature[1], tau)};
}

std::optional<ScalingComparison> ScalingView::comparison() const
{
    waitForResult();
    return m_comparison;
}

QString ScalingView::title() const
{
    waitForResult();
    return m_title;
}

void ScalingView::waitForResult() const
{
    m_refresh->flush();
    m_job.wait();
}

void ScalingView::clearPlot(const QString& title)
{
    m_plot->clearPlottables();
    m_comparison.reset();
    m_title = title;
    m_titleElement->setText(title);
    for (QCPTextElement* caption : m_captions)
        caption->setText(QString());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ScalingView::refresh()
{
    if (const CurrentHeadResult current = m_document->currentHeadResult(); !current) {
        m_job.run(
            false, [] { return Outcome{}; }, [](Outcome) {});
        clearPlot(current.error);
        return;
    }
    // Computed again from the session: the head is the session's, not the shown result's.
    const Session& session = m_document->session();
    const int head = std::clamp(m_document->currentHead(), 0, std::max(0, session.headCount() - 1));
    m_row = m_document->selectedQuery();
    const std::array<ScalingSetting, 2> chosen = settings();
    const double work = static_cast<double>(session.n()) * static_cast<double>(session.m()) *
                        static_cast<double>(session.dK() + session.dV()) * 2.0;
    m_job.run(
        work >= Document::synchronousWorkLimit,
        [session, head, chosen]() -> Outcome {
            try {
                return Outcome{compareScaling(session, head, chosen[0], chosen[1]), QString()};
            } catch (const std::exception& error) {
                return Outcome{std::nullopt, QString::fromUtf8(error.what())};
            }
        },
        [this](Outcome outcome) { show(std::move(outcome)); });
}

QString ScalingView::settingText(const ScalingSide& side) const
{
    const Scale& scale = side.setting.scale;
    QString divisor = scale.kind == Scale::Kind::SqrtDk ? tr("÷√d_k = %1").arg(side.divisor, 0, 'g', 4)
                      : scale.kind == Scale::Kind::None ? tr("unscaled")
                                                        : tr("÷%1").arg(side.divisor, 0, 'g', 4);
    return tr("%1, τ = %2").arg(divisor, QString::number(side.setting.temperature, 'g', 4));
}

void ScalingView::show(Outcome outcome)
{
    m_error = outcome.error;
    if (!outcome.comparison) {
        clearPlot(tr("Cannot compare the settings: %1").arg(outcome.error));
        return;
    }
    m_plot->clearPlottables();
    m_comparison = std::move(outcome.comparison);
    const Session& session = m_document->session();
    const Index n = m_comparison->first.weights.rows();
    const Index m = m_comparison->first.weights.cols();
    const Index row = std::clamp<Index>(m_row, 0, std::max<Index>(0, n - 1));
    if (n == 0 || m == 0) {
        clearPlot(tr("Nothing to compare: the session has no tokens"));
        return;
    }

    const std::vector<std::string>& keyTokens = session.keyTokens();
    QStringList keys;
    for (Index j = 0; j < m; ++j)
        keys.append(elidedLabel(
            static_cast<Index>(keyTokens.size()) == m ? tokenLabel(keyTokens, j) : QString::number(j), 10));
    QStringList queries;
    for (Index i = 0; i < n; ++i)
        queries.append(elidedLabel(static_cast<Index>(session.tokens.size()) == n
                                       ? tokenLabel(session.tokens, i)
                                       : QString::number(i),
                                   10));
    const ScalingSide* sides[] = {&m_comparison->first, &m_comparison->second};
    for (int k = 0; k < 2; ++k) {
        const ScalingSide& side = *sides[k];
        std::vector<double> weights(static_cast<std::size_t>(m));
        for (Index j = 0; j < m; ++j)
            weights[static_cast<std::size_t>(j)] = side.weights(row, j);
        QCPAxisRect* rect = m_rects[static_cast<std::size_t>(k)];
        addBars(rect, weights, seriesColor(k));
        setKeyTicks(rect->axis(QCPAxis::atBottom), keys);
        rect->axis(QCPAxis::atLeft)->setRange(0.0, 1.05);
        const auto top = std::max_element(weights.begin(), weights.end());
        const auto topIndex = static_cast<int>(top - weights.begin());
        m_captions[static_cast<std::size_t>(k)]->setText(
            tr("%1: %2\nH = %3 nats, top %4% (‘%5’)")
                .arg(k == 0 ? QStringLiteral("A") : QStringLiteral("B"), settingText(side),
                     QString::number(side.entropy[static_cast<std::size_t>(row)], 'f', 3),
                     QString::number(*top * 100.0, 'f', 1), keys.value(topIndex)));
    }
    // Every row's entropy under both settings: grouped bars, and ln m (uniform) as a line.
    QCPAxisRect* entropyRect = m_rects[2];
    for (int k = 0; k < 2; ++k) {
        QCPBars* bars = addBars(entropyRect, sides[k]->entropy, seriesColor(k), 0.4, k == 0 ? -0.2 : 0.2);
        bars->setName(k == 0 ? tr("A: %1").arg(settingText(*sides[k]))
                             : tr("B: %1").arg(settingText(*sides[k])));
        bars->addToLegend();
    }
    auto* uniform = new QCPGraph(entropyRect->axis(QCPAxis::atBottom), entropyRect->axis(QCPAxis::atLeft));
    uniform->setName(tr("ln m (uniform)"));
    uniform->setPen(QPen(QColor(0x7f, 0x7f, 0x7f), 1.2, Qt::DashLine));
    const double lnM = std::log(static_cast<double>(m));
    uniform->setData({-0.5, static_cast<double>(n) - 0.5}, {lnM, lnM});
    setKeyTicks(entropyRect->axis(QCPAxis::atBottom), queries);
    entropyRect->axis(QCPAxis::atLeft)->setRange(0.0, std::max(0.1, lnM * 1.25));
    m_captions[2]->setText(tr("Row entropies\nmean A %1, B %2 nats")
                               .arg(QString::number(m_comparison->first.meanEntropy, 'f', 3),
                                    QString::number(m_comparison->second.meanEntropy, 'f', 3)));

    const int headCount = session.headCount();
    m_title = tr("Scaled vs unscaled: row ‘%1’ of the current head under two settings")
                  .arg(queries.value(static_cast<int>(row)));
    if (headCount > 1)
        m_title += tr(" — head %1 of %2")
                       .arg(std::clamp(m_document->currentHead(), 0, headCount - 1) + 1)
                       .arg(headCount);
    m_titleElement->setText(m_title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString ScalingView::figureTitle() const
{
    waitForResult();
    return m_title;
}

void ScalingView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    waitForResult();
    renderPlot(m_plot, device, size);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace qkv::ui
