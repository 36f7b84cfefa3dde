// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// File ▸ Open Model…: a Hugging Face model folder, a text (or token ids), a layer, heads and a precision,
// checked before the dialog closes. The forward pass itself runs afterwards (MainWindow::openModel).

#include "ModelSession.h"

#include <QDialog>

#include <memory>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace qkv::ui {

class ModelDialog : public QDialog {
    Q_OBJECT
public:
    explicit ModelDialog(QWidget* parent = nullptr);

    /// Opens the folder (its config, weight headers and tokenizer) and shows what it holds.
    void setFolder(const QString& folder);
    /// The model and the request, once the dialog was accepted.
    std::shared_ptr<const Model> model() const { return m_model; }
    const ModelHeadRequest& request() const { return m_request; }
    /// What is wrong with the form, as shown under it (empty when it can be accepted).
    QString problem() const;

    void accept() override;

private:
    void browse();
    void update();
    /// The request from the form, or an error message.
    bool buildRequest(ModelHeadRequest& request, QString* error) const;

    QLineEdit* m_folder;
    QLabel* m_summary;
    QLineEdit* m_text;
    QLineEdit* m_ids;
    QSpinBox* m_layer;
    QLineEdit* m_heads;
    QComboBox* m_precision;
    QLabel* m_problem;
    QDialogButtonBox* m_buttons;
    std::shared_ptr<const Model> m_model;
    QString m_openError;
    ModelHeadRequest m_request;
};

} // namespace qkv::ui
