// SPDX-License-Identifier: GPL-3.0-or-later
#include "ModelDialog.h"

#include "Error.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace qkv::ui {

namespace {

/// "3, 1,4" as numbers; false for anything else.
bool parseNumbers(const QString& text, std::vector<std::int64_t>& numbers)
{
    numbers.clear();
    for (const QString& part : text.split(QLatin1Char(','))) {
        bool ok = false;
        const qlonglong value = part.trimmed().toLongLong(&ok);
        if (!ok || value < 0)
            return false;
        numbers.push_back(value);
    }
    return !numbers.empty();
}

} // namespace

ModelDialog::ModelDialog(QWidget* parent)
    : QDialog(parent), m_folder(new QLineEdit(this)), m_summary(new QLabel(this)),
      m_text(new QLineEdit(this)), m_ids(new QLineEdit(this)), m_layer(new QSpinBox(this)),
      m_heads(new QLineEdit(QStringLiteral("all"), this)), m_precision(new QComboBox(this)),
      m_problem(new QLabel(this)),
      m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this))
{
    setWindowTitle(tr("Open Model"));
    m_folder->setObjectName(QStringLiteral("modelFolder"));
    m_folder->setPlaceholderText(tr("a Hugging Face folder: config.json, *.safetensors, tokenizer files"));
    m_text->setObjectName(QStringLiteral("modelText"));
    m_text->setPlaceholderText(tr("The cat sat on the mat"));
    m_ids->setObjectName(QStringLiteral("modelIds"));
    m_ids->setPlaceholderText(tr("or token ids: 464, 3797, 3332"));
    m_layer->setObjectName(QStringLiteral("modelLayer"));
    m_heads->setObjectName(QStringLiteral("modelHeads"));
    m_heads->setToolTip(tr("all, or query heads counted from 0, separated by commas (1, 5)"));
    m_precision->setObjectName(QStringLiteral("modelPrecision"));
    m_precision->addItem(tr("float64 (exact)"), int(Precision::Float64));
    m_precision->addItem(tr("float32 (as models run)"), int(Precision::Float32));
    m_summary->setWordWrap(true);
    m_problem->setObjectName(QStringLiteral("modelProblem"));
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #a40000"));

    auto* browseButton = new QPushButton(tr("&Browse…"), this);
    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(m_folder, 1);
    folderRow->addWidget(browseButton);
    auto* form = new QFormLayout;
    form->addRow(tr("&Model folder:"), folderRow);
    form->addRow(QString(), m_summary);
    form->addRow(tr("&Text:"), m_text);
    form->addRow(tr("Token &ids:"), m_ids);
    form->addRow(tr("&Layer:"), m_layer);
    form->addRow(tr("&Heads:"), m_heads);
    form->addRow(tr("&Precision:"), m_precision);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_problem);
    layout->addWidget(m_buttons);

    connect(browseButton, &QPushButton::clicked, this, &ModelDialog::browse);
    connect(m_folder, &QLineEdit::editingFinished, this, [this] { setFolder(m_folder->text()); });
    for (QLineEdit* edit : {m_text, m_ids, m_heads})
        connect(edit, &QLineEdit::textChanged, this, &ModelDialog::update);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &ModelDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &ModelDialog::reject);
    update();
}

void ModelDialog::browse()
{
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Model Folder"), m_folder->text());
    if (!folder.isEmpty())
        setFolder(folder);
}

void ModelDialog::setFolder(const QString& folder)
{
    m_folder->setText(folder);
    m_model.reset();
    m_openError.clear();
    m_summary->clear();
    if (folder.isEmpty()) {
        update();
        return;
    }
    try {
        m_model = std::make_shared<const Model>(Model::open(folder.toStdString()));
    } catch (const Error& e) {
        m_openError = QString::fromStdString(e.what());
    }
    if (m_model) {
        const ModelConfig& c = m_model->config();
        m_layer->setRange(0, int(c.layers - 1));
        QString heads = tr("%1 heads of %2").arg(c.heads).arg(c.headDim);
        if (c.kvHeads != c.heads)
            heads += tr(", grouped: %1 key/value heads, each shared by %2 query heads")
                         .arg(c.kvHeads)
                         .arg(c.groupSize());
        m_summary->setText(tr("%1: %2 layers, d_model %3, %4. Tokenizer: %5")
                               .arg(QString::fromStdString(c.modelType))
                               .arg(c.layers)
                               .arg(c.hiddenSize)
                               .arg(heads, m_model->tokenizer() ? tr("yes")
                                                                : tr("none (%1): give token ids")
                                                                      .arg(QString::fromStdString(
                                                                          m_model->tokenizerProblem()))));
    }
    update();
}

bool ModelDialog::buildRequest(ModelHeadRequest& request, QString* error) const
{
    if (!m_model) {
        *error = m_openError.isEmpty() ? tr("Choose a model folder.") : m_openError;
        return false;
    }
    request = ModelHeadRequest();
    request.layer = m_layer->value();
    request.precision = Precision(m_precision->currentData().toInt());
    const QString heads = m_heads->text().trimmed();
    if (heads != QLatin1String("all") && !heads.isEmpty()) {
        std::vector<std::int64_t> numbers;
        if (!parseNumbers(heads, numbers)) {
            *error = tr("Heads: expected all, or head numbers separated by commas.");
            return false;
        }
        request.heads.assign(numbers.begin(), numbers.end());
        for (Index head : request.heads)
            if (head >= m_model->config().heads) {
                *error = tr("Heads: head %1 is out of range (0 to %2).")
                             .arg(head)
                             .arg(m_model->config().heads - 1);
                return false;
            }
    }
    const QString text = m_text->text();
    const QString ids = m_ids->text().trimmed();
    if (text.isEmpty() == ids.isEmpty()) {
        *error = tr("Give a text or token ids (one of the two).");
        return false;
    }
    if (!ids.isEmpty()) {
        if (!parseNumbers(ids, request.ids)) {
            *error = tr("Token ids: expected whole numbers separated by commas.");
            return false;
        }
        return true;
    }
    if (!m_model->tokenizer()) {
        *error = tr("This model has no tokenizer QKV Lab reads: give token ids.");
        return false;
    }
    try {
        request.ids = m_model->tokenizer()->encode(text.toStdString());
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    request.text = text.toStdString();
    return true;
}

QString ModelDialog::problem() const
{
    ModelHeadRequest request;
    QString error;
    return buildRequest(request, &error) ? QString() : error;
}

void ModelDialog::update()
{
    const QString error = problem();
    m_problem->setText(error);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(error.isEmpty());
}

void ModelDialog::accept()
{
    QString error;
    if (!buildRequest(m_request, &error)) {
        m_problem->setText(error);
        return;
    }
    QDialog::accept();
}

} // namespace qkv::ui
