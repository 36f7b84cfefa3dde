// SPDX-License-Identifier: GPL-3.0-or-later
#include "ControlsPanel.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "SessionEdits.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>

#include <algorithm>
#include <cmath>
#include <memory>

namespace qkv::ui {

namespace {

// Enough decimals to accept 0.000001, but written without trailing zeros (2.5, not 2.500000).
class CompactDoubleSpinBox : public QDoubleSpinBox {
public:
    using QDoubleSpinBox::QDoubleSpinBox;

    QString textFromValue(double value) const override
    {
        QLocale numbers = locale();
        numbers.setNumberOptions(numbers.numberOptions() | QLocale::OmitGroupSeparator);
        QString text = numbers.toString(value, 'f', decimals());
        const QString point = numbers.decimalPoint();
        if (text.contains(point)) {
            while (text.endsWith(numbers.zeroDigit()))
                text.chop(numbers.zeroDigit().size());
            if (text.endsWith(point))
                text.chop(point.size());
        }
        return text;
    }
};

template <typename Value>
void pushValue(Document* document, const QString& text, Document::Changes changes,
               typename ChangeValueCommand<Value>::Access access, Value value,
               MergeId mergeId = MergeId::None, const QString& target = QString())
{
    auto command = std::make_unique<ChangeValueCommand<Value>>(document, text, changes, std::move(access),
                                                               std::move(value), mergeId, target);
    if (command->changesSomething()) // no empty steps on the undo stack
        document->push(command.release());
}

void selectData(QComboBox* box, int value)
{
    box->setCurrentIndex(box->findData(value));
}

// Sets a spin box only when it would show something else, so syncing never disturbs typing in it.
void showValue(QDoubleSpinBox* box, double value)
{
    if (box->textFromValue(box->value()) != box->textFromValue(value))
        box->setValue(value);
}

int sliderPosition(double temperature)
{
    const double position = std::round(100.0 * std::log10(temperature));
    return static_cast<int>(std::clamp(position, double(ControlsPanel::temperatureSliderMinimum),
                                       double(ControlsPanel::temperatureSliderMaximum)));
}

// Three significant digits, as a person would type it (0.0162, not 0.016218): still a different value at
// every position (neighbours differ by a factor of 10^0.01), and sliderPosition() gives the position back.
double temperatureAt(int position)
{
    return QString::number(std::pow(10.0, position / 100.0), 'g', 3).toDouble();
}

template <typename Enum> int dataOf(Enum value)
{
    return static_cast<int>(value);
}

} // namespace

ControlsPanel::ControlsPanel(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_attentionKind(new QComboBox(this)),
      m_score(new QComboBox(this)), m_scaleKind(new QComboBox(this)),
      m_scaleValue(new CompactDoubleSpinBox(this)), m_temperatureSlider(new QSlider(Qt::Horizontal, this)),
      m_temperatureSpin(new CompactDoubleSpinBox(this)), m_normalizer(new QComboBox(this)),
      m_alpha(new QDoubleSpinBox(this)), m_precision(new QComboBox(this)), m_maskType(new QComboBox(this)),
      m_maskParameter(new QSpinBox(this)), m_head(new QSpinBox(this)), m_sharedHeads(new QLabel(this))
{
    setObjectName(QStringLiteral("controlsPanel"));
    setUpScoreControls();
    setUpTemperatureControls();
    setUpNormalizerControls();
    setUpMaskAndHeadControls();
    layOutControls();
    connectEdits();
    connect(m_document, &Document::sessionChanged, this, &ControlsPanel::syncFromSession);
    connect(m_document, &Document::currentHeadChanged, this, &ControlsPanel::syncHead);
    syncFromSession();
}

void ControlsPanel::setUpScoreControls()
{
    m_attentionKind->setObjectName(QStringLiteral("attentionKind"));
    m_attentionKind->addItem(tr("Self-attention"), false);
    m_attentionKind->addItem(tr("Cross-attention"), true);
    m_attentionKind->setToolTip(tr(
        "Self-attention: keys and values come from the same tokens as the queries (Z = X).\n"
        "Cross-attention: keys and values come from a separate context sequence Z, which starts as a copy of "
        "the query tokens."));

    m_score->setObjectName(QStringLiteral("score"));
    m_score->addItem(tr("Dot product"), dataOf(ScoreFunction::Dot));
    m_score->addItem(tr("General (q·W_S·kᵀ)"), dataOf(ScoreFunction::General));
    m_score->addItem(tr("Additive (Bahdanau)"), dataOf(ScoreFunction::Additive));
    m_score->addItem(tr("Cosine"), dataOf(ScoreFunction::Cosine));
    m_score->setToolTip(tr(
        "How a query is compared with a key:\n"
        "dot q·k; general q·W_S·kᵀ (Luong); additive v_a·tanh(q·W_a + k·U_a) (Bahdanau); cosine "
        "q·k/(‖q‖‖k‖).\n"
        "Parameters the function needs (W_S; W_a, U_a, v_a) are created from the initializer when missing.\n"
        "Changing the score also resets the scale to that score's default: √d_k for dot and general, none "
        "for "
        "additive and cosine."));

    m_scaleKind->setObjectName(QStringLiteral("scaleKind"));
    m_scaleKind->addItem(tr("√d_k"), dataOf(Scale::Kind::SqrtDk));
    m_scaleKind->addItem(tr("None (÷1)"), dataOf(Scale::Kind::None));
    m_scaleKind->addItem(tr("Constant"), dataOf(Scale::Kind::Constant));
    m_scaleKind->setToolTip(
        tr("What the scores are divided by before normalizing: √d_k (Transformer default), "
           "nothing, or a constant of your choice"));
    m_scaleValue->setObjectName(QStringLiteral("scaleValue"));
    m_scaleValue->setDecimals(6);
    m_scaleValue->setRange(1e-6, 1e6);
    m_scaleValue->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    m_scaleValue->setToolTip(tr("The constant c the scores are divided by (c > 0); used when the scale is "
                                "Constant"));
}

void ControlsPanel::setUpTemperatureControls()
{
    m_temperatureSlider->setObjectName(QStringLiteral("temperatureSlider"));
    m_temperatureSlider->setRange(temperatureSliderMinimum, temperatureSliderMaximum);
    m_temperatureSlider->setPageStep(50);
    m_temperatureSlider->setToolTip(
        tr("Temperature τ on a logarithmic scale from 0.01 to 100: the scaled scores are divided by τ.\n"
           "Small τ sharpens the weights towards the largest score, large τ flattens them towards uniform.\n"
           "Type into the box beside it for values outside this range."));
    m_temperatureSpin->setObjectName(QStringLiteral("temperatureSpin"));
    m_temperatureSpin->setDecimals(6);
    m_temperatureSpin->setRange(1e-6, 1e6);
    m_temperatureSpin->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    m_temperatureSpin->setToolTip(
        tr("Temperature τ (from 0.000001 to 1000000): the scaled scores are divided by "
           "τ before normalizing; 1 leaves them unchanged"));
}

void ControlsPanel::setUpNormalizerControls()
{
    m_normalizer->setObjectName(QStringLiteral("normalizer"));
    m_normalizer->addItem(tr("Softmax"), dataOf(NormalizerType::Softmax));
    m_normalizer->addItem(tr("Sparsemax"), dataOf(NormalizerType::Sparsemax));
    m_normalizer->addItem(tr("α-entmax"), dataOf(NormalizerType::Entmax));
    m_normalizer->addItem(tr("Sigmoid"), dataOf(NormalizerType::Sigmoid));
    m_normalizer->addItem(tr("Hardmax"), dataOf(NormalizerType::Hardmax));
    m_normalizer->setToolTip(tr(
        "How each row of scores becomes weights: softmax (dense); sparsemax and α-entmax (can give exact "
        "zeros); sigmoid (each key on its own, rows need not sum to 1); hardmax (all weight on the largest "
        "score, shared on ties)"));
    m_alpha->setObjectName(QStringLiteral("alpha"));
    m_alpha->setDecimals(3);
    m_alpha->setRange(1.0, 100.0);
    m_alpha->setSingleStep(0.1);
    m_alpha->setPrefix(QStringLiteral("α = "));
    m_alpha->setToolTip(
        tr("α of α-entmax (≥ 1): 1 is softmax, 1.5 the usual choice, 2 is sparsemax; larger is "
           "sparser"));

    m_precision->setObjectName(QStringLiteral("precision"));
    m_precision->addItem(tr("float64 (exact)"), dataOf(Precision::Float64));
    m_precision->addItem(tr("float32 (as models run)"), dataOf(Precision::Float32));
    m_precision->setToolTip(tr(
        "What the engine computes in.\n"
        "float64 (exact): double precision, about 16 significant digits: the numbers of the worked "
        "examples.\n"
        "float32 (as models run): single precision, about 7 digits, as models run on GPUs. The inputs and "
        "every product are rounded to float32, so the weights differ from float64 around the 8th digit and "
        "a row sums to 1 only to within about 10⁻⁷.\n"
        "Step by Step then shows what float32 did to the selected row."));
}

void ControlsPanel::setUpMaskAndHeadControls()
{
    m_maskType->setObjectName(QStringLiteral("maskType"));
    m_maskType->addItem(tr("Bidirectional (none)"), dataOf(MaskType::None));
    m_maskType->addItem(tr("Causal"), dataOf(MaskType::Causal));
    m_maskType->addItem(tr("Prefix-LM"), dataOf(MaskType::Prefix));
    m_maskType->addItem(tr("Sliding window"), dataOf(MaskType::Sliding));
    m_maskType->addItem(tr("Custom"), dataOf(MaskType::Custom));
    m_maskType->setToolTip(tr(
        "Which keys each query may attend to: all (BERT-style); only earlier and itself (causal, GPT-style); "
        "the first p keys plus the causal ones (prefix-LM); the last w keys up to itself (sliding window); "
        "or "
        "a matrix you edit (custom, starting with everything allowed)"));
    m_maskParameter->setObjectName(QStringLiteral("maskParameter"));
    m_maskParameter->setRange(0, static_cast<int>(Limits::maxTokens));
    m_maskParameter->setToolTip(tr("Prefix-LM: the prefix length p (keys j < p are always visible).\n"
                                   "Sliding window: the window w (query i sees keys i−w+1 … i)."));

    m_head->setObjectName(QStringLiteral("head"));
    m_head->setToolTip(
        tr("Which attention head the views show (a view setting, not part of the undo history)"));

    m_sharedHeads->setObjectName(QStringLiteral("sharedHeads"));
    m_sharedHeads->setWordWrap(true);
    m_sharedHeads->setToolTip(
        tr("Heads with the same W_K, W_V (and biases) compute the same keys and values: "
           "grouped-query attention (LLaMA, Qwen2, Mistral) gives each group of query "
           "heads one key/value head. An edit of W_K or W_V changes this head only."));
}

void ControlsPanel::layOutControls()
{
    auto* form = new QFormLayout(this);
    form->setContentsMargins(4, 4, 4, 4);
    form->setVerticalSpacing(4);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto pair = [this](QWidget* first, QWidget* second, int firstStretch) {
        auto* row = new QWidget(this);
        auto* layout = new QHBoxLayout(row);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->setSpacing(4);
        layout->addWidget(first, firstStretch);
        layout->addWidget(second, 1);
        return row;
    };
    form->addRow(tr("Attention"), m_attentionKind);
    form->addRow(tr("Score"), m_score);
    form->addRow(tr("Scale"), pair(m_scaleKind, m_scaleValue, 1));
    form->addRow(tr("Temperature"), pair(m_temperatureSlider, m_temperatureSpin, 2));
    form->addRow(tr("Normalizer"), pair(m_normalizer, m_alpha, 1));
    form->addRow(tr("&Precision"), m_precision); // Alt+P: the label's mnemonic focuses the box
    form->addRow(tr("Mask"), pair(m_maskType, m_maskParameter, 1));
    form->addRow(tr("Head"), m_head);
    form->addRow(QString(), m_sharedHeads);
}

// User edits: one command each.
void ControlsPanel::connectEdits()
{
    connect(m_attentionKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        const bool on = m_attentionKind->currentData().toBool();
        if (on == m_document->session().context.has_value())
            return;
        pushEdit(m_document, on ? tr("Switch to cross-attention") : tr("Switch to self-attention"),
                 Document::Shape | Document::Tokens, [on](Session& s) { setCrossAttention(s, on); });
    });
    connect(m_score, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        const auto score = static_cast<ScoreFunction>(m_score->currentData().toInt());
        if (score == m_document->session().score)
            return;
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, tr("Score: %1").arg(m_score->currentText()), Document::Options | Document::Shape,
                 [score, init](Session& s) { setScoreFunction(s, score, init); });
    });
    connect(m_scaleKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        pushValue<Scale::Kind>(
            m_document, tr("Scale: %1").arg(m_scaleKind->currentText()), Document::Options,
            [](Session& s) -> Scale::Kind& { return s.scale.kind; },
            static_cast<Scale::Kind>(m_scaleKind->currentData().toInt()));
    });
    connect(m_scaleValue, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double value) {
        pushValue<double>(
            m_document, tr("Set scale constant"), Document::Options,
            [](Session& s) -> double& { return s.scale.value; }, value, MergeId::ScaleValue);
    });
    // Each drag merges only its own moves: a new drag gets a new merge target, so two drags are two steps.
    connect(m_temperatureSlider, &QSlider::sliderPressed, this, [this] { ++m_temperatureDrag; });
    connect(m_temperatureSlider, &QSlider::valueChanged, this, [this](int position) {
        setTemperature(temperatureAt(position), m_temperatureSlider->isSliderDown()
                                                    ? QStringLiteral("drag %1").arg(m_temperatureDrag)
                                                    : QString());
    });
    connect(m_temperatureSpin, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
            [this](double value) { setTemperature(value, QString()); });
    connect(m_normalizer, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        pushValue<NormalizerType>(
            m_document, tr("Normalizer: %1").arg(m_normalizer->currentText()), Document::Options,
            [](Session& s) -> NormalizerType& { return s.normalizer.type; },
            static_cast<NormalizerType>(m_normalizer->currentData().toInt()));
    });
    connect(m_alpha, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double value) {
        pushValue<double>(
            m_document, tr("Set entmax α"), Document::Options,
            [](Session& s) -> double& { return s.normalizer.alpha; }, value, MergeId::Alpha);
    });
    connect(m_precision, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        pushValue<Precision>(
            m_document, tr("Precision: %1").arg(m_precision->currentText()), Document::Options,
            [](Session& s) -> Precision& { return s.precision; },
            static_cast<Precision>(m_precision->currentData().toInt()));
    });
    connectMaskAndHeadEdits();
}

void ControlsPanel::connectMaskAndHeadEdits()
{
    connect(m_maskType, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        const auto type = static_cast<MaskType>(m_maskType->currentData().toInt());
        if (type == m_document->session().mask.type)
            return;
        pushEdit(m_document, tr("Mask: %1").arg(m_maskType->currentText()),
                 Document::Options | Document::Values, [type](Session& s) { setMaskType(s, type); });
    });
    connect(m_maskParameter, qOverload<int>(&QSpinBox::valueChanged), this, [this](int value) {
        if (m_document->session().mask.type == MaskType::Prefix)
            pushValue<Index>(
                m_document, tr("Set prefix length"), Document::Options,
                [](Session& s) -> Index& { return s.mask.prefixLength; }, value, MergeId::MaskParameter,
                QStringLiteral("prefix"));
        else if (m_document->session().mask.type == MaskType::Sliding)
            pushValue<Index>(
                m_document, tr("Set window"), Document::Options,
                [](Session& s) -> Index& { return s.mask.window; }, value, MergeId::MaskParameter,
                QStringLiteral("window"));
    });
    connect(m_head, qOverload<int>(&QSpinBox::valueChanged), this,
            [this](int value) { m_document->setCurrentHead(value - 1); });
}

void ControlsPanel::setTemperature(double temperature, const QString& mergeTarget)
{
    pushValue<double>(
        m_document, tr("Set temperature"), Document::Options,
        [](Session& s) -> double& { return s.temperature; }, temperature, MergeId::Temperature, mergeTarget);
}

void ControlsPanel::syncFromSession()
{
    const Session& s = m_document->session();
    const QSignalBlocker blockers[] = {QSignalBlocker(m_attentionKind),     QSignalBlocker(m_score),
                                       QSignalBlocker(m_scaleKind),         QSignalBlocker(m_scaleValue),
                                       QSignalBlocker(m_temperatureSlider), QSignalBlocker(m_temperatureSpin),
                                       QSignalBlocker(m_normalizer),        QSignalBlocker(m_alpha),
                                       QSignalBlocker(m_precision),         QSignalBlocker(m_maskType),
                                       QSignalBlocker(m_maskParameter)};

    m_attentionKind->setCurrentIndex(s.context ? 1 : 0);
    selectData(m_score, dataOf(s.score));
    selectData(m_scaleKind, dataOf(s.scale.kind));
    showValue(m_scaleValue, s.scale.value);
    m_scaleValue->setEnabled(s.scale.kind == Scale::Kind::Constant);
    m_temperatureSlider->setValue(sliderPosition(s.temperature));
    showValue(m_temperatureSpin, s.temperature);
    selectData(m_normalizer, dataOf(s.normalizer.type));
    showValue(m_alpha, s.normalizer.alpha);
    m_alpha->setEnabled(s.normalizer.type == NormalizerType::Entmax);
    selectData(m_precision, dataOf(s.precision));

    selectData(m_maskType, dataOf(s.mask.type));
    const bool prefix = s.mask.type == MaskType::Prefix, sliding = s.mask.type == MaskType::Sliding;
    m_maskParameter->setEnabled(prefix || sliding);
    // A spin box's range, prefix or suffix set again lays the window out again even when unchanged: only
    // changes are set (every edit syncs this panel).
    if (m_maskParameter->minimum() != (sliding ? 1 : 0))
        m_maskParameter->setMinimum(sliding ? 1 : 0);
    const QString prefixText = prefix ? tr("p = ") : sliding ? tr("w = ") : QString();
    if (m_maskParameter->prefix() != prefixText)
        m_maskParameter->setPrefix(prefixText);
    const Index parameter = sliding ? s.mask.window : s.mask.prefixLength;
    if (m_maskParameter->value() != parameter)
        m_maskParameter->setValue(static_cast<int>(parameter));
    syncHead();
}

void ControlsPanel::syncHead()
{
    const QSignalBlocker blocker(m_head);
    const int heads = std::max(1, m_document->session().headCount());
    if (m_head->minimum() != 1 || m_head->maximum() != heads)
        m_head->setRange(1, heads);
    const QString suffix = tr(" of %1").arg(heads);
    if (m_head->suffix() != suffix)
        m_head->setSuffix(suffix);
    m_head->setValue(m_document->currentHead() + 1);
    m_head->setEnabled(m_document->session().headCount() > 1);

    QStringList sharing;
    for (int head : headsSharingKeysAndValues(m_document->session(), m_document->currentHead()))
        sharing << QString::number(head + 1);
    m_sharedHeads->setText(sharing.isEmpty() ? QString()
                                             : tr("K and V shared with head(s) %1 (grouped-query attention)")
                                                   .arg(sharing.join(QStringLiteral(", "))));
    m_sharedHeads->setVisible(!sharing.isEmpty());
}

} // namespace qkv::ui
