// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainingForm.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLocale>
#include <QSpinBox>

#include <algorithm>

namespace qkv::ui {

using training::TaskKind;

namespace {

const TaskKind kTasks[] = {TaskKind::Induction, TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort,
                           TaskKind::AssociativeRecall};

QSpinBox* spinBox(int low, int high, const QString& tip, const char* name)
{
    auto* box = new QSpinBox;
    box->setRange(low, high);
    box->setToolTip(tip);
    box->setObjectName(QLatin1String(name));
    return box;
}

} // namespace

TrainingForm::TrainingForm(QWidget* parent) : QWidget(parent), m_layout(new QFormLayout(this))
{
    setObjectName(QStringLiteral("trainingForm"));
    m_layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_task = new QComboBox;
    m_task->setObjectName(QStringLiteral("trainingTask"));
    for (TaskKind kind : kTasks)
        m_task->addItem(QString::fromLatin1(training::toString(kind)), int(kind));
    m_task->setToolTip(tr("The task the model learns; induction: continue a repeated random sequence"));
    m_layers = spinBox(1, 4, tr("Transformer layers (an induction head needs two)"), "trainingLayers");
    m_heads = spinBox(1, 8, tr("Attention heads per layer"), "trainingHeads");
    m_dModel = spinBox(8, 512, tr("Width of the residual stream; must be a multiple of the heads"),
                       "trainingDModel");
    m_dModel->setSingleStep(8);
    m_mlp = new QCheckBox(tr("MLP"));
    m_mlp->setObjectName(QStringLiteral("trainingMlp"));
    m_mlp->setToolTip(tr("An MLP of width 4 × d_model after each attention layer; off: attention only"));
    m_positions = new QComboBox;
    m_positions->setObjectName(QStringLiteral("trainingPositions"));
    m_positions->addItem(tr("RoPE"), true);
    m_positions->addItem(tr("Learned"), false);
    m_positions->setToolTip(
        tr("How positions enter: rotary (LLaMA style) or learned embeddings (GPT-2 style)"));
    m_normalizer = new QComboBox;
    m_normalizer->setObjectName(QStringLiteral("trainingNormalizer"));
    m_normalizer->addItem(tr("softmax"), int(NormalizerType::Softmax));
    m_normalizer->addItem(tr("sparsemax"), int(NormalizerType::Sparsemax));
    m_normalizer->addItem(tr("α-entmax"), int(NormalizerType::Entmax));
    m_normalizer->setToolTip(tr("What turns each row of scores into attention weights: softmax (every "
                                "weight above 0), sparsemax or α-entmax (exact zeros)"));
    m_alpha = new QDoubleSpinBox;
    m_alpha->setObjectName(QStringLiteral("trainingAlpha"));
    m_alpha->setRange(1.0, 2.0);
    m_alpha->setDecimals(2);
    m_alpha->setSingleStep(0.05);
    m_alpha->setValue(1.5);
    m_alpha->setToolTip(tr("α-entmax's α: 1 is softmax, 2 is sparsemax; larger α, sparser weights"));
    m_rate = new QDoubleSpinBox;
    m_rate->setObjectName(QStringLiteral("trainingRate"));
    m_rate->setDecimals(5);
    m_rate->setRange(0.00001, 1.0);
    m_rate->setSingleStep(0.0005);
    m_rate->setToolTip(tr("AdamW's peak learning rate (reached after a linear warm-up)"));
    m_batch = spinBox(1, 1024, tr("Sequences per step"), "trainingBatch");
    m_steps = spinBox(1, 1000000, tr("Optimizer steps in the run"), "trainingSteps");
    m_seed = spinBox(0, 1000000, tr("Seeds the initial weights and the sequences drawn"), "trainingSeed");
    connect(m_task, &QComboBox::currentIndexChanged, this, [this] { fillFromRecipe(); });
    connect(m_normalizer, &QComboBox::currentIndexChanged, this, &TrainingForm::showAlpha);
    m_layout->addRow(tr("Task"), m_task);
    m_layout->addRow(tr("Layers"), m_layers);
    m_layout->addRow(tr("Heads"), m_heads);
    m_layout->addRow(tr("d_model"), m_dModel);
    m_layout->addRow(QString(), m_mlp);
    m_layout->addRow(tr("Positions"), m_positions);
    m_layout->addRow(tr("Attention"), m_normalizer);
    m_layout->addRow(tr("α"), m_alpha);
    m_layout->addRow(tr("Learning rate"), m_rate);
    m_layout->addRow(tr("Batch"), m_batch);
    m_layout->addRow(tr("Steps"), m_steps);
    m_layout->addRow(tr("Seed"), m_seed);
    setWhatsThis(tr("<h3>Training settings</h3><p>The task the model learns and the model's shape: layers, "
                    "heads per layer, the residual stream's width d_model, an optional MLP, how positions "
                    "enter and which normalizer turns scores into attention weights. Then AdamW's peak "
                    "learning rate, the sequences per step, the steps and the seed. Choosing a task fills "
                    "in its recipe; the settings are read when a run starts.</p>"));
    for (QSpinBox* box : {m_layers, m_heads, m_dModel, m_batch, m_steps, m_seed})
        connect(box, &QSpinBox::valueChanged, this, &TrainingForm::changed);
    for (QComboBox* box : {m_task, m_positions, m_normalizer})
        connect(box, &QComboBox::currentIndexChanged, this, &TrainingForm::changed);
    for (QDoubleSpinBox* box : {m_alpha, m_rate})
        connect(box, &QDoubleSpinBox::valueChanged, this, &TrainingForm::changed);
    connect(m_mlp, &QCheckBox::toggled, this, &TrainingForm::changed);
    fillFromRecipe();
    showAlpha();
}

QString TrainingForm::summary() const
{
    const auto normalizer = NormalizerType(m_normalizer->currentData().toInt());
    const QString attention = normalizer == NormalizerType::Entmax
                                  ? tr("%1-entmax").arg(QLocale().toString(m_alpha->value(), 'g', 3))
                                  : m_normalizer->currentText();
    QStringList parts{m_task->currentText(),
                      tr("%1 layers × %2 heads").arg(m_layers->value()).arg(m_heads->value()),
                      tr("d_model %1").arg(m_dModel->value()),
                      m_mlp->isChecked() ? tr("MLP") : tr("attention only"),
                      m_positions->currentText(),
                      attention,
                      tr("lr %1").arg(QLocale().toString(m_rate->value(), 'g', 3)),
                      tr("batch %1").arg(m_batch->value()),
                      tr("%1 steps").arg(m_steps->value()),
                      tr("seed %1").arg(m_seed->value())};
    return parts.join(QStringLiteral(" · "));
}

void TrainingForm::showAlpha()
{
    m_layout->setRowVisible(m_alpha,
                            NormalizerType(m_normalizer->currentData().toInt()) == NormalizerType::Entmax);
}

void TrainingForm::fillFromRecipe()
{
    const auto kind = TaskKind(m_task->currentData().toInt());
    const training::Recipe recipe = training::defaultRecipe(kind);
    const training::Architecture& a = recipe.architecture;
    m_layers->setValue(int(a.layers));
    m_heads->setValue(int(a.heads));
    m_dModel->setValue(int(a.hiddenSize));
    m_mlp->setChecked(a.hasMlp());
    m_positions->setCurrentIndex(a.family == ModelFamily::Llama ? 0 : 1);
    m_normalizer->setCurrentIndex(m_normalizer->findData(int(a.attentionNormalizer.type)));
    m_alpha->setValue(a.attentionNormalizer.type == NormalizerType::Entmax ? a.attentionNormalizer.alpha
                                                                           : 1.5);
    m_rate->setValue(recipe.learningRate);
    m_batch->setValue(int(recipe.batch));
    m_steps->setValue(int(recipe.steps));
    if (m_seed->value() == 0)
        m_seed->setValue(1);
}

training::TrainSettings TrainingForm::settings() const
{
    const auto kind = TaskKind(m_task->currentData().toInt());
    const training::Recipe recipe = training::defaultRecipe(kind);
    training::TrainSettings s;
    training::Architecture& a = s.architecture;
    a = recipe.architecture;
    a.layers = m_layers->value();
    a.heads = a.kvHeads = m_heads->value();
    a.hiddenSize = m_dModel->value();
    a.headDim = std::max<Index>(1, a.hiddenSize / a.heads);
    a.intermediateSize = m_mlp->isChecked() ? 4 * a.hiddenSize : 0;
    const bool rope = m_positions->currentData().toBool();
    a.family = rope ? ModelFamily::Llama : ModelFamily::Gpt2;
    a.modelType = rope ? "llama" : "gpt2";
    a.qkvBias = a.outputBias = a.mlpBias = !rope;
    a.vocabSize = a.maxPositions = 0; // the task's
    a.attentionNormalizer.type = NormalizerType(m_normalizer->currentData().toInt());
    a.attentionNormalizer.alpha =
        a.attentionNormalizer.type == NormalizerType::Entmax ? m_alpha->value() : 1.5;
    training::TaskSettings task;
    task.kind = kind;
    s.task = task;
    s.steps = m_steps->value();
    s.batch = m_batch->value();
    s.optimizer.learningRate = m_rate->value();
    s.optimizer.warmupSteps = std::min<std::int64_t>(recipe.warmupSteps, s.steps / 10);
    s.seed = std::uint64_t(m_seed->value());
    return s;
}

} // namespace qkv::ui
