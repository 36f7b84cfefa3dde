// SPDX-License-Identifier: GPL-3.0-or-later
#include "ShapePanel.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "SessionEdits.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

#include <algorithm>
#include <limits>

namespace qkv::ui {

namespace {

QSpinBox* sizeBox(QWidget* parent, const char* name, int maximum, const QString& toolTip)
{
    auto* box = new QSpinBox(parent);
    box->setObjectName(QLatin1String(name));
    box->setRange(1, maximum);
    box->setKeyboardTracking(false); // typing "128" is one edit, not three
    box->setToolTip(toolTip);
    return box;
}

bool usesScale(Initializer kind)
{
    return kind == Initializer::Normal || kind == Initializer::NumpyLegacy;
}

} // namespace

ShapePanel::ShapePanel(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document),
      m_dModel(
          sizeBox(this, "dModel", static_cast<int>(Limits::maxDimension),
                  tr("d_model: the width of the token embeddings X (and Z), and the number of rows of W_Q, "
                     "W_K and W_V. New entries come from the initializer; existing ones are kept."))),
      m_dK(sizeBox(this, "dK", static_cast<int>(Limits::maxDimension),
                   tr("d_k: the width of queries and keys (columns of W_Q and W_K), shared by all heads"))),
      m_dV(sizeBox(this, "dV", static_cast<int>(Limits::maxDimension),
                   tr("d_v: the width of values and of each head's output (columns of W_V), shared by all "
                      "heads"))),
      m_heads(
          sizeBox(this, "heads", Limits::maxHeads,
                  tr("The number of attention heads (1 to 64). New heads get weights from the initializer; "
                     "their outputs are concatenated."))),
      m_outputProjection(new QCheckBox(tr("Output projection W_O"), this)),
      m_biases(new QCheckBox(tr("Biases b_Q, b_K, b_V, b_O"), this)),
      m_dOut(sizeBox(this, "dOut", static_cast<int>(Limits::maxDimension),
                     tr("d_out: the width of the final output (columns of W_O, whose rows are the H·d_v "
                        "columns of the concatenated heads). d_model when W_O is switched on; changing it "
                        "keeps W_O's left columns, new ones come from the initializer."))),
      m_initializer(new QComboBox(this)), m_initScale(new QDoubleSpinBox(this)),
      m_initSeed(new QSpinBox(this)),
      m_reinitializeAll(new QPushButton(tr("Re-initialise all weights"), this)),
      m_reinitializeEmbeddings(new QPushButton(tr("Re-draw embeddings X"), this))
{
    setObjectName(QStringLiteral("shapePanel"));

    setUpShapeControls();
    setUpInitializerControls();
    layOutControls();
    connectShapeEdits();
    connectInitializerEdits();
    connect(m_document, &Document::sessionChanged, this, &ShapePanel::syncFromSession);
    syncFromSession();
    syncInitializer();
}

void ShapePanel::setUpShapeControls()
{
    m_outputProjection->setObjectName(QStringLiteral("outputProjection"));
    m_outputProjection->setToolTip(
        tr("On: the concatenated head outputs (H·d_v wide) are multiplied by an "
           "(H·d_v)×d_out matrix W_O from the initializer, d_out = d_model at first. Off: the final "
           "output is the concatenation itself."));
    m_dOut->setPrefix(QStringLiteral("d_out = "));
    m_biases->setObjectName(QStringLiteral("biases"));
    m_biases->setToolTip(tr("On: every head adds biases, Q = X·W_Q + b_Q, K = X·W_K + b_K, V = X·W_V + b_V, "
                            "and the final output concat·W_O + b_O (with W_O), as GPT-2 and Qwen2 do. New "
                            "biases start at 0 (nothing changes until you edit them, in the Weights dock's "
                            "b_Q, b_K, b_V and b_O tabs). Off: every bias is removed."));
}

void ShapePanel::setUpInitializerControls()
{
    m_initializer->setObjectName(QStringLiteral("initializer"));
    m_initializer->addItem(tr("Xavier normal"), static_cast<int>(Initializer::XavierNormal));
    m_initializer->addItem(tr("Xavier uniform"), static_cast<int>(Initializer::XavierUniform));
    m_initializer->addItem(tr("He normal"), static_cast<int>(Initializer::HeNormal));
    m_initializer->addItem(tr("Normal × scale"), static_cast<int>(Initializer::Normal));
    m_initializer->addItem(tr("Zeros"), static_cast<int>(Initializer::Zeros));
    m_initializer->addItem(tr("NumPy legacy (np.random.seed(s); randn) × scale"),
                           static_cast<int>(Initializer::NumpyLegacy));
    m_initializer->setToolTip(
        tr("Where new weights come from (resizing, new heads, W_O, re-initialising): Xavier "
           "(Glorot) normal or uniform, He normal, a normal distribution with the standard "
           "deviation below, zeros, or NumPy's legacy generator exactly as np.random.seed(seed) then "
           "np.random.randn(rows, cols) × scale: re-initialising draws W_Q, W_K, W_V of each head in that "
           "order from one stream seeded once, as the articles' code does"));
    m_initScale->setObjectName(QStringLiteral("initScale"));
    m_initScale->setDecimals(4);
    m_initScale->setRange(0.0001, 1000.0);
    m_initScale->setSingleStep(0.1);
    m_initScale->setPrefix(QStringLiteral("σ = "));
    m_initScale->setToolTip(tr("The standard deviation of the \"Normal × scale\" initializer, the factor of "
                               "the NumPy legacy one"));
    m_initSeed->setObjectName(QStringLiteral("initSeed"));
    m_initSeed->setRange(0, std::numeric_limits<int>::max());
    m_initSeed->setPrefix(tr("seed "));
    m_initSeed->setToolTip(tr("The random seed: the same seed and sizes always give the same weights (NumPy "
                              "legacy: the s of np.random.seed(s))"));
    m_reinitializeAll->setObjectName(QStringLiteral("reinitializeAll"));
    m_reinitializeAll->setToolTip(
        tr("Draws every weight matrix of every head (W_Q, W_K, W_V, the score "
           "parameters) and W_O anew from the initializer; the embeddings X and Z are "
           "kept. One undoable step."));
    m_reinitializeEmbeddings->setObjectName(QStringLiteral("reinitializeEmbeddings"));
    m_reinitializeEmbeddings->setToolTip(
        tr("Draws the embeddings X (and Z) anew from the initializer, the weights kept. NumPy legacy: "
           "np.random.seed(seed); X = randn(n, d_model) × scale, then Z from the same stream. One undoable "
           "step."));
}

void ShapePanel::layOutControls()
{
    auto* form = new QFormLayout(this);
    form->setContentsMargins(4, 4, 4, 4);
    form->setVerticalSpacing(4);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->addRow(tr("d_model"), m_dModel);
    form->addRow(tr("d_k"), m_dK);
    form->addRow(tr("d_v"), m_dV);
    form->addRow(tr("Heads"), m_heads);
    form->addRow(m_outputProjection, m_dOut);
    form->addRow(m_biases);
    auto* initRow = new QWidget(this);
    auto* initLayout = new QHBoxLayout(initRow);
    initLayout->setContentsMargins(0, 0, 0, 0);
    initLayout->setSpacing(4);
    initLayout->addWidget(m_initScale, 1);
    initLayout->addWidget(m_initSeed, 1);
    form->addRow(tr("Initializer"), m_initializer);
    form->addRow(QString(), initRow);
    form->addRow(m_reinitializeAll);
    form->addRow(m_reinitializeEmbeddings);
}

void ShapePanel::connectShapeEdits()
{
    auto resize = [this](QSpinBox* box, const QString& text,
                         void (*edit)(Session&, Index, const InitializerSpec&),
                         Index (Session::*current)() const) {
        connect(box, qOverload<int>(&QSpinBox::valueChanged), this, [this, text, edit, current](int value) {
            if ((m_document->session().*current)() == value)
                return;
            const InitializerSpec init = m_document->initializer();
            pushEdit(m_document, text.arg(value), Document::Shape,
                     [edit, value, init](Session& s) { edit(s, value, init); });
        });
    };
    resize(m_dModel, tr("Set d_model to %1"), &resizeDModel, &Session::dModel);
    resize(m_dK, tr("Set d_k to %1"), &resizeDK, &Session::dK);
    resize(m_dV, tr("Set d_v to %1"), &resizeDV, &Session::dV);
    connect(m_heads, qOverload<int>(&QSpinBox::valueChanged), this, [this](int value) {
        if (m_document->session().headCount() == value)
            return;
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, tr("Set %n head(s)", nullptr, value), Document::Shape,
                 [value, init](Session& s) { setHeadCount(s, value, init); });
    });
    connect(m_outputProjection, &QCheckBox::toggled, this, [this](bool on) {
        if (on == m_document->session().W_O.has_value())
            return;
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, on ? tr("Add output projection W_O") : tr("Remove output projection W_O"),
                 Document::Shape, [on, init](Session& s) { setOutputProjection(s, on, init); });
    });
    connect(m_biases, &QCheckBox::toggled, this, [this](bool on) {
        if (on == hasBiases(m_document->session()))
            return;
        pushEdit(m_document, on ? tr("Add biases") : tr("Remove biases"), Document::Shape,
                 [on](Session& s) { setBiases(s, on); });
    });
    connect(m_dOut, qOverload<int>(&QSpinBox::valueChanged), this, [this](int value) {
        const Session& s = m_document->session();
        if (!s.W_O || s.W_O->cols() == value)
            return;
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, tr("Set d_out to %1").arg(value), Document::Shape,
                 [value, init](Session& session) { resizeDOut(session, value, init); });
    });
}

void ShapePanel::connectInitializerEdits()
{
    connect(m_initializer, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &ShapePanel::applyInitializer);
    connect(m_initScale, qOverload<double>(&QDoubleSpinBox::valueChanged), this,
            &ShapePanel::applyInitializer);
    connect(m_initSeed, qOverload<int>(&QSpinBox::valueChanged), this, &ShapePanel::applyInitializer);
    connect(m_reinitializeAll, &QPushButton::clicked, this, [this] {
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, tr("Re-initialise all weights"), Document::Values,
                 [init](Session& s) { reinitializeWeights(s, init); });
    });
    connect(m_reinitializeEmbeddings, &QPushButton::clicked, this, [this] {
        const InitializerSpec init = m_document->initializer();
        pushEdit(m_document, tr("Re-draw embeddings"), Document::Values,
                 [init](Session& s) { reinitializeEmbeddings(s, init); });
    });
}

void ShapePanel::applyInitializer()
{
    InitializerSpec spec = m_document->initializer();
    spec.kind = static_cast<Initializer>(m_initializer->currentData().toInt());
    spec.scale = m_initScale->value();
    spec.seed = static_cast<std::uint64_t>(m_initSeed->value());
    m_document->setInitializer(spec);
    m_initScale->setEnabled(usesScale(spec.kind));
}

void ShapePanel::syncInitializer()
{
    const InitializerSpec spec = m_document->initializer();
    const QSignalBlocker blockers[] = {QSignalBlocker(m_initializer), QSignalBlocker(m_initScale),
                                       QSignalBlocker(m_initSeed)};
    m_initializer->setCurrentIndex(m_initializer->findData(static_cast<int>(spec.kind)));
    m_initScale->setValue(spec.scale);
    m_initScale->setEnabled(usesScale(spec.kind));
    m_initSeed->setValue(
        static_cast<int>(std::min<std::uint64_t>(spec.seed, std::numeric_limits<int>::max())));
}

void ShapePanel::syncFromSession()
{
    const Session& s = m_document->session();
    const QSignalBlocker blockers[] = {QSignalBlocker(m_dModel),
                                       QSignalBlocker(m_dK),
                                       QSignalBlocker(m_dV),
                                       QSignalBlocker(m_heads),
                                       QSignalBlocker(m_outputProjection),
                                       QSignalBlocker(m_biases),
                                       QSignalBlocker(m_dOut)};
    m_dModel->setValue(static_cast<int>(s.dModel()));
    m_dK->setValue(static_cast<int>(s.dK()));
    m_dV->setValue(static_cast<int>(s.dV()));
    m_heads->setValue(s.headCount());
    m_outputProjection->setChecked(s.W_O.has_value());
    m_biases->setChecked(hasBiases(s));
    // Without W_O the box shows the d_out it would start at.
    m_dOut->setValue(static_cast<int>(s.W_O ? s.W_O->cols() : s.dModel()));
    m_dOut->setEnabled(s.W_O.has_value());
}

} // namespace qkv::ui
